// A package with one dispatch table per GPU model: built from two databases (the H200's
// and an "H100" made from it with other timings) and from a merged folder; C and
// TypeScript pick the same table for a device and the same variant in it, and the tables
// differ; with made-up backward databases, each device's backward too, and a device tuned
// without one borrows another's. A package over two archs (sm90 and a made-up sm80
// database) compiles each kernel only for the archs whose tables use it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArch } from '../generator/arch.js';
import { backwardSource } from '../generator/package-bwd.js';
import { unsupportedReason } from '../generator/space.js';
import { fwdParams, type DbResult } from '../tuner/db.js';
import { findNvcc } from '../tuner/nvcc.js';
import { fakeBwdDb } from './fake-bwd-db.js';
import { fakeDeviceDb } from './fake-device-db.js';
import { assertBackwardWinners, buildTestPackage, importPackageTs, SELECT_PATHS } from './test-package.js';
import { CLI, DB } from './paths.js';

const H100 = 'NVIDIA H100 80GB HBM3';
const A100 = 'NVIDIA A100-SXM4-80GB';
const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));
const cli = (...args: string[]) => execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
const nvcc = await findNvcc();

// Two kernel specs keep the compile short; every rule is per spec anyway.
const specs = new Set(['rmsnorm.bf16.w-same', 'layernorm.bf16.w-same.bias']);
const inSpecs = (r: DbResult) => specs.has(r.problemKey.replace(/\.h\d+\.r\d+$/, ''));
const work = tmp('normgen-devices-');
const h200Db = join(work, 'sm90-h200.jsonl');
const h100Db = join(work, 'sm90-h100.jsonl');
fakeDeviceDb(DB, h200Db, { device: {}, keep: inSpecs });
fakeDeviceDb(DB, h100Db, { device: { name: H100, memoryBytes: 85e9, uuid: 'fake-h100' }, spread: 0.4, keep: inSpecs });

const buildPackage = (dir: string, ...dbs: string[]) => buildTestPackage(dir, dbs);

const two = await buildPackage(join(tmp('normgen-pkg2-'), 'normgen-fleet'), h200Db, h100Db);

function cases(): [string, string, string, number, number, number, number][] {
  const out: [string, string, string, number, number, number, number][] = [];
  for (const [op, dtype] of [['rmsnorm', 'bf16'], ['layernorm', 'bf16']])
    for (const hidden of [1024, 4096, 5000, 8192, 16384, 65536, 100000, 7])
      for (const rows of [1, 32, 3000, 32768])
        for (const alignBytes of [16, 4]) out.push([op, dtype, 'none', hidden, rows, hidden, alignBytes]);
  return out;
}

/** C (harness) and TypeScript select for a device; they must agree. Returns the symbols chosen. */
function selectBoth(pkg: typeof two, device: string, cc: number): string[] {
  const chosen: string[] = [];
  for (const [op, dtype, residual, hidden, rows, stride, alignBytes] of cases()) {
    const { variant, path, table } = pkg.selectC({ op, dtype, residual, hidden, rows, stride, alignBytes, device: { name: device, cc } });
    const want = pkg.mod.select({ op, dtype, bias: op === 'layernorm', residual, hidden, rows, stride, alignmentElems: Math.max(1, alignBytes / 2) }, { name: device, computeCapability: cc });
    const label = `${device} ${op} ${dtype} h${hidden} r${rows} a${alignBytes}`;
    if (want === null) {
      assert.is(variant, -1, `${label}: a spec the package lacks`);
      continue;
    }
    assert.is(pkg.mod.VARIANTS[variant].symbol, want.variant.symbol, label);
    assert.is(SELECT_PATHS[path], want.path, label);
    assert.is(table, want.table, label);
    chosen.push(want.variant.symbol);
  }
  return chosen;
}

