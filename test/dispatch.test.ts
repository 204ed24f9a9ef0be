// The dispatch table built from the committed H200 tuning database, and every lookup path.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import type { KernelSpec } from '../generator/problem.js';
import { parseArch } from '../generator/arch.js';
import { capacity } from '../generator/space.js';
import { FORWARD } from '../tuner/direction.js';
import { fwdParams, TuningDb } from '../tuner/db.js';
import { buildDispatchTable, comparableTimes, DEFAULT_LARGE_TOLERANCE, DEFAULT_PLAIN_MARGIN, fastestPerProblem, lookup, plainLaunchEntries, rowBucket } from '../tuner/dispatch.js';
import { H100_DB, H100_PLAIN_DB } from './paths.js';
import { DEFAULT_ROWS } from '../tuner/grid.js';
import { winners } from '../tuner/select.js';
import { LARGE_PROBLEM_ELEMENTS } from '../tuner/tune-report.js';

const db = TuningDb.read(fileURLToPath(new URL('../../out/tuning/sm90-h200.jsonl.gz', import.meta.url)));
const table = buildDispatchTable(db);
const rms: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };

test('the space still holds every winner of the committed tune: pruning never drops a measured winner', () => {
  const sm90 = parseArch('sm90');
  const all = winners(db);
  assert.is(all.length, 1224);
  for (const w of all) {
    const ids = new Set(FORWARD.variants(w.problem, sm90).map((v) => v.id));
    assert.ok(ids.has(w.best.variantId), `${w.problem.hidden} x ${w.problem.rows}: winner ${w.best.variantId} left the space`);
  }
});

test('fewer variants than per-problem winners, each problem within 2% of its best, 0.2% at 16M elements and more', () => {
  const problems = new Set(db.results.filter((r) => r.status === 'OK').map((r) => r.problemKey));
  assert.is(table.entries.length, problems.size);
  assert.ok(table.maxRegret <= 0.02, `regret ${table.maxRegret}`);
  const large = table.entries.filter((e) => e.rows * e.hidden >= LARGE_PROBLEM_ELEMENTS);
  assert.ok(large.length > 300 && large.every((e) => e.regret <= DEFAULT_LARGE_TOLERANCE), `large problems' regret up to ${Math.max(...large.map((e) => e.regret))}`);
  const loose = buildDispatchTable(db, { largeTolerance: 0.02 });
  assert.ok(loose.variants < table.variants && loose.entries.some((e) => e.rows * e.hidden >= LARGE_PROBLEM_ELEMENTS && e.regret > DEFAULT_LARGE_TOLERANCE), 'the tighter bound costs variants and changes choices');
  // Variants are specialized per kernel spec and hidden size, so sharing happens across row counts.
  const winners = new Set(buildDispatchTable(db, { tolerance: 0 }).entries.map((e) => e.variantId));
  const tuned = new Set(table.entries.map((e) => e.variantId)); // table.variants also counts the portable ones
  assert.ok(tuned.size < winners.size, `${tuned.size} variants, ${winners.size} distinct winners`);
  for (const e of table.entries) {
    const measured = db.results.filter((r) => r.variantId === e.variantId && r.problem.hidden === e.hidden && r.problem.rows === e.rows && r.problem.op === 'rmsnorm' === e.spec.startsWith('rmsnorm'));
    assert.ok(measured.length > 0 && measured.every((r) => r.status === 'OK'), 'only verified variants enter the table');
  }
});

test('where a problem was re-timed, its entry is a re-timed variant at its final time', () => {
  const final = db.results.filter((r) => r.status === 'OK' && r.stage === 'final');
  const finalTime = new Map(final.map((r) => [`${r.problemKey}|${r.variantId}`, r.medianUs!]));
  const retimed = new Set(final.map((r) => r.problemKey));
  assert.ok(retimed.size > 1000, `${retimed.size} problems re-timed`);
  for (const e of table.entries) {
    const key = `${e.spec}.h${e.hidden}.r${e.rows}`;
    if (!retimed.has(key)) continue;
    assert.is(e.medianUs, finalTime.get(`${key}|${e.variantId}`), `${key}: ${e.variantId} was not re-timed`);
  }
});

