import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeProblem, problemKey, type KernelSpec } from '../generator/problem.js';
import { baselineParams, GENERIC_PARAMS } from '../generator/space.js';
import { makeVariant } from '../generator/variant.js';
import { DbError, fwdParams, TuningDb } from '../tuner/db.js';
import type { DeviceId } from '../tuner/device.js';
import { winners } from '../tuner/select.js';
import { sessionsSeconds, tuneReport } from '../tuner/tune-report.js';
import { DB } from './paths.js';

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

test('a database tuned with other templates is refused, untouched; the same templates resume', () => {
  const path = tmp();
  const db = TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device }, 'h');
  fill(db); // its session: templates 'h'
  db.close();
  appendFileSync(path, '{"kind":"result","problemKey":"x","var'); // and a write cut off by a kill
  const before = readFileSync(path, 'utf8');
  assert.throws(
    () => TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device }, 'other'),
    (e: Error) => e instanceof DbError && /holds results of other kernel templates \(h, normgen 0; these are other\).*Pass a new --db/.test(e.message),
  );
  assert.is(readFileSync(path, 'utf8'), before, 'not even the cut-off line was touched');
  assert.is(TuningDb.open(path, { backend: 'cuda', arch: 'sm90', device }, 'h').results.length, 3);
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

test('results carry their time; a tune resumed over several runs reports their time in all', () => {
  const db = TuningDb.open(tmp(), { backend: 'cuda', arch: 'sm90', device });
  const v = makeVariant(problem, GENERIC_PARAMS);
  const result = (session: number, at?: string) => ({
    session, problemKey: problemKey(problem), problem, stage: 'final' as const, variantId: v.id, params: v.params, status: 'OK' as const, medianUs: 8, fractionOfCopy: 0.6, ...(at ? { at } : {}),
  });
  db.startSession({ started: new Date().toISOString(), command: 'test', normgen: '0', templateHash: 'h', nvcc: '13', copyGbps: 4000 });
  const before = Date.now();
  const stamped = db.record(result(1));
  assert.ok(Date.parse(stamped.at!) >= before - 1000 && Date.parse(stamped.at!) <= Date.now(), 'stamped when recorded');
  assert.is(sessionsSeconds(db)!.sessions, 1);
  assert.ok(sessionsSeconds(db)!.seconds >= 0 && sessionsSeconds(db)!.seconds < 60);

  const other = TuningDb.open(tmp(), { backend: 'cuda', arch: 'sm90', device });
  const session = (started: string, templateHash: string) => other.startSession({ started, command: 'test', normgen: '0', templateHash, nvcc: '13', copyGbps: 4000 });
  session('2026-11-27T00:00:00.000Z', 'old');  // earlier templates: not part of this tune
  other.record(result(1, '2026-11-27T00:30:00.000Z'));
  session('2026-11-27T01:00:00.000Z', 'new');  // stopped by a time limit after 560 s
  other.record(result(2, '2026-11-27T01:05:00.000Z'));
  other.record(result(2, '2026-11-27T01:09:20.000Z'));
  session('2026-11-27T01:10:00.000Z', 'new');  // resumed: 45 s to finish
  other.record(result(3, '2026-11-27T01:10:45.000Z'));
  assert.equal(sessionsSeconds(other), { sessions: 2, seconds: 605 });
  assert.match(tuneReport(other, 45, 0), /- all 2 runs of these templates in this database \(a tune resumed\): 605 s/);
  session('2026-11-27T02:00:00.000Z', 'new');  // nothing left to do
  assert.equal(sessionsSeconds(other), { sessions: 3, seconds: 605 });

  const damaged = TuningDb.open(tmp(), { backend: 'cuda', arch: 'sm90', device });
  damaged.startSession({ started: '2026-11-27T00:00:00.000Z', command: 'test', normgen: '0', templateHash: 'new', nvcc: '13', copyGbps: 4000 });
  damaged.record(result(1, 'yesterday'));
  assert.is(sessionsSeconds(damaged), undefined, 'an unreadable time gives no total, not NaN');

  other.record({ ...result(4), at: undefined });  // as an older database's results are
  assert.is(sessionsSeconds(other), undefined, 'no total without every result\'s time');
  assert.not.match(tuneReport(other, 45, 0), /a tune resumed/);
});

