// `normgen tune`: space -> render -> compile (pool) -> verify + time (GPU) -> database.
// Compiling runs ahead on all cores while the GPUs measure what is already built.

import { basename } from 'node:path';
import type { Arch } from '../generator/arch.js';
import { bytesMoved, InputError, isBackward, problemKey, specKey, type Problem } from '../generator/problem.js';
import type { Variant } from '../generator/variant.js';
import { VERSION } from '../generator/version.js';
import { BACKWARD, FORWARD, type AnyVariant, type Direction } from './direction.js';
import { CompilePool, type UnitRequest, type VariantBuild } from './compile-pool.js';
import { sessionLaunch, TuningDb, type DbResult, type LaunchMode, type Stage } from './db.js';
import { checkArchMatches, copyBandwidth, queryDevice, queryRunner, type DeviceId } from './device.js';
import { AFFINE_ALIAS_BYTES, RELEASE_COMPARE_MAX_BYTES, type RunOptions } from './measure.js';
import { nvccVersion } from './nvcc.js';
import { buildRunner, Runner } from './runner.js';
import { gridProblems, type GridSpec } from './grid.js';
import { SearchPlan, type Search } from './search.js';
import type { TuneSeed } from './seed.js';
import { trackProgress, type Progress } from './progress.js';

export type { Search } from './search.js';

export interface TuneOptions {
  arch: Arch;
  grid: GridSpec;
  gpus: number[];
  jobs: number;
  search: Search;
  dbPath: string;
  command: string;
  /** Forward (default) or backward kernels: one direction per database. */
  direction?: Direction;
  /** An earlier tune whose fastest variants are all that finished problems re-time (tuner/seed.ts). */
  seed?: TuneSeed;
  /** Extra variants to measure with each problem (the tuner's tests use broken ones). */
  extraVariants?: (p: Problem) => Variant[];
  onProgress?: (p: Progress) => void;
  /** Base of the per-request hang timeout (default 10 s). */
  timeoutSeconds?: number;
  /** The bench runner to use (tests pass a stand-in); default: built from tuner/native/runner.cu. */
  runnerExe?: string;
  log?: (line: string) => void;
}

/** The full timing every winner gets (normgen check re-times with it), and the brief screening one. */
export const FULL: RunOptions = { verify: true, time: true, samples: 15, sampleMs: 1, minSamples: 5, chainLaunches: 16, affineAliasBytes: AFFINE_ALIAS_BYTES, compareExit: true };
/** A final timing's options: FULL (which compares the exit for persistent clustered kernels), comparing start and after the wait where the problem is short. */
export const finalOptions = (p: Problem): RunOptions => (bytesMoved(p) <= RELEASE_COMPARE_MAX_BYTES ? { ...FULL, compareRelease: true } : FULL);

/**
 * Screening rotates over at most SCREEN_MAX_COPIES input copies: with a tiny problem's cold
 * rotation (4096 copies, each replay a graph of as many launches) a 1-row problem took 29 ms
 * a variant on an H200, and problems of 1-32 rows half of the default grid's GPU time
 * (test/gpu/tune-time.md). Its finalists are timed over the whole rotation.
 */
export const SCREEN_MAX_COPIES = 256;
export const SCREEN: RunOptions = { verify: true, time: true, samples: 3, sampleMs: 0.3, minSamples: 1, maxCopies: SCREEN_MAX_COPIES };

/** A hang is a launch that outlives any honest one: seconds, plus 200 ms per GB moved (backward: about twice the forward's bytes). */
export const hangTimeoutMs = (p: Problem, baseSeconds = 10) => baseSeconds * 1000 + (2 * bytesMoved(p)) / 5e6;

interface Unit {
  key: string;
  problems: Problem[];
  variants: Map<string, AnyVariant>;
  perProblem: Map<Problem, AnyVariant[]>;
  build?: Promise<Map<string, VariantBuild>>;
}

const ops = (o: TuneOptions) => (o.direction === 'bwd' ? BACKWARD : FORWARD);

/** A problem's variants: the space (what a seed keeps of it) and the extra ones. */
function variantsOf(o: TuneOptions, problem: Problem, seeding: SeedCount): AnyVariant[] {
  const space = ops(o).variants(problem, o.arch);
  const chosen = o.seed?.choose(problem, space, ops(o).baseline(problem, o.arch).id) ?? { variants: space, seeded: false };
  seeding.space += space.length;
  seeding.kept += chosen.variants.length;
  if (chosen.seeded) seeding.problems++;
  const byId = new Map<string, AnyVariant>(chosen.variants.map((v) => [v.id, v]));
  for (const v of o.extraVariants?.(problem) ?? []) byId.set(v.id, v);
  return [...byId.values()];
}

