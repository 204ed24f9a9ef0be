// How close a kernel's output must be to the float64 reference: |got - ref| <=
// atol + rtol * |ref|, per storage dtype. rtol is one unit in the last place of the
// output format (a rounding flip), fp32 leaves room for fp32 accumulation over long rows.

import type { DType } from './problem.js';

export interface Tolerance {
  atol: number;
  rtol: number;
}

export const OUTPUT_TOLERANCE: Record<DType, Tolerance> = {
  fp32: { atol: 1e-5, rtol: 1e-5 },
  fp16: { atol: 1e-5, rtol: 1e-3 },
  bf16: { atol: 1e-5, rtol: 8e-3 },
};

/**
 * Backward outputs are made of fp32 sums (over a row for dx, over rows for dweight and
 * dbias): besides the output tolerance, each may be off by this fraction of the sum of
 * the magnitudes of its terms (cancellation makes the result small, not the error).
 */
export const BWD_ACC_RTOL = 3e-5;

/** mean and rstd are fp32 results of fp32 reductions. */
export const STATS_TOLERANCE: Tolerance = { atol: 1e-5, rtol: 1e-5 };

export function withinTolerance(got: number, ref: number, t: Tolerance): boolean {
  return Math.abs(got - ref) <= t.atol + t.rtol * Math.abs(ref); // false for NaN
}
