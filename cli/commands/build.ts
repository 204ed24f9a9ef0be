// normgen build: a kernel package with the dispatch table baked in, from a tuning database.

import { basename } from 'node:path';
import type { Argv } from 'yargs';
import { parseArch } from '../../generator/arch.js';
import { emitPackage } from '../../generator/package.js';
import { InputError } from '../../generator/problem.js';
import { TuningDb } from '../../tuner/db.js';
import { buildDispatchTable } from '../../tuner/dispatch.js';
import { WINNER_HEADER, winnerRow, winners } from '../../tuner/select.js';
import { formatTable } from '../table.js';

export const command = 'build';
export const describe = 'emit a kernel package (C ABI, CUDA sources, dispatch table, TypeScript select) from a tuning database';
export const builder = (y: Argv) =>
  y
    .option('db', { type: 'string', demandOption: true, describe: 'tuning database (one GPU model for now)' })
    .option('out', { type: 'string', demandOption: true, describe: 'package folder, e.g. out/normgen-sm90' })
    .option('name', { type: 'string', describe: 'package name (default: the folder name)' })
    .option('tolerance', { type: 'number', default: 0.02, describe: 'regret allowed per problem to keep the table small' });

export function handler(args: { db: string; out: string; name?: string; tolerance: number }): void {
  if (!(args.tolerance >= 0 && args.tolerance < 1)) throw new InputError(`--tolerance must be in [0, 1), got ${args.tolerance}`);
  const db = TuningDb.read(args.db);
  const session = db.sessions[db.sessions.length - 1];
  if (!session) throw new InputError(`${args.db} has no tuning session`);
  const table = buildDispatchTable(db, args.tolerance);
  if (table.entries.length === 0) throw new InputError(`${args.db} has no verified measurements to build from`);
  const name = args.name ?? args.out.replace(/\/+$/, '').split('/').pop()!;
  const measured = formatTable(WINNER_HEADER, winners(db).map(winnerRow));
  const source = { name, arch: parseArch(db.header.arch), device: db.header.device.name, dbFiles: [basename(args.db)], tunedTemplateHash: session.templateHash, tunedOn: session.started.slice(0, 10), table, measured };
  const out = emitPackage(source, args.out);
  console.log(`${args.out}: ${table.entries.length} tuned problems, ${out.variants} kernels (${table.variants} tuned + generic), regret <= ${(100 * table.maxRegret).toFixed(2)}%`);
}
