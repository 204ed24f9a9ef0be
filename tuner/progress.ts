// A tune's progress as both tuners (CUDA and WGSL) report it: what the progress line and its ETA read.

import { isDropped, isFailure } from './measure.js';

export interface Progress {
  done: number;
  total: number;
  skipped: number;
  failures: number;
  /** Measurements of variants dropped because their registers spill (by design, not failures). */
  dropped?: number;
  elapsedS: number;
  /** The cost of all the work planned and of what is done (search.ts measurementCost; finals included): the ETA's measure where given. */
  work?: number;
  workDone?: number;
}

/**
 * The progress of a tune that plans `counts` (SearchPlan.count), reported to `onProgress`
 * at the start and on every tick; `counted` and `worked` are SearchPlan.run's callbacks.
 */
export function trackProgress(counts: { total: number; skipped: number; work: number }, onProgress?: (p: Progress) => void) {
  const progress: Progress = { done: 0, failures: 0, dropped: 0, elapsedS: 0, workDone: 0, ...counts };
  const started = performance.now();
  const elapsedS = () => (performance.now() - started) / 1000;
  const tick = () => {
    progress.elapsedS = elapsedS();
    onProgress?.(progress);
  };
  tick();
  return {
    progress,
    elapsedS,
    tick,
    /** A first-stage measurement taken (a failure or a spilling variant counted as such). */
    counted: (r: { status: string }) => {
      progress.done++;
      if (isDropped(r)) progress.dropped = (progress.dropped ?? 0) + 1;
      if (isFailure(r)) progress.failures++;
      tick();
    },
    /** The expected cost of a measurement taken (finals too). */
    worked: (cost: number) => {
      progress.workDone = (progress.workDone ?? 0) + cost;
    },
  };
}
