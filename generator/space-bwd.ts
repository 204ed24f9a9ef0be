// The tunable space of the CUDA backward kernels (templates/cuda-bwd/) and the
// constraints that prune it, the launch geometry, and the bytes a backward moves.

import { clusterLimit, ctasPerSm, type Arch } from './arch.js';
import { BYTES, biasDType, residualDType, weightDType, type DType, type KernelSpec, type Problem } from './problem.js';
import { THREAD_CHOICES } from './space.js';

/**
 * Where a row and the CTA's dweight/dbias sums live:
 * - regs:      x and dy of the row in registers (ITEMS chunks of VEC per thread), the
 *              sums too; several rows per CTA when TPR < threads;
 * - regs-smem: row in registers, sums in dynamic shared memory (one row per CTA):
 *              rows too long for both in registers;
 * - loop:      row read in passes (x and dy twice, the second time mostly from L2),
 *              sums in shared memory: any hidden size whose sums fit;
 * - global:    as loop, sums in the CTA's partial rows in global memory: any hidden
 *              size (the generic variant).
 */
export const BWD_STORAGES = ['regs', 'regs-smem', 'loop', 'global'] as const;
export type BwdStorage = (typeof BWD_STORAGES)[number];

export interface BwdParams {
  storage: BwdStorage;
  threads: number;
  /** Elements per access of x and dy (up to 16 bytes). */
  vec: number;
  /** Threads per row; rows per CTA = threads / threadsPerRow (regs only; else threads). */
  threadsPerRow: number;
  /** regs, regs-smem: chunks of vec per thread (capacity items * threadsPerRow * vec); else 0. */
  items: number;
  /** Persistent grid: CTAs per SM asked for (fewer when fewer fit or fewer rows exist). */
  ctasPerSm: number;
  /** Recompute mean and rstd from x rather than read the saved ones. */
  recompute: boolean;
  /** regs, regs-smem: load the next row before reducing this one (two rows in registers); false otherwise. */
  prefetch: boolean;
  /**
   * regs, regs-smem: rows stream through a ring of this many shared-memory slots, copied
   * (cp.async) stages - 1 rows ahead, instead of through registers; absent or 0: no ring.
   */
  stages?: number;
  /**
   * regs, regs-smem with a ring: the weight re-read and xhat recomputed at each use rather
   * than held in registers, so that long rows fit; absent: held.
   */
  lean?: boolean;
  /**
   * Lean ring kernels: x and dy read again from the row's ring slot at each pass rather
   * than held in registers (room for LayerNorm's two column sums); absent: held.
   */
  reread?: boolean;
  /**
   * Lean ring kernels: the weight staged once in shared memory after the ring rather than
   * re-read from global memory (L1) at each use; absent: re-read.
   */
  stagedWeight?: boolean;
  /**
   * regs with a ring, one row per CTA, sm90+: a thread-block cluster of this many CTAs
   * splits each row (each CTA holds a slice, its weight and its column sums); absent: 1.
   */
  cluster?: number;
}

export const CTAS_PER_SM_CHOICES = [1, 2, 4];
export const BWD_STAGE_CHOICES = [2, 3, 4];
export const BWD_CLUSTER_CHOICES = [2, 4, 8];
/** Columns a CTA of a cluster keeps at least (fewer: the cluster's barriers cost more than they save). */
const MIN_CLUSTER_SLICE = 2048;
export const BWD_THREAD_CHOICES = THREAD_CHOICES.filter((t) => t >= 128);
/** Most vectors per thread in registers, and most row values (x and dy each). */
const MAX_ITEMS = 16;
const MAX_VALUES = 32;
const REGISTER_OVERHEAD = 48;
/** Lean kernels hold no weight or xhat arrays: less besides the row and the sums. */
const LEAN_REGISTER_OVERHEAD = 32;
/** Rows shorter than this never need the passes of loop. */
const LONG_ROW_BYTES = 16 * 1024;
/** Static shared memory besides a multi-row kernel's staging: reduction partials, cluster mailboxes. */
const STATIC_SHARED_RESERVE = 1024;

