// The tunable space of the CUDA forward kernel and the constraints that prune it
// before anything is compiled.

import { clusterLimit, ctasPerSm, type Arch } from './arch.js';
import { BYTES, biasDType, residualDType, weightDType, type DType, type KernelSpec, type Problem } from './problem.js';

/**
 * Where a row lives between computing its statistics and normalizing it:
 * - regs:      in registers, as floats; the kernel is specialized for at most `items`
 *              vectors per thread (capacity items * threadsPerRow * vec * cluster);
 * - pipelined: in registers too, with persistent CTAs that prefetch their next row
 *              and keep weight and bias in registers across rows;
 * - smem:      staged in dynamic shared memory, any hidden size that fits;
 * - reload:    read again from global memory (L2) in a second pass; any hidden size;
 * - ring:      persistent CTAs stream rows through `stages` shared-memory slots filled
 *              with cp.async rows ahead, so loads stay in flight without registers;
 *              capacity as regs.
 */
export const STORAGES = ['regs', 'pipelined', 'smem', 'reload', 'ring'] as const;
type RegisterStorage = 'regs' | 'pipelined';
export const inRegisters = (p: CudaParams) => p.storage === 'regs' || p.storage === 'pipelined';
export type Storage = (typeof STORAGES)[number];

export interface CudaParams {
  storage: Storage;
  /** Threads per CTA. */
  threads: number;
  /** Elements per memory access (up to 16 bytes). */
  vec: number;
  /** Threads cooperating on one row; rows per CTA = threads / threadsPerRow. */
  threadsPerRow: number;
  /** regs, pipelined, ring: vectors each thread handles; 0 otherwise. */
  items: number;
  /** CTAs per row, reducing through distributed shared memory (sm90+, fixed-capacity storages). */
  cluster: number;
  /** ring only: rows in the shared-memory ring (loads run stages - 1 rows ahead); 0 otherwise. */
  stages: number;
  /**
   * ring only: weight and bias live in shared memory, copied once per CTA. Set whenever they
   * fit beside the ring (they save L2 traffic); some rings also come without (unstagedTwinOffered).
   */
  stagedWeights: boolean;
  /**
   * The hidden size the kernel is compiled for: a constant, so bounds checks, masks and
   * divisions by hidden fold away (LayerNorm gained 2-15%, test/gpu/fixed-hidden.md).
   * Absent: hidden is read at run time. A fixed variant runs only rows of that size.
   */
  fixedHidden?: number;
  /**
   * regs only: weight and bias of all of a thread's chunks loaded with x, before the
   * row's reductions, instead of chunk by chunk at the stores. Offered for short grids
   * only: there a second memory round trip after the reductions is not hidden behind
   * other CTAs, while on long ones the registers cost occupancy (test/gpu/affine-chunks.md).
   * Absent: at the stores.
   */
  earlyAffine?: boolean;
  /**
   * ring with clusters only: each row's output is written while the next row's cluster
   * exchange is in flight (the exchange's latency hidden behind the stores), at the cost
   * of a slot: loads run stages - 2 rows ahead. Absent: written once its own statistics arrive.
   */
  deferOutput?: boolean;
  /**
   * reload and regs (no cluster): the launch bounds ask for this many resident threads per SM (one of
   * REGISTER_CAPS), which caps registers a thread: 1024 at 64 (LayerNorm without a residual,
   * where ptxas takes 79 otherwise: three CTAs of 256 per SM, not four), 1536 at 40 (every
   * reload CTA of up to 512 threads; ptxas takes 44-64 otherwise), 2048 at 32 (regs kernels of
   * at most FULL_OCCUPANCY_MAX_VALUES values a thread: full occupancy). Capped at 1024, LayerNorm
   * gained 5-16 points of copy bandwidth on long grids (test/gpu/occupancy-reload.md) and
   * lost 2.5-3 on short ones (131072 x 128): the tuner decides. Register kernels are offered
   * the same caps where their row leaves REGS_CAP_SPARE_REGISTERS under them (bf16 LayerNorm
   * 16384 x 32768: regs.t512.tpr512.i4.h16384 at 1024, 62 registers and two CTAs an SM
   * instead of 70 and one, 514 us against 758 uncapped in the H200 tune of 2026-12-01). Absent: no cap.
   * (Databases before 2026-11-29 record the 1024 cap as `true`; they load as 1024.)
   */
  registerCap?: number;
  /**
   * ring (not deferred) of at most HOLD_MAX_THREADS threads whose thread holds more than 32 row
   * values, at most HOLD_MAX_VALUES: the row's values stay in registers (as floats) after the
   * first pass, as rings of fewer values always do, instead of being read back from the slot
   * and converted in each later pass. A CTA that shared memory already holds alone on an SM
   * has the registers to spare. Absent: read back.
   */
  holdRow?: boolean;
}

