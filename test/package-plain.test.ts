// A package whose GPU was also tuned under plain launches (tune with NORMGEN_PDL=0): the
// plain-launch winners that beat the tuned ones there by more than the margin run where
// the package launches plainly, in C and TypeScript alike; elsewhere, and launched
// programmatically, the tuned winners. Made-up databases from the committed H200 one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TuningDb, type DbResult } from '../tuner/db.js';
import { buildDispatchTable, plainLaunchEntries } from '../tuner/dispatch.js';
import { fakeDeviceDb } from './fake-device-db.js';
import { buildTestPackage, SELECT_PATHS } from './test-package.js';
import { CLI, DB } from './paths.js';
import { PLAIN_TWIN_ROWS_BELOW } from '../generator/render-cuda.js';

const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));
const work = tmp('normgen-plain-');
// One kernel spec at a few shapes keeps the compile short.
const keep = (r: DbResult) => /^rmsnorm\.bf16\.w-same\.h(1024|4096|16384)\.r(32|2048)$/.test(r.problemKey);
const tunedDb = join(work, 'sm90-h200.jsonl');
const plainDb = join(work, 'sm90-h200-plain.jsonl');
fakeDeviceDb(DB, tunedDb, { device: {}, keep });
fakeDeviceDb(DB, plainDb, { device: {}, keep, spread: 0.4, launch: 'plain' });
const pkg = await buildTestPackage(join(tmp('normgen-pkg-plain-'), 'normgen-plain'), [tunedDb, plainDb]);
const dispatch = JSON.parse(readFileSync(join(pkg.dir, 'dispatch.json'), 'utf8'));

test('the plain-launch table holds the plain winners that beat the tuned winner by more than the margin', () => {
  const [table] = dispatch.tables;
  assert.is(dispatch.tables.length, 1, 'one GPU, one table');
  assert.is(table.plain.db, 'sm90-h200-plain.jsonl');
  const plain = TuningDb.read(plainDb);
  const want = plainLaunchEntries(plain, buildDispatchTable(plain), buildDispatchTable(TuningDb.read(tunedDb)));
  assert.ok(want.length > 0, 'the made-up plain times give some problems a faster plain kernel');
  assert.equal(table.plain.entries.map((e: { variantId: string }) => e.variantId), want.map((e) => e.variantId));
  assert.match(pkg.log, new RegExp(`plain launches run ${want.length} of its ${table.entries.length} winners`));
  assert.match(readFileSync(join(pkg.dir, 'README.md'), 'utf8'), `${want.length} tuned shapes launched plainly run another kernel`);
});

test('launched plainly, C and TypeScript pick the plain winner where there is one; programmatically, the tuned one', () => {
  const [table] = dispatch.tables;
  const device = { name: 'NVIDIA H200', cc: 90 };
  const queries = table.entries.map((e: { hidden: number; rows: number }) => ({ op: 'rmsnorm', dtype: 'bf16', residual: 'none', hidden: e.hidden, rows: e.rows, device }));
  const programmatic = pkg.selectAllC(queries);
  const plain = pkg.selectAllPlainC(queries);
  let others = 0;
  table.entries.forEach((e: { hidden: number; rows: number; variantId: string }, i: number) => {
    const label = `h${e.hidden} r${e.rows}`;
    const own = table.plain.entries.find((p: { hidden: number; rows: number }) => p.hidden === e.hidden && p.rows === e.rows);
    const symbol = (id: string) => `normgen_rmsnorm_fwd_${id}`;
    assert.is(SELECT_PATHS[plain[i].path], 'exact', label);
    assert.is(pkg.mod.VARIANTS[programmatic[i].variant].symbol, symbol(e.variantId), label);
    assert.is(pkg.mod.VARIANTS[plain[i].variant].symbol, symbol(own ? own.variantId : e.variantId), `${label} launched plainly`);
    const problem = { op: 'rmsnorm', dtype: 'bf16', hidden: e.hidden, rows: e.rows };
    assert.is(pkg.mod.select(problem).variant, pkg.mod.VARIANTS[programmatic[i].variant], label);
    assert.is(pkg.mod.select(problem, undefined, 'plain').variant, pkg.mod.VARIANTS[plain[i].variant], `${label} launched plainly`);
    others += Number(plain[i].variant !== programmatic[i].variant);
  });
  assert.is(others, table.plain.entries.length);
  // Untuned sizes take the nearest entry's kernel either way.
  const untuned = [{ op: 'rmsnorm', dtype: 'bf16', residual: 'none', hidden: 3000, rows: 100, device }];
  const { twin: _, ...plainUntuned } = pkg.selectAllPlainC(untuned)[0];
  assert.equal(plainUntuned, pkg.selectAllC(untuned)[0]);
});