test('a database from before the 1536 cap, which wrote the 1024 cap as `true`, loads it as 1024 with its variant id', () => {
  const committed = TuningDb.read(DB);
  const capped = committed.results.find((r) => fwdParams(r).registerCap === 1024)!;
  const path = tmp();
  const old = { ...capped, params: { ...capped.params, registerCap: true } };
  const lines = [committed.header, ...committed.sessions.filter((s) => s.session === capped.session), old].map((l) => JSON.stringify(l));
  writeFileSync(path, lines.join('\n') + '\n');
  const [r] = TuningDb.read(path).results;
  assert.is(fwdParams(r).registerCap, 1024);
  assert.is(makeVariant(r.problem, fwdParams(r)).id, capped.variantId, 'the id the old database recorded');
});

test('a database from before 2026-12-04, which wrote the release point as two flags, loads it as one field', () => {
  const committed = TuningDb.read(DB);
  const timed = committed.results.find((r) => r.releaseStartUs !== undefined && r.release === undefined)!;
  const path = tmp();
  const { release: _, ...plain } = timed;
  const old = [
    { ...plain, releaseLate: true },
    { ...plain, releaseLate: false },
    { ...plain, releaseAtExit: true },
    plain,
  ];
  const lines = [committed.header, ...committed.sessions.filter((s) => s.session === timed.session), ...old].map((l) => JSON.stringify(l));
  writeFileSync(path, lines.join('\n') + '\n');
  const loaded = TuningDb.read(path).results;
  assert.equal(loaded.map((r) => r.release), ['late', undefined, 'exit', undefined]);
  assert.ok(loaded.every((r) => !('releaseLate' in r) && !('releaseAtExit' in r)), 'the old flags are gone');
});

/** A database of `db`'s header and one result (with its session), read as build, check and merge read it (checked), when called. */
function checkedAlone<R extends { session: number }>(db: TuningDb, result: R) {
  const path = tmp();
  const lines = [db.header, ...db.sessions.filter((s) => s.session === result.session), result];
  writeFileSync(path, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return () => TuningDb.readChecked(path);
}

test('build, check and merge refuse a result whose register cap the launch bounds cannot take (a clear error, not one from nvcc)', () => {
  const committed = TuningDb.read(DB);
  const capped = committed.results.find((r) => fwdParams(r).registerCap === 1536)!;
  const withCap = (params: object) => checkedAlone(committed, { ...capped, params });
  assert.throws(withCap({ ...capped.params, registerCap: 1280 }), (e: Error) => e instanceof DbError && /registerCap 1280 .*1024 or 1536/.test(e.message));
  assert.throws(withCap({ ...capped.params, registerCap: 1536, threads: 1024 }), (e: Error) => e instanceof DbError && /1536 for CTAs of 1024 threads/.test(e.message));
  assert.throws(withCap({ ...capped.params, registerCap: '1536' }), (e: Error) => e instanceof DbError && /registerCap "1536"/.test(e.message));
  assert.is(withCap(capped.params)().results.length, 1, 'the record as committed loads');
});

test('build, check and merge refuse a result whose release point this normgen does not know', () => {
  const committed = TuningDb.read(DB);
  const late = committed.results.find((r) => r.release === 'late')!;
  const withRelease = (release: unknown) => checkedAlone(committed, { ...late, release });
  assert.throws(withRelease('early'), (e: Error) => e instanceof DbError && /has release "early" \(expected late or exit, or none: at the start\)/.test(e.message));
  assert.throws(withRelease(1), (e: Error) => e instanceof DbError && /has release 1 /.test(e.message));
  assert.is(withRelease('exit')().results[0].release, 'exit');
});

test('build, check and merge refuse a result whose plain-launch kernel this normgen does not know', () => {
  const committed = TuningDb.read(DB);
  const ok = committed.results.find((r) => r.status === 'OK')!;
  const withPlainLaunch = (plainLaunch: unknown) => checkedAlone(committed, { ...ok, plainLaunch });
  assert.throws(withPlainLaunch('both'), (e: Error) => e instanceof DbError && /has plainLaunch "both" \(expected twin or kernel, or none\)/.test(e.message));
  assert.is(withPlainLaunch('kernel')().results[0].plainLaunch, 'kernel');
});

test.run();