export const THREAD_CHOICES = [64, 128, 256, 512, 1024];
export const CLUSTER_CHOICES = [1, 2, 4, 8, 16];
/** Ring depths; 4 was measured never ahead of 2 and 3 (H200, 2026-11-26). */
export const STAGE_CHOICES = [2, 3];
/** Ring depths of deferred-output variants: one slot holds the row waiting to be stored. */
export const DEFERRED_STAGE_CHOICES = [3, 4];
/**
 * Shortest rows offered deferred output: in the H200 default-grid tune no deferred variant
 * came within 2% of the best on any of the 576 problems of hidden 4096-32768 (it won 38 of
 * the 136 at 65536 and 131072), and they were 9% of the tune's measurements.
 */
export const DEFERRED_MIN_HIDDEN = 65536;
/** Fewest threads of a ring CTA: smaller ones needed 150+ registers and were never ahead. */
const MIN_RING_THREADS = 128;
/**
 * Most vectors per thread in a ring slice (the passes over it are unrolled). More were
 * never within 1% of the best on 400 problems (H200) and cost the most compile time.
 */
export const MAX_RING_ITEMS = 8;
/** Most vectors one thread keeps in registers. */
export const MAX_ITEMS = 16;
/** Most row elements one thread keeps in registers (more spill, or starve occupancy). */
export const MAX_VALUES: Record<RegisterStorage, number> = { regs: 64, pipelined: 32 };
/**
 * Most values a `regs` thread keeps with a fused residual in CTAs of 512 or more threads
 * (at most 128 registers each): x and the residual of every chunk are loaded before any
 * is converted, and 56-64 values spilled there (nvcc 13.0, sm90).
 */
const MAX_RESIDUAL_VALUES_WIDE_CTA = 48;
/** Registers the kernel needs besides the row values (pointers, indices, sums). */
const REGISTER_OVERHEAD = 40;
/**
 * Registers a capped regs kernel must leave beside its row's values: nvcc 13.0 fits
 * regs.t512.v8.tpr512.i4 (32 values, bf16 LayerNorm 16384) in 62 registers under the
 * 1024-thread cap without spilling (78 packed and 70 as floats uncapped), and every capped
 * regs kernel of the default grid's specs with this much to spare compiled without spills
 * for sm_90a (809 of them, 2026-12-01; test/nvcc.test.ts checks three problems' worth).
 */
export const REGS_CAP_SPARE_REGISTERS = 30;
/** Most rows of a problem whose regs variants also come with early weight and bias loads. */
const EARLY_AFFINE_MAX_ROWS = 128;
/**
 * Registers early weight and bias loads must leave spare by the estimate (values, packed
 * weight and bias, overhead), which runs low for them: in the H200 default-grid tune, 19 of
 * 3948 such kernels spilled, all with less than 24 registers spare by it; none of the 384
 * early winners had less.
 */
const EARLY_AFFINE_SPARE_REGISTERS = 24;
/**
 * Most rows a problem of 16-bit values may have for pipelined variants. In two H200
 * default-grid tunes (templates ac4302682350 and 4d196a0a3d8c) none came within 0.5% of the
 * best at 128 rows or more (7515 measurements each); at 1-32 rows they won three fp16
 * LayerNorm problems (hidden 12288) by 2-4%.
 */
