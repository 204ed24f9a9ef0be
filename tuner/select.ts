// Choosing winners from a tuning database: per problem, the fastest verified variant
// of the final stage (a wrong or failed variant has no time and can never win).

import { parseArch, type Arch } from '../generator/arch.js';
import { problemKey, type Problem } from '../generator/problem.js';
import { wgslVariantId } from '../generator/render-wgsl.js';
import { describeWgslParams, ortBaselineParams, type WgslParams } from '../generator/space-wgsl.js';
import type { AnyDbHeader, DbResult, TuningDb } from './db.js';
import { describeAny, directionOf, type AnyParams } from './direction.js';

/** How a backend names its variants: the baseline of a problem, and parameters in a table cell. */
export interface Naming<P extends object> {
  baselineId(p: Problem): string;
  describe(params: P, problem: Problem): string;
}

/** CUDA, forward or backward by the problem's direction (backward baselines depend on the arch). */
export const cudaNaming = (arch: Arch): Naming<AnyParams> => ({
  baselineId: (p) => directionOf(p).baseline(p, arch).id,
  describe: (params, problem) => describeAny(problem, params),
});
/** WGSL's baseline is ONNX Runtime Web's layout: a workgroup of 64 per row, vec4 (narrower where the row needs it). */
export const WGSL_NAMING: Naming<WgslParams> = { baselineId: (p) => wgslVariantId(p, ortBaselineParams(p)), describe: describeWgslParams };

export interface Winner<P extends object = AnyParams> {
  problem: Problem;
  best: DbResult<P>;
  baseline?: DbResult<P>;
  /** baseline time / best time. */
  speedup?: number;
  candidates: number;
  failures: number;
}

/** Winners per problem; CUDA databases name variants with cudaNaming unless told otherwise. */
export function winners<P extends object = AnyParams>(db: TuningDb<P, AnyDbHeader>, naming?: Naming<P>): Winner<P>[] {
  const names = naming ?? (cudaNaming(parseArch(db.header.arch)) as unknown as Naming<P>);
  const byProblem = new Map<string, DbResult<P>[]>();
  for (const r of db.results) {
    const list = byProblem.get(r.problemKey) ?? [];
    list.push(r);
    byProblem.set(r.problemKey, list);
  }
  const out: Winner<P>[] = [];
  for (const results of byProblem.values()) {
    const finals = results.filter((r) => r.stage === 'final' && r.status === 'OK' && typeof r.medianUs === 'number');
    if (finals.length === 0) continue;
    const best = finals.reduce((a, b) => (b.medianUs! < a.medianUs! ? b : a));
    const problem = best.problem;
    const baselineId = names.baselineId(problem);
    const baseline = finals.find((r) => r.variantId === baselineId);
    out.push({
      problem,
      best,
      baseline,
      speedup: baseline ? baseline.medianUs! / best.medianUs! : undefined,
      candidates: new Set(results.map((r) => r.variantId)).size,
      failures: results.filter((r) => r.status !== 'OK').length,
    });
  }
  return out.sort((a, b) => problemKey(a.problem).localeCompare(problemKey(b.problem), 'en', { numeric: true }));
}

/** A CUDA winner's row of the results table. */
export const winnerRow = (w: Winner): (string | number)[] => namedWinnerRow(w, (params, problem) => describeAny(problem, params));

export function namedWinnerRow<P extends object>(w: Winner<P>, describe: Naming<P>['describe']): (string | number)[] {
  const b = w.best;
  return [
    problemKey(w.problem),
    describe(b.params, w.problem),
    Number(b.medianUs!.toFixed(2)),
    Number((b.gbps ?? 0).toFixed(0)),
    Number((100 * (b.fractionOfCopy ?? 0)).toFixed(1)),
    w.speedup ? Number(w.speedup.toFixed(2)) : '-',
    w.candidates,
  ];
}

export const WINNER_HEADER = ['problem', 'winner', 'us', 'GB/s', '% copy', 'vs baseline', 'variants'];