test('one package, one table per device; C and TypeScript agree on each, and the devices differ', () => {
  assert.match(two.log, /for 2 devices \(NVIDIA H200, NVIDIA H100 80GB HBM3\)/);
  assert.equal(two.mod.TABLES.map((t: { device: string }) => t.device), ['NVIDIA H200', H100]);
  const onH200 = selectBoth(two, 'NVIDIA H200', 90);
  const onH100 = selectBoth(two, H100, 90);
  const differ = onH200.filter((s, i) => s !== onH100[i]).length;
  assert.ok(differ >= 10, `${differ} of ${onH200.length} cases choose another variant on the H100`);
  const dispatch = JSON.parse(readFileSync(join(two.dir, 'dispatch.json'), 'utf8'));
  assert.equal(dispatch.tables.map((t: { device: string; db: string }) => [t.device, t.db]), [['NVIDIA H200', 'sm90-h200.jsonl'], [H100, 'sm90-h100.jsonl']]);
});

test('the table rule: same name, else same compute capability, else the first (C and TypeScript)', () => {
  const table = (name: string, cc: number) => {
    const [t, device] = two.run('table', name, String(cc)).split(/ (.*)/);
    assert.is(Number(t), two.mod.tableFor({ name, computeCapability: cc }), `${name} ${cc}`);
    return device;
  };
  assert.is(table(H100, 90), H100);
  assert.is(table('NVIDIA H200', 90), 'NVIDIA H200');
  assert.is(table('NVIDIA H800', 90), 'NVIDIA H200', 'an untuned sm90 GPU: the first sm90 table');
  assert.is(table(A100, 80), 'NVIDIA H200', 'older than every table: the first');
  assert.is(two.mod.tableFor(), 0);
  // No GPU here: the detected table is the first, and normgen_select uses it.
  assert.is(two.run('current'), '0 2');
  const { variant } = two.selectC({ op: 'rmsnorm', dtype: 'bf16', residual: 'none', hidden: 4096, rows: 32768 });
  assert.is(two.mod.VARIANTS[variant].symbol, two.mod.select({ op: 'rmsnorm', dtype: 'bf16', hidden: 4096, rows: 32768 }).variant.symbol);
});

test('a merged folder builds the same tables (in file-name order)', () => {
  const fleet = join(tmp('normgen-fleet-'), 'merged');
  cli('merge', h100Db, h200Db, '--out', fleet);
  assert.equal(readdirSync(fleet).sort(), ['sm90-h100-80gb-hbm3.jsonl', 'sm90-h200.jsonl']);
  const dir = join(tmp('normgen-pkg3-'), 'normgen-fleet');
  cli('build', '--db', fleet, '--out', dir);
  const merged = JSON.parse(readFileSync(join(dir, 'dispatch.json'), 'utf8')).tables;
  const separate = JSON.parse(readFileSync(join(two.dir, 'dispatch.json'), 'utf8')).tables;
  assert.equal(merged.map((t: { device: string }) => t.device), [H100, 'NVIDIA H200']);
  assert.equal(merged[0].entries, separate[1].entries);
  assert.equal(merged[1].entries, separate[0].entries);
  const twice = spawnSync(process.execPath, [CLI, 'build', '--db', h200Db, '--db', join(fleet, 'sm90-h200.jsonl'), '--out', join(tmp('normgen-pkg4-'), 'x')], { encoding: 'utf8' });
  assert.is(twice.status, 2);
  assert.match(twice.stderr, /both hold NVIDIA H200: merge them first/);
});

// Backward of the two kernel specs above (bf16 only), with other made-up times on the "H100".
const h200Bwd = join(work, 'sm90-h200-bwd.jsonl');
const h100Bwd = join(work, 'sm90-h100-bwd.jsonl');
fakeBwdDb(h200Db, h200Bwd, { dtypes: ['bf16'] });
fakeBwdDb(h100Db, h100Bwd, { dtypes: ['bf16'], salt: 'h100' });

