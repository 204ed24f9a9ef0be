// The backward space, its constraints, variant ids and rendering (no GPU, no nvcc).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseArch } from '../generator/arch.js';
import { allFeatureCombos, backwardSpec, BYTES, bytesMoved, DTYPES, makeProblem, OPS, problemKey, specKey, type KernelSpec } from '../generator/problem.js';
import { renderCudaBwdUnit } from '../generator/render-cuda-bwd.js';
import {
  baselineBwdParams, bwdCapacity, bwdGrid, bwdRegsEstimate, bwdRingBytes, bwdRowsPerCta, bwdSharedBytes, bwdStaticSharedBytes, bwdUnsupportedReason, bytesMovedBwd,
  enumerateBwdSpace, genericBwdParams, maxVecBwd, sumCount, xDType, type BwdParams,
} from '../generator/space-bwd.js';
import { makeVariant } from '../generator/variant.js';
import { makeBwdVariant } from '../generator/variant-bwd.js';
import { GENERIC_PARAMS } from '../generator/space.js';
import { bwdMatrix } from '../tuner/verify-bwd.js';

const sm80 = parseArch('sm80');
const sm90 = parseArch('sm90');
const ln = backwardSpec({ op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: true } });

test('backward specs have their own keys; forward keys are unchanged', () => {
  const fwd: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: { ...ln.features } };
  assert.is(specKey(fwd), 'layernorm.bf16.w-same.bias.stats');
  assert.is(specKey(ln), 'layernorm.bwd.bf16.w-same.bias.stats');
  assert.is(problemKey(makeProblem(ln, 4096, 8)), 'layernorm.bwd.bf16.w-same.bias.stats.h4096.r8');
  // Same parameters, other direction: other ids.
  assert.is.not(makeBwdVariant(ln, genericBwdParams(ln)).id, makeVariant(fwd, GENERIC_PARAMS).id);
  assert.throws(() => makeBwdVariant(fwd, genericBwdParams(fwd)), /not a backward spec/);
});

test('every variant of a spread of shapes can run it, within the constraints', () => {
  for (const dtype of DTYPES)
    for (const features of allFeatureCombos())
      for (const [hidden, rows] of [[1, 1], [7, 3], [1000, 4097], [4096, 32768], [16384, 64], [65536, 8], [262144, 2]])
        for (const arch of [sm80, sm90]) {
          const p = makeProblem(backwardSpec({ op: 'layernorm', dtype, features }), hidden, rows);
          const space = enumerateBwdSpace(p, arch);
          assert.ok(space.length > 0, `empty space for ${problemKey(p)}`);
          for (const q of space) {
            assert.is(bwdUnsupportedReason(p, q, arch), null, `${problemKey(p)} ${JSON.stringify(q)}`);
            assert.ok(q.vec * Math.max(BYTES[dtype], BYTES[xDType(p)]) <= 16, 'at most 16 bytes per access');
            assert.ok(bwdRowsPerCta(q) <= 2 ** Math.ceil(Math.log2(rows)), 'no more rows per CTA than rows');
            if (!features.stats) assert.ok(q.recompute, 'without saved statistics only recomputing variants');
            if (q.storage === 'regs') assert.ok(bwdRegsEstimate(p, q) * q.threads <= 65536);
            if (bwdCapacity(q) !== Infinity) assert.ok(bwdCapacity(q) - hidden < q.threadsPerRow * q.vec * (q.cluster ?? 1), 'no wholly idle chunk (per CTA of a cluster)');
            if (q.storage !== 'regs') assert.is(q.threadsPerRow, q.threads, 'one row per CTA outside regs');
          }
        }
});

test('the space offers both statistics choices when saved ones exist, every storage somewhere', () => {
  const space = enumerateBwdSpace(makeProblem(ln, 16384, 32768), sm90);
  assert.equal(new Set(space.map((q) => q.recompute)), new Set([false, true]));
  const storages = new Set([4096, 16384].flatMap((h) => enumerateBwdSpace(makeProblem(ln, h, 32768), sm90).map((q) => q.storage)));
  assert.equal(storages, new Set(['regs', 'regs-smem', 'loop']));
  assert.is(genericBwdParams(ln).storage, 'global');
});

test('shared memory: sums of long rows do not fit sm80-class GPUs as they fit sm90', () => {
  const p = makeProblem(ln, 24576, 64); // LayerNorm: 2 sums x 24576 x 4 bytes = 192 KiB
  assert.is(bwdSharedBytes(p, { ...genericBwdParams(p), storage: 'loop' }, p.hidden), 2 * 24576 * 4);
  assert.ok(enumerateBwdSpace(p, sm90).some((q) => q.storage === 'loop'));
  assert.not.ok(enumerateBwdSpace(p, sm80).some((q) => q.storage === 'loop'));
  // Nothing fits for very long rows: the generic (sums in global memory) runs them.
  const huge = makeProblem(ln, 1 << 20, 2);
  assert.equal(enumerateBwdSpace(huge, sm90), [genericBwdParams(huge)]);
});

