// The tune loop end to end with real compiles (nvcc) and a stand-in runner.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArch } from '../generator/arch.js';
import { makeProblem, problemKey, type KernelSpec, type Problem } from '../generator/problem.js';
import { baselineParams, GENERIC_PARAMS, type CudaParams } from '../generator/space.js';
import { makeVariant } from '../generator/variant.js';
import { TuningDb } from '../tuner/db.js';
import type { GridSpec } from '../tuner/grid.js';
import { winners } from '../tuner/select.js';
import { tuneReport } from '../tuner/tune-report.js';
import type { Progress } from '../tuner/progress.js';
import { AFFINE_ALIAS_BYTES, RELEASE_COMPARE_MAX_BYTES, runRequest, toMeasurement, type RunOptions } from '../tuner/measure.js';
import { finalOptions, FULL, SCREEN, SCREEN_MAX_COPIES, tune, type TuneOptions } from '../tuner/tune.js';
import { buildDispatchTable } from '../tuner/dispatch.js';
import { planPackage } from '../generator/package-plan.js';
import { emitPackage } from '../generator/package.js';
import { templateHash } from '../generator/templates.js';
import { PLAIN_TWIN_ROWS_BELOW } from '../generator/render-cuda.js';
import { withFreshCache } from './fresh-cache.js';

const FAKE = fileURLToPath(new URL('./fake-runner.js', import.meta.url));
const RMS_BF16: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
const grid: GridSpec = { ops: ['rmsnorm'], dtypes: ['bf16'], hiddens: [1024], rows: [8, 512], residual: 'same' };
const options = (dbPath: string, extra: Partial<TuneOptions> = {}): TuneOptions => ({
  arch: parseArch('sm90'), grid, gpus: [0], jobs: 2, search: { kind: 'exhaustive' }, dbPath, command: 'test', runnerExe: FAKE, timeoutSeconds: 1, ...extra,
});

test('every variant of every problem is measured once; a re-run resumes with nothing to do', async () => {
  const dbPath = join(mkdtempSync(join(tmpdir(), 'normgen-tune-')), 'db.jsonl');
  const first = await tune(options(dbPath));
  first.db.close();
  assert.is(first.problems.length, 2);
  const results = TuningDb.read(dbPath).results;
  assert.ok(results.length > 20);
  assert.ok(results.every((r) => r.status === 'OK' && r.stage === 'final'));
  assert.is(new Set(results.map((r) => `${r.problemKey}|${r.variantId}`)).size, results.length, 'each once');
  for (const w of winners(TuningDb.read(dbPath))) {
    const times = results.filter((r) => r.problemKey === problemKey(w.problem)).map((r) => r.medianUs!);
    assert.is(w.best.medianUs, Math.min(...times));
    assert.ok(w.baseline, 'the baseline is measured with every problem');
  }
  let last: Progress | undefined;
  // With an empty compile cache, any compiling would take seconds.
  const started = performance.now();
  const second = await withFreshCache(() => tune(options(dbPath, { onProgress: (p) => (last = p), jobs: 1, gpus: [1] })));
  assert.ok(performance.now() - started < 3000, 'a finished database needs no compiling');
  second.db.close();
  assert.is(last!.total, 0);
  assert.is(last!.skipped, results.length);
  assert.is(TuningDb.read(dbPath).results.length, results.length);
  assert.is(TuningDb.read(dbPath).sessions.length, 2);
  // The report gives this run's copy bandwidth (GPU 1 of the stand-in) and the earlier run's.
  assert.match(tuneReport(TuningDb.read(dbPath), 0, 0), "write): 4100 GB/s; earlier runs of this database: 4000 GB/s (each result is a fraction of its own GPU's, in its own run)");
  // Each run records how the runner launched the timed kernels, and the report says so.
  assert.equal(TuningDb.read(dbPath).sessions.map((s) => s.launch), ['programmatic', 'programmatic']);
  assert.equal(TuningDb.read(dbPath).sessions.map((s) => s.chainLaunches), [16, 16]);
  assert.match(tuneReport(TuningDb.read(dbPath), 0, 0), 'a CUDA graph of back-to-back launches with programmatic dependent launch');
  assert.match(tuneReport(TuningDb.read(dbPath), 0, 0), 'final timings in graphs of at least 16 launches\n');
});

