// normgen report: a static HTML page with SVG charts of a CUDA tuning database, or the
// markdown performance log of a WGSL one (as `tune --backend wgsl --report` writes it).

import { basename, dirname } from 'node:path';
import type { Argv } from 'yargs';
import { prepareOutputDir, writeFileAtomic } from '../../generator/files.js';
import { InputError } from '../../generator/problem.js';
import { TuningDb } from '../../tuner/db.js';
import { reportHtml } from '../../tuner/report-html.js';
import { wgslTuneReport } from '../../tuner/wgsl/report.js';

export const command = 'report';
export const describe = 'write an HTML page of charts (bandwidth, fraction of copy, winners, failures) from a tuning database (WGSL: the markdown log)';
export const builder = (y: Argv) =>
  y
    .option('db', { type: 'string', demandOption: true, describe: 'tuning database' })
    .option('out', { type: 'string', demandOption: true, describe: 'the HTML file to write (a WGSL database: a .md file)' })
    .option('cuda-db', { type: 'string', describe: 'WGSL: a CUDA database of the same GPU to compare with' });

export function handler(args: { db: string; out: string; cudaDb?: string }): void {
  const wgsl = TuningDb.backendOf(args.db) === 'wgsl';
  if (wgsl && !args.out.endsWith('.md')) throw new InputError(`${args.db} is a WGSL database: its report is markdown, pass --out FILE.md`);
  if (!wgsl && args.cudaDb) throw new InputError('--cuda-db is for WGSL databases');
  const text = wgsl
    ? wgslTuneReport(TuningDb.readCheckedWgsl(args.db), undefined, args.cudaDb ? TuningDb.readChecked(args.cudaDb) : undefined, args.cudaDb && basename(args.cudaDb))
    : reportHtml(TuningDb.read(args.db));
  prepareOutputDir(dirname(args.out));
  writeFileAtomic(args.out, text);
  console.log(`wrote ${args.out}`);
}