const PIPELINED_16BIT_MAX_ROWS = 32;
/**
 * Shortest fp32 rows offered ring variants: in the same two tunes none below 65536 came
 * within 0.5% of the best (14754-19410 measurements); at 65536 and 131072 they win.
 */
const FP32_RING_MIN_HIDDEN = 65536;
/**
 * Most rows of a problem whose looping variants (smem, reload, ring) come only compiled for
 * its hidden size. In the H200 default-grid tune of 2026-11-27 (templates 7c711851f0c6, small
 * problems timed cold) none of the 19014 measurements of such variants for any hidden size
 * came within 3.9% of the best at 1-128 rows (at 512 rows, 10 came within 2%).
 */
const LOOPING_FIXED_ONLY_MAX_ROWS = 128;
/** Rows shorter than this many bytes never benefit from staging or reloading. */
const LONG_ROW_BYTES = 8 * 1024;
/** smem and reload CTAs take at most this many rows (more were never ahead on the H200). */
const MAX_LOOPING_ROWS_PER_CTA = 4;
/**
 * smem and reload rows get at least this many threads, reload CTAs at least
 * MIN_RELOAD_THREADS. In the H200 default-grid tunes of 2026-11-28 and 2026-11-29 none of
 * the 6105 measurements of the narrower ones (4.6% of each tune) reached a final re-timing,
 * and none came within 2.3% of the problem's best.
 */
const MIN_LOOPING_THREADS_PER_ROW = 64;
const MIN_RELOAD_THREADS = 128;
/**
 * Staged rows split over a cluster (each CTA stages its slice): from this hidden size, in
 * CTAs of at least SMEM_CLUSTER_MIN_THREADS, clusters of SMEM_CLUSTER_CHOICES. One CTA of
 * 1024 threads staging a whole 64K-element 16-bit row led every other kernel there by 4-5
 * points (H200, 2026-11-27); a row of 128K elements does not fit one CTA.
 */
const SMEM_CLUSTER_MIN_HIDDEN = 32768;
const SMEM_CLUSTER_MIN_THREADS = 256;
const SMEM_CLUSTER_CHOICES = [2, 4];

export const rowsPerCta = (p: CudaParams) => p.threads / p.threadsPerRow;

/** Element size of what smem mode stages: the residual sum when fused, else x. */
export function stageBytes(spec: KernelSpec): number {
  return BYTES[residualDType(spec) ?? spec.dtype];
}

/** Widest vector (<= 16 bytes) dividing every row stride, so every access is aligned. */
export function maxVec(problem: Problem): number {
  let vec = 16 / BYTES[problem.dtype];
  const r = residualDType(problem);
  if (r) vec = Math.min(vec, 16 / BYTES[r]);
  const s = problem.strides;
  const strides = r ? [s.x, s.y, s.residual, s.residualOut] : [s.x, s.y];
  while (vec > 1 && strides.some((st) => st % vec !== 0)) vec /= 2;
  return vec;
}

const nextPow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));
const pow2Upto = (n: number) => Array.from({ length: Math.log2(n) + 1 }, (_, i) => 2 ** i);

/** Largest hidden size a variant handles (Infinity when it loops over the row). */
export function capacity(p: CudaParams): number {
  return inRegisters(p) || p.storage === 'ring' ? p.items * p.threadsPerRow * p.vec * p.cluster : Infinity;
}

/** Room left for the kernels' static shared memory (reduction partials). */
const STATIC_SHARED_RESERVE = 1024;
/** The dynamic shared memory a forward kernel may take on an arch (the package's selection checks it too). */
export const maxDynamicSharedBytes = (arch: Arch) => arch.maxSharedPerBlock - STATIC_SHARED_RESERVE;
const roundUp16 = (bytes: number) => Math.ceil(bytes / 16) * 16;