test('launched plainly, a tuned shape runs the twin or the kernel itself, whichever the plain tune timed faster there; other shapes by the rows', () => {
  const [table] = dispatch.tables;
  const device = { name: 'NVIDIA H200', cc: 90 };
  const queries = table.entries.map((e: { hidden: number; rows: number }) => ({ op: 'rmsnorm', dtype: 'bf16', residual: 'none', hidden: e.hidden, rows: e.rows, device }));
  const plain = pkg.selectAllPlainC(queries);
  const results = TuningDb.read(plainDb).results;
  const seen = new Set<number>();
  table.entries.forEach((e: { hidden: number; rows: number }, i: number) => {
    const id = pkg.mod.VARIANTS[plain[i].variant].symbol.replace(/^normgen_rmsnorm_fwd_/, '');
    // The fastest final of that variant on the problem in the plain tune, which timed both kernels.
    const finals = results.filter((r) => r.problem.hidden === e.hidden && r.problem.rows === e.rows && r.variantId === id && r.plainLaunch);
    const fastest = finals.sort((a, b) => a.medianUs! - b.medianUs!)[0];
    const want = fastest ? Number(fastest.plainLaunch === 'twin') : Number(e.rows < PLAIN_TWIN_ROWS_BELOW);
    assert.is(plain[i].twin, want, `h${e.hidden} r${e.rows}: ${fastest?.plainLaunch ?? 'by the rows'}`);
    assert.is(table.plain.launches[`rmsnorm.bf16.w-same ${e.hidden} ${e.rows}`], fastest?.plainLaunch);
    seen.add(want);
  });
  assert.equal([...seen].sort(), [0, 1], 'the made-up plain tune has shapes of either kind');
  const untuned = [100, PLAIN_TWIN_ROWS_BELOW - 1, PLAIN_TWIN_ROWS_BELOW, 40000].map((rows) => ({ op: 'rmsnorm', dtype: 'bf16', residual: 'none', hidden: 3000, rows, device }));
  assert.equal(pkg.selectAllPlainC(untuned).map((a) => a.twin), [1, 1, 0, 0]);
});

test('a plain-launch database alone is its GPU\'s table; two of one GPU are refused', () => {
  const alone = join(tmp('normgen-pkg-plain-alone-'), 'x');
  execFileSync(process.execPath, [CLI, 'build', '--db', plainDb, '--out', alone], { encoding: 'utf8' });
  const [table] = JSON.parse(readFileSync(join(alone, 'dispatch.json'), 'utf8')).tables;
  assert.is(table.db, 'sm90-h200-plain.jsonl');
  assert.is(table.plain, undefined);
  const twice = spawnSync(process.execPath, [CLI, 'build', '--db', tunedDb, '--db', plainDb, '--db', plainDb, '--out', join(tmp('normgen-pkg-plain-twice-'), 'x')], { encoding: 'utf8' });
  assert.is(twice.status, 2);
  assert.match(twice.stderr, /both hold plain-launch times of NVIDIA H200: merge them first/);
  const margin = spawnSync(process.execPath, [CLI, 'build', '--db', tunedDb, '--db', plainDb, '--plain-margin', '-1', '--out', join(tmp('normgen-pkg-plain-margin-'), 'x')], { encoding: 'utf8' });
  assert.is(margin.status, 2);
  assert.match(margin.stderr, /--plain-margin must be in \[0, 1\)/);
});

test.run();