test('a screening never beats re-timed variants; without them, only screenings over the most input copies count', () => {
  const copy = TuningDb.read(fileURLToPath(new URL('../../out/tuning/sm90-h200.jsonl.gz', import.meta.url)));
  const key = 'rmsnorm.bf16.w-same.h1024.r1';
  const mine = copy.results.filter((r) => r.problemKey === key && r.status === 'OK');
  const finals = new Set(mine.filter((r) => r.stage === 'final').map((r) => r.variantId));
  const screened = mine.filter((r) => r.stage === 'screen' && !finals.has(r.variantId));
  assert.ok(finals.size > 0 && screened.length > 1);
  const entry = () => buildDispatchTable(copy).entries.find((e) => `${e.spec}.h${e.hidden}.r${e.rows}` === key)!;
  // Every time over as many input copies, one screening at half the best final's time: the re-timed variants still decide.
  for (const r of mine) r.copies = 4096;
  const fast = screened[0];
  fast.medianUs = Math.min(...mine.filter((r) => r.stage === 'final').map((r) => r.medianUs!)) / 2;
  assert.ok(finals.has(entry().variantId));
  // Without final times the fastest screening wins, unless it rotated over fewer input copies (warmer in L2).
  for (let i = copy.results.length - 1; i >= 0; i--) if (copy.results[i].problemKey === key && copy.results[i].stage === 'final') copy.results.splice(i, 1);
  assert.is(entry().variantId, fast.variantId);
  fast.copies = 4095;
  assert.is.not(entry().variantId, fast.variantId);
});

test("each entry carries its variant's registers as the tune compiled it (the plain twins' launch bounds use them)", () => {
  const registers = new Map(db.results.filter((r) => typeof r.registers === 'number').map((r) => [r.variantId, r.registers!]));
  for (const e of table.entries) {
    assert.is(e.registers, registers.get(e.variantId), `${e.spec} ${e.hidden} x ${e.rows}`);
    assert.ok(e.registers! > 0);
    if (e.portable) assert.is(e.portable.registers, registers.get(e.portable.variantId));
  }
});

test('rows fall into the nearest tuned bucket on a log scale', () => {
  assert.equal(table.rowBuckets, DEFAULT_ROWS, 'the committed database covers the default grid');
  assert.is(rowBucket(table.rowBuckets, 2), 1);
  assert.is(rowBucket(table.rowBuckets, 3), 8);
  assert.is(rowBucket(table.rowBuckets, 100), 128);
  assert.is(rowBucket(table.rowBuckets, 1000), 512);
  assert.is(rowBucket(table.rowBuckets, 5_000_000), 32768);
});

test('exact: a tuned shape gets its own entry', () => {
  const l = lookup(table, rms, 4096, 32768);
  assert.is(l.path, 'exact');
  assert.is(l.entry!.hidden, 4096);
  assert.is(l.entry!.rows, 32768);
});

test('nearest: an untuned hidden size gets the nearest tuned one that can run it', () => {
  const l = lookup(table, rms, 5000, 30000);
  assert.is(l.path, 'nearest');
  assert.ok(capacity(l.params) >= 5000 && 5000 % l.params.vec === 0);
});

test('a winner compiled for its own hidden size carries a portable variant, which the nearest path uses', () => {
  const fixed = table.entries.filter((e) => e.params.fixedHidden !== undefined);
  assert.ok(fixed.length > 0, 'the committed table has winners compiled for their hidden size');
  for (const e of table.entries) {
    if (e.params.fixedHidden === undefined) assert.is(e.portable, undefined, `${e.spec} h${e.hidden} r${e.rows}`);
    else assert.is(e.portable?.params.fixedHidden, undefined, `${e.spec} h${e.hidden} r${e.rows}: portable runs any size`);
  }
  // Every entry fixed: without portables an untuned size falls through to the generic variant.
  const allFixed = { ...table, entries: table.entries.map((e) => ({ ...e, params: { ...e.params, fixedHidden: e.hidden } })) };
  assert.is(lookup({ ...allFixed, entries: allFixed.entries.map(({ portable, ...e }) => e) }, rms, 5000, 30000).path, 'generic');
  const near = lookup(allFixed, rms, 5000, 30000);
  assert.is(near.path, 'nearest');
  assert.is(near.params, near.entry!.portable!.params);
  assert.is(lookup(allFixed, rms, 4096, 32768).params.fixedHidden, 4096, 'a tuned size still gets its own kernel');
});

