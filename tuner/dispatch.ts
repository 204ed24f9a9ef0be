// From a tuning database to a dispatch table, and the lookup a package does with it:
// the fewest distinct variants that stay within a tolerance of the best on every tuned
// problem, then, for any shape, the exact tuned key, else the nearest tuned hidden size
// whose variant can run the shape, else the generic variant.

import { isBackward, specKey, type KernelSpec } from '../generator/problem.js';
import { capacity, GENERIC_PARAMS, type CudaParams } from '../generator/space.js';
import type { BwdParams } from '../generator/space-bwd.js';
import type { AnyDbHeader, DbHeader, DbResult, TuningDb } from './db.js';
import type { AnyParams } from './direction.js';
import type { PlainLaunch, ReleasePoint } from './measure.js';
import { LARGE_PROBLEM_ELEMENTS } from './tune-report.js';

/** One tuned problem's choice. P: the backend's parameters (CUDA forward by default, CUDA backward, or WGSL); a table holds one direction. */
export interface DispatchEntry<P extends object = CudaParams> {
  spec: string;
  kernelSpec: KernelSpec;
  hidden: number;
  /** The tuned row count this entry stands for (see rowBucket). */
  rows: number;
  variantId: string;
  params: P;
  medianUs: number;
  /** Time over the best measured variant of the problem, minus 1 (final-stage times where the problem has any). */
  regret: number;
  /**
   * Where the winner is compiled for this hidden size only: the best variant (within the
   * tolerance, fewest in all) that runs any size, which the lookup's nearest path uses for
   * untuned sizes instead of falling through to the generic variant.
   */
  portable?: { variantId: string; params: P; medianUs: number; registers?: number };
  /** Registers a thread of the winner took as the tuner compiled it (the package's plain twin keeps its occupancy). */
  registers?: number;
  /**
   * Where the winner was fastest releasing the next grid (CUDA forward finals that compared
   * release points, see finalOptions and releasesAtExitCompared): the package launches it so
   * on this tuned problem. Absent: at its start.
   */
  release?: ReleasePoint;
  /** Where a plain tune's final timed the winner's twin and kernel both: the faster, which plain launches run. */
  plainLaunch?: PlainLaunch;
}

export interface DispatchTable<P extends object = CudaParams> {
  tolerance: number;
  /** The tolerance on problems of >= 16M elements. */
  largeTolerance: number;
  entries: DispatchEntry<P>[];
  /** Distinct variants the entries use. */
  variants: number;
  /** Largest regret over all entries. */
  maxRegret: number;
  /** Tuned row counts, ascending: the bucket boundaries. */
  rowBuckets: number[];
}

/**
 * The verified, timed results whose times can be compared within their problem: all but
 * those rotating over fewer input copies than the problem's most (screenings of tiny
 * problems, which ran warmer in L2 than their finals).
 */
export function comparableTimes<R extends DbResult<object>>(results: R[]): (R & { medianUs: number })[] {
  const timed = results.filter((r): r is R & { medianUs: number } => r.status === 'OK' && typeof r.medianUs === 'number');
  const mostCopies = new Map<string, number>();
  for (const r of timed) if (r.copies !== undefined) mostCopies.set(r.problemKey, Math.max(r.copies, mostCopies.get(r.problemKey) ?? 0));
  return timed.filter((r) => r.copies === undefined || r.copies >= mostCopies.get(r.problemKey)!);
}

/** Per problem, per group (`groupOf`): the fastest of its comparable times (comparableTimes). */
export function fastestPerProblem<R extends DbResult<object>>(results: R[], groupOf: (r: R) => string): Map<string, Map<string, R & { medianUs: number }>> {
  const out = new Map<string, Map<string, R & { medianUs: number }>>();
  for (const r of comparableTimes(results)) {
    const byGroup = out.get(r.problemKey) ?? new Map<string, R & { medianUs: number }>();
    const group = groupOf(r);
    const held = byGroup.get(group);
    if (!held || r.medianUs < held.medianUs) byGroup.set(group, r);
    out.set(r.problemKey, byGroup);
  }
  return out;
}

/**
 * Per problem, the verified variants' times that can be compared: its final-stage
 * re-timings where it has any, else its screenings. A screening (3 samples, short graphs)
 * of a problem of a few microseconds can run well under the same variant's re-timing (on
 * the H200, 10% of them by over 6%, up to 35%), so a variant only screened would win
 * problems on an optimistic time: one picked that way ran 1.6x slower in the package than
 * the problem's best re-timed variant. Only comparable times count (comparableTimes).
 */