test('backward in a package of two devices: each device its own table; C and TypeScript agree', async () => {
  const pkg = await buildPackage(join(tmp('normgen-pkg-bwd2-'), 'normgen-fleet'), h200Db, h100Db, h200Bwd, h100Bwd);
  assert.equal(pkg.mod.BWD_TABLES.map((t: { source: number }) => t.source), [0, 1]);
  // Shapes whose variants need no more shared memory than the library assumes without a GPU (48 KiB).
  const queries = ['rmsnorm', 'layernorm'].flatMap((op) =>
    [4096, 16384, 3000, 2048, 7, 1 << 20].flatMap((hidden) => [1, 32768].flatMap((rows) => [16, 4].map((alignBytes) => ({ op, dtype: 'bf16', hidden, rows, alignBytes })))),
  );
  const exact = new Map<string, string[]>();
  for (const [name, cc] of [['NVIDIA H200', 90], [H100, 90], ['NVIDIA H800', 90], [A100, 80]] as const) {
    const device = { name, cc };
    const inC = pkg.selectAllBwdC(queries.map((q) => ({ ...q, device })));
    queries.forEach((q, i) => {
      const want = pkg.mod.selectBackward({ op: q.op, dtype: 'bf16', bias: q.op === 'layernorm', hidden: q.hidden, rows: q.rows, alignmentElems: q.alignBytes / 2 }, { name, computeCapability: cc });
      const label = `${name} ${q.op} h${q.hidden} r${q.rows} a${q.alignBytes}`;
      assert.is(inC[i].table, want.table, label);
      assert.is(pkg.mod.BWD_VARIANTS[inC[i].variant], want.variant, label);
      assert.is(SELECT_PATHS[inC[i].path], want.path, label);
    });
    exact.set(name, queries.map((q, i) => (inC[i].path === 0 ? `${q.op}.${q.hidden}.${inC[i].variant}` : '')).filter(Boolean));
  }
  // The exact picks are each device's tuned winners, and the two devices' winners differ.
  const dispatch = JSON.parse(readFileSync(join(pkg.dir, 'dispatch.json'), 'utf8'));
  const [onH200, onH100] = assertBackwardWinners(pkg.mod, dispatch);
  assert.ok(onH200.some((v: unknown, i: number) => v !== onH100[i]), 'the H100 table has other backward winners');
  assert.equal(exact.get('NVIDIA H800'), exact.get('NVIDIA H200'), 'an untuned sm90 GPU: the first sm90 table');
  assert.equal(exact.get(A100), exact.get('NVIDIA H200'), 'older than every table: the first');
  assert.not.equal(exact.get(H100), exact.get('NVIDIA H200'));
  const readme = readFileSync(join(pkg.dir, 'README.md'), 'utf8');
  assert.match(readme, /NVIDIA H100 80GB HBM3 \(sm90\):\nproblem/);
  assert.match(readme, /table 0 its own, table 1 its own\./);
});