/**
 * Shared memory of a ring: x slots, residual slots, then (when staged) the CTA's slice of
 * weight and bias, each region rounded up to 16 bytes (RingLayout in the template).
 */
export function ringSharedBytes(spec: KernelSpec, p: CudaParams): number {
  return ringSlotBytes(spec, p) + (p.stagedWeights ? stagedWeightBytes(spec, p) : 0);
}

function ringSlotBytes(spec: KernelSpec, p: CudaParams): number {
  const elements = p.stages * rowsPerCta(p) * p.items * p.threadsPerRow * p.vec;
  const r = residualDType(spec);
  return roundUp16(elements * BYTES[spec.dtype]) + (r ? roundUp16(elements * BYTES[r]) : 0);
}

function stagedWeightBytes(spec: KernelSpec, p: CudaParams): number {
  const slice = p.items * p.threadsPerRow * p.vec;
  const w = weightDType(spec);
  const b = biasDType(spec);
  return (w ? roundUp16(slice * BYTES[w]) : 0) + (b ? roundUp16(slice * BYTES[b]) : 0);
}

/** Dynamic shared memory a launch needs for this hidden size. */
export function dynamicSharedBytes(spec: KernelSpec, p: CudaParams, hidden: number): number {
  if (p.storage === 'ring') return ringSharedBytes(spec, p);
  if (p.storage !== 'smem') return 0;
  const slice = Math.ceil(hidden / (p.cluster * p.vec)) * p.vec; // with a cluster, each CTA's share
  return rowsPerCta(p) * slice * stageBytes(spec);
}

/** Why a variant cannot run a problem on an arch, or null when it can. */
export function unsupportedReason(problem: Problem, p: CudaParams, arch: Arch): string | null {
  if (p.fixedHidden !== undefined && p.fixedHidden !== problem.hidden) return `compiled for hidden ${p.fixedHidden}`;
  if (problem.hidden > capacity(p)) return `hidden ${problem.hidden} exceeds capacity ${capacity(p)}`;
  if (maxVec(problem) % p.vec !== 0) return `vector width ${p.vec} does not divide the row strides`;
  if (p.cluster > arch.maxCluster) return clusterLimit(arch);
  if (dynamicSharedBytes(problem, p, problem.hidden) > maxDynamicSharedBytes(arch))
    return `row does not fit in ${arch.maxSharedPerBlock} bytes of shared memory`;
  return null;
}

/**
 * The pruned space for one problem. Constraints drop what cannot be right (capacity,
 * alignment, shared memory, clusters) and what cannot be fast: narrow vectors when
 * 16-byte ones are legal, rows whose first chunk leaves most lanes idle, more rows per
 * CTA than the problem has, register footprints that must spill.
 */