test('under plain launches the plain twins are timed below PLAIN_TWIN_ROWS_BELOW rows, into a database of their own; finals time the other kernel too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-tune-'));
  const dbPath = join(dir, 'db.jsonl');
  (await tune(options(dbPath))).db.close();
  const saved = { pdl: process.env.NORMGEN_PDL, log: process.env.FAKE_LOG, scale: process.env.FAKE_SCALE };
  process.env.NORMGEN_PDL = '0'; // the stand-in runner, like the native one, then launches plainly
  process.env.FAKE_LOG = join(dir, 'runs.jsonl');
  // The baseline's twin runs 3x its kernel's time: on few rows the kernel itself wins.
  const baseline = makeVariant(makeProblem(RMS_BF16, 16, 1024), baselineParams(makeProblem(RMS_BF16, 16, 1024)));
  process.env.FAKE_SCALE = `${baseline.symbol}_plain:3`;
  try {
    // Resumed under the other launch mode, the finished problems would stand for times never taken so.
    const refused = await tune(options(dbPath, { grid: { ...grid, rows: [16] } })).then(
      (out) => (out.db.close(), 'tuned'),
      (e: Error) => e.message,
    );
    assert.match(refused, /holds times of programmatic launches and this run times plain launches \(NORMGEN_PDL=0 or before sm90\): tune each launch mode into its own --db/);
    const plainPath = join(dir, 'plain.jsonl');
    (await tune(options(plainPath, { grid: { ...grid, rows: [16, PLAIN_TWIN_ROWS_BELOW] } }))).db.close();
    const db = TuningDb.read(plainPath);
    assert.equal(db.sessions.map((s) => [s.launch, s.plainTwins, s.plainCompared, s.chainLaunches]), [['plain', true, true, undefined]]);
    assert.match(tuneReport(db, 0, 0), `back-to-back plain launches of each kernel's plain twin below ${PLAIN_TWIN_ROWS_BELOW} rows, of the kernel itself from there on (as the package launches plainly); finals timed the other one too`);
    const runs = readFileSync(process.env.FAKE_LOG, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { symbol: string; rows: number; compareSymbol?: string });
    assert.is(runs.length, db.results.length);
    // As the package launches plainly: a twin below PLAIN_TWIN_ROWS_BELOW rows, the kernel itself from there on.
    const few = runs.filter((r) => r.rows === 16).map((r) => r.symbol);
    const many = runs.filter((r) => r.rows === PLAIN_TWIN_ROWS_BELOW).map((r) => r.symbol);
    assert.is(few.length + many.length, runs.length);
    assert.ok(few.length > 0 && few.every((s) => s.endsWith('_plain')), 'below the rows, every timed kernel is a twin');
    assert.ok(many.length > 0 && many.every((s) => /^normgen_rmsnorm_fwd_[0-9a-f]{12}$/.test(s)), 'from the rows on, the kernels themselves');
    const ids = (symbols: string[]) => new Set(symbols.map((s) => s.replace(/_plain$/, '').replace(/^normgen_rmsnorm_fwd_/, '')));
    assert.equal(ids([...few, ...many]), new Set(db.results.map((r) => r.variantId)));
    // Every final (an exhaustive search has no screening) also timed the variant's other kernel.
    for (const r of runs) assert.is(r.compareSymbol, r.symbol.endsWith('_plain') ? r.symbol.replace(/_plain$/, '') : `${r.symbol}_plain`);
    for (const r of db.results) {
      const slowTwin = r.variantId === baseline.id;
      // The faster of the two is the result (ties keep the one the rows rule names).
      const expected = slowTwin || r.problem.rows >= PLAIN_TWIN_ROWS_BELOW ? 'kernel' : 'twin';
      assert.is(r.plainLaunch, expected, `${r.problemKey} ${r.variantId}`);
      assert.is(r.medianUs, Math.min(r.twinUs!, r.kernelUs!));
      assert.is(r.twinUs! > r.kernelUs!, slowTwin);
    }
    const kernels = db.results.filter((r) => r.plainLaunch === 'kernel').length;
    const slowTwins = db.results.filter((r) => r.variantId === baseline.id).length;
    assert.match(
      tuneReport(db, 0, 0),
      `${db.results.length} timings, the twin faster in ${db.results.length - kernels} (0 by over 2%), the kernel itself in ${kernels} (${slowTwins} by over 2%).`,
    );
  } finally {
    for (const [name, value] of [['NORMGEN_PDL', saved.pdl], ['FAKE_LOG', saved.log], ['FAKE_SCALE', saved.scale]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
  assert.equal(TuningDb.read(dbPath).sessions.map((s) => s.launch), ['programmatic'], 'the refused run added nothing');
});

test('--gpus: each GPU measures whole compile units, its results fractions of its own copy bandwidth', async () => {
  const dbPath = join(mkdtempSync(join(tmpdir(), 'normgen-tune-')), 'db.jsonl');
  const twoUnits: GridSpec = { ...grid, hiddens: [768, 1024], rows: [8] };
  const outcome = await tune(options(dbPath, { grid: twoUnits, gpus: [0, 1] }));
  outcome.db.close();
  const db = TuningDb.read(dbPath);
  assert.equal(db.sessions[0].copyGbpsByGpu, { 0: 4000, 1: 4100 });
  const byHidden = new Map<number, Set<number>>();
  for (const r of db.results) {
    byHidden.set(r.problem.hidden, (byHidden.get(r.problem.hidden) ?? new Set()).add(r.gpu!));
    assert.ok(Math.abs(r.fractionOfCopy! - r.gbps! / (4000 + 100 * r.gpu!)) < 1e-12, `${r.problemKey} on GPU ${r.gpu}`);
  }
  assert.equal([...byHidden.values()].map((gpus) => gpus.size), [1, 1], 'a unit stays on one GPU');
  assert.equal(new Set([...byHidden.values()].flatMap((gpus) => [...gpus])), new Set([0, 1]), 'both GPUs measured');
});

test('a crash or a hang costs one variant and a runner restart; a wrong result never wins', async () => {
  const dbPath = join(mkdtempSync(join(tmpdir(), 'normgen-tune-')), 'db.jsonl');
  const probe = await tune(options(join(mkdtempSync(join(tmpdir(), 'normgen-tune-')), 'probe.jsonl')));
  const p = probe.problems[1];
  const ids = probe.db.results.filter((r) => r.problemKey === problemKey(p)).sort((a, b) => a.medianUs! - b.medianUs!);
  probe.db.close();
  const symbol = (id: string) => `normgen_rmsnorm_fwd_${id}`;
  const [fastest, second, third] = ids.map((r) => r.variantId);
  process.env.FAKE_WRONG = symbol(fastest);
  process.env.FAKE_CRASH = symbol(second);
  process.env.FAKE_HANG = symbol(third);
  try {
    const out = await tune(options(dbPath, { grid: { ...grid, rows: [p.rows] } }));
    out.db.close();
    const byId = new Map(TuningDb.read(dbPath).results.map((r) => [r.variantId, r]));
    assert.is(byId.get(fastest)!.status, 'INCORRECT');
    assert.is(byId.get(second)!.status, 'RUNTIME_ERROR');
    assert.is(byId.get(third)!.status, 'TIMEOUT');
    assert.is(out.restarts, 2);
    const [w] = winners(TuningDb.read(dbPath));
    assert.not.ok([fastest, second, third].includes(w.best.variantId));
    assert.ok([...byId.values()].filter((r) => r.status === 'OK').length === ids.length - 3, 'the rest still measured');
  } finally {
    delete process.env.FAKE_WRONG;
    delete process.env.FAKE_CRASH;
    delete process.env.FAKE_HANG;
  }
});

test('--budget screen times all briefly, then the best N and the baseline in full', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-tune-'));
  const dbPath = join(dir, 'db.jsonl');
  process.env.FAKE_LOG = join(dir, 'requests.jsonl');
  const out = await tune(options(dbPath, { search: { kind: 'screen', keep: 3 } })).finally(() => delete process.env.FAKE_LOG);
  out.db.close();
  // Screens rotate over a short run of input copies; finals over the whole (cold) rotation.
  const requests = readFileSync(join(dir, 'requests.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const screens = requests.filter((r) => r.samples === 3);
  const finals = requests.filter((r) => r.samples === 15);
  assert.ok(screens.length > finals.length && finals.length > 0);
  assert.ok(screens.every((r) => r.maxCopies === SCREEN_MAX_COPIES));
  assert.ok(finals.every((r) => r.maxCopies === undefined));
  // Finals time a long chain of launches (programmatic launch's steady state); screens do not.
  assert.ok(finals.every((r) => r.chainLaunches === 16) && screens.every((r) => r.chainLaunches === undefined));
  // Finals of these short problems compare the two release points; screens do not.
  assert.ok(finals.every((r) => r.compareRelease === true) && screens.every((r) => r.compareRelease === undefined));
  const results = TuningDb.read(dbPath).results;
  for (const p of out.problems) {
    const mine = results.filter((r) => r.problemKey === problemKey(p));
    const screened = mine.filter((r) => r.stage === 'screen').sort((a, b) => a.medianUs! - b.medianUs!);
    const finals = new Set(mine.filter((r) => r.stage === 'final').map((r) => r.variantId));
    const expected = new Set([...screened.slice(0, 3).map((r) => r.variantId), makeVariant(p, baselineParams(p)).id]);
    assert.equal(finals, expected);
  }
});

test('a kernel that re-reads rows from L1 is also timed with weight and bias aliased, and wins on the slower time only', async () => {
  // The generic variant is a reload kernel (none in this grid's space): make it the fastest
  // as usually placed, and slow when its weight is aliased.
  const reloadOf = (p: Problem) => makeVariant(p, GENERIC_PARAMS);
  const probeProblem = makeProblem(RMS_BF16, 1024, 512);
  const run = async (aliasFactor: number) => {
    const dir = mkdtempSync(join(tmpdir(), 'normgen-tune-'));
    const dbPath = join(dir, 'db.jsonl');
    const symbol = `normgen_rmsnorm_fwd_${reloadOf(probeProblem).id}`;
    Object.assign(process.env, { FAKE_LOG: join(dir, 'requests.jsonl'), FAKE_SCALE: `${symbol}:0.01`, FAKE_ALIAS: `${symbol}:${aliasFactor}` });
    const out = await tune(options(dbPath, { grid: { ...grid, rows: [probeProblem.rows] }, extraVariants: (p) => [reloadOf(p)] })).finally(() => {
      for (const k of ['FAKE_LOG', 'FAKE_SCALE', 'FAKE_ALIAS']) delete process.env[k];
    });
    out.db.close();
    const requests = readFileSync(join(dir, 'requests.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    return { symbol, requests, db: TuningDb.read(dbPath) };
  };
  const reloadId = reloadOf(probeProblem).id;

  const aliased = await run(1000);
  // Only the reload kernel's timings ask for the second placement.
  assert.ok(aliased.requests.filter((r) => r.symbol === aliased.symbol).every((r) => r.affineAlias === AFFINE_ALIAS_BYTES));
  assert.ok(aliased.requests.filter((r) => r.symbol !== aliased.symbol).every((r) => r.affineAlias === undefined));
  const record = aliased.db.results.find((r) => r.variantId === reloadId)!;
  assert.ok(record.usualUs! < record.aliasedUs!);
  assert.is(record.medianUs, record.aliasedUs, 'the slower placement is its time');
  assert.is.not(winners(aliased.db)[0].best.variantId, reloadId);
  assert.match(tuneReport(aliased.db, 1, 0), /keep the slower time: 1 timing, 1 of them over 2% slower aliased/);

  const harmless = await run(1);  // as fast in both placements: it wins
  assert.is(winners(harmless.db)[0].best.variantId, reloadId);
  assert.match(tuneReport(harmless.db, 1, 0), /1 timing, 0 of them over 2% slower/);
});

test('the aliased placement is asked for full timings of reload kernels without a residual only', () => {
  const plain = makeProblem(RMS_BF16, 8192, 512);
  const withResidual = makeProblem({ ...RMS_BF16, features: { ...RMS_BF16.features, residual: 'same' } }, 8192, 512);
  const asked = (p: Problem, params: CudaParams, o: RunOptions) => runRequest(p, makeVariant(p, params), 'k.cubin', o).affineAlias;
  const reload = { ...GENERIC_PARAMS, vec: 8 };
  assert.is(asked(plain, reload, FULL), AFFINE_ALIAS_BYTES);
  assert.is(asked(withResidual, reload, FULL), undefined, 'pass two reads the sum it wrote, from L2');
  assert.is(asked(plain, baselineParams(plain), FULL), undefined, 'a kernel that reads x once');
  assert.is(asked(plain, reload, SCREEN), undefined);
  assert.is(asked(plain, reload, { ...FULL, time: false }), undefined, 'nothing to time');
});

test('finals of short problems are timed releasing the next grid at the start and after the wait; the faster wins and the table launches it so', async () => {
  const probe = makeProblem(RMS_BF16, 1024, 8);
  const baseline = makeVariant(probe, baselineParams(probe));
  const run = async (lateFactor: number, pdl = true) => {
    const dbPath = join(mkdtempSync(join(tmpdir(), 'normgen-tune-')), 'db.jsonl');
    const saved = process.env.NORMGEN_PDL;
    Object.assign(process.env, { FAKE_LATE: `${baseline.symbol}:${lateFactor}`, NORMGEN_PDL: pdl ? '1' : '0' });
    const out = await tune(options(dbPath, { grid: { ...grid, rows: [probe.rows] } })).finally(() => {
      delete process.env.FAKE_LATE;
      if (saved === undefined) delete process.env.NORMGEN_PDL;
      else process.env.NORMGEN_PDL = saved;
    });
    out.db.close();
    const db = TuningDb.read(dbPath);
    return { db, record: db.results.find((r) => r.variantId === baseline.id)! };
  };

  const late = await run(0.01);
  assert.is(late.record.release, 'late');
  assert.is(late.record.medianUs, late.record.releaseLateUs, 'the faster release point is its time');
  assert.ok(late.record.releaseLateUs! < late.record.releaseStartUs!);
  const entry = buildDispatchTable(late.db).entries[0];
  assert.is(entry.variantId, baseline.id);
  assert.is(entry.release, 'late');
  const tables = [{ device: 'Fake GPU', arch: parseArch('sm90'), dbFile: 'db.jsonl', tunedTemplateHash: templateHash('cuda'), tunedOn: '', table: buildDispatchTable(late.db), measured: '' }];
  assert.equal(planPackage(tables).entries.map((e) => e.releaseAt), [1]);
  // The launcher's table entry carries it: { spec, hidden, rows, variant, portable, release_at, plain, plain_launch }.
  const pkg = mkdtempSync(join(tmpdir(), 'normgen-pkg-'));
  emitPackage({ name: 'normgen-test', tables }, pkg);
  assert.match(readFileSync(join(pkg, 'src/normgen.cu'), 'utf8'), /\{ 0, 1024, 8, 0, 0, 1, 0, 0 \},/);
  assert.match(tuneReport(late.db, 1, 0), /timed twice, the next grid released at the kernel's start and after its wait, and keep the faster: \d+ timings, 1 faster released after the wait \(1 by over 2%/);

  const slower = await run(3);  // slower released late: timed so, but launched releasing at the start
  assert.is(slower.record.release, undefined);
  assert.is(slower.record.medianUs, slower.record.releaseStartUs);
  assert.ok(buildDispatchTable(slower.db).entries.every((e) => e.release === undefined));

  const plain = await run(0.01, false);  // without programmatic launch there is nothing to compare
  assert.is(plain.record.releaseStartUs, undefined);
  assert.is(plain.record.release, undefined);
});

test("the runner's reply names the release point it chose; a value the tuner does not know is an error, not a result", () => {
  const probe = makeProblem(RMS_BF16, 1024, 8);
  const reply = { status: 'OK', medianUs: 2, minUs: 2, maxUs: 2, releaseStartUs: 3, releaseExitUs: 2 };
  assert.is(toMeasurement(probe, { ...reply, release: 'exit' }).release, 'exit');
  assert.is(toMeasurement(probe, { ...reply, releaseExitUs: 4, medianUs: 3 }).release, undefined, 'none named: released at the start');
  assert.throws(() => toMeasurement(probe, { ...reply, release: 'middle' }), /unknown release point "middle"/);
});

test('finals of persistent clustered kernels are also timed releasing at their exit; the fastest point wins and the table launches it so', async () => {
  const probe = makeProblem(RMS_BF16, 1024, 8);
  // A ring in clusters of two, each CTA half the row: persistent, so its finals compare the exit.
  const clustered = makeVariant(probe, { storage: 'ring', threads: 64, vec: 8, threadsPerRow: 64, items: 1, cluster: 2, stages: 2, stagedWeights: true });
  const dir = mkdtempSync(join(tmpdir(), 'normgen-tune-'));
  const dbPath = join(dir, 'db.jsonl');
  Object.assign(process.env, { FAKE_EXIT: `${clustered.symbol}:0.01`, FAKE_LOG: join(dir, 'requests.jsonl') });
  const out = await tune(options(dbPath, { grid: { ...grid, rows: [probe.rows] }, extraVariants: () => [clustered] })).finally(() => {
    delete process.env.FAKE_EXIT;
    delete process.env.FAKE_LOG;
  });
  out.db.close();
  const requests = readFileSync(join(dir, 'requests.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(requests.filter((r) => r.compareExit).map((r) => r.symbol), [clustered.symbol], 'only the persistent clustered kernel');
  const db = TuningDb.read(dbPath);
  const record = db.results.find((r) => r.variantId === clustered.id)!;
  assert.is(record.release, 'exit');
  assert.is(record.medianUs, record.releaseExitUs, 'the fastest release point is its time');
  assert.ok(record.releaseExitUs! < record.releaseStartUs! && record.releaseLateUs !== undefined);
  const entry = buildDispatchTable(db).entries[0];
  assert.is(entry.variantId, clustered.id);
  assert.is(entry.release, 'exit');
  const tables = [{ device: 'Fake GPU', arch: parseArch('sm90'), dbFile: 'db.jsonl', tunedTemplateHash: templateHash('cuda'), tunedOn: '', table: buildDispatchTable(db), measured: '' }];
  assert.equal(planPackage(tables).entries.map((e) => e.releaseAt), [2]);
  const pkg = mkdtempSync(join(tmpdir(), 'normgen-pkg-'));
  emitPackage({ name: 'normgen-test', tables }, pkg);
  assert.match(readFileSync(join(pkg, 'src/normgen.cu'), 'utf8'), /\{ 0, 1024, 8, 0, 0, 2, 0, 0 \},/);
  assert.match(tuneReport(db, 1, 0), /also timed releasing the next grid only at their exit: 1 timing, 1 fastest so \(1 by over 2% against the start\)/);
});

test('only final timings of problems moving up to RELEASE_COMPARE_MAX_BYTES compare release points', () => {
  const short = makeProblem(RMS_BF16, 4096, 32);
  const long = makeProblem(RMS_BF16, 8192, 32768);  // 1 GiB moved: the release point is lost in the kernel's time
  assert.ok(RELEASE_COMPARE_MAX_BYTES > 2 * 2 * 4096 * 32 && RELEASE_COMPARE_MAX_BYTES < 2 * 2 * 8192 * 32768);
  const asked = (p: Problem, o: RunOptions) => runRequest(p, makeVariant(p, baselineParams(p)), 'k.cubin', o).compareRelease;
  assert.is(asked(short, finalOptions(short)), true);
  assert.is(asked(long, finalOptions(long)), undefined);
  assert.is(asked(short, SCREEN), undefined);
  assert.is(asked(short, { ...finalOptions(short), time: false }), undefined, 'nothing to time');
});

test.run();
