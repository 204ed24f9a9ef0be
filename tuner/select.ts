// Choosing winners from a tuning database: per problem, the fastest verified variant
// of the final stage (a wrong or failed variant has no time and can never win).

import { problemKey, type Problem } from '../generator/problem.js';
import { parseArch } from '../generator/arch.js';
import { describeAny, directionOf } from './direction.js';
import type { DbResult, TuningDb } from './db.js';

export interface Winner {
  problem: Problem;
  best: DbResult;
  baseline?: DbResult;
  /** baseline time / best time. */
  speedup?: number;
  candidates: number;
  failures: number;
}

export function winners(db: TuningDb): Winner[] {
  const arch = parseArch(db.header.arch);
  const byProblem = new Map<string, DbResult[]>();
  for (const r of db.results) {
    const list = byProblem.get(r.problemKey) ?? [];
    list.push(r);
    byProblem.set(r.problemKey, list);
  }
  const out: Winner[] = [];
  for (const results of byProblem.values()) {
    const finals = results.filter((r) => r.stage === 'final' && r.status === 'OK' && typeof r.medianUs === 'number');
    if (finals.length === 0) continue;
    const best = finals.reduce((a, b) => (b.medianUs! < a.medianUs! ? b : a));
    const problem = best.problem;
    const baselineId = directionOf(problem).baseline(problem, arch).id;
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

export function winnerRow(w: Winner): (string | number)[] {
  const b = w.best;
  return [
    problemKey(w.problem),
    describeAny(w.problem, b.params),
    Number(b.medianUs!.toFixed(2)),
    Number((b.gbps ?? 0).toFixed(0)),
    Number((100 * (b.fractionOfCopy ?? 0)).toFixed(1)),
    w.speedup ? Number(w.speedup.toFixed(2)) : '-',
    w.candidates,
  ];
}

export const WINNER_HEADER = ['problem', 'winner', 'us', 'GB/s', '% copy', 'vs baseline', 'variants'];