/** dtype of x (what the forward normalized), dx and dresidual: the residual's, else x's. */
export const xDType = (spec: KernelSpec): DType => residualDType(spec) ?? spec.dtype;

/** How many column sums the backward keeps: dweight, dbias. */
export const sumCount = (spec: KernelSpec) => (spec.features.weight !== 'none' ? 1 : 0) + (spec.features.bias ? 1 : 0);

/** Floats between partial rows (templates: partial_stride). */
export const partialStride = (hidden: number) => Math.ceil(hidden / 4) * 4;

export const bwdRowsPerCta = (p: BwdParams) => p.threads / p.threadsPerRow;
export const bwdRowInRegisters = (p: BwdParams) => p.storage === 'regs' || p.storage === 'regs-smem';

/** Largest hidden size a variant handles. */
export function bwdCapacity(p: BwdParams): number {
  return p.storage === 'regs' || p.storage === 'regs-smem' ? p.items * p.threadsPerRow * p.vec * (p.cluster ?? 1) : Infinity;
}

/** Shared memory of a ring (templates: BwdRing): x, then dy, of a row per row group in each slot. */
export function bwdRingBytes(spec: KernelSpec, p: BwdParams): number {
  if (!p.stages) return 0;
  const values = p.stages * bwdRowsPerCta(p) * p.items * p.threadsPerRow * p.vec;
  const round16 = (bytes: number) => Math.ceil(bytes / 16) * 16;
  return round16(values * BYTES[xDType(spec)]) + round16(values * BYTES[spec.dtype]);
}

/** Shared memory of a lean kernel's staged weight (templates: staged_w): a row group's columns each. */
export function bwdStagedWeightBytes(spec: KernelSpec, p: BwdParams): number {
  const w = weightDType(spec);
  if (!p.stagedWeight || !w) return 0;
  return Math.ceil((bwdRowsPerCta(p) * p.items * p.threadsPerRow * p.vec * BYTES[w]) / 16) * 16;
}

/**
 * Static shared memory of a kernel (templates): the reserve, plus the staging through which
 * a regs kernel of several rows per CTA adds its groups' column sums (THREADS * VEC floats).
 * Left out of the shared-memory check, lean kernels with a staged weight failed to launch.
 */
export function bwdStaticSharedBytes(spec: KernelSpec, p: BwdParams): number {
  const staging = p.storage === 'regs' && bwdRowsPerCta(p) > 1 && sumCount(spec) > 0 ? p.threads * p.vec * 4 : 0;
  return STATIC_SHARED_RESERVE + staging;
}

/** Shared memory the parameters fix, whatever the hidden size: the ring, then a lean kernel's weight. */
export const bwdFixedSharedBytes = (spec: KernelSpec, p: BwdParams) => bwdRingBytes(spec, p) + bwdStagedWeightBytes(spec, p);

/** Dynamic shared memory of a launch: the sums of regs-smem and loop, then the fixed part. */
export function bwdSharedBytes(spec: KernelSpec, p: BwdParams, hidden: number): number {
  const sums = p.storage === 'regs-smem' || p.storage === 'loop' ? sumCount(spec) * partialStride(hidden) * 4 : 0;
  return sums + bwdFixedSharedBytes(spec, p);
}

/** Widest vector (<= 16 bytes of x and of dy) dividing every row stride. */
export function maxVecBwd(problem: Problem): number {
  let vec = Math.min(16 / BYTES[problem.dtype], 16 / BYTES[xDType(problem)]);
  const s = problem.strides;
  const strides = [s.x, s.y, s.residualOut, ...(residualDType(problem) ? [s.residual] : [])];
  while (vec > 1 && strides.some((st) => st % vec !== 0)) vec /= 2;
  return vec;
}

