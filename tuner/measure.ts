// One measurement: a variant run on a problem by the bench runner, verified against
// the float64 reference on the device and optionally timed.

import { biasDType, bytesMoved, residualDType, weightDType, type Problem } from '../generator/problem.js';
import { OUTPUT_TOLERANCE, STATS_TOLERANCE } from '../generator/tolerance.js';
import { launchGeometry, type Variant } from '../generator/variant.js';
import { timedSymbol, twinSymbol } from '../generator/render-cuda.js';
import type { Runner, RunnerReply } from './runner.js';

export const EPS = 1e-6;
export const SEED = 20261125;

export type Status = 'OK' | 'INCORRECT' | 'NONDETERMINISTIC' | 'COMPILE_ERROR' | 'SPILLS' | 'RUNTIME_ERROR' | 'LAUNCH_ERROR' | 'LOAD_ERROR' | 'TIMEOUT' | 'TOO_LARGE' | 'BAD_REQUEST';

/**
 * A run that went wrong. A variant whose registers spill is not one: the tuner drops it
 * at compile time and never times it, so verify, tune's progress and the
 * fault test report it apart.
 */
export const isFailure = (r: { status: string }) => r.status !== 'OK' && r.status !== 'SPILLS';
export const isDropped = (r: { status: string }) => r.status === 'SPILLS';

export interface RunOptions {
  verify: boolean;
  time: boolean;
  /** Write the outputs to files with this prefix (for a check against the TS reference). */
  dump?: string;
  samples?: number;
  sampleMs?: number;
  /** The fewest samples when one sample (every input copy once) already outlasts sampleMs. */
  minSamples?: number;
  timeoutMs?: number;
  /** Stop after one sample when it is slower than this (long kernels only; screening). */
  cutoffUs?: number;
  /** Rotate over at most this many input copies (screening; fewer than a cold L2 may need). */
  maxCopies?: number;
  /** Capture a graph of its own rather than retarget the last variant's (a check of the reuse). */
  freshGraph?: boolean;
  /** Ask the runner for its host time by phase (phasesUs in the reply). */
  phases?: boolean;
  /** With programmatic launch: at least this many launches a graph (a chain's steady state, up to ~8 ms). */
  chainLaunches?: number;
  /** Run the variant's plain twin `<symbol>_plain` (its unit compiled with twins): what a package launches plainly. */
  plainTwin?: boolean;
  /**
   * With plainTwin, launched plainly: time the twin and the kernel itself both and keep the
   * faster (plainLaunch); which one wins depends on the kernel and the shape (the runner's time_counterpart).
   */
  comparePlain?: boolean;
  /**
   * Kernels that count on L1 holding x's rows for a second pass (rereadsRowsFromL1) are also
   * timed with weight and bias at addresses this many bytes apart and congruent to x's, and
   * keep the slower time (see the runner's AliasedAffine).
   */
  affineAliasBytes?: number;
  /**
   * With programmatic launch: time the kernel releasing the next grid at its start and after
   * its wait, and keep the faster (finals of short problems; see finalOptions).
   */
  compareRelease?: boolean;
  /**
   * With programmatic launch: time persistent clustered kernels (releasesAtExitCompared) also
   * releasing the next grid only as they exit, and keep the fastest release point.
   */
  compareExit?: boolean;
}

/**
 * Weight and bias apart by the period of the H200's L1 sets (64 KiB, test/gpu/placement.md) for
 * the second placement of kernels that re-read rows from L1. Elsewhere a second placement at
 * worst times the kernel twice.
 */
export const AFFINE_ALIAS_BYTES = 64 * 1024;

/**
 * Finals of problems moving at most this many bytes (about 16 us on an H200) are timed with
 * the next grid released at the kernel's start and after its wait, and keep the faster: in
 * graphs of back-to-back launches either was 10-25% the faster on problems of 8-512 rows,
 * while on larger ones they were within 0.5% (test/gpu/release-late.md).
 */
export const RELEASE_COMPARE_MAX_BYTES = 64e6;

/**
 * Whether a kernel reads x twice counting on L1 to hold its rows between the passes: reload
 * kernels without a residual (with one, pass two reads the sum it wrote, from L2). Where the
 * weight and bias lie decides whether the rows stay there (test/gpu/placement.md).
 */
export const rereadsRowsFromL1 = (problem: Problem, v: Variant) => v.params.storage === 'reload' && residualDType(problem) === null;