export function enumerateSpace(problem: Problem, arch: Arch): CudaParams[] {
  const out: CudaParams[] = [];
  const widest = maxVec(problem);
  // Only the widest legal vector: narrower ones cost 40% of the measurements and were
  // never more than 1% ahead (one problem of 108: 2.8%; H200, 2026-11-26).
  const vecs = [widest];
  const rowBytes = problem.hidden * BYTES[problem.dtype];
  for (const threads of THREAD_CHOICES) {
    if (threads > arch.maxThreadsPerSm) continue;
    for (const vec of vecs) {
      for (const threadsPerRow of pow2Upto(threads)) {
        const rows = threads / threadsPerRow;
        if (threadsPerRow * vec >= 2 * problem.hidden && threadsPerRow > 1) continue; // idle lanes
        if (rows > nextPow2(problem.rows)) continue; // more rows per CTA than exist
        for (const cluster of CLUSTER_CHOICES) {
          if (!clusterFits(problem, arch, threads, rows, cluster)) continue;
          const items = Math.ceil(problem.hidden / (threadsPerRow * vec * cluster));
          for (const storage of ['regs', 'pipelined'] as const) {
            if (storage === 'pipelined' && problem.dtype !== 'fp32' && problem.rows > PIPELINED_16BIT_MAX_ROWS) continue;
            const regs = regsEstimate(problem, storage, items * vec, cluster);
            if (items > MAX_ITEMS || items * vec > MAX_VALUES[storage] || !fitsRegisterFile(regs, threads)) continue;
            const residualSpills = storage === 'regs' && residualDType(problem) && threads >= 512 && items * vec > MAX_RESIDUAL_VALUES_WIDE_CTA;
            if (residualSpills) continue;
            const p: CudaParams = { storage, threads, vec, threadsPerRow, items, cluster, stages: 0, stagedWeights: false };
            out.push(p);
            if (storage === 'regs' && cluster === 1)
              for (const registerCap of regsCapsOffered(problem, threads, items * vec)) out.push({ ...p, registerCap });
            const early = regs + affineWords(problem, items * vec) + EARLY_AFFINE_SPARE_REGISTERS;
            if (storage === 'regs' && hasAffine(problem) && problem.rows <= EARLY_AFFINE_MAX_ROWS && fitsRegisterFile(early, threads))
              out.push({ ...p, earlyAffine: true });
          }
        }
        if (rowBytes >= LONG_ROW_BYTES && threadsPerRow >= MIN_LOOPING_THREADS_PER_ROW && rows <= MAX_LOOPING_ROWS_PER_CTA) {
          for (const storage of ['smem', 'reload'] as const) {
            if (storage === 'reload' && threads < MIN_RELOAD_THREADS) continue;
            const p: CudaParams = { storage, threads, vec, threadsPerRow, items: 0, cluster: 1, stages: 0, stagedWeights: false };
            if (unsupportedReason(problem, p, arch) !== null) continue;
            out.push(p);
            if (storage === 'reload') for (const registerCap of registerCapsOffered(problem, threads)) out.push({ ...p, registerCap });
          }
        }
        if (problem.hidden >= SMEM_CLUSTER_MIN_HIDDEN && threads >= SMEM_CLUSTER_MIN_THREADS)
          for (const cluster of SMEM_CLUSTER_CHOICES) {
            if (!clusterFits(problem, arch, threads, rows, cluster)) continue;
            const p: CudaParams = { storage: 'smem', threads, vec, threadsPerRow, items: 0, cluster, stages: 0, stagedWeights: false };
            if (unsupportedReason(problem, p, arch) === null) out.push(p);
          }
        const ringOffered = problem.dtype !== 'fp32' || problem.hidden >= FP32_RING_MIN_HIDDEN;
        if (vec === widest && ringOffered) out.push(...ringVariants(problem, arch, threads, vec, threadsPerRow));
      }
    }
  }
  // Tiny problems (one row of one element) prune everything: the generic variant runs anything.
  if (out.length === 0) out.push(GENERIC_PARAMS);
  // Each variant also compiled for this hidden size: the tuner decides (it costs some
  // variants registers, and with them occupancy). Few rows: looping ones only that way.
  const anyHidden = problem.rows <= LOOPING_FIXED_ONLY_MAX_ROWS && out.length > 1 ? out.filter(inRegisters) : out;
  return [...anyHidden, ...out.map((p) => ({ ...p, fixedHidden: problem.hidden }))];
}

/**
 * Resident threads per SM a register-capped reload or regs CTA may ask for in its launch bounds
 * (registers a thread: 64, 40 and 32). 2048 is for regs kernels only (FULL_OCCUPANCY_MAX_VALUES).
 */
export const REGISTER_CAPS = [1024, 1536, 2048] as const;

/**
 * The full-occupancy cap (2048 threads an SM at 32 registers, as torch.compile's persistent
 * reductions run) is offered to regs kernels only, where a thread holds at most this many
 * values, fp16 LayerNorm's excepted: nvcc 13.0 fits all 433 such kernels of the default
 * grid's specs in 32 registers without spilling (2026-12-01), where all 15 of fp16
 * LayerNorm's spilled, and so did 16 values (fp32 RMSNorm t256.i4, bf16 LayerNorm t512.i2)
 * and reload kernels at four chunks a step (test/gpu/occupancy-reload.md).
 */