test('a variant compiled for one hidden size serves only that size: untuned sizes skip it', () => {
  // The committed table with its 4096 x 32768 winner compiled for 4096.
  const fixed = {
    ...table,
    entries: table.entries.map((e) => (e.spec === 'rmsnorm.bf16.w-same' && e.hidden === 4096 ? { ...e, params: { ...e.params, fixedHidden: 4096 } } : e)),
  };
  const exact = lookup(fixed, rms, 4096, 32768);
  assert.is(exact.params.fixedHidden, 4096);
  const near = lookup(fixed, rms, 4000, 32768);
  assert.is(near.params.fixedHidden, undefined);
  assert.ok(near.path === 'generic' || near.entry!.hidden !== 4096 || near.params === near.entry!.portable?.params, 'not the kernel compiled for 4096');
});

test('generic: odd rows, misaligned pointers and untuned specs still get a correct variant', () => {
  const odd = lookup(table, rms, 4095, 2048);
  assert.ok(odd.params.vec === 1 && capacity(odd.params) >= 4095);
  const misaligned = lookup(table, rms, 4096, 2048, 4096, 2);
  assert.ok(misaligned.params.vec <= 2, 'a narrower vector instead of a fault');
  const untuned = lookup(table, { ...rms, features: { ...rms.features, weightOffset: true } }, 4096, 2048);
  assert.is(untuned.path, 'generic');
});

test('plain-launch entries: the H100 plain tune\'s winners that beat the tuned winner there by more than the margin', () => {
  const tuned = buildDispatchTable(TuningDb.read(H100_DB));
  const plainDb = TuningDb.read(H100_PLAIN_DB);
  const plain = buildDispatchTable(plainDb);
  const plainTime = (e: { spec: string; hidden: number; rows: number }, variantId: string) =>
    Math.min(...plainDb.results.filter((r) => r.status === 'OK' && r.variantId === variantId && r.problemKey === `${e.spec}.h${e.hidden}.r${e.rows}`).map((r) => r.medianUs!));
  const kept = plainLaunchEntries(plainDb, plain, tuned);
  assert.ok(kept.length > 0 && kept.length < plain.entries.length, `${kept.length} of ${plain.entries.length} kept`);
  for (const e of plain.entries) {
    const theirs = plainTime(e, tuned.entries.find((t) => t.spec === e.spec && t.hidden === e.hidden && t.rows === e.rows)!.variantId);
    assert.is(kept.includes(e), theirs > e.medianUs * (1 + DEFAULT_PLAIN_MARGIN), `${e.spec} ${e.hidden} x ${e.rows}: ${theirs} against ${e.medianUs}`);
  }
  assert.ok(plainLaunchEntries(plainDb, plain, tuned, 0).length > kept.length, 'a smaller margin keeps more');
  assert.is(plainLaunchEntries(plainDb, plain, tuned, 10).length, 0);
  // Without a time of the tuned winner under plain launches nothing shows the other is faster.
  const untimed = { results: plainDb.results.filter((r) => !tuned.entries.some((t) => t.variantId === r.variantId)) };
  assert.is(plainLaunchEntries(untimed, plain, tuned, 0).length, 0);
  // Nor where the tuned table has no such problem.
  assert.is(plainLaunchEntries(plainDb, plain, { entries: [] }, 0).length, 0);
});

test('fastestPerProblem: per problem and group, the fastest comparable result, from the committed tune', () => {
  const best = fastestPerProblem(db.results, (r) => fwdParams(r).storage);
  assert.is(best.size, 1224);
  const fastest = new Map<string, number>();
  for (const q of comparableTimes(db.results)) {
    const group = `${q.problemKey} ${fwdParams(q).storage}`;
    fastest.set(group, Math.min(q.medianUs, fastest.get(group) ?? Infinity));
  }
  let groups = 0;
  for (const [key, byStorage] of best) {
    for (const [storage, r] of byStorage) {
      assert.is(r.problemKey, key);
      assert.is(fwdParams(r).storage, storage);
      assert.is(r.medianUs, fastest.get(`${key} ${storage}`), `${key} ${storage}`);
      groups++;
    }
  }
  assert.is(groups, fastest.size, 'every problem and storage timed has its fastest');
});

test.run();