test('a ring of rows: its shared memory, regs-smem sums before it, none for short grids', () => {
  const p = makeProblem(ln, 4096, 32768); // bf16: x and dy, 2 bytes each
  const ring: BwdParams = { storage: 'regs', threads: 256, vec: 8, threadsPerRow: 256, items: 2, ctasPerSm: 2, recompute: true, prefetch: false, stages: 3 };
  assert.is(bwdRingBytes(p, ring), 3 * 4096 * 2 + 3 * 4096 * 2);
  assert.is(bwdRingBytes(p, { ...ring, threads: 512 }), 2 * (3 * 4096 * 2 + 3 * 4096 * 2)); // two row groups
  assert.is(bwdSharedBytes(p, { ...ring, storage: 'regs-smem' }, 4096), 2 * 4096 * 4 + 3 * 4096 * 4);
  assert.is(bwdRingBytes(p, { ...ring, stages: undefined }), 0);
  // Lean kernels may stage their columns' weight after the ring (bf16 here, 2 bytes).
  assert.is(bwdSharedBytes(p, { ...ring, lean: true, stagedWeight: true }, 4096), bwdRingBytes(p, ring) + 2 * 256 * 8 * 2);
  assert.is(bwdSharedBytes(p, { ...ring, lean: true }, 4096), bwdRingBytes(p, ring));
  const noWeight = makeProblem(backwardSpec({ ...ln, features: { ...ln.features, weight: 'none' } }), 4096, 32768);
  assert.is(bwdSharedBytes(noWeight, { ...ring, lean: true, stagedWeight: true }, 4096), bwdRingBytes(noWeight, ring));
  const lean = enumerateBwdSpace(p, sm90).filter((q) => q.lean);
  assert.ok(lean.some((q) => q.stagedWeight) && lean.some((q) => !q.stagedWeight));
  assert.not.ok(enumerateBwdSpace(p, sm90).some((q) => q.stagedWeight && !q.lean));
  // Static shared memory counts too: four rows of a ring of 3 plus their weight (224 KiB) and the
  // 16 KiB through which the rows' column sums are added do not fit in 227 KiB (they failed to launch).
  const fourRows: BwdParams = { ...ring, threads: 512, threadsPerRow: 128, items: 4, stages: 3, lean: true, stagedWeight: true };
  assert.is(bwdStaticSharedBytes(p, fourRows), 1024 + 512 * 8 * 4);
  assert.is(bwdStaticSharedBytes(p, { ...fourRows, threadsPerRow: 512, items: 1 }), 1024);
  assert.ok(bwdSharedBytes(p, fourRows, 4096) <= sm90.maxSharedPerBlock - 1024);
  assert.not.ok(enumerateBwdSpace(p, sm90).some((q) => JSON.stringify({ ...q, ctasPerSm: 2, recompute: true }) === JSON.stringify({ ...fourRows, ctasPerSm: 2, recompute: true })));
  const stages = (rows: number) => new Set(enumerateBwdSpace(makeProblem(ln, 4096, rows), sm90).map((q) => q.stages ?? 0));
  assert.equal(stages(32768), new Set([0, 2, 3, 4]));
  assert.equal(stages(64), new Set([0])); // fewer rows than CTAs: nothing to stream ahead
  // Lean kernels (weight and xhat not held) are what lets a 16K-wide RMSNorm row live in registers.
  const rms = backwardSpec({ ...ln, op: 'rmsnorm', features: { ...ln.features, bias: false } });
  const long = enumerateBwdSpace(makeProblem(rms, 16384, 32768), sm90).filter((q) => q.storage === 'regs' && !q.cluster);
  assert.ok(long.length > 0 && long.every((q) => q.lean && q.stages));
  assert.ok(bwdRegsEstimate(rms, { ...ring, lean: true }) < bwdRegsEstimate(rms, ring));
  // Re-reading x and dy from the ring leaves room for LayerNorm's two sums of a 16K bf16 row:
  // one CTA of 512 threads (128 registers each) holds it without a cluster only that way.
  const whole = enumerateBwdSpace(makeProblem(ln, 16384, 32768), sm90).filter((q) => q.storage === 'regs' && !q.cluster && q.threads === 512);
  assert.ok(whole.some((q) => q.reread) && whole.every((q) => q.lean && q.stages));
  assert.ok(bwdRegsEstimate(ln, { ...ring, lean: true, reread: true }) < bwdRegsEstimate(ln, { ...ring, lean: true }));
  assert.not.ok(enumerateBwdSpace(makeProblem(ln, 4096, 32768), sm90).some((q) => q.reread && !q.lean)); // re-reading holds no weight either
});