test('a device tuned without a backward uses the backward of a table of its compute capability', async () => {
  const dir = join(tmp('normgen-pkg-bwd1-'), 'normgen-fleet');
  cli('build', '--db', h200Db, '--db', h100Db, '--db', h100Bwd, '--out', dir);
  const mod = await importPackageTs(dir);
  assert.equal(mod.BWD_TABLES.map((t: { source: number }) => t.source), [1, 1]);
  assert.match(readFileSync(join(dir, 'src/normgen.cu'), 'utf8'), /\{ 0, 4, 0, 1 \},  \/\/ table 0: the backward tuned for table 1\n  \{ 0, 4, 0, 1 \},  \/\/ table 1: the backward tuned for table 1\n/);
  const dispatch = JSON.parse(readFileSync(join(dir, 'dispatch.json'), 'utf8'));
  assert.equal(dispatch.tables.map((t: { backward?: { db: string } }) => t.backward?.db), [undefined, 'sm90-h100-bwd.jsonl']);
  assert.match(readFileSync(join(dir, 'README.md'), 'utf8'), /table 0 table 1's, table 1 its own\./);
  const problem = { op: 'rmsnorm', dtype: 'bf16', hidden: 4096, rows: 32768 };
  assert.equal(mod.selectBackward(problem, { name: 'NVIDIA H200' }).variant, mod.selectBackward(problem, { name: H100 }).variant);
  assert.is(mod.selectBackward({ ...problem, dtype: 'fp32' }), null, 'a backward the package lacks');
});

test('the borrowing rule: same compute capability, else the nearest older, else the first that has one', () => {
  const owner = (computeCapability: number, has: boolean) => ({ device: `cc${computeCapability}`, computeCapability, ...(has ? { backward: {} as never } : {}) });
  const sources = (...owners: ReturnType<typeof owner>[]) => owners.map((_, i) => backwardSource(owners, i));
  assert.equal(sources(owner(90, false), owner(80, true), owner(90, true)), [2, 1, 2]);
  assert.equal(sources(owner(90, false), owner(80, true), owner(86, true)), [2, 1, 2]);
  assert.equal(sources(owner(80, false), owner(90, true), owner(100, true)), [1, 1, 2]);
});

test('two archs: each kernel compiled only for the archs whose tables use it; nearest older arch', async () => {
  const sm80 = parseArch('sm80');
  const rms = (r: DbResult) => r.problemKey.startsWith('rmsnorm.bf16.w-same.h');
  const a100Db = join(work, 'sm80-a100.jsonl');
  fakeDeviceDb(DB, a100Db, { device: { name: A100, computeCapability: '8.0', memoryBytes: 85e9, sms: 108 }, arch: 'sm80', spread: 0.3, keep: (r) => rms(r) && unsupportedReason(r.problem, fwdParams(r), sm80) === null });
  const h200Rms = join(work, 'sm90-h200-rms.jsonl');
  fakeDeviceDb(DB, h200Rms, { device: {}, keep: rms });
  const dir = join(tmp('normgen-pkg5-'), 'normgen-mixed');
  const pkg = await buildPackage(dir, h200Rms, a100Db);
  const files = readdirSync(join(dir, 'src')).filter((f) => f.startsWith('kernels_')).sort();
  assert.ok(files.includes('kernels_00_rmsnorm.bf16.w-same.cu'), files.join(' '));
  assert.ok(files.includes('kernels_00_rmsnorm.bf16.w-same.sm90.cu'), files.join(' '));
  const makefile = readFileSync(join(dir, 'Makefile'), 'utf8');
  assert.match(makefile, /ARCH_sm80_sm90 = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=compute_80/);
  assert.match(makefile, /ARCH_sm90 = -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90/);
  // Cluster kernels are tuned on sm90 only: none lands in a file built for sm80.
  const sm80Text = files.filter((f) => !f.endsWith('.sm90.cu')).map((f) => readFileSync(join(dir, 'src', f), 'utf8')).join('');
  assert.not.match(sm80Text, /__cluster_dims__/);
  assert.match(readFileSync(join(dir, 'src', 'kernels_00_rmsnorm.bf16.w-same.sm90.cu'), 'utf8'), /__cluster_dims__/);
  // The CMake project builds the same split.
  const build = join(tmp('normgen-cmake2-'), 'build');
  execFileSync('cmake', ['-S', dir, '-B', build, `-DCMAKE_CUDA_COMPILER=${nvcc}`], { stdio: 'pipe' });
  execFileSync('cmake', ['--build', build, '-j', '2'], { stdio: 'pipe' });
  // Nearest older arch: an sm86 or sm89 GPU runs the sm80 table, an sm100 the sm90 one.
  const table = (name: string, cc: number) => {
    const t = Number(pkg.run('table', name, String(cc)).split(' ')[0]);
    assert.is(t, pkg.mod.tableFor({ name, computeCapability: cc }), `${name} ${cc}`);
    return t;
  };
  assert.is(table('NVIDIA RTX A6000', 86), 1);
  assert.is(table('NVIDIA L40S', 89), 1);
  assert.is(table('NVIDIA B200', 100), 0);
  assert.is(table('NVIDIA H800', 90), 0);
  assert.is(table('Tesla V100', 70), 0, 'older than every table: the first');
  selectBoth(pkg, A100, 80);
  selectBoth(pkg, 'NVIDIA H200', 90);
});

test.run();
