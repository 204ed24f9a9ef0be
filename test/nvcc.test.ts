// Compiles a sample of the default space with the real nvcc for every target arch.
// Without nvcc this test fails (with the toolchain's message); it never skips.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { availableParallelism, tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { parseArch, ARCH_NAMES } from '../generator/arch.js';
import { makeProblem, type KernelSpec, type Problem } from '../generator/problem.js';
import { enumerateSpace, GENERIC_PARAMS, STORAGES, THREAD_CHOICES, CLUSTER_CHOICES, type CudaParams } from '../generator/space.js';
import { makeVariant, type Variant } from '../generator/variant.js';
import { CompilePool } from '../tuner/compile-pool.js';
import { findNvcc, parsePtxasReport, spills } from '../tuner/nvcc.js';
import { coveringSet } from '../tuner/verify-matrix.js';
import { withFreshCache } from './fresh-cache.js';

const REPORT = `ptxas info    : Compiling entry function 'k1' for 'sm_90a'
ptxas info    : Function properties for k1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 8 bytes smem, 400 bytes cmem[0]
ptxas info    : Function properties for k2
    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 400 bytes cmem[0]`;

test('ptxas reports are read per kernel', () => {
  const u = parsePtxasReport(REPORT);
  assert.equal(u.get('k1'), { registers: 40, sharedBytes: 8, spillStores: 0, spillLoads: 0, stackBytes: 0 });
  assert.equal(u.get('k2'), { registers: 255, sharedBytes: 0, spillStores: 16, spillLoads: 12, stackBytes: 24 });
});

/** Specs that together take every value of every feature. */
const SPECS: KernelSpec[] = [
  { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } },
  { op: 'layernorm', dtype: 'fp16', features: { weight: 'fp32', bias: true, weightOffset: true, residual: 'fp32', stats: true } },
  { op: 'rmsnorm', dtype: 'fp32', features: { weight: 'none', bias: true, weightOffset: false, residual: 'same', stats: true } },
  { op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: true, residual: 'same', stats: false } },
];
// 1002 elements per row: only 2-element vectors align (the space keeps the widest legal one).
const SHAPES: [number, number][] = [[1, 64], [7, 64], [1000, 1024], [1002, 64], [4096, 64], [65536, 64]];

function sample(arch: ReturnType<typeof parseArch>): Map<KernelSpec, Variant[]> {
  const out = new Map<KernelSpec, Variant[]>();
  for (const spec of SPECS) {
    const byId = new Map<string, Variant>();
    const add = (p: Problem, params: CudaParams[]) => params.forEach((q) => byId.set(makeVariant(p, q).id, makeVariant(p, q)));
    for (const [hidden, rows] of SHAPES) {
      const p = makeProblem(spec, hidden, rows);
      add(p, coveringSet(enumerateSpace(p, arch)));
    }
    add(makeProblem(spec, 8, 1), [GENERIC_PARAMS]);
    out.set(spec, [...byId.values()]);
  }
  return out;
}

test('the sample covers every feature value and every axis value', () => {
  const arch = parseArch('sm90');
  const all = [...sample(arch).values()].flat().map((v) => v.params);
  assert.equal(new Set(all.map((p) => p.storage)), new Set(STORAGES));
  assert.equal(new Set(all.map((p) => p.threads)), new Set(THREAD_CHOICES));
  assert.equal(new Set(all.map((p) => p.vec)), new Set([1, 2, 4, 8]));
  assert.equal(new Set(all.map((p) => p.cluster)), new Set(CLUSTER_CHOICES));
  const tpr = new Set(all.map((p) => p.threadsPerRow));
  for (let t = 1; t <= 1024; t *= 2) assert.ok(tpr.has(t), `threadsPerRow ${t}`);
});

/**
 * A register cap asks ptxas to fit a kernel into fewer registers; whether it can depends on
 * the kernel and the hidden size (in the H200 grid 4110 of 9009 reload kernels capped at 1536
 * threads an SM spilled). The tuner drops those (SPILLS).
 */
const builtAsAllowed = (status: string, v: Variant) => status === 'OK' || (status === 'SPILLS' && v.params.registerCap !== undefined);

for (const name of ARCH_NAMES.filter((a) => ['sm80', 'sm90', 'sm100', 'sm120'].includes(a))) {
  test(`nvcc compiles the sample for ${name}, nothing spills but what a register cap may`, async () => {
    await findNvcc(); // a missing nvcc fails here, with the install hint
    const arch = parseArch(name);
    const pool = new CompilePool(arch, availableParallelism());
    try {
      for (const [spec, variants] of sample(arch)) {
        const builds = await pool.build({ spec, variants });
        for (const v of variants) {
          const b = builds.get(v.id)!;
          assert.ok(builtAsAllowed(b.status, v), `${name} ${v.symbol}: ${b.status} ${'log' in b ? b.log.slice(0, 400) : JSON.stringify('usage' in b ? b.usage : '')}`);
          if (b.status === 'OK') assert.ok(b.usage.registers > 0 && b.usage.registers <= 255);
        }
      }
    } finally {
      await pool.close();
    }
  });
}

