// The tunable space of the WGSL forward kernel and the constraints that prune it by
// the problem (alignment, row length) and by the adapter (limits and features).

import { residualDType, type Problem } from './problem.js';

/** How one row's partial sums are combined. */
export const REDUCTIONS = ['workgroup', 'subgroup'] as const;
export type Reduction = (typeof REDUCTIONS)[number];

export interface WgslParams {
  /** Invocations per workgroup. */
  workgroup: number;
  /** Elements per load and store: 4 (vec4), 2 (vec2) or 1 (scalar). */
  vec: number;
  /** Invocations cooperating on one row; rows per workgroup = workgroup / threadsPerRow. */
  threadsPerRow: number;
  reduce: Reduction;
  /**
   * Vectors of the row each invocation keeps in a private array between passes
   * (capacity items * threadsPerRow * vec, plus the tail); 0 or absent: every pass
   * reads the row from memory again, any hidden size.
   */
  items?: number;
}

/** What of an adapter the space depends on (its device is created with these limits). */
export interface WgslLimits {
  maxInvocations: number;
  maxWorkgroupStorage: number;
  maxWorkgroupsPerDimension: number;
  f16: boolean;
  subgroups: boolean;
  /** Largest subgroup size the adapter may use (subgroup variants need TPR >= this). */
  subgroupMaxSize: number;
}

/** WebGPU's guaranteed defaults, without optional features. */
export const DEFAULT_LIMITS: WgslLimits = {
  maxInvocations: 256,
  maxWorkgroupStorage: 16384,
  maxWorkgroupsPerDimension: 65535,
  f16: false,
  subgroups: false,
  subgroupMaxSize: 128,
};

export const WORKGROUP_CHOICES = [64, 128, 256];
/** Most vectors one invocation keeps (32 floats at vec4). */
export const MAX_ITEMS = 8;
export const VEC_CHOICES = [4, 2, 1];

export const rowsPerWorkgroup = (p: WgslParams) => p.workgroup / p.threadsPerRow;

/** Private vectors an invocation needs to keep a whole row (its tail aside). */
export const itemsFor = (hidden: number, vec: number, threadsPerRow: number) => Math.ceil(Math.floor(hidden / vec) / threadsPerRow);

/** Workgroup memory of a variant: one f32 partial per invocation. */
export const workgroupStorageBytes = (p: WgslParams) => 4 * p.workgroup;

/** Widest vector dividing every row stride in use, so every vector load is aligned. */
export function wgslMaxVec(problem: Problem): number {
  const s = problem.strides;
  const strides = residualDType(problem) ? [s.x, s.y, s.residual, s.residualOut] : [s.x, s.y];
  return VEC_CHOICES.find((v) => strides.every((st) => st % v === 0))!;
}

/** Why the WGSL kernel cannot compute this problem at all on this adapter, or null. */
export function wgslProblemReason(problem: Problem, limits: WgslLimits): string | null {
  if (problem.dtype === 'bf16') return 'WGSL has no bf16';
  if (problem.dtype === 'fp16' && !limits.f16) return "the adapter lacks 'shader-f16'";
  return null;
}

/** Why a variant cannot run a problem on an adapter, or null when it can. */
export function wgslUnsupportedReason(problem: Problem, p: WgslParams, limits: WgslLimits): string | null {
  const reason = wgslProblemReason(problem, limits);
  if (reason) return reason;
  if (p.workgroup > limits.maxInvocations) return `workgroup ${p.workgroup} exceeds ${limits.maxInvocations} invocations`;
  if (p.workgroup % p.threadsPerRow !== 0) return `${p.threadsPerRow} invocations per row do not divide the workgroup`;
  if (workgroupStorageBytes(p) > limits.maxWorkgroupStorage) return 'workgroup memory exceeds the limit';
  if (wgslMaxVec(problem) % p.vec !== 0) return `vector width ${p.vec} does not divide the row strides`;
  const items = p.items ?? 0;
  if (items > 0 && itemsFor(problem.hidden, p.vec, p.threadsPerRow) > items) return `hidden ${problem.hidden} exceeds the ${items} cached vectors per invocation`;
  if (p.reduce === 'subgroup') {
    if (!limits.subgroups) return "the adapter lacks 'subgroups'";
    if (p.threadsPerRow < limits.subgroupMaxSize) return `subgroups of up to ${limits.subgroupMaxSize} would span rows`;
  }
  return null;
}

const nextPow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));
const pow2Upto = (n: number) => Array.from({ length: Math.log2(n) + 1 }, (_, i) => 2 ** i);

/**
 * The pruned space for one problem: every workgroup size the adapter allows, every
 * aligned vector width, every power-of-two split of the workgroup into rows, less
 * splits that leave most of a row's invocations idle or make more rows per workgroup
 * than the problem has; subgroup reduction where the adapter has subgroups.
 */
export function enumerateWgslSpace(problem: Problem, limits: WgslLimits): WgslParams[] {
  if (wgslProblemReason(problem, limits)) return [];
  const out: WgslParams[] = [];
  for (const workgroup of WORKGROUP_CHOICES)
    for (const vec of VEC_CHOICES)
      for (const threadsPerRow of pow2Upto(workgroup)) {
        if (threadsPerRow > 1 && threadsPerRow * vec >= 2 * problem.hidden) continue; // idle lanes
        if (workgroup / threadsPerRow > nextPow2(problem.rows)) continue; // more rows than exist
        const fit = itemsFor(problem.hidden, vec, threadsPerRow);
        const cached = fit >= 1 && fit <= MAX_ITEMS ? [0, fit] : [0];
        for (const reduce of REDUCTIONS)
          for (const items of cached) {
            const p: WgslParams = { workgroup, vec, threadsPerRow, reduce, ...(items ? { items } : {}) };
            if (wgslUnsupportedReason(problem, p, limits) === null) out.push(p);
          }
      }
  if (out.length === 0) out.push(WGSL_GENERIC_PARAMS);
  return out;
}

/** Correct for every shape and adapter: scalar loads, one row per workgroup of 64. */
export const WGSL_GENERIC_PARAMS: WgslParams = { workgroup: 64, vec: 1, threadsPerRow: 64, reduce: 'workgroup' };

/**
 * The baseline every tuned WGSL winner is compared with, in the style of ONNX Runtime
 * Web's normalization shaders: one workgroup of 64 invocations per row, vec4 loads where
 * the row allows them (else vec2, else scalar), the row read again for each pass.
 */
export function ortBaselineParams(problem: Problem): WgslParams {
  return { workgroup: 64, vec: Math.min(4, wgslMaxVec(problem)), threadsPerRow: 64, reduce: 'workgroup' };
}

export function describeWgslParams(p: WgslParams): string {
  const parts = [`wg${p.workgroup}`, `v${p.vec}`, `tpr${p.threadsPerRow}`, p.reduce === 'subgroup' ? 'sg' : 'wgmem'];
  if (p.items) parts.push(`i${p.items}`);
  return parts.join('.');
}

/** The workgroup grid for a row count: 2-D once one dimension's limit is passed. */
export function dispatchSize(p: WgslParams, rows: number, maxPerDimension: number): [number, number] {
  const groups = Math.ceil(rows / rowsPerWorkgroup(p));
  const x = Math.min(groups, maxPerDimension);
  const y = Math.ceil(groups / x);
  if (y > maxPerDimension) throw new Error(`${rows} rows need more than ${maxPerDimension}^2 workgroups`);
  return [x, y];
}
