// The search over one problem's variants, shared by the CUDA and WGSL tuners: which
// measurements are still missing from the database (resume), and the order they are
// taken in (exhaustive, or a brief screening of all and a full timing of the best).

import { bytesMoved, problemKey, type Problem } from '../generator/problem.js';
import type { AnyDbHeader, DbResult, Stage, TuningDb } from './db.js';

/** exhaustive: every variant timed in full. screen: every variant timed briefly, the best `keep` again in full. */
export type Search = { kind: 'exhaustive' } | { kind: 'screen'; keep: number };

/**
 * A screened variant whose first sample is this much slower than the best screened so
 * far cannot be a finalist: the runner may skip its remaining samples (long kernels).
 */
export const SCREEN_CUTOFF = 1.5;

/**
 * What one measurement costs, in screenings of a tiny problem, for the progress line's ETA:
 * a screening is about 4 ms of fixed work plus passes over the problem's bytes (checks,
 * estimate, samples), a final timing about 5.5 screenings plus 2.25 times those passes.
 * Fitted to the default grid's one run on an H200 (test/gpu/tune-time.md); only the ratios
 * matter, the ETA measures its own rate. Replayed on that run once its compiles were done,
 * an ETA by measurements was 0.6-3.1x the time left, by this cost 0.9-1.4x: tiny problems'
 * finals and huge problems' screenings each cost several small screenings.
 */
export function measurementCost(p: Problem, stage: Stage): number {
  const mb = bytesMoved(p) / 1e6;
  return stage === 'screen' ? 1 + mb / 1800 : 5.5 + mb / 800;
}

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

  /** The finalists whose full timing is still missing (screening done). */
  private pendingFinals(p: Problem, ids: string[]): string[] {
    const chosen = this.finalists(p, ids);
    return ids.filter((id) => chosen.has(id) && this.pending(p, id, 'final'));
  }

  /** Finals a screening of these variants will choose, at most. */
  private plannedFinals(ids: string[]): number {
    return this.search.kind === 'screen' ? Math.min(ids.length, this.search.keep + 1) : 0;
  }

  /** Nothing left to measure for this problem (a resumed tune skips it). */
  problemDone(p: Problem, ids: string[]): boolean {
    if (ids.some((id) => this.pending(p, id, this.firstStage))) return false;
    return this.search.kind === 'exhaustive' || this.pendingFinals(p, ids).length === 0;
  }

  /**
   * Measurements still to take at the first stage, those already in the database, and the
   * cost of all that remains (see measurementCost), the finals a screening will choose included.
   */
  count(problems: Iterable<[Problem, string[]]>): { total: number; skipped: number; work: number } {
    let total = 0;
    let skipped = 0;
    let work = 0;
    for (const [p, ids] of problems) {
      const pending = ids.filter((id) => this.pending(p, id, this.firstStage));
      total += pending.length;
      skipped += ids.length - pending.length;
      work += pending.length * measurementCost(p, this.firstStage);
      if (this.search.kind === 'exhaustive') continue;
      // The best `keep` and the baseline, once screened; where screening is done, those chosen.
      const finals = pending.length ? this.plannedFinals(ids) : this.pendingFinals(p, ids).length;
      work += finals * measurementCost(p, 'final');
    }
    return { total, skipped, work };
  }

  /**
   * Take a problem's missing measurements in order; `counted` sees each first-stage one, and
   * `worked` the cost of every measurement (finals too). Screening passes `measure` a
   * cutoff: SCREEN_CUTOFF times the best screened time so far.
   */
  async run(
    p: Problem,
    ids: string[],
    measure: (id: string, stage: Stage, cutoffUs?: number) => Promise<DbResult<P>>,
    counted: (r: DbResult<P>) => void,
    worked: (cost: number) => void = () => undefined,
  ): Promise<void> {
    const screening = this.firstStage === 'screen';
    const screenedNow = ids.some((id) => this.pending(p, id, this.firstStage));
    let best = Math.min(...ids.map((id) => this.db.find(problemKey(p), id, 'screen')?.medianUs ?? Infinity));
    for (const id of ids) {
      if (!this.pending(p, id, this.firstStage)) continue;
      const r = await measure(id, this.firstStage, screening && Number.isFinite(best) ? SCREEN_CUTOFF * best : undefined);
      if (screening && r.status === 'OK' && r.medianUs !== undefined) best = Math.min(best, r.medianUs);
      worked(measurementCost(p, this.firstStage));
      counted(r);
    }
    if (this.search.kind === 'exhaustive') return;
    const finals = this.pendingFinals(p, ids);
    // count() planned keep + 1 finals where screening was to come; fewer chosen (the
    // baseline among the best, variants that failed) leaves that work done too.
    const planned = screenedNow ? this.plannedFinals(ids) : finals.length;
    for (const id of finals) {
      await measure(id, 'final');
      worked(measurementCost(p, 'final'));
    }
    if (finals.length < planned) worked((planned - finals.length) * measurementCost(p, 'final'));
  }
}