export const FULL_OCCUPANCY_MAX_VALUES = 8;

/**
 * The caps offered to a reload CTA of this size (and, as regsCapsOffered narrows them, a regs
 * one): 1024 to LayerNorm without a residual (the only kernels above 64 registers), 1536 to
 * every CTA that divides it; none that a CTA reaches uncapped (1024 threads).
 */
export function registerCapsOffered(problem: Problem, threads: number): number[] {
  return REGISTER_CAPS.filter(
    (cap) => cap !== 2048 && threads < cap && cap % threads === 0 && (cap !== 1024 || (problem.op === 'layernorm' && residualDType(problem) === null)),
  );
}

/**
 * The caps offered to a regs CTA (no cluster) whose threads hold `values` row values each:
 * those of registerCapsOffered where the row leaves REGS_CAP_SPARE_REGISTERS under the cap,
 * and the full-occupancy cap where the row is at most FULL_OCCUPANCY_MAX_VALUES.
 */
export function regsCapsOffered(problem: Problem, threads: number, values: number): number[] {
  const caps = registerCapsOffered(problem, threads).filter((cap) => values + REGS_CAP_SPARE_REGISTERS <= REGISTER_FILE / cap);
  const fullOccupancy = threads < 2048 && values <= FULL_OCCUPANCY_MAX_VALUES && !(problem.op === 'layernorm' && problem.dtype === 'fp16');
  return fullOccupancy ? [...caps, 2048] : caps;
}

/**
 * Clusters split one row (one row per CTA) over CTAs that each keep at least 2048 columns.
 * A LayerNorm exchange holds every CTA's (count, mean, squared deviations) at once, 4
 * registers a CTA: past 8 CTAs that must fit beside the kernel's overhead (1024-thread CTAs,
 * at most 64 registers a thread, spilled: 2026-11-27, nvcc 13.0).
 */
function clusterFits(problem: Problem, arch: Arch, threads: number, rowsPerCta: number, cluster: number): boolean {
  if (cluster === 1) return true;
  if (cluster > arch.maxCluster || rowsPerCta !== 1 || problem.hidden / cluster < 2048) return false;
  return problem.op !== 'layernorm' || cluster <= 8 || fitsRegisterFile(REGISTER_OVERHEAD + 4 * cluster, threads);
}

/**
 * Ring variants for one shape of CTA: every cluster size and ring depth that fits in
 * shared memory. cp.async moves at least 4 bytes, so 2-byte scalars are left out.
 */
function ringVariants(problem: Problem, arch: Arch, threads: number, vec: number, threadsPerRow: number): CudaParams[] {
  const r = residualDType(problem);
  if (threads < MIN_RING_THREADS || vec * BYTES[problem.dtype] < 4 || (r && vec * BYTES[r] < 4)) return [];
  const out: CudaParams[] = [];
  const rows = threads / threadsPerRow;
  for (const cluster of CLUSTER_CHOICES) {
    if (!clusterFits(problem, arch, threads, rows, cluster)) continue;
    const items = Math.ceil(problem.hidden / (threadsPerRow * vec * cluster));
    if (items > MAX_RING_ITEMS) continue;
    const depths = [
      ...STAGE_CHOICES.map((stages) => ({ stages, deferOutput: false })),
      ...(cluster > 1 && problem.hidden >= DEFERRED_MIN_HIDDEN ? DEFERRED_STAGE_CHOICES.map((stages) => ({ stages, deferOutput: true })) : []),
    ];
    for (const { stages, deferOutput } of depths) {
      const unstaged: CudaParams = { storage: 'ring', threads, vec, threadsPerRow, items, cluster, stages, stagedWeights: false, ...(deferOutput ? { deferOutput } : {}) };
      const p = stagedRing(problem, unstaged, arch) ?? unstaged;
      if (unsupportedReason(problem, p, arch) !== null) continue;
      out.push(p);
      if (p.stagedWeights && unstagedTwinOffered(problem, arch, p)) out.push(unstaged);
      const values = items * vec;
      if (!deferOutput && threads <= HOLD_MAX_THREADS && values > HELD_ANYWAY_VALUES && values <= HOLD_MAX_VALUES) out.push({ ...p, holdRow: true });
    }
  }
  return out;
}