test('clusters split long rows on sm90 only; their grid is a whole number of clusters', () => {
  const p = makeProblem(ln, 16384, 32768);
  const split = enumerateBwdSpace(p, sm90).filter((q) => (q.cluster ?? 1) > 1);
  assert.ok(split.some((q) => q.cluster === 4 && q.items * q.threadsPerRow * q.vec === 4096));
  assert.ok(split.every((q) => q.storage === 'regs' && q.stages && q.threadsPerRow === q.threads && bwdCapacity(q) >= 16384));
  // A CTA holds only its slice: thread counts too few for the whole row still split it.
  assert.ok(split.some((q) => q.threads === 256 && q.cluster === 4));
  assert.ok(split.some((q) => q.cluster === 8 && q.items * q.threadsPerRow * q.vec === 2048)); // the most CTAs a portable cluster has
  assert.not.ok(enumerateBwdSpace(p, sm90).some((q) => q.threads === 256 && !q.cluster && q.storage !== 'loop'));
  assert.not.ok(enumerateBwdSpace(p, sm80).some((q) => (q.cluster ?? 1) > 1));
  assert.not.ok(enumerateBwdSpace(makeProblem(ln, 2048, 32768), sm90).some((q) => (q.cluster ?? 1) > 1)); // slices under 2048
  const q = split[0];
  assert.is(bwdGrid({ ...q, ctasPerSm: 1 }, 32768, 131) % q.cluster!, 0);
  assert.is(bwdGrid({ ...q, ctasPerSm: 1 }, 1, 132), q.cluster); // one row: one cluster
});

test('vector width follows the strides of x, dy, dx and dresidual', () => {
  assert.is(maxVecBwd(makeProblem(ln, 4096, 4)), 8);
  assert.is(maxVecBwd(makeProblem(ln, 7, 4)), 1);
  assert.is(maxVecBwd(makeProblem(ln, 4096, 4, { x: 4096, y: 4100, residual: 4096, residualOut: 4096 })), 4);
  const fp32res = backwardSpec({ ...ln, features: { ...ln.features, residual: 'fp32' } });
  assert.is(xDType(fp32res), 'fp32');
  assert.is(maxVecBwd(makeProblem(fp32res, 4096, 4)), 4); // x and dx are fp32
});

test('grid: CTAs per SM times SMs, no more than row groups or than fit', () => {
  const q = { ...baselineBwdParams(makeProblem(ln, 4096, 32768), sm90) };
  assert.is(bwdGrid(q, 32768, 132), 2 * 132);
  assert.is(bwdGrid(q, 5, 132), 5);
  assert.is(bwdGrid({ ...q, ctasPerSm: 4 }, 32768, 132, 3), 3 * 132);
});

test('roofline bytes: x, dy, dx, weight and dweight, dbias, statistics when read, partials', () => {
  const p = makeProblem(ln, 4096, 1024);
  const main = 1024 * 4096 * 2 * 3 + 4096 * 2 * 2 + 4096 * 2;
  assert.is(bytesMovedBwd(p, 0, false), main);
  assert.is(bytesMovedBwd(p, 0, true), main + 1024 * 8);
  assert.is(bytesMovedBwd(p, 264, false), main + 2 * 2 * 264 * 4096 * 4);
  assert.is(sumCount(p), 2);
  assert.ok(bytesMovedBwd(p, 0, false) > bytesMoved({ ...p, direction: undefined }));
});

test('variants differing only in grid size share one kernel', () => {
  const p = makeProblem(ln, 4096, 32768);
  const space = enumerateBwdSpace(p, sm90);
  const vs = space.map((q) => makeBwdVariant(p, q));
  assert.is(new Set(vs.map((v) => v.id)).size, vs.length);
  const kernels = new Set(vs.map((v) => v.symbol)).size;
  assert.ok(kernels < vs.length);
  const unit = renderCudaBwdUnit(p, vs);
  assert.is(unit.match(/__global__ void (__cluster_dims__\([248], 1, 1\) )?__launch_bounds__\(\d+, [124]\)\nnormgen_layernorm_bwd_[0-9a-f]{12}\(/g)!.length, kernels);
  assert.is(unit.match(/_reduce\(const NormgenBwdParams p\)/g)!.length, kernels);
  assert.match(unit, /using X = __nv_bfloat16;/);
});

test('the GPU matrix covers hidden 1, untuned sizes, strided rows, every feature set, storage and ring', () => {
  const cases = bwdMatrix(sm90);
  const hiddens = new Set(cases.map((c) => c.problem.hidden));
  for (const h of [1, 7, 1000, 4095, 65536]) assert.ok(hiddens.has(h), `hidden ${h}`);
  // The ring meets a ragged last chunk: hidden 4095 with vectors of 8 (strided rows), its lean and re-reading kernels too.
  const ragged = cases.filter((c) => c.problem.hidden === 4095).flatMap((c) => c.variants.map((v) => v.params));
  assert.ok(ragged.some((q) => q.stages && q.vec === 8 && q.lean));
  assert.ok(ragged.some((q) => q.stages && q.vec === 8 && q.reread));
  assert.ok(cases.some((c) => c.problem.strides.x !== c.problem.hidden));
  const keys = new Set(cases.map((c) => specKey(c.problem)));
  for (const op of OPS) for (const f of allFeatureCombos()) assert.ok([...keys].some((k) => k.startsWith(`${op}.bwd.`) && k.endsWith(specKey({ op, dtype: 'fp32', features: f }).split('.').slice(2).join('.'))));
  assert.equal(new Set(cases.flatMap((c) => c.variants.map((v) => v.params.storage))), new Set(['regs', 'regs-smem', 'loop', 'global']));
});

test.run();