test('a reload kernel capped at 1536 threads an SM fits in 40 registers (bf16 RMSNorm, sm90)', async () => {
  const arch = parseArch('sm90');
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
  const p = makeProblem(spec, 4096, 32768);
  const capped = enumerateSpace(p, arch).filter((q) => q.registerCap === 1536 && q.threads === 256 && !q.fixedHidden);
  assert.ok(capped.length > 0);
  const pool = new CompilePool(arch, availableParallelism());
  try {
    const variants = capped.map((q) => makeVariant(p, q));
    const builds = await pool.build({ spec, variants });
    for (const v of variants) {
      const b = builds.get(v.id)!;
      assert.is(b.status, 'OK', v.symbol);
      if (b.status === 'OK') assert.ok(b.usage.registers <= 40, `${v.symbol}: ${b.usage.registers} registers`);
    }
  } finally {
    await pool.close();
  }
});

test('capped register kernels fit under their cap without spilling, the full-occupancy one included (bf16 and fp32 LayerNorm and RMSNorm + residual, sm90)', async () => {
  const arch = parseArch('sm90');
  const ln: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: false } };
  const problems = [
    makeProblem(ln, 16384, 32768),
    makeProblem({ ...ln, dtype: 'fp32' }, 8192, 32768),
    makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: { ...ln.features, bias: false, residual: 'same' } }, 3072, 8192),
  ];
  const pool = new CompilePool(arch, availableParallelism());
  const caps = new Set<number>();
  try {
    for (const p of problems) {
      const capped = enumerateSpace(p, arch).filter((q) => q.storage === 'regs' && q.registerCap !== undefined);
      for (const q of capped) caps.add(q.registerCap!);
      assert.ok(capped.length > 0, `${p.op} ${p.dtype} ${p.hidden}: capped regs variants offered`);
      const variants = capped.map((q) => makeVariant(p, q));
      const builds = await pool.build({ spec: p, variants });
      for (const v of variants) {
        const b = builds.get(v.id)!;
        assert.is(b.status, 'OK', v.symbol);
        if (b.status === 'OK') assert.ok(b.usage.registers <= 65536 / v.params.registerCap!, `${v.symbol}: ${b.usage.registers} registers`);
      }
    }
    assert.equal([...caps].sort(), [1024, 1536, 2048]);
  } finally {
    await pool.close();
  }
});

test('no variant of the default space spills but what a register cap may (heaviest specs, sm90)', async () => {
  const arch = parseArch('sm90');
  const pool = new CompilePool(arch, availableParallelism());
  try {
    const heavy: KernelSpec[] = [SPECS[0], { op: 'layernorm', dtype: 'fp32', features: { weight: 'fp32', bias: true, weightOffset: true, residual: 'fp32', stats: true } }];
    for (const spec of heavy)
      for (const hidden of [4096, 65536]) {
        const p = makeProblem(spec, hidden, 4096);
        const variants = enumerateSpace(p, arch).map((q) => makeVariant(p, q));
        const builds = await pool.build({ spec, variants });
        const bad = variants.filter((v) => !builtAsAllowed(builds.get(v.id)!.status, v));
        assert.is(bad.length, 0, `spilling or failing: ${bad.map((v) => v.symbol).join(', ')}`);
      }
  } finally {
    await pool.close();
  }
});

test('a variant that does not compile is COMPILE_ERROR; the rest of its unit still builds', async () => {
  const arch = parseArch('sm90');
  const pool = new CompilePool(arch, 2);
  try {
    const spec = SPECS[0];
    const good = makeVariant(spec, GENERIC_PARAMS);
    const broken = makeVariant(spec, GENERIC_PARAMS, 'compile-error');
    const builds = await pool.build({ spec, variants: [good, broken] });
    assert.is(builds.get(good.id)!.status, 'OK');
    const b = builds.get(broken.id)!;
    assert.is(b.status, 'COMPILE_ERROR');
    assert.match(b.status === 'COMPILE_ERROR' ? b.log : '', /deliberately broken/);
  } finally {
    await pool.close();
  }
});

test('one unit asked for twice at once is compiled once; no partial cubin is left', async () => {
  await withFreshCache(async () => {
    const pool = new CompilePool(parseArch('sm90'), 2);
    try {
      const req = { spec: SPECS[0], variants: [makeVariant(SPECS[0], GENERIC_PARAMS)] };
      const [a, b] = await Promise.all([pool.compileUnit(req), pool.compileUnit(req)]);
      assert.ok(a.ok && b.ok && a.cubin === b.cubin && existsSync(a.cubin));
      const files = readdirSync(dirname(a.cubin));
      assert.equal(files.filter((f) => f.endsWith('.cubin')).length, 1);
      assert.equal(files.filter((f) => f.endsWith('.tmp')), []);
      assert.ok((await pool.compileUnit(req)).cached, 'the next request takes it from the cache');
    } finally {
      await pool.close();
    }
  });
});