/**
 * Registers a regs / regs-smem thread needs: x and dy packed as loaded (twice with
 * prefetch), xhat and the weight as floats, the sums when in registers. Lean kernels hold
 * no xhat or weight; re-reading ones no x and dy either.
 */
export function bwdRegsEstimate(spec: KernelSpec, p: Pick<BwdParams, 'storage' | 'items' | 'vec' | 'prefetch' | 'lean' | 'reread'>): number {
  const values = p.items * p.vec;
  const packed = (values * (BYTES[xDType(spec)] + BYTES[spec.dtype])) / 4;
  const sums = (p.storage === 'regs' ? sumCount(spec) : 0) * values;
  if (p.reread) return sums + LEAN_REGISTER_OVERHEAD;
  if (p.lean) return packed + sums + LEAN_REGISTER_OVERHEAD;
  return packed * (p.prefetch ? 2 : 1) + 2 * values + sums + REGISTER_OVERHEAD;
}

/**
 * What a thread holds in registers besides its sums: everything, or (ring kernels) lean,
 * or lean re-reading x and dy; a lean kernel's weight from global memory or staged.
 */
interface Holding {
  lean: boolean;
  reread: boolean;
  stagedWeight: boolean;
}
const HELD: Holding = { lean: false, reread: false, stagedWeight: false };
/** Re-reading kernels stage their weight (staged, they were faster in 13 of 14 comparisons; H200, 2026-11-26). */
const RING_HOLDINGS: Holding[] = [HELD, { lean: true, reread: false, stagedWeight: false }, { lean: true, reread: false, stagedWeight: true }, { lean: true, reread: true, stagedWeight: true }];
/** Absent, not false: the variants of earlier databases keep their params (and ids). */
const holdingParams = (h: Holding) => ({ ...(h.lean ? { lean: true } : {}), ...(h.reread ? { reread: true } : {}), ...(h.stagedWeight ? { stagedWeight: true } : {}) });

/** A thread's chunks of a row (or of a cluster's slice) few enough to hold in registers. */
const heldItemsFit = (items: number, vec: number) => items <= MAX_ITEMS && items * vec <= MAX_VALUES;
/** An estimate within a thread's 255 registers and the SM's 64K for one CTA. */
const registersFit = (regs: number, threads: number) => regs <= 255 && regs * threads <= 65536;

/** Why a variant cannot run a problem on an arch, or null when it can. */
export function bwdUnsupportedReason(problem: Problem, p: BwdParams, arch: Arch): string | null {
  if (problem.hidden > bwdCapacity(p)) return `hidden ${problem.hidden} exceeds capacity ${bwdCapacity(p)}`;
  if (maxVecBwd(problem) % p.vec !== 0) return `vector width ${p.vec} does not divide the row strides`;
  if ((p.cluster ?? 1) > arch.maxCluster) return clusterLimit(arch);
  if (!p.recompute && !problem.features.stats) return 'no saved statistics to read: only recomputing variants run';
  if (bwdSharedBytes(problem, p, problem.hidden) + bwdStaticSharedBytes(problem, p) > arch.maxSharedPerBlock)
    return `the column sums and ring do not fit in ${arch.maxSharedPerBlock} bytes of shared memory`;
  return null;
}

/** At most this many CTAs of a variant fit on an SM (threads and shared memory; registers may allow fewer). */
function mostResidentPerSm(problem: Problem, p: BwdParams, arch: Arch): number {
  const perCta = bwdSharedBytes(problem, p, problem.hidden) + bwdStaticSharedBytes(problem, p);
  return Math.max(1, ctasPerSm(arch, p.threads, perCta));
}

const nextPow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));
const pow2Upto = (n: number) => Array.from({ length: Math.log2(n) + 1 }, (_, i) => 2 ** i);