/**
 * Whether a kernel's finals also time it releasing the next grid only as it exits: persistent
 * kernels in clusters. Their grid is as many clusters as fit at once, each with a fixed share
 * of the rows; released early, the next grid's clusters are placed as this one's retire, and
 * in long chains ran 3-20% slower, with a wide spread, than placed on an empty GPU
 * (test/gpu/release-points.md). Other kernels lost 0-12% releasing at their exit.
 */
export const releasesAtExitCompared = (problem: Problem, v: Variant) => {
  const g = launchGeometry(v, problem.rows, problem.hidden);
  return g.persistent && g.cluster > 1;
};

/** The request fields that say whether and how to verify and time (forward and backward alike). */
export function timingFields(o: RunOptions): Record<string, unknown> {
  return {
    verify: o.verify,
    time: o.time,
    dump: o.dump ?? '',
    samples: o.samples ?? 15,
    sampleMs: o.sampleMs ?? 1,
    ...(o.minSamples ? { minSamples: o.minSamples } : {}),
    ...(o.cutoffUs ? { cutoffUs: o.cutoffUs } : {}),
    ...(o.maxCopies ? { maxCopies: o.maxCopies } : {}),
    ...(o.chainLaunches ? { chainLaunches: o.chainLaunches } : {}),
    ...(o.freshGraph ? { freshGraph: true } : {}),
    ...(o.phases ? { phases: true } : {}),
  };
}

export function runRequest(problem: Problem, v: Variant, cubin: string, o: RunOptions): Record<string, unknown> {
  const g = launchGeometry(v, problem.rows, problem.hidden);
  const resType = residualDType(problem);
  const tol = OUTPUT_TOLERANCE[problem.dtype];
  const resTol = OUTPUT_TOLERANCE[resType ?? problem.dtype];
  return {
    cmd: 'run',
    cubin,
    symbol: timedSymbol(v, o.plainTwin, problem.rows),
    grid: g.grid,
    block: g.block,
    smem: g.sharedBytes,
    cluster: g.cluster,
    persistent: g.persistent,
    op: problem.op,
    dtype: problem.dtype,
    residual: resType ?? 'none',
    weight: weightDType(problem) ?? 'none',
    bias: biasDType(problem) ?? 'none',
    offset: problem.features.weightOffset,
    stats: problem.features.stats,
    rows: problem.rows,
    hidden: problem.hidden,
    xStride: problem.strides.x,
    yStride: problem.strides.y,
    residualStride: problem.strides.residual,
    residualOutStride: problem.strides.residualOut,
    eps: EPS,
    seed: SEED,
    atol: tol.atol,
    rtol: tol.rtol,
    resAtol: resTol.atol,
    resRtol: resTol.rtol,
    statsAtol: STATS_TOLERANCE.atol,
    statsRtol: STATS_TOLERANCE.rtol,
    ...timingFields(o),
    ...(o.time && o.affineAliasBytes && rereadsRowsFromL1(problem, v) ? { affineAlias: o.affineAliasBytes } : {}),
    ...(o.time && o.compareRelease ? { compareRelease: true } : {}),
    ...(o.time && o.compareExit && releasesAtExitCompared(problem, v) ? { compareExit: true } : {}),
    ...(o.time && o.plainTwin && o.comparePlain ? { compareSymbol: counterpart(v, problem.rows) } : {}),
  };
}

/** Which of a variant's two kernels a plain launch runs: its plain twin or the kernel itself. */
export type PlainLaunch = 'twin' | 'kernel';
export const PLAIN_LAUNCHES: readonly PlainLaunch[] = ['twin', 'kernel'];

/** The kernel of a variant that timedSymbol does not pick on `rows` rows (plain launches, twins compiled). */
const counterpart = (v: Variant, rows: number) => (timedSymbol(v, true, rows) === v.symbol ? twinSymbol(v.symbol) : v.symbol);

/** The comparison of a variant's twin and kernel, where the runner made one (comparePlain). */
function plainComparison(request: Record<string, unknown>, v: Variant, reply: RunnerReply): Partial<Measurement> {
  if (typeof reply.timedUs !== 'number' || typeof reply.comparedUs !== 'number') return {};
  const timedTwin = request.symbol === twinSymbol(v.symbol);
  const [twinUs, kernelUs] = timedTwin ? [reply.timedUs, reply.comparedUs] : [reply.comparedUs, reply.timedUs];
  return { twinUs, kernelUs, plainLaunch: timedTwin !== (reply.compared === true) ? 'twin' : 'kernel' };
}