interface SeedCount {
  problems: number;
  space: number;
  kept: number;
}

/** Problems sharing a kernel spec and hidden size share one compile unit. */
function planUnits(o: TuneOptions, problems: Problem[], seeding: SeedCount): Unit[] {
  const units = new Map<string, Unit>();
  for (const problem of problems) {
    const key = `${specKey(problem)}.h${problem.hidden}`;
    const unit: Unit = units.get(key) ?? { key, problems: [], variants: new Map(), perProblem: new Map() };
    const variants = variantsOf(o, problem, seeding);
    unit.problems.push(problem);
    unit.perProblem.set(problem, variants);
    for (const v of variants) unit.variants.set(v.id, v);
    units.set(key, unit);
  }
  return [...units.values()];
}

/** The GPU (one model across --gpus, the arch asked for) and its database, which must hold this run's direction and launch mode. */
async function openChecked(o: TuneOptions, runners: Runner[]): Promise<{ device: DeviceId; launch: LaunchMode; db: TuningDb }> {
  const { device, launch } = await queryRunner(runners[0]);
  checkArchMatches(o.arch, device);
  for (const r of runners.slice(1)) {
    const other = await queryDevice(r);
    if (other.name !== device.name) throw new Error(`--gpus mixes ${device.name} and ${other.name}: tune each model into its own --db`);
  }
  const db = TuningDb.open(o.dbPath, { backend: 'cuda', arch: o.arch.name, device }, ops(o).templateHash());
  try {
    const other = db.results.find((r) => isBackward(r.problem) !== (o.direction === 'bwd'));
    if (other) throw new InputError(`${o.dbPath} holds ${isBackward(other.problem) ? 'backward' : 'forward'} results: tune each direction into its own --db`);
    checkLaunchMatches(db, o.dbPath, launch);
  } catch (e) {
    db.close();
    throw e;
  }
  return { device, launch, db };
}

/**
 * A database holds one launch mode's times: resumed or seeded under the other, its finished
 * problems would stand for times never taken that way (sessions before the field: plain).
 */
function checkLaunchMatches(db: TuningDb, path: string, launch: LaunchMode): void {
  const held = db.sessions.map(sessionLaunch).find((mode) => mode !== launch);
  if (!held) return;
  const how = (mode: LaunchMode) => (mode === 'plain' ? 'plain launches (NORMGEN_PDL=0 or before sm90)' : 'programmatic launches');
  throw new InputError(`${path} holds times of ${how(held)} and this run times ${how(launch)}: tune each launch mode into its own --db`);
}

export interface TuneOutcome {
  device: DeviceId;
  copyGbps: number;
  db: TuningDb;
  restarts: number;
  problems: Problem[];
}