function bestMeasurements<P extends object>(db: TuningDb<P, AnyDbHeader>, backward: boolean): DbResult<P>[][] {
  const by = new Map<string, DbResult<P>[]>();
  for (const r of comparableTimes(db.results.filter((r) => isBackward(r.problem) === backward))) {
    const results = by.get(r.problemKey) ?? [];
    by.set(r.problemKey, results);
    results.push(r);
  }
  return [...by.values()].map((rs) => {
    const finals = rs.filter((r) => r.stage === 'final');
    const once = new Map<string, DbResult<P>>(); // one time per variant (its first, should a stage have timed it twice)
    for (const r of finals.length > 0 ? finals : rs) if (!once.has(r.variantId)) once.set(r.variantId, r);
    return [...once.values()];
  });
}

/**
 * Regret allowed on problems of >= 16M elements by default: at the copy roofline the peers
 * are within a percent, and 0.3-0.4% of regret left two table entries behind torch.compile
 * at 0.5% (test/gpu/bench_torch.md, 2026-12-01); timings repeat to about 0.3%.
 */
export const DEFAULT_LARGE_TOLERANCE = 0.002;

export interface DispatchOptions {
  /** Regret allowed per problem to keep the table small (default 2%). */
  tolerance?: number;
  /** Regret allowed on problems of >= 16M elements, where the copy roofline is the target and timings repeat to ~0.3% (default DEFAULT_LARGE_TOLERANCE, or `tolerance` if smaller). */
  largeTolerance?: number;
  /**
   * Regret allowed among the portable variants (default 10%): they serve only sizes nobody
   * tuned, where a few percent matter less than the kernels each one adds to a package.
   */
  portableTolerance?: number;
}

/** Compiled for one hidden size only (the `fixedHidden` axis of CUDA forward variants). */
const isFixed = (params: object) => (params as { fixedHidden?: number }).fixedHidden !== undefined;

/**
 * Greedy set cover: a variant covers a problem when it is within the problem's tolerance
 * of its best; take the variant covering most uncovered problems (ties: the least total
 * time) until all are covered. Returns, per problem key, its fastest chosen measurement.
 */
function cover<P extends object>(problems: DbResult<P>[][], allowed: (p: { rows: number; hidden: number }) => number): Map<string, DbResult<P>> {
  const best = new Map(problems.map((rs) => [rs[0].problemKey, Math.min(...rs.map((r) => r.medianUs!))]));
  const covers = new Map<string, Set<string>>(); // variant id -> problem keys within tolerance
  for (const rs of problems)
    for (const r of rs)
      if (r.medianUs! <= best.get(r.problemKey)! * (1 + allowed(r.problem))) {
        const set = covers.get(r.variantId) ?? new Set<string>();
        set.add(r.problemKey);
        covers.set(r.variantId, set);
      }
  const totals = new Map<string, number>();
  for (const r of problems.flat()) totals.set(r.variantId, (totals.get(r.variantId) ?? 0) + r.medianUs!);
  const time = (id: string) => totals.get(id) ?? Infinity;
  const uncovered = new Set(best.keys());
  const chosen = new Set<string>();
  while (uncovered.size > 0) {
    let pick = '';
    let gain = 0;
    for (const [id, set] of covers) {
      const g = [...set].filter((k) => uncovered.has(k)).length;
      if (g > gain || (g === gain && g > 0 && time(id) < time(pick))) [pick, gain] = [id, g];
    }
    chosen.add(pick);
    for (const k of covers.get(pick)!) uncovered.delete(k);
  }
  return new Map(problems.map((rs) => [rs[0].problemKey, rs.filter((x) => chosen.has(x.variantId)).reduce((a, b) => (b.medianUs! < a.medianUs! ? b : a))]));
}

/**
 * The dispatch table: per problem its variant from a cover of all measurements (see
 * cover), and where that variant is compiled for the problem's hidden size only, a portable
 * one from a second cover over the variants that run any size.
 */
