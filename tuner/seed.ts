// Re-tuning seeded by an earlier tune. A template change renames every variant (ids hash the
// templates), so nothing of the earlier database resumes; but its ranking of the same
// parameters still says which variants can win. A seeded tune times, for each problem the
// earlier tune finished, that tune's fastest variants, the baseline and whatever the earlier
// space did not hold; problems it did not finish get the whole space.

import { isBackward, problemKey, type Problem } from '../generator/problem.js';
import { DbError, TuningDb, type DbResult } from './db.js';

/** Variants kept per seeded problem unless --seed-keep says otherwise (test/gpu/seeded-retune.md). */
export const DEFAULT_SEED_KEEP = 24;

/** Parameters as a key that does not depend on the templates: sorted fields, unset ones dropped. */
export function paramsKey(params: object): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== false && v !== 0);
  return JSON.stringify(entries.sort(([a], [b]) => a.localeCompare(b)));
}

interface SeedProblem {
  /** The `keep` fastest verified parameter sets, as paramsKey. */
  fastest: Set<string>;
  /** Every parameter set the earlier tune tried, whatever its outcome. */
  tried: Set<string>;
}

export interface SeedChoice<V> {
  variants: V[];
  /** The earlier tune finished this problem, so `variants` is a subset of the space. */
  seeded: boolean;
}

export class TuneSeed {
  private constructor(
    readonly path: string,
    readonly keep: number,
    private readonly problems: Map<string, SeedProblem>,
  ) {}

  /**
   * Read the earlier database (any templates, any card: its ranking is a prior, and every
   * variant is measured again). It must hold the direction being tuned.
   */
  static read(path: string, keep: number, backward: boolean): TuneSeed {
    if (!Number.isInteger(keep) || keep < 1) throw new DbError(`--seed-keep must be a whole number >= 1, got ${keep}`);
    return TuneSeed.fromDb(TuningDb.readChecked(path), keep, backward);
  }

  /** The same from a database already read (a tool trying several `keep` reads it once). */
  static fromDb(db: TuningDb, keep: number, backward: boolean): TuneSeed {
    const results = db.results.filter((r) => isBackward(r.problem) === backward);
    if (results.length === 0) throw new DbError(`${db.path} holds no ${backward ? 'backward' : 'forward'} results to seed this tune with`);
    return new TuneSeed(db.path, keep, rankProblems(results, keep));
  }

  /** Problems the earlier tune finished (it timed their finalists). */
  get seededProblems(): number {
    return this.problems.size;
  }

  /**
   * Of a problem's variants, those to tune: where the earlier tune finished the problem, its
   * `keep` fastest, the baseline, and the variants it never tried (new to the space); else all.
   */
  choose<V extends { id: string; params: object }>(problem: Problem, variants: V[], baselineId: string): SeedChoice<V> {
    const seed = this.problems.get(problemKey(problem));
    if (!seed) return { variants, seeded: false };
    const kept = variants.filter((v) => {
      const key = paramsKey(v.params);
      return v.id === baselineId || seed.fastest.has(key) || !seed.tried.has(key);
    });
    return { variants: kept, seeded: true };
  }
}

/**
 * Per finished problem, its `keep` fastest verified parameter sets: by screening time where
 * the problem was screened (every variant was), else by full timing (an exhaustive tune).
 */
function rankProblems(results: DbResult[], keep: number): Map<string, SeedProblem> {
  const out = new Map<string, SeedProblem>();
  for (const [key, rs] of groupByProblem(results)) {
    if (!rs.some((r) => r.stage === 'final' && r.status === 'OK')) continue; // not finished there
    const stage = rs.some((r) => r.stage === 'screen') ? 'screen' : 'final';
    const best = new Map<string, number>();
    for (const r of rs) {
      if (r.stage !== stage || r.status !== 'OK' || r.medianUs === undefined) continue;
      const k = paramsKey(r.params);
      best.set(k, Math.min(r.medianUs, best.get(k) ?? Infinity));
    }
    const fastest = [...best].sort((a, b) => a[1] - b[1]).slice(0, keep).map(([k]) => k);
    out.set(key, { fastest: new Set(fastest), tried: new Set(rs.map((r) => paramsKey(r.params))) });
  }
  return out;
}

/** Results by their problem's key, in database order. */
export function groupByProblem<R extends DbResult>(results: R[]): Map<string, R[]> {
  const out = new Map<string, R[]>();
  for (const r of results) {
    const rs = out.get(r.problemKey);
    if (rs) rs.push(r);
    else out.set(r.problemKey, [r]);
  }
  return out;
}