/**
 * The pruned backward space for one problem: the widest legal vector only (backward
 * moves x and dy alike; narrower never helps bandwidth), rows per CTA no more than the
 * problem has, register footprints that fit, shared memory that fits, recompute only
 * as an alternative when saved statistics exist.
 */
export function enumerateBwdSpace(problem: Problem, arch: Arch): BwdParams[] {
  const out: BwdParams[] = [];
  const vec = maxVecBwd(problem);
  const sums = sumCount(problem);
  const recomputes = problem.features.stats ? [false, true] : [true];
  const rowBytes = problem.hidden * BYTES[xDType(problem)];
  const push = (p: Omit<BwdParams, 'ctasPerSm' | 'recompute' | 'prefetch'>, prefetch = false) => {
    const resident = mostResidentPerSm(problem, { ...p, ctasPerSm: 1, recompute: true, prefetch }, arch);
    for (const recompute of recomputes)
      CTAS_PER_SM_CHOICES.forEach((ctasPerSm, i) => {
        // Asking for more CTAs than can be resident launches the same grid as asking for fewer.
        if (i > 0 && CTAS_PER_SM_CHOICES[i - 1] >= resident) return;
        const q: BwdParams = { ...p, ctasPerSm, recompute, prefetch };
        if (bwdUnsupportedReason(problem, q, arch) === null) out.push(q);
      });
  };
  for (const threads of BWD_THREAD_CHOICES) {
    if (threads > arch.maxThreadsPerSm) continue;
    for (const threadsPerRow of pow2Upto(threads)) {
      if (threadsPerRow * vec >= 2 * problem.hidden && threadsPerRow > 1) continue; // idle lanes
      if (threads / threadsPerRow > nextPow2(problem.rows)) continue; // more rows per CTA than exist
      const items = Math.ceil(problem.hidden / (threadsPerRow * vec));
      const storages: BwdStorage[] = !heldItemsFit(items, vec) ? [] : sums > 0 && threadsPerRow === threads ? ['regs', 'regs-smem'] : ['regs'];
      // Ahead of the current row: nothing, the next row in registers, or a ring of rows.
      const sources = [
        { prefetch: false, stages: 0, ...HELD },
        { prefetch: true, stages: 0, ...HELD },
        ...BWD_STAGE_CHOICES.flatMap((stages) => RING_HOLDINGS.map((holding) => ({ prefetch: false, stages, ...holding }))),
      ];
      for (const storage of storages)
        for (const { prefetch, stages, ...holding } of sources) {
          if (!registersFit(bwdRegsEstimate(problem, { storage, items, vec, prefetch, ...holding }), threads)) continue;
          if ((prefetch || stages) && problem.rows / (threads / threadsPerRow) < 256) continue; // fewer row groups than a GPU has CTAs: no next row
          push({ storage, threads, vec, threadsPerRow, items, ...(stages ? { stages } : {}), ...holdingParams(holding) }, prefetch);
        }
      // Rows split over a cluster: regs through a ring, one row per CTA. A CTA holds only
      // its slice, so this also serves thread counts whose whole row would not fit.
      if (threadsPerRow === threads)
        for (const cluster of BWD_CLUSTER_CHOICES) {
          if (cluster > arch.maxCluster) continue;
          const slice = Math.ceil(problem.hidden / cluster);
          if (slice < MIN_CLUSTER_SLICE || problem.rows < 256) continue;
          const sliceItems = Math.ceil(slice / (threadsPerRow * vec));
          if (!heldItemsFit(sliceItems, vec)) continue;
          for (const stages of BWD_STAGE_CHOICES)
            for (const holding of RING_HOLDINGS) {
              if (!registersFit(bwdRegsEstimate(problem, { storage: 'regs', items: sliceItems, vec, prefetch: false, ...holding }), threads)) continue;
              push({ storage: 'regs', threads, vec, threadsPerRow, items: sliceItems, stages, cluster, ...holdingParams(holding) });
            }
        }
    }
    if (rowBytes >= LONG_ROW_BYTES && threads >= 256) push({ storage: 'loop', threads, vec, threadsPerRow: threads, items: 0 });
  }
  if (out.length === 0) return [genericBwdParams(problem)];
  return out;
}

