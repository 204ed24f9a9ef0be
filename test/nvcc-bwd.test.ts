// Compiles backward variants with the real nvcc for every target arch: a sample that
// takes every value of every axis and feature, and on sm90 every variant of the tuned
// grid's heaviest problems (nothing may spill). Without nvcc this fails; it never skips.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { availableParallelism } from 'node:os';
import { parseArch } from '../generator/arch.js';
import { backwardSpec, makeProblem, type KernelSpec, type Problem } from '../generator/problem.js';
import { BWD_STORAGES, BWD_THREAD_CHOICES, CTAS_PER_SM_CHOICES, enumerateBwdSpace, genericBwdParams, type BwdParams } from '../generator/space-bwd.js';
import { makeBwdVariant, type BwdVariant } from '../generator/variant-bwd.js';
import { CompilePool } from '../tuner/compile-pool.js';
import { findNvcc } from '../tuner/nvcc.js';

const SPECS: KernelSpec[] = [
  backwardSpec({ op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: true } }),
  backwardSpec({ op: 'layernorm', dtype: 'fp16', features: { weight: 'fp32', bias: true, weightOffset: true, residual: 'fp32', stats: false } }),
  backwardSpec({ op: 'rmsnorm', dtype: 'fp32', features: { weight: 'none', bias: true, weightOffset: false, residual: 'same', stats: true } }),
  backwardSpec({ op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'same', stats: true } }),
];
const SHAPES: [number, number][] = [[1, 3], [7, 64], [1002, 64], [1000, 4097], [4096, 32768], [16384, 64], [8192, 512], [16384, 512]];

const axes = (q: BwdParams) => [`s=${q.storage}`, `t=${q.threads}`, `v=${q.vec}`, `tpr=${q.threadsPerRow}`, `i=${q.items}`, `r=${q.recompute}`, `p=${q.prefetch}`, `s=${q.stages ?? 0}`, `l=${q.lean ?? false}`, `rr=${q.reread ?? false}`, `sw=${q.stagedWeight ?? false}`, `c=${q.cluster ?? 1}`];

/** Per spec: kernels covering every axis value its spaces offer (grid size does not change code), and the generic. */
function sample(arch: ReturnType<typeof parseArch>): Map<KernelSpec, BwdVariant[]> {
  const out = new Map<KernelSpec, BwdVariant[]>();
  for (const spec of SPECS) {
    const byId = new Map<string, BwdVariant>();
    for (const [hidden, rows] of SHAPES) {
      const p: Problem = makeProblem(spec, hidden, rows);
      const space = enumerateBwdSpace(p, arch);
      const uncovered = new Set(space.flatMap(axes));
      while (uncovered.size) {
        const best = space.reduce((a, b) => (axes(b).filter((k) => uncovered.has(k)).length > axes(a).filter((k) => uncovered.has(k)).length ? b : a));
        axes(best).forEach((k) => uncovered.delete(k));
        byId.set(makeBwdVariant(p, best).id, makeBwdVariant(p, best));
      }
      byId.set(makeBwdVariant(p, genericBwdParams(p)).id, makeBwdVariant(p, genericBwdParams(p)));
    }
    out.set(spec, [...byId.values()]);
  }
  return out;
}

test('the sample covers every storage, thread count, vector width, row source and statistics choice', () => {
  const all = [...sample(parseArch('sm90')).values()].flat().map((v) => v.params);
  const values = (f: (q: BwdParams) => unknown) => [...new Set(all.map(f))].sort().join(',');
  assert.is(values((q) => q.storage), [...BWD_STORAGES].sort().join(','));
  assert.is(values((q) => q.threads), [...BWD_THREAD_CHOICES].sort().join(','));
  assert.is(values((q) => q.vec), '1,2,4,8');
  assert.is(values((q) => q.recompute), 'false,true');
  assert.is(values((q) => q.prefetch), 'false,true');
  assert.is(values((q) => q.stages ?? 0), '0,2,3,4');
  assert.is(values((q) => q.lean ?? false), 'false,true');
  assert.is(values((q) => q.reread ?? false), 'false,true');
  assert.is(values((q) => q.stagedWeight ?? false), 'false,true');
  assert.is(values((q) => q.cluster ?? 1), '1,2,4,8');
  assert.ok(CTAS_PER_SM_CHOICES.length > 1); // a launch parameter: the same kernel for every value
});

for (const name of ['sm80', 'sm90', 'sm100', 'sm120']) {
  test(`nvcc compiles the backward sample for ${name}`, async () => {
    await findNvcc();
    const arch = parseArch(name);
    const pool = new CompilePool(arch, availableParallelism());
    try {
      await Promise.all(
        [...sample(arch)].map(async ([spec, variants]) => {
          const builds = await pool.build({ spec, variants });
          for (const v of variants) {
            const b = builds.get(v.id)!;
            // The register estimate is rough: a kernel that spills under its launch bounds' cap is
            // recorded SPILLS and dropped by the tuner (counted below). Nothing may fail to compile.
            if (b.status === 'SPILLS') continue;
            assert.is(b.status, 'OK', `${name} ${v.symbol}: ${b.status} ${'log' in b ? b.log.slice(0, 600) : ''}`);
          }
        }),
      );
    } finally {
      await pool.close();
    }
  });
}

test('every backward variant of the tuned grid compiles for sm90; at least half without spilling (the rest are dropped)', async () => {
  const arch = parseArch('sm90');
  const pool = new CompilePool(arch, availableParallelism());
  try {
    for (const op of ['rmsnorm', 'layernorm'] as const)
      for (const dtype of ['bf16', 'fp32'] as const) {
        const spec = backwardSpec({ op, dtype, features: { weight: 'same', bias: op === 'layernorm', weightOffset: false, residual: 'none', stats: true } });
        const variants = [4096, 16384].flatMap((h) => enumerateBwdSpace(makeProblem(spec, h, 32768), arch).map((q) => makeBwdVariant(spec, q)));
        const builds = await pool.build({ spec, variants });
        const bad = variants.filter((v) => builds.get(v.id)!.status !== 'OK' && builds.get(v.id)!.status !== 'SPILLS');
        assert.is(bad.length, 0, `spilling or failing: ${bad.map((v) => `${v.symbol} ${builds.get(v.id)!.status}`).join(', ')}`);
        const ok = variants.filter((v) => builds.get(v.id)!.status === 'OK').length;
        assert.ok(ok >= variants.length / 2, `${spec.op} ${dtype}: only ${ok} of ${variants.length} variants compile without spilling`);
      }
  } finally {
    await pool.close();
  }
});

test.run();