test('the probe (test/gpu/probe.cu) builds for sm_90a, no kernel with stack or spills', async () => {
  const source = fileURLToPath(new URL('../../test/gpu/probe.cu', import.meta.url));
  const object = join(tmpdir(), `normgen-probe-${process.pid}.o`);
  const nvcc = spawnSync(await findNvcc(), ['-O3', '-std=c++17', '-arch=sm_90a', '-Xptxas', '-v', '-c', '-o', object, source], { encoding: 'utf8' });
  rmSync(object, { force: true });
  assert.is(nvcc.status, 0, nvcc.stderr);
  const kernels = [...parsePtxasReport(nvcc.stderr).values()];
  assert.is(kernels.length, 30); // 2 ops x 3 hidden sizes x 3 load orders + 2 ops x (2 fixed-hidden + 4 run-time) loops
  for (const k of kernels) assert.ok(k.stackBytes === 0 && !spills(k), JSON.stringify(k));
});

test('the 1024 x 32 probe (test/gpu/lean-small.cu) builds against the committed H100 package, no stack or spills', async () => {
  const source = fileURLToPath(new URL('../../test/gpu/lean-small.cu', import.meta.url));
  const include = fileURLToPath(new URL('../../out/normgen-sm90-h100-80gb-hbm3/src', import.meta.url));
  const object = join(tmpdir(), `normgen-lean-small-${process.pid}.o`);
  const nvcc = spawnSync(await findNvcc(), ['-O3', '-std=c++17', '-arch=sm_90a', '-Xptxas', '-v', '-I', include, '-c', '-o', object, source], { encoding: 'utf8' });
  rmSync(object, { force: true });
  assert.is(nvcc.status, 0, nvcc.stderr);
  const kernels = [...parsePtxasReport(nvcc.stderr).entries()];
  const count = (kind: string) => kernels.filter(([name]) => name.includes(kind)).length;
  assert.equal([count('pkg_kernel'), count('lean_kernel'), count('empty_kernel')], [2, 3, 1]); // the package's code in 2 shapes, 2 minimal + the copy floor, the launch floor
  for (const [, k] of kernels) assert.ok(k.stackBytes === 0 && !spills(k), JSON.stringify(k));
});

test('the reload micro benchmark (test/gpu/reload_micro.cu) builds against the templates as generated', async () => {
  const source = fileURLToPath(new URL('../../test/gpu/reload_micro.cu', import.meta.url));
  const cli = fileURLToPath(new URL('../cli/main.js', import.meta.url));
  const dir = join(tmpdir(), `normgen-reload-micro-${process.pid}`);
  try {
    const generate = spawnSync(process.execPath, [cli, 'generate', '--op', 'rmsnorm', '--dtype', 'bf16', '--hidden', '8192', '--rows', '32768', '--out', dir], { encoding: 'utf8' });
    assert.is(generate.status, 0, generate.stderr);
    const [generated] = readdirSync(dir).filter((f) => f.endsWith('.cu'));
    const args = ['-O3', '-std=c++17', '-arch=sm_90a', '-Xptxas', '-v', '-I', dir, `-DGENERATED="${generated}"`, '-c', '-o', join(dir, 'micro.o'), source];
    const nvcc = spawnSync(await findNvcc(), args, { encoding: 'utf8' });
    assert.is(nvcc.status, 0, nvcc.stderr);
    const measured = [...parsePtxasReport(nvcc.stderr).keys()].filter((name) => /template_reload|hand_reload/.test(name));
    assert.is(measured.length, 14); // 6 of the template's kernel, 8 hand-written
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the fp16 widening probe (test/gpu/cvt-f16.cu) builds, and its integer widening is exact for all 65536 patterns', async () => {
  const source = fileURLToPath(new URL('../../test/gpu/cvt-f16.cu', import.meta.url));
  const exe = join(tmpdir(), `normgen-cvt-f16-${process.pid}`);
  try {
    const nvcc = spawnSync(await findNvcc(), ['-O3', '-arch=sm_90a', '-o', exe, source], { encoding: 'utf8' });
    assert.is(nvcc.status, 0, nvcc.stderr);
    // --host-check runs on the CPU: the widening against a decoder of the fp16 fields.
    const check = spawnSync(exe, ['--host-check'], { encoding: 'utf8' });
    assert.is(check.status, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /: 0 mismatches/);
  } finally {
    rmSync(exe, { force: true });
  }
});

test.run();
