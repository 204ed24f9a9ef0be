import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeProblem, problemKey, type KernelSpec } from '../generator/problem.js';
import { baselineParams, GENERIC_PARAMS } from '../generator/space.js';
import { makeVariant } from '../generator/variant.js';
import { DbError, TuningDb } from '../tuner/db.js';
import type { DeviceId } from '../tuner/device.js';
import { winners } from '../tuner/select.js';

const device: DeviceId = { name: 'NVIDIA H200', arch: 'sm90', computeCapability: '9.0', sms: 132, memoryBytes: 150e9, l2Bytes: 62914560, driver: '580.1', driverCuda: 13000, cudaRuntime: 13000, uuid: 'x' };
const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
const problem = makeProblem(spec, 4096, 64);
const tmp = () => join(mkdtempSync(join(tmpdir(), 'normgen-db-')), 'db.jsonl');

function fill(db: TuningDb) {
  const s = db.startSession({ started: 'now', command: 'test', normgen: '0', templateHash: 'h', nvcc: '13', copyGbps: 4000 });
  const base = makeVariant(problem, baselineParams(problem));
  const gen = makeVariant(problem, GENERIC_PARAMS);
  const fast = makeVariant(problem, { ...GENERIC_PARAMS, threads: 128, threadsPerRow: 128 });
  const common = { session: s.session, problemKey: problemKey(problem), problem, stage: 'final' as const };
  db.record({ ...common, variantId: base.id, params: base.params, status: 'OK', medianUs: 10, fractionOfCopy: 0.5 });
  db.record({ ...common, variantId: gen.id, params: gen.params, status: 'OK', medianUs: 8, fractionOfCopy: 0.6 });
  db.record({ ...common, variantId: fast.id, params: fast.params, status: 'INCORRECT', medianUs: 1 });
  return { base, gen, fast };
}

test('records survive a reopen, and resume finds them', () => {
  const path = tmp();
  const db = TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device });
  const { gen } = fill(db);
  db.close();
  const again = TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device });
  assert.is(again.results.length, 3);
  assert.ok(again.find(problemKey(problem), gen.id, 'final'));
  assert.not.ok(again.find(problemKey(problem), gen.id, 'screen'));
});

test('a wrong variant never wins, even when faster; speedup is against the baseline', () => {
  const db = TuningDb.open(tmp(), { backend: 'cuda', arch: 'sm90', device });
  const { gen } = fill(db);
  const [w] = winners(db);
  assert.is(w.best.variantId, gen.id);
  assert.is(w.speedup, 10 / 8);
  assert.is(w.failures, 1);
});

test('a last line cut off by a kill is dropped; the file stays usable', () => {
  const path = tmp();
  const db = TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device });
  fill(db);
  db.close();
  appendFileSync(path, '{"kind":"result","problemKey":"x","var');
  const again = TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device });
  assert.is(again.results.length, 3);
  assert.ok(readFileSync(path, 'utf8').endsWith('\n'), 'the partial line was removed');
  fill(again);
  again.close();
  assert.is(TuningDb.read(path).results.length, 6);
});

test('a corrupt file or another device is refused, never overwritten', () => {
  const path = tmp();
  const db = TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device });
  fill(db);
  db.close();
  const text = readFileSync(path, 'utf8').split('\n');
  text[2] = 'garbage';
  const corrupt = tmp();
  writeFileSync(corrupt, text.join('\n'));
  assert.throws(() => TuningDb.open(corrupt, { backend: 'cuda', arch: 'sm90', device }), (e: Error) => e instanceof DbError && /corrupt at line 3/.test(e.message));
  assert.is(readFileSync(corrupt, 'utf8'), text.join('\n'));
  assert.throws(() => TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device: { ...device, name: 'NVIDIA H100 80GB HBM3' } }), /was tuned on NVIDIA H200/);
  const notDb = tmp();
  writeFileSync(notDb, '{"hello":1}\n');
  assert.throws(() => TuningDb.open(notDb, { backend: 'cuda', arch: 'sm90', device }), /not a normgen tuning database/);
});

test.run();
