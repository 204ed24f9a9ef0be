// The emitted package: deterministic, identical to the committed one, compiles with
// nvcc, checks arguments before launching, and its C and TypeScript select() agree.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPackage as build, COMMITTED, harness, mod, nvcc, pkg, selectAllC, selectC } from './built-package.js';
import { assertSamePackage, SELECT_PATHS, type SelectQuery } from './test-package.js';
import { parseArch } from '../generator/arch.js';
import { maxDynamicSharedBytes } from '../generator/space.js';

test('emission is deterministic and matches the committed package', () => {
  const [a, b] = [0, 1].map(() => join(mkdtempSync(join(tmpdir(), 'normgen-pkg-')), 'normgen-sm90-h200'));
  build(a);
  build(b);
  assertSamePackage(a, b);
  assertSamePackage(COMMITTED, a);
});

test('the CMake project builds the same library', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'normgen-cmake-')), 'build');
  execFileSync('cmake', ['-S', pkg, '-B', dir, `-DCMAKE_CUDA_COMPILER=${nvcc}`], { stdio: 'pipe' });
  execFileSync('cmake', ['--build', dir, '-j', '2'], { stdio: 'pipe' });
  assert.ok(statSync(join(dir, 'libnormgen.so')).size > 100_000);
});

test('bad calls get an error code and a message, and nothing is launched', () => {
  const lines = execFileSync(harness, ['errors'], { encoding: 'utf8' }).trim().split('\n');
  const got = Object.fromEntries(lines.map((l) => [l.split(' ')[0], l]));
  assert.match(got['null-x'], /^null-x 1 x is null/);
  assert.match(got['null-weight'], /^null-weight 1 weight is null/);
  assert.match(got['rows-0'], /^rows-0 2 rows and hidden must be positive/);
  assert.match(got['hidden-negative'], /^hidden-negative 2 /);
  assert.match(got['stride-small'], /^stride-small 2 a row stride is smaller than hidden/);
  assert.match(got['unsupported-spec'], /^unsupported-spec 3 .*not in the package/);
  assert.match(got['null-residual'], /^null-residual 1 residual or residual_out is null/);
  assert.match(got['null-desc'], /^null-desc 1 the descriptor is null/);
});

test('programmatic dependent launch is on unless NORMGEN_PDL=0, and a call switches it', () => {
  const run = (env: NodeJS.ProcessEnv) => execFileSync(harness, ['programmatic'], { encoding: 'utf8', env }).trim();
  const { NORMGEN_PDL: _, ...env } = process.env;
  assert.is(run(env), '1 0 1');
  assert.is(run({ ...env, NORMGEN_PDL: '0' }), '0 0 1');
  assert.is(run({ ...env, NORMGEN_PDL: '1' }), '1 0 1');
});

test('C and TypeScript select the same variant on tuned, untuned, odd and misaligned shapes', async () => {
  let seen = new Set<string>();
  const cases: SelectQuery[] = [];
  for (const [op, dtype, residual] of [['rmsnorm', 'bf16', 'none'], ['rmsnorm', 'fp32', 'same'], ['layernorm', 'bf16', 'none']])
    for (const hidden of [1024, 4096, 5000, 4095, 65536, 100000, 7])
      for (const rows of [1, 40, 3000, 1_000_000])
        for (const alignBytes of [16, 4]) cases.push({ op, dtype, residual, hidden, rows, stride: hidden, alignBytes });
  const chosen = selectAllC(cases);
  for (const [i, { op, dtype, residual, hidden, rows, stride, alignBytes = 16 }] of cases.entries()) {
    const { variant, path } = chosen[i];
    const elt = dtype === 'fp32' ? 4 : 2;
    const want = mod.select({ op, dtype, bias: op === 'layernorm', residual, hidden, rows, stride, alignmentElems: Math.max(1, alignBytes / elt) });
    const label = `${op} ${dtype} ${residual} h${hidden} r${rows} a${alignBytes}`;
    assert.is(mod.VARIANTS[variant].symbol, want.variant.symbol, label);
    assert.is(SELECT_PATHS[path], want.path, label);
    seen.add(want.path);
  }
  assert.equal(seen, new Set(SELECT_PATHS), 'every lookup path exercised');
});

test('a kernel staging rows in shared memory is selected only where they fit there', async () => {
  // Long untuned rows would otherwise get the nearest tuned hidden's staged-row kernel and fail
  // at launch (bf16 RMSNorm + residual at 150000 x 32768: 300 KB of rows for one CTA).
  const limit = maxDynamicSharedBytes(parseArch('sm90'));
  assert.is(mod.TABLES[0].maxSharedBytes, limit);
  let staged = 0;
  for (const [op, dtype, residual] of [['rmsnorm', 'bf16', 'same'], ['rmsnorm', 'fp32', 'same'], ['rmsnorm', 'bf16', 'none'], ['layernorm', 'bf16', 'none'], ['layernorm', 'fp32', 'none']])
    for (const hidden of [40000, 100000, 150000, 200000, 262144, 524288])
      for (const rows of [32, 2048, 32768]) {
        const { variant: v } = mod.select({ op, dtype, bias: op === 'layernorm', residual, hidden, rows });
        const label = `${op} ${dtype} ${residual} h${hidden} r${rows}`;
        assert.is(mod.VARIANTS[selectC({ op, dtype, residual, hidden, rows }).variant].symbol, v.symbol, label);
        if (v.storage !== 'smem') continue;
        staged++;
        const bytes = (v.threads / v.threadsPerRow) * Math.ceil(hidden / (v.cluster * v.vec)) * v.vec * (dtype === 'fp32' ? 4 : 2);
        assert.ok(bytes <= limit, `${label}: ${v.symbol} stages ${bytes} bytes`);
      }
  assert.ok(staged > 0, 'long rows that fit still get staged-row kernels');
});

test.run();