export function buildDispatchTable(db: TuningDb<AnyParams, DbHeader>, options?: DispatchOptions): DispatchTable<CudaParams>;
export function buildDispatchTable(db: TuningDb<AnyParams, DbHeader>, options: DispatchOptions, direction: 'bwd'): DispatchTable<BwdParams>;
export function buildDispatchTable<P extends object>(db: TuningDb<P, AnyDbHeader>, options?: DispatchOptions): DispatchTable<P>;
export function buildDispatchTable<P extends object>(db: TuningDb<P, AnyDbHeader>, options: DispatchOptions = {}, direction: 'fwd' | 'bwd' = 'fwd'): DispatchTable<P> {
  const tolerance = options.tolerance ?? 0.02;
  const largeTolerance = Math.min(tolerance, options.largeTolerance ?? DEFAULT_LARGE_TOLERANCE);
  const portableTolerance = options.portableTolerance ?? 0.1;
  const problems = bestMeasurements(db, direction === 'bwd');
  const best = new Map(problems.map((rs) => [rs[0].problemKey, Math.min(...rs.map((r) => r.medianUs!))]));
  const allowed = (p: { rows: number; hidden: number }) => (p.rows * p.hidden >= LARGE_PROBLEM_ELEMENTS ? largeTolerance : tolerance);
  const winners = cover(problems, allowed);
  const portable = cover(
    problems.filter((rs) => isFixed(winners.get(rs[0].problemKey)!.params)).map((rs) => rs.filter((r) => !isFixed(r.params))).filter((rs) => rs.length > 0),
    () => portableTolerance,
  );
  const entries: DispatchEntry<P>[] = problems.map((rs) => {
    const r = winners.get(rs[0].problemKey)!;
    const p = r.problem;
    const q = portable.get(r.problemKey);
    return {
      spec: specKey(p),
      kernelSpec: { op: p.op, dtype: p.dtype, features: p.features, ...(isBackward(p) ? { direction: 'bwd' as const } : {}) },
      hidden: p.hidden,
      rows: p.rows,
      variantId: r.variantId,
      params: r.params,
      medianUs: r.medianUs!,
      regret: r.medianUs! / best.get(r.problemKey)! - 1,
      ...(q ? { portable: { variantId: q.variantId, params: q.params, medianUs: q.medianUs!, ...registersOf(q) } } : {}),
      ...(r.release ? { release: r.release } : {}),
      ...(r.plainLaunch ? { plainLaunch: r.plainLaunch } : {}),
      ...registersOf(r),
    };
  });
  entries.sort((a, b) => a.spec.localeCompare(b.spec) || a.hidden - b.hidden || a.rows - b.rows);
  return {
    tolerance,
    largeTolerance,
    entries,
    variants: new Set(entries.flatMap((e) => [e.variantId, ...(e.portable ? [e.portable.variantId] : [])])).size,
    maxRegret: Math.max(0, ...entries.map((e) => e.regret)),
    rowBuckets: [...new Set(entries.map((e) => e.rows))].sort((a, b) => a - b),
  };
}

/**
 * Default margin a plain-launch winner must beat the tuned winner by, both timed under plain
 * launches, to run in its place there. 5% once: in a tune whose plain timings favoured each
 * problem's first final, 3 of 15 winners with a 2-5% lead ran 5% slower in the package
 * (test/gpu/plain-launch-table.md). With every plain timing in a fresh graph, an H100 table
 * at 2% (16 winners) ran 1.0% faster at 32 rows and 0.5% at 2048 than the old one, no shape
 * more than 1% slower (test/gpu/plain-retune.md).
 */
export const DEFAULT_PLAIN_MARGIN = 0.02;

/** Whether two entries are of one problem: the same spec, hidden size and (tuned) row count. */
export const sameProblem = (a: DispatchEntry<object>, b: DispatchEntry<object>) => a.spec === b.spec && a.hidden === b.hidden && a.rows === b.rows;

/**
 * Of a table tuned under plain launches (from `plainDb`), the entries to run in place of
 * `tuned`'s for plain launches: those of a problem `tuned` has, whose winner beat `tuned`'s
 * own winner in the plain tune by more than `margin`. That one's best time there (a
 * screening's, optimistic at microsecond shapes, counts too) is the comparison; an entry
 * whose tuned winner the plain tune never timed stays out: nothing shows it is faster.
 */
