// normgen check: re-time a tuning database's winners and challengers on this GPU; exit 1 on drift.

import { availableParallelism } from 'node:os';
import type { Argv } from 'yargs';
import { InputError, problemKey } from '../../generator/problem.js';
import { describeParams } from '../../generator/space.js';
import { checkDrift, parseTolerance, type CheckOutcome } from '../../tuner/check.js';
import { fwdParams, TuningDb } from '../../tuner/db.js';
import { parseGpus } from '../../tuner/grid.js';
import { expandDbPaths } from '../db-paths.js';
import { progressReporter } from '../progress.js';
import { formatTable } from '../table.js';

export const command = 'check';
export const describe = "re-time a tuning database's winners and best challengers on this GPU; exit 1 when a winner no longer holds";
export const builder = (y: Argv) =>
  y
    .option('db', { type: 'string', array: true, demandOption: true, describe: "tuning database(s) or a folder of them; the one of this GPU's model is checked" })
    .option('tolerance', { type: 'string', default: '5%', describe: 'allowed slowdown of a winner, and the margin a challenger must beat it by (5% or 0.05)' })
    .option('challengers', { type: 'number', default: 2, describe: 'variants re-timed per problem besides the winner (the next fastest recorded)' })
    .option('gpu', { type: 'string', default: '0', describe: 'CUDA device index' })
    .option('jobs', { type: 'number', default: availableParallelism(), describe: 'parallel nvcc processes' });

export async function handler(args: { db: string[]; tolerance: string; challengers: number; gpu: string; jobs: number }): Promise<void> {
  const tolerance = parseTolerance(args.tolerance);
  const gpus = parseGpus(args.gpu);
  if (gpus.length !== 1) throw new InputError(`--gpu takes one device index, got '${args.gpu}'`);
  const [gpu] = gpus;
  if (!Number.isInteger(args.challengers) || args.challengers < 0) throw new InputError(`--challengers must be a whole number >= 0, got ${args.challengers}`);
  const dbs = expandDbPaths(args.db).map((p) => TuningDb.readChecked(p));
  const progress = progressReporter('check');
  const started = performance.now();
  const onProgress = (done: number, total: number, failures: number) => progress({ done, total, skipped: 0, failures, elapsedS: (performance.now() - started) / 1000 });
  const outcome = await checkDrift({ dbs, tolerance, challengers: args.challengers, gpu, jobs: args.jobs, onProgress });
  console.log(driftReport(outcome, tolerance));
  if (outcome.drifted) process.exitCode = 1;
}

export function driftReport(o: CheckOutcome, tolerance: number): string {
  const rows = o.checks.flatMap((c) =>
    c.rows.map((r) => [
      problemKey(r.problem),
      r.role,
      `${r.recorded.variantId} ${describeParams(fwdParams(r.recorded))}`,
      Number(r.recorded.medianUs!.toFixed(2)),
      r.now.medianUs !== undefined && r.now.status === 'OK' ? Number(r.now.medianUs.toFixed(2)) : r.now.status,
      r.drift !== undefined ? `${r.drift >= 0 ? '+' : ''}${(100 * r.drift).toFixed(1)}%` : '-',
    ]),
  );
  const copy = o.copyGbps.recorded ? ` (recorded ${o.copyGbps.recorded.toFixed(0)} GB/s, ${(100 * (o.copyGbps.now / o.copyGbps.recorded - 1)).toFixed(1)}%)` : '';
  const bad = o.checks.filter((c) => c.problems.length > 0);
  const lines = [
    `${o.db.path} on ${o.device.name} (${o.device.arch}): copy bandwidth ${o.copyGbps.now.toFixed(0)} GB/s${copy}`,
    formatTable(['problem', 'role', 'variant', 'recorded us', 'now us', 'drift'], rows),
    ...bad.flatMap((c) => c.problems.map((p) => `DRIFT ${problemKey(c.problem)}: ${p}`)),
    `${o.checks.length} problems, ${bad.length} no longer hold within ${(100 * tolerance).toFixed(1)}%`,
  ];
  return lines.join('\n');
}