/**
 * Where a kernel releases the next grid of a chain of programmatic launches, past its start
 * (the default): after its own wait, or never (the next grid launches as it exits).
 */
export const RELEASE_POINTS = ['late', 'exit'] as const;
export type ReleasePoint = (typeof RELEASE_POINTS)[number];

const isReleasePoint = (v: unknown): v is ReleasePoint => (RELEASE_POINTS as readonly unknown[]).includes(v);

export interface Measurement {
  status: Status;
  error?: string;
  medianUs?: number;
  minUs?: number;
  maxUs?: number;
  samples?: number;
  gbps?: number;
  fractionOfCopy?: number;
  /** Largest error over tolerance per checked output (<= 1 passes). */
  errors?: Record<string, number>;
  /** Where the check failed: output name -> count of bad elements. */
  bad?: Record<string, number>;
  /** Input copies the timing rotated over (fewer than its finals': a screening that ran warmer). */
  copies?: number;
  /** Timed in two placements of weight and bias (affineAliasBytes): each median; medianUs is the slower. */
  usualUs?: number;
  aliasedUs?: number;
  /**
   * Where it was fastest releasing the next grid, when timed at several points (compareRelease,
   * compareExit): after its wait or only as it exits; absent, at its start. The package launches it so.
   */
  release?: ReleasePoint;
  /** Timed at several release points (compareRelease, compareExit): each median; medianUs is the fastest. */
  releaseStartUs?: number;
  releaseLateUs?: number;
  releaseExitUs?: number;
  /** Timed both ways under plain launches (comparePlain): the faster kernel, and each one's median; medianUs is the faster. */
  plainLaunch?: PlainLaunch;
  twinUs?: number;
  kernelUs?: number;
}

/** `bytes`: the roofline numerator (default: the forward's). */
export function toMeasurement(problem: Problem, reply: RunnerReply, copyGbps?: number, bytes = bytesMoved(problem)): Measurement {
  const m: Measurement = { status: reply.status as Status };
  if (reply.error) m.error = String(reply.error);
  const errors: Record<string, number> = {};
  const bad: Record<string, number> = {};
  for (const [k, v] of Object.entries(reply)) {
    if (k.startsWith('err_') && typeof v === 'number') errors[k.slice(4)] = v;
    if (k.startsWith('bad_') && typeof v === 'number') bad[k.slice(4)] = v;
  }
  if (Object.keys(errors).length) m.errors = errors;
  if (Object.keys(bad).length) m.bad = bad;
  if (typeof reply.medianUs === 'number') {
    m.medianUs = reply.medianUs;
    m.minUs = reply.minUs as number;
    m.maxUs = reply.maxUs as number;
    m.samples = (reply.samplesUs as number[] | undefined)?.length;
    if (typeof reply.copies === 'number') m.copies = reply.copies;
    if (typeof reply.usualUs === 'number' && typeof reply.aliasedUs === 'number') {
      m.usualUs = reply.usualUs;
      m.aliasedUs = reply.aliasedUs;
    }
    if (typeof reply.releaseStartUs === 'number') m.releaseStartUs = reply.releaseStartUs;
    if (typeof reply.releaseLateUs === 'number') m.releaseLateUs = reply.releaseLateUs;
    if (typeof reply.releaseExitUs === 'number') m.releaseExitUs = reply.releaseExitUs;
    if (reply.release !== undefined) {
      // The runner is built from this commit's source: another value is a bug, not a fault of the variant.
      if (!isReleasePoint(reply.release)) throw new Error(`runner reply: unknown release point ${JSON.stringify(reply.release)}`);
      m.release = reply.release;
    }
    m.gbps = bytes / (reply.medianUs * 1e3);
    if (copyGbps) m.fractionOfCopy = m.gbps / copyGbps;
  }
  return m;
}

export async function measure(runner: Runner, problem: Problem, v: Variant, cubin: string, o: RunOptions, copyGbps?: number): Promise<Measurement> {
  const request = runRequest(problem, v, cubin, o);
  const reply = await runner.request(request, o.timeoutMs ?? 120_000);
  const m = { ...toMeasurement(problem, reply, copyGbps), ...plainComparison(request, v, reply) };
  // A twin or kernel that failed where the other passed: say which one.
  if (reply.compared === true && m.status !== 'OK') m.error = `${String(request.compareSymbol)}: ${m.error ?? m.status}`;
  return m;
}
