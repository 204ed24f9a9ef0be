// The search over one problem's variants, shared by the CUDA and WGSL tuners: which
// measurements are still missing from the database (resume), and the order they are
// taken in (exhaustive, or a brief screening of all and a full timing of the best).

import { problemKey, type Problem } from '../generator/problem.js';
import type { AnyDbHeader, DbResult, Stage, TuningDb } from './db.js';

/** exhaustive: every variant timed in full. screen: every variant timed briefly, the best `keep` again in full. */
export type Search = { kind: 'exhaustive' } | { kind: 'screen'; keep: number };

/**
 * A screened variant whose first sample is this much slower than the best screened so
 * far cannot be a finalist: the runner may skip its remaining samples (long kernels).
 */
export const SCREEN_CUTOFF = 1.5;

export class SearchPlan<P extends object> {
  /** The stage every variant gets (the one progress counts). */
  readonly firstStage: Stage;

  constructor(
    private readonly db: TuningDb<P, AnyDbHeader>,
    private readonly search: Search,
    /** The baseline variant of a problem: always timed in full, for the report's comparison. */
    private readonly baselineId: (p: Problem) => string,
  ) {
    this.firstStage = search.kind === 'exhaustive' ? 'final' : 'screen';
  }

  pending(p: Problem, id: string, stage: Stage): boolean {
    return !this.db.find(problemKey(p), id, stage);
  }

  /** Screening: the best `keep` screened variants and the baseline get a full timing. */
  finalists(p: Problem, ids: string[]): Set<string> {
    const keep = this.search.kind === 'screen' ? this.search.keep : Infinity;
    const screened = ids
      .map((id) => this.db.find(problemKey(p), id, 'screen'))
      .filter((r): r is DbResult<P> => r?.status === 'OK' && r.medianUs !== undefined)
      .sort((a, b) => a.medianUs! - b.medianUs!);
    return new Set([...screened.slice(0, keep).map((r) => r.variantId), this.baselineId(p)]);
  }

  /** Nothing left to measure for this problem (a resumed tune skips it). */
  problemDone(p: Problem, ids: string[]): boolean {
    if (ids.some((id) => this.pending(p, id, this.firstStage))) return false;
    if (this.search.kind === 'exhaustive') return true;
    const chosen = this.finalists(p, ids);
    return ids.every((id) => !chosen.has(id) || !this.pending(p, id, 'final'));
  }

  /** Measurements still to take at the first stage, and those already in the database. */
  count(work: Iterable<[Problem, string[]]>): { total: number; skipped: number } {
    let total = 0;
    let skipped = 0;
    for (const [p, ids] of work) for (const id of ids) this.pending(p, id, this.firstStage) ? total++ : skipped++;
    return { total, skipped };
  }

  /**
   * Take a problem's missing measurements in order; `counted` sees each first-stage one.
   * Screening passes `measure` a cutoff: SCREEN_CUTOFF times the best screened time so far.
   */
  async run(
    p: Problem,
    ids: string[],
    measure: (id: string, stage: Stage, cutoffUs?: number) => Promise<DbResult<P>>,
    counted: (r: DbResult<P>) => void,
  ): Promise<void> {
    const screening = this.firstStage === 'screen';
    let best = Math.min(...ids.map((id) => this.db.find(problemKey(p), id, 'screen')?.medianUs ?? Infinity));
    for (const id of ids) {
      if (!this.pending(p, id, this.firstStage)) continue;
      const r = await measure(id, this.firstStage, screening && Number.isFinite(best) ? SCREEN_CUTOFF * best : undefined);
      if (screening && r.status === 'OK' && r.medianUs !== undefined) best = Math.min(best, r.medianUs);
      counted(r);
    }
    if (this.search.kind === 'exhaustive') return;
    const chosen = this.finalists(p, ids);
    for (const id of ids) if (chosen.has(id) && this.pending(p, id, 'final')) await measure(id, 'final');
  }
}
