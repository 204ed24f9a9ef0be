// normgen export: a tuning database in another project's format (FlashInfer-Bench for now).

import type { Argv } from 'yargs';
import { exportFlashInferBench } from '../../generator/flashinfer.js';
import { TuningDb } from '../../tuner/db.js';

export const FORMATS = ['flashinfer-bench'] as const;

export const command = 'export <format>';
export const describe = "export a tuning database's winners: flashinfer-bench writes Definitions, Solutions (CUDA sources) and Traces";
export const builder = (y: Argv) =>
  y
    .positional('format', { type: 'string', choices: FORMATS, describe: 'the format to write' })
    .option('db', { type: 'string', demandOption: true, describe: 'tuning database' })
    .option('out', { type: 'string', demandOption: true, describe: 'dataset folder (definitions/, solutions/, workloads/, traces/)' });

export function handler(args: { format: (typeof FORMATS)[number]; db: string; out: string }): void {
  const s = exportFlashInferBench(TuningDb.readChecked(args.db), args.out);
  const skipped = s.skipped.length ? `; skipped (no FlashInfer-Bench definition): ${s.skipped.join(', ')}` : '';
  console.log(`${args.out}: ${s.definitions} definitions, ${s.solutions} solutions, ${s.workloads} workloads, ${s.traces} traces${skipped}`);
}