export async function tune(o: TuneOptions): Promise<TuneOutcome> {
  const exe = o.runnerExe ?? (await buildRunner());
  const runners = o.gpus.map((g) => new Runner(exe, g));
  const { device, launch, db } = await openChecked(o, runners).catch(async (e: unknown) => {
    await Promise.all(runners.map((r) => r.close())); // a refused run leaves no runner behind
    throw e;
  });
  // Launched plainly, a package runs each forward kernel's plain twin (below PLAIN_TWIN_ROWS_BELOW rows): time those.
  const twins = launch === 'plain' && o.direction !== 'bwd';
  // Each GPU's results are fractions of its own copy bandwidth: cards of one model differ by a few percent.
  const copyByGpu = new Map<number, number>();
  for (const r of runners) copyByGpu.set(r.gpu, await copyBandwidth(r));
  const copyGbps = copyByGpu.get(runners[0].gpu)!;
  const { problems, skipped: tooLarge } = gridProblems(o.grid, device.memoryBytes, o.direction ?? 'fwd');
  const seeding: SeedCount = { problems: 0, space: 0, kept: 0 };
  const units = planUnits(o, problems, seeding);
  const session = db.startSession({
    started: new Date().toISOString(),
    command: o.command,
    normgen: VERSION,
    templateHash: ops(o).templateHash(),
    nvcc: await nvccVersion(),
    copyGbps,
    ...(runners.length > 1 ? { copyGbpsByGpu: Object.fromEntries(copyByGpu) } : {}),
    launch,
    ...(twins ? { plainTwins: true, plainCompared: true } : {}),
    ...(launch === 'programmatic' && FULL.chainLaunches ? { chainLaunches: FULL.chainLaunches } : {}),
    ...(o.seed ? { seed: { db: basename(o.seed.path), keep: o.seed.keep, problems: seeding.problems } } : {}),
  });
  const copies = [...copyByGpu].map(([gpu, gbps]) => (runners.length > 1 ? `GPU ${gpu} ` : '') + `${gbps.toFixed(0)} GB/s`).join(', ');
  o.log?.(`${device.name} (${device.arch}, ${device.sms} SMs): copy bandwidth ${copies}; database ${o.dbPath} (${db.results.length} results already)`);
  if (tooLarge.length) o.log?.(`skipping ${tooLarge.length} problems that do not fit in ${(device.memoryBytes / 2 ** 30).toFixed(0)} GiB`);
  if (o.seed)
    o.log?.(
      `seeded by ${o.seed.path}: ${seeding.problems} of ${problems.length} problems, finished there, time its ${o.seed.keep} fastest variants ` +
        `(with the baseline and variants it never tried); ${seeding.kept} of ${seeding.space} variants in all`,
    );

  const plan = new SearchPlan(db, o.search, (p) => ops(o).baseline(p, o.arch).id);
  const ids = (vs: AnyVariant[]) => vs.map((v) => v.id);
  const { tick, counted, worked } = trackProgress(plan.count(units.flatMap((u) => [...u.perProblem].map(([p, vs]): [Problem, string[]] => [p, ids(vs)]))), o.onProgress);

  // Compile everything up front on the pool; the GPUs take units as they finish.
  const pool = new CompilePool(o.arch, o.jobs);
  for (const u of units) {
    const todo = [...u.perProblem].some(([p, vs]) => !plan.problemDone(p, ids(vs))); // finished units need no compile
    const variants = [...u.variants.values()];
    u.build = todo ? pool.build({ spec: variants[0].spec, variants, twins } as UnitRequest) : Promise.resolve(new Map());
    u.build.catch(() => undefined); // awaited below
  }

  const runOne = async (runner: Runner, p: Problem, v: AnyVariant, build: VariantBuild, stage: Stage, cutoffUs?: number): Promise<DbResult> => {
    const base = { session: session.session, problemKey: problemKey(p), problem: p, variantId: v.id, params: v.params, stage, gpu: runner.gpu };
    if (build.status !== 'OK') {
      return db.record({ ...base, status: build.status, ...(build.status === 'COMPILE_ERROR' ? { error: build.log.slice(0, 2000) } : { registers: build.usage.registers }) });
    }
    const timeoutMs = hangTimeoutMs(p, o.timeoutSeconds);
    // Finals under plain launches time the twin and the kernel itself both: the package runs the faster there.
    const timing = stage === 'screen' ? SCREEN : { ...finalOptions(p), comparePlain: twins };
    const m = await ops(o).measure(runner, p, v, build.cubin, { ...timing, timeoutMs, cutoffUs, plainTwin: twins }, device, copyByGpu.get(runner.gpu));
    return db.record({ ...base, ...m, registers: build.usage.registers });
  };

  const tuneProblem = async (runner: Runner, p: Problem, variants: AnyVariant[], builds: Map<string, VariantBuild>) => {
    const byId = new Map(variants.map((v) => [v.id, v]));
    await plan.run(p, ids(variants), (id, stage, cutoffUs) => runOne(runner, p, byId.get(id)!, builds.get(id)!, stage, cutoffUs), counted, worked);
  };

  // GPUs take units in the order their builds finish (the grid's order among finished
  // ones), so a unit whose compile runs long does not keep a GPU waiting.
  const remaining = new Set(units);
  const nextUnit = async (): Promise<Unit | undefined> => {
    while (remaining.size > 0) {
      const u = await Promise.race([...remaining].map((unit) => unit.build!.then(() => unit, () => unit)));
      if (remaining.delete(u)) return u;
    }
    return undefined;
  };
  await Promise.all(
    runners.map(async (runner) => {
      for (let u = await nextUnit(); u; u = await nextUnit()) {
        const builds = await u.build!;
        for (const p of u.problems) await tuneProblem(runner, p, u.perProblem.get(p)!, builds);
      }
    }),
  );
  await pool.close();
  await Promise.all(runners.map((r) => r.close()));
  tick();
  return { device, copyGbps, db, restarts: runners.reduce((n, r) => n + r.restarts, 0), problems };
}
