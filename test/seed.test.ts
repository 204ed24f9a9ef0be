// Seeded re-tunes (tune --seed): which variants an earlier database keeps per problem, the
// errors a bad seed gets, and a seeded tune end to end with the stand-in runner.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArch } from '../generator/arch.js';
import { makeProblem, problemKey, type KernelSpec, type Problem } from '../generator/problem.js';
import { baselineParams } from '../generator/space.js';
import { DbError, TuningDb, type Stage } from '../tuner/db.js';
import type { DeviceId } from '../tuner/device.js';
import { paramsKey, TuneSeed } from '../tuner/seed.js';
import { tuneReport } from '../tuner/tune-report.js';
import { tune, type TuneOptions } from '../tuner/tune.js';

const device: DeviceId = { name: 'NVIDIA H200', arch: 'sm90', computeCapability: '9.0', sms: 132, memoryBytes: 150e9, l2Bytes: 62914560, driver: '580.1', driverCuda: 13000, cudaRuntime: 13000, uuid: 'x' };
const RMS_BF16: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
const finished = makeProblem(RMS_BF16, 4096, 8);
const screenedOnly = makeProblem(RMS_BF16, 4096, 512);
const tmp = () => mkdtempSync(join(tmpdir(), 'normgen-seed-'));

/** Parameter sets told apart by their thread count; earlier tunes timed them slower as threads grow. */
const params = (threads: number) => ({ storage: 'regs', threads, vec: 8, threadsPerRow: threads, items: 1, cluster: 1, stages: 0, stagedWeights: false });
const variant = (threads: number, id = `new-${threads}`) => ({ id, params: params(threads) });

/** An earlier database: `finished` screened at 64..512 threads, its best two re-timed; `screenedOnly` screened only. */
function earlierDb(path: string): void {
  const db = TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device });
  const { session } = db.startSession({ started: 'then', command: 'old', normgen: '0', templateHash: 'old-templates', nvcc: '13', copyGbps: 4000 });
  const record = (p: Problem, threads: number, stage: Stage, status = 'OK') =>
    db.record({ session, problemKey: problemKey(p), problem: p, variantId: `old-${threads}`, params: params(threads) as never, stage, status: status as never, medianUs: threads / 64 });
  for (const t of [64, 128, 256, 512]) record(finished, t, 'screen');
  record(finished, 1024, 'screen', 'SPILLS');
  for (const t of [64, 128]) record(finished, t, 'final');
  for (const t of [64, 128]) record(screenedOnly, t, 'screen');
  db.close();
}

test('parameter keys ignore field order and unset fields (older databases lack some)', () => {
  assert.is(paramsKey({ b: 2, a: 1 }), paramsKey({ a: 1, b: 2 }));
  assert.is(paramsKey({ a: 1, early: false, stages: 0, cap: undefined }), paramsKey({ a: 1 }));
  assert.is.not(paramsKey({ a: 1, early: true }), paramsKey({ a: 1 }));
  assert.is.not(paramsKey(params(64)), paramsKey(params(128)));
});

test("a finished problem keeps the seed's fastest, the baseline and what the seed never tried; others keep all", () => {
  const path = join(tmp(), 'old.jsonl');
  earlierDb(path);
  const seed = TuneSeed.read(path, 2, false);
  assert.is(seed.seededProblems, 1);
  const space = [64, 128, 256, 512, 1024, 32].map((t) => variant(t));
  const chosen = seed.choose(finished, space, 'new-512');
  assert.ok(chosen.seeded);
  // 64 and 128: fastest two; 512: the baseline; 32: never tried. 256 ranked third; 1024 spilled there.
  assert.equal(chosen.variants.map((v) => v.id), ['new-64', 'new-128', 'new-512', 'new-32']);
  const all = seed.choose(screenedOnly, space, 'new-512');
  assert.not.ok(all.seeded, 'no finals there: the earlier tune had not finished it');
  assert.is(all.variants.length, space.length);
  assert.is(TuneSeed.read(path, 3, false).choose(finished, space, 'new-512').variants.length, 5);
});

test('a bad seed is refused with a clear error before any work', () => {
  const dir = tmp();
  const path = join(dir, 'old.jsonl');
  earlierDb(path);
  assert.throws(() => TuneSeed.read(path, 0, false), (e: Error) => e instanceof DbError && /--seed-keep must be a whole number >= 1, got 0/.test(e.message));
  assert.throws(() => TuneSeed.read(path, 2, true), /holds no backward results to seed this tune with/);
  assert.throws(() => TuneSeed.read(join(dir, 'missing.jsonl'), 2, false), /does not exist/);
  const corrupt = join(dir, 'corrupt.jsonl');
  writeFileSync(corrupt, '{"kind":"header"}\nnot json\n{"kind":"session"}\n');
  assert.throws(() => TuneSeed.read(corrupt, 2, false), (e: Error) => e instanceof DbError && /corrupt at line 2/.test(e.message));
});

const FAKE = fileURLToPath(new URL('./fake-runner.js', import.meta.url));
const options = (dbPath: string, extra: Partial<TuneOptions> = {}): TuneOptions => ({
  arch: parseArch('sm90'),
  grid: { ops: ['rmsnorm'], dtypes: ['bf16'], hiddens: [1024], rows: [8, 512], residual: 'same' },
  gpus: [0], jobs: 2, search: { kind: 'exhaustive' }, dbPath, command: 'test', runnerExe: FAKE, timeoutSeconds: 1, ...extra,
});

test('a seeded tune times the seed\'s fastest variants of the problems it finished and the whole space of the rest', async () => {
  const dir = tmp();
  const oldPath = join(dir, 'old.jsonl');
  (await tune(options(oldPath))).db.close();
  const old = TuningDb.read(oldPath);
  const seed = TuneSeed.read(oldPath, 3, false);
  const newPath = join(dir, 'new.jsonl');
  const grid = { ops: ['rmsnorm'], dtypes: ['bf16'], hiddens: [1024], rows: [8, 512, 32], residual: 'same' } as TuneOptions['grid'];
  const outcome = await tune(options(newPath, { grid, seed }));
  outcome.db.close();
  const results = TuningDb.read(newPath).results;
  for (const p of outcome.problems) {
    const key = problemKey(p);
    const timed = new Set(results.filter((r) => r.problemKey === key).map((r) => paramsKey(r.params)));
    const earlier = old.results.filter((r) => r.problemKey === key).sort((a, b) => a.medianUs! - b.medianUs!);
    if (p.rows === 32) {
      // Not in the seed: every variant, as an unseeded tune would.
      const full = results.filter((r) => r.problemKey === key).length;
      assert.ok(full > 20, `${full} variants timed at 32 rows`);
      continue;
    }
    const expected = new Set([...earlier.slice(0, 3).map((r) => paramsKey(r.params)), paramsKey(baselineParams(p))]);
    assert.equal(timed, expected, key);
    assert.ok(earlier.length > 20, 'the seed timed the whole space');
  }
  const db = TuningDb.read(newPath);
  assert.equal(db.sessions[0].seed, { db: 'old.jsonl', keep: 3, problems: 2 });
  assert.match(tuneReport(db, 0, 0), "seeded re-tune (a run with `--seed old.jsonl`): in 2 problems that tune finished, only its 3 fastest variants");
});

test.run();