export function plainLaunchEntries<E extends DispatchEntry<object>>(
  plainDb: { results: readonly DbResult<object>[] },
  plain: { entries: E[] },
  tuned: { entries: readonly DispatchEntry<object>[] },
  margin = DEFAULT_PLAIN_MARGIN,
): E[] {
  const bestTime = new Map<string, number>(); // "<problem key> <variant id>" -> fastest verified time
  for (const r of plainDb.results)
    if (r.status === 'OK' && typeof r.medianUs === 'number') {
      const key = `${r.problemKey} ${r.variantId}`;
      bestTime.set(key, Math.min(r.medianUs, bestTime.get(key) ?? Infinity));
    }
  const problemOf = new Map(plainDb.results.map((r) => [problemOfResult(r), r.problemKey]));
  return plain.entries.filter((e) => {
    const t = tuned.entries.find((x) => sameProblem(x, e));
    const theirs = t && bestTime.get(`${problemOf.get(`${e.spec} ${e.hidden} ${e.rows}`)} ${t.variantId}`);
    return theirs !== undefined && theirs > e.medianUs * (1 + margin);
  });
}

/**
 * Which of its two kernels each of `runs` (a variant on a tuned problem) ran faster as in the
 * plain tune's finals that timed its twin and the kernel itself both (plainLaunch), keyed by
 * the problem ("<spec> <hidden> <rows>"): the fastest such result's. Problems without one
 * (a variant timed in screenings only, a database from before the comparison) are absent.
 */
export function plainLaunchKinds(
  plainDb: { results: readonly DbResult<object>[] },
  runs: readonly Pick<DispatchEntry<object>, 'spec' | 'hidden' | 'rows' | 'variantId'>[],
): Map<string, PlainLaunch> {
  const fastest = new Map<string, DbResult<object>>(); // "<problem> <variant id>" -> fastest compared result
  for (const r of plainDb.results) {
    if (r.status !== 'OK' || r.plainLaunch === undefined || typeof r.medianUs !== 'number') continue;
    const key = `${problemOfResult(r)} ${r.variantId}`;
    const had = fastest.get(key);
    if (!had || r.medianUs < had.medianUs!) fastest.set(key, r);
  }
  const kinds = new Map<string, PlainLaunch>();
  for (const e of runs) {
    const r = fastest.get(`${e.spec} ${e.hidden} ${e.rows} ${e.variantId}`);
    if (r) kinds.set(`${e.spec} ${e.hidden} ${e.rows}`, r.plainLaunch!);
  }
  return kinds;
}

const problemOfResult = (r: DbResult<object>) => `${specKey(r.problem)} ${r.problem.hidden} ${r.problem.rows}`;

const registersOf = (r: { registers?: number }) => (typeof r.registers === 'number' ? { registers: r.registers } : {});

/** The tuned row count standing for `rows`: the nearest one on a log scale. */
export function rowBucket(buckets: number[], rows: number): number {
  let bestBucket = buckets[0];
  for (const b of buckets) if (Math.abs(Math.log2(b / rows)) < Math.abs(Math.log2(bestBucket / rows))) bestBucket = b;
  return bestBucket;
}

/** Can params run this shape? Its hidden size if compiled for one, capacity, and a vector width that divides the row stride and the alignment. */
export function canRun(params: CudaParams, hidden: number, stride: number, alignmentElems: number): boolean {
  if (params.fixedHidden !== undefined && params.fixedHidden !== hidden) return false;
  return hidden <= capacity(params) && stride % params.vec === 0 && alignmentElems % params.vec === 0;
}

export type LookupPath = 'exact' | 'nearest' | 'generic';

export interface Lookup {
  path: LookupPath;
  params: CudaParams;
  entry?: DispatchEntry;
}

/**
 * Choose the variant for a shape. `alignmentElems` is the largest power of two (in
 * elements) dividing every pointer: misaligned tensors fall back to narrower vectors.
 */
export function lookup(table: DispatchTable, spec: KernelSpec, hidden: number, rows: number, stride = hidden, alignmentElems = 16): Lookup {
  const key = specKey(spec);
  const bucket = rowBucket(table.rowBuckets, rows);
  const mine = table.entries.filter((e) => e.spec === key && e.rows === bucket);
  const exact = mine.find((e) => e.hidden === hidden);
  if (exact && canRun(exact.params, hidden, stride, alignmentElems)) return { path: 'exact', params: exact.params, entry: exact };
  // Nearest: each entry stands for other sizes through its portable variant, if it has one.
  const elsewhere = (e: DispatchEntry) => e.portable?.params ?? e.params;
  const near = mine
    .filter((e) => canRun(elsewhere(e), hidden, stride, alignmentElems))
    .sort((a, b) => Math.abs(Math.log2(a.hidden / hidden)) - Math.abs(Math.log2(b.hidden / hidden)))[0];
  if (near) return { path: 'nearest', params: elsewhere(near), entry: near };
  return { path: 'generic', params: GENERIC_PARAMS };
}