/** Correct for every shape and alignment, saved statistics or not: sums in global memory, scalar loads, statistics recomputed. */
export function genericBwdParams(_spec: KernelSpec): BwdParams {
  return { storage: 'global', threads: 256, vec: 1, threadsPerRow: 256, items: 0, ctasPerSm: 2, recompute: true, prefetch: false };
}

/**
 * The baseline speedups are reported against: one row per CTA of 256 threads, 16-byte
 * vectors where legal, row and sums in registers when they fit (else loop, else the
 * generic), two CTAs per SM, saved statistics when given.
 */
export function baselineBwdParams(problem: Problem, arch: Arch): BwdParams {
  const vec = maxVecBwd(problem);
  const recompute = !problem.features.stats;
  const items = Math.ceil(problem.hidden / (256 * vec));
  const regs: BwdParams = { storage: 'regs', threads: 256, vec, threadsPerRow: 256, items, ctasPerSm: 2, recompute, prefetch: false };
  if (items <= MAX_ITEMS && items * vec <= MAX_VALUES && bwdRegsEstimate(problem, regs) <= 255) return regs;
  const loop: BwdParams = { storage: 'loop', threads: 256, vec, threadsPerRow: 256, items: 0, ctasPerSm: 2, recompute, prefetch: false };
  return bwdUnsupportedReason(problem, loop, arch) === null ? loop : genericBwdParams(problem);
}

export function describeBwdParams(p: BwdParams): string {
  const parts = [p.storage, `t${p.threads}`, `v${p.vec}`, `tpr${p.threadsPerRow}`];
  if (p.items) parts.push(`i${p.items}`);
  if (p.prefetch) parts.push('prefetch');
  if (p.stages) parts.push(`s${p.stages}`);
  if (p.lean) parts.push('lean');
  if (p.reread) parts.push('reread');
  if (p.stagedWeight) parts.push('sw');
  if (p.cluster) parts.push(`c${p.cluster}`);
  parts.push(`cps${p.ctasPerSm}`, p.recompute ? 'recompute' : 'saved');
  return parts.join('.');
}

/** The persistent grid on a GPU of `sms` SMs: CTAs asked for, at most one per row group. */
export function bwdGrid(p: BwdParams, rows: number, sms: number, residentPerSm = Infinity): number {
  const cluster = p.cluster ?? 1;
  const ctas = Math.min(p.ctasPerSm * sms, residentPerSm * sms, Math.ceil(rows / bwdRowsPerCta(p)) * cluster);
  return Math.max(cluster, Math.floor(ctas / cluster) * cluster);
}

/**
 * Bytes a backward moves at least (the roofline numerator): read x, dy, the weight, the
 * saved statistics when read, dresidual; write dx, dweight, dbias; plus the fp32 partial
 * rows, written once and read once by the reduction (`partialRows` = the grid).
 */
export function bytesMovedBwd(p: Problem, partialRows: number, readsStats: boolean): number {
  const elems = p.rows * p.hidden;
  const xb = BYTES[xDType(p)];
  let bytes = elems * (BYTES[p.dtype] + 2 * xb); // dy; x and dx
  if (residualDType(p)) bytes += elems * xb;
  const w = weightDType(p);
  if (w) bytes += 2 * p.hidden * BYTES[w]; // read weight, write dweight
  const b = biasDType(p);
  if (b) bytes += p.hidden * BYTES[b];
  if (readsStats) bytes += p.rows * 4 * (p.op === 'layernorm' ? 2 : 1);
  bytes += 2 * sumCount(p) * partialRows * p.hidden * 4;
  return bytes;
}