/**
 * Staged weight and bias are a copy per CTA. Where that copy leaves room for fewer CTAs an SM
 * than the slots alone, the ring is offered unstaged too (weight and bias read through L1,
 * one copy an SM), on the problems where that was measured to pay: 512-2048 rows, clusters of
 * at most 2. In an H200 tune of 84 problems (bf16 and fp16 RMSNorm and LayerNorm, hidden
 * 4096-131072, rows 512-8192; test/gpu/unstaged-rings.md) a twin was the fastest final on 17
 * of them (bf16 LayerNorm 12288 x 512: 8% ahead in a second tune); 34 of the 44 twins that
 * screened within 1% of the best other variant had a cluster of 1 or 2, none was at 8192 rows.
 */
function unstagedTwinOffered(problem: Problem, arch: Arch, staged: CudaParams): boolean {
  const rowsFit = problem.rows >= UNSTAGED_TWIN_ROWS[0] && problem.rows <= UNSTAGED_TWIN_ROWS[1];
  return rowsFit && staged.cluster <= UNSTAGED_TWIN_MAX_CLUSTER && ringsPerSm(problem, arch, staged) < ringsPerSm(problem, arch, { ...staged, stagedWeights: false });
}
const UNSTAGED_TWIN_ROWS = [512, 2048] as const;
const UNSTAGED_TWIN_MAX_CLUSTER = 2;

/** The ring with weight and bias staged in shared memory, where it has some and they fit; else null. */
function stagedRing(problem: Problem, ring: CudaParams, arch: Arch): CudaParams | null {
  const staged: CudaParams = { ...ring, stagedWeights: true };
  return stagedWeightBytes(problem, staged) > 0 && unsupportedReason(problem, staged, arch) === null ? staged : null;
}

/** A ring whose weight and bias would fit staged but are read through L1: an unstaged twin. */
export const isUnstagedTwin = (problem: Problem, p: CudaParams, arch: Arch) =>
  p.storage === 'ring' && !p.stagedWeights && stagedRing(problem, p, arch) !== null;

/** CTAs of a ring an SM has the shared memory and threads for (STATIC_SHARED_RESERVE counts the system's KiB a CTA). */
const ringsPerSm = (spec: KernelSpec, arch: Arch, p: CudaParams) => ctasPerSm(arch, p.threads, ringSharedBytes(spec, p) + STATIC_SHARED_RESERVE);

/** The rings offered holdRow: CTAs of up to 256 threads (255 registers each), up to 64 values a thread. */
const HOLD_MAX_THREADS = 256;
const HOLD_MAX_VALUES = 64;
/** Rings of up to 1023 threads with at most this many values a thread hold their row anyway (the template's kHold). */
const HELD_ANYWAY_VALUES = 32;

/**
 * Registers a thread needs for `values` row elements: regs keeps them as floats;
 * pipelined also keeps the prefetched row, weight and bias, and needs a few more for
 * bf16 conversions and for cluster reductions (fitted to nvcc 13.0's counts at 512
 * threads, where those variants spilled and nothing that won on the H200 is cut).
 */
export function regsEstimate(spec: KernelSpec, storage: RegisterStorage, values: number, cluster = 1): number {
  if (storage === 'regs') return values + REGISTER_OVERHEAD;
  const row = packedWords(spec.dtype, values) + packedWords(residualDType(spec), values);
  const extra = (spec.dtype === 'bf16' ? 8 : 0) + (cluster > 1 ? 4 : 0);
  return values + 2 * row + affineWords(spec, values) + REGISTER_OVERHEAD + extra;
}

/** Whether `regs` registers a thread are legal and fit the register file for a CTA of `threads`. */
const REGISTER_FILE = 65536;  // 32-bit registers an SM
const fitsRegisterFile = (regs: number, threads: number) => regs <= 255 && regs * threads <= REGISTER_FILE;

/** Threads an SM holds at most (sm80, sm90, sm100; sm86, sm89 and sm120 hold 1536). */
const MAX_THREADS_PER_SM = 2048;

/**
 * CTAs of `threads` an SM holds as far as its registers go, each thread taking `registers`:
 * a warp's are allocated 256 at a time from one of the SM's four quarters of the register
 * file (the whole file's count can be more: ptxas then fits launch bounds asking for it in
 * fewer registers). At least 1, at most the thread limit's.
 */
export function ctasByRegisters(threads: number, registers: number): number {
  const perWarp = Math.ceil((registers * 32) / 256) * 256;
  const warpsByRegisters = 4 * Math.floor(REGISTER_FILE / 4 / perWarp);
  return Math.max(1, Math.min(Math.floor(MAX_THREADS_PER_SM / threads), Math.floor(warpsByRegisters / Math.ceil(threads / 32))));
}

/** Registers that `values` elements of dtype `d` (none: absent) take, packed as loaded. */
const packedWords = (d: DType | null, values: number) => (d ? (values * BYTES[d]) / 4 : 0);

const hasAffine = (spec: KernelSpec) => weightDType(spec) !== null || biasDType(spec) !== null;

/** Registers that `values` elements of weight and bias take, packed as loaded. */
const affineWords = (spec: KernelSpec, values: number) => packedWords(weightDType(spec), values) + packedWords(biasDType(spec), values);

/** Correct for every shape and alignment: one CTA of 256 threads per row, scalar loads. */
export const GENERIC_PARAMS: CudaParams = {
  storage: 'reload',
  threads: 256,
  vec: 1,
  threadsPerRow: 256,
  items: 0,
  cluster: 1,
  stages: 0,
  stagedWeights: false,
};

/**
 * The baseline speedups are reported against: one row per CTA, 256 threads,
 * 16-byte vectors (narrower only where alignment forces it), row in registers when
 * it fits, else reloaded.
 */
export function baselineParams(problem: Problem): CudaParams {
  const vec = maxVec(problem);
  const items = Math.ceil(problem.hidden / (256 * vec));
  if (items <= MAX_ITEMS && items * vec <= MAX_VALUES.regs && regsEstimate(problem, 'regs', items * vec) <= 255)
    return { storage: 'regs', threads: 256, vec, threadsPerRow: 256, items, cluster: 1, stages: 0, stagedWeights: false };
  return { storage: 'reload', threads: 256, vec, threadsPerRow: 256, items: 0, cluster: 1, stages: 0, stagedWeights: false };
}

/** A cap's part of a variant's name and id: `cap` for 1024 (the first, named before there were others), else `cap<threads>`. */
export const capName = (cap: number) => (cap === 1024 ? 'cap' : `cap${cap}`);

export function describeParams(p: CudaParams): string {
  const parts = [p.storage, `t${p.threads}`, `v${p.vec}`, `tpr${p.threadsPerRow}`];
  if (inRegisters(p) || p.storage === 'ring') parts.push(`i${p.items}`);
  if (p.cluster > 1) parts.push(`c${p.cluster}`);
  if (p.stages > 0) parts.push(`s${p.stages}`);
  if (p.stagedWeights) parts.push('sw');
  if (p.earlyAffine) parts.push('early');
  if (p.deferOutput) parts.push('defer');
  if (p.registerCap) parts.push(capName(p.registerCap));
  if (p.holdRow) parts.push('hold');
  if (p.fixedHidden) parts.push(`h${p.fixedHidden}`);
  return parts.join('.');
}
