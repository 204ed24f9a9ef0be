import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hasClusters, parseArch } from '../generator/arch.js';
import { allFeatureCombos, BYTES, DTYPES, makeProblem, OPS, type KernelSpec } from '../generator/problem.js';
import { baselineParams, capacity, describeParams, dynamicSharedBytes, enumerateSpace, GENERIC_PARAMS, inRegisters, isUnstagedTwin, maxVec, REGS_CAP_SPARE_REGISTERS, FULL_OCCUPANCY_MAX_VALUES, ringSharedBytes, rowsPerCta, unsupportedReason, type CudaParams } from '../generator/space.js';
import { makeVariant } from '../generator/variant.js';
import { coveringSet, MATRIX_HIDDEN, MATRIX_ROWS, correctnessMatrix } from '../tuner/verify-matrix.js';

const sm80 = parseArch('sm80');
const sm90 = parseArch('sm90');
const spec: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'same', stats: true } };

test('arch names: aliases accepted, unknown refused', () => {
  assert.is(parseArch('sm_90a').name, 'sm90');
  assert.is(parseArch('SM100').nvccArch, 'sm_100');
  assert.throws(() => parseArch('sm70'), /unknown arch 'sm70'/);
});

test('every variant of every matrix shape can run it, within the constraints', () => {
  for (const dtype of DTYPES)
    for (const hidden of MATRIX_HIDDEN)
      for (const rows of MATRIX_ROWS)
        for (const arch of [sm80, sm90]) {
          const p = makeProblem({ ...spec, dtype }, hidden, rows);
          const space = enumerateSpace(p, arch);
          assert.ok(space.length > 0, `empty space for ${dtype} ${hidden}x${rows}`);
          for (const v of space) {
            assert.is(unsupportedReason(p, v, arch), null);
            assert.ok(v.vec * BYTES[dtype] <= 16, 'at most 16 bytes per access');
            assert.ok(rowsPerCta(v) <= 2 ** Math.ceil(Math.log2(rows)), 'no more rows per CTA than rows');
            if (v.cluster > 1) assert.ok(hasClusters(arch) && rowsPerCta(v) === 1);
            if (capacity(v) !== Infinity) assert.ok(capacity(v) - hidden < v.threadsPerRow * v.vec * v.cluster, 'no wholly idle chunk');
          }
        }
});

test('early weight and bias loads: regs variants of short grids that have a weight or bias, each its own kernel', () => {
  const early = (problem: ReturnType<typeof makeProblem>) => enumerateSpace(problem, sm90).filter((v) => v.earlyAffine);
  const short = makeProblem(spec, 4096, 32);
  assert.ok(early(short).length > 0 && early(short).every((v) => v.storage === 'regs'));
  for (const v of early(short)) {
    const same = (a: object, b: object) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
    const late = enumerateSpace(short, sm90).find((q) => !q.earlyAffine && same({ ...q, earlyAffine: true }, v));
    assert.ok(late, 'the same kernel without early loads is there too');
    assert.is.not(makeVariant(short, v).id, makeVariant(short, late).id);
  }
  assert.is(early(makeProblem(spec, 4096, 2048)).length, 0); // long grids: other CTAs hide the second round trip
  const bare = makeProblem({ ...spec, features: { ...spec.features, weight: 'none', bias: false } }, 4096, 32);
  assert.is(early(bare).length, 0); // nothing to load early
});

test('every variant also comes compiled for the problem\'s hidden size, which runs no other size', () => {
  const p = makeProblem({ ...spec, dtype: 'bf16' }, 4096, 2048);
  const space = enumerateSpace(p, sm90);
  const fixed = space.filter((v) => v.fixedHidden !== undefined);
  assert.is(fixed.length * 2, space.length);
  assert.ok(fixed.every((v) => v.fixedHidden === 4096));
  for (const v of space.filter((q) => q.fixedHidden === undefined)) assert.ok(fixed.some((f) => JSON.stringify({ ...f, fixedHidden: undefined }) === JSON.stringify({ ...v, fixedHidden: undefined })));
  assert.match(unsupportedReason(makeProblem({ ...spec, dtype: 'bf16' }, 8192, 2048), fixed[0], sm90) ?? '', /compiled for hidden 4096/);
});

test('at 128 rows or fewer the looping storages come only compiled for the hidden size', () => {
  const looping = (q: CudaParams) => !inRegisters(q);
  for (const hidden of [4096, 131072]) {
    const few = enumerateSpace(makeProblem(spec, hidden, 128), sm90);
    assert.ok(few.some((q) => looping(q) && q.fixedHidden === hidden), `hidden ${hidden}: compiled for it`);
    assert.not.ok(few.some((q) => looping(q) && q.fixedHidden === undefined), `hidden ${hidden}: none for any size`);
    assert.ok(few.some((q) => !looping(q) && q.fixedHidden === undefined), `hidden ${hidden}: registers for any size`);
    const many = enumerateSpace(makeProblem(spec, hidden, 512), sm90);
    assert.ok(many.some((q) => looping(q) && q.fixedHidden === undefined), `hidden ${hidden}, 512 rows: for any size too`);
  }
  // Where registers cannot hold the row (no clusters on sm80), the hidden size's own kernels remain.
  const long = enumerateSpace(makeProblem(spec, 131072, 8), sm80);
  assert.ok(long.length > 0 && long.every((q) => looping(q) && q.fixedHidden === 131072));
});

test('smem and reload rows get 64 threads or more, reload CTAs 128 or more', () => {
  for (const [hidden, rows] of [[4096, 32768], [16384, 2048], [32768, 8]] as const) {
    const space = enumerateSpace(makeProblem(spec, hidden, rows), sm90);
    const smem = space.filter((q) => q.storage === 'smem' && q.cluster === 1);
    const reload = space.filter((q) => q.storage === 'reload');
    assert.ok(smem.length > 0 && reload.length > 0, `${hidden} x ${rows}: both storages offered`);
    assert.ok([...smem, ...reload].every((q) => q.threadsPerRow >= 64), `${hidden} x ${rows}: a warp a row`);
    assert.ok(reload.every((q) => q.threads >= 128), `${hidden} x ${rows}: 64-thread reload CTAs`);
    assert.ok(smem.some((q) => q.threads === 64), `${hidden} x ${rows}: 64-thread smem CTAs stay`);
  }
});

test('ring variants stage weight and bias in shared memory exactly when they fit beside the ring', () => {
  const ln = makeProblem({ op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: false } }, 131072, 4096);
  const rings = enumerateSpace(ln, sm90).filter((p) => p.storage === 'ring');
  assert.ok(rings.some((p) => p.stagedWeights) && rings.some((p) => !p.stagedWeights), 'both kinds at hidden 131072');
  for (const p of rings) {
    const staged = ringSharedBytes(ln, { ...p, stagedWeights: true });
    const slots = ringSharedBytes(ln, { ...p, stagedWeights: false });
    const slice = p.items * p.threadsPerRow * p.vec;
    assert.is(staged - slots, 2 * slice * 2, 'bf16 weight and bias of the CTA slice');
    assert.is(p.stagedWeights, staged + 1024 <= sm90.maxSharedPerBlock, `${JSON.stringify(p)}`);
  }
  // Nothing to stage without weight and bias.
  const bare = makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: { weight: 'none', bias: false, weightOffset: false, residual: 'none', stats: false } }, 4096, 4096);
  assert.ok(enumerateSpace(bare, sm90).every((p) => !p.stagedWeights));
  // Only the widest legal vector is searched.
  assert.ok(enumerateSpace(ln, sm90).every((p) => p.vec === 8));
});

test('deferred output: ring variants with clusters and a slot to spare, each its own kernel', () => {
  const lnSpec: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: false } };
  const ln = makeProblem(lnSpec, 65536, 4096);
  const space = enumerateSpace(ln, sm90);
  const deferred = space.filter((p) => p.deferOutput);
  assert.ok(deferred.length > 0);
  for (const p of deferred) {
    assert.ok(p.storage === 'ring' && p.cluster > 1 && p.stages >= 3, JSON.stringify(p));
    assert.ok(unsupportedReason(ln, p, sm90) === null);
    const eager = { ...p, deferOutput: undefined };
    assert.is.not(makeVariant(ln, p).id, makeVariant(ln, eager).id);
    assert.match(describeParams(p), /\.defer/);
  }
  assert.ok(space.some((p) => p.storage === 'ring' && p.cluster > 1 && !p.deferOutput), 'the eager kind too');
  assert.ok(space.filter((p) => p.cluster === 1).every((p) => !p.deferOutput), 'no exchange to overlap without a cluster');
  const shorter = enumerateSpace(makeProblem(lnSpec, 32768, 4096), sm90);
  assert.ok(shorter.some((p) => p.storage === 'ring' && p.cluster > 1) && shorter.every((p) => !p.deferOutput), 'rows shorter than 65536: never ahead');
});

test('register caps: reload and unclustered regs variants, each its own kernel beside its uncapped twin; 1024 for LayerNorm without a residual', () => {
  const lnSpec: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: false } };
  const ln = makeProblem(lnSpec, 16384, 32768);
  const rms = makeProblem({ ...lnSpec, op: 'rmsnorm', features: { ...lnSpec.features, bias: false } }, 16384, 32768);
  for (const problem of [ln, rms, makeProblem(spec, 16384, 32768)]) {
    const space = enumerateSpace(problem, sm90);
    const capped = space.filter((p) => p.registerCap);
    assert.ok(capped.some((p) => p.registerCap === 1536 && p.storage === 'reload'), problem.op);
    // A regs variant is capped only where its row leaves the spare registers under the cap.
    assert.is(capped.some((p) => p.storage === 'regs'), problem === ln, `${problem.op}: regs variants capped where they fit`);
    for (const p of capped.filter((q) => q.storage === 'regs')) assert.ok(p.items * p.vec + REGS_CAP_SPARE_REGISTERS <= 65536 / p.registerCap!);
    assert.not.ok(capped.some((p) => p.registerCap === 2048), 'no full-occupancy cap for rows of 16 values a thread or more');
    for (const p of capped) {
      assert.ok((p.storage === 'reload' || (p.storage === 'regs' && p.cluster === 1)) && p.threads < p.registerCap! && p.registerCap! % p.threads === 0, JSON.stringify(p));
      const uncapped = { ...p, registerCap: undefined };
      assert.ok(space.some((q) => describeParams(q) === describeParams(uncapped)), 'the uncapped twin too');
      assert.is.not(makeVariant(problem, p).id, makeVariant(problem, uncapped).id);
      assert.match(describeParams(p), p.registerCap === 1024 ? /\.cap(\.|$)/ : /\.cap1536(\.|$)/);
    }
    const has1024 = capped.some((p) => p.registerCap === 1024);
    assert.is(has1024, problem === ln, 'the 1024 cap: LayerNorm without a residual only');
  }
  // Two CTAs an SM instead of one: the winner of bf16 LayerNorm 16384 x 32768 in the H200 tune of 2026-11-29.
  assert.ok(enumerateSpace(ln, sm90).some((p) => describeParams(p) === 'regs.t512.v8.tpr512.i4.cap.h16384'));
});

test('the full-occupancy cap (2048 threads an SM): regs variants of at most 8 values a thread, never reload, never fp16 LayerNorm', () => {
  const rmsSpec: KernelSpec = { op: 'rmsnorm', dtype: 'fp32', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
  const lnSpec: KernelSpec = { ...rmsSpec, op: 'layernorm', features: { ...rmsSpec.features, bias: true } };
  for (const problem of [makeProblem(rmsSpec, 4096, 32768), makeProblem({ ...lnSpec, dtype: 'bf16' }, 8192, 8), makeProblem(lnSpec, 512, 2048)]) {
    const space = enumerateSpace(problem, sm90);
    const full = space.filter((p) => p.registerCap === 2048);
    assert.ok(full.length > 0, `${problem.op} ${problem.dtype} ${problem.hidden}`);
    for (const p of full) {
      assert.ok(p.storage === 'regs' && p.cluster === 1 && p.items * p.vec <= FULL_OCCUPANCY_MAX_VALUES && 2048 % p.threads === 0, describeParams(p));
      assert.match(describeParams(p), /\.cap2048(\.|$)/);
    }
    // Every regs variant small enough gets it, 1024-thread CTAs included (two an SM instead of one).
    const small = space.filter((p) => p.storage === 'regs' && p.cluster === 1 && !p.registerCap && !p.earlyAffine && p.items * p.vec <= FULL_OCCUPANCY_MAX_VALUES);
    assert.is(full.length, small.length);
  }
  assert.ok(enumerateSpace(makeProblem(rmsSpec, 4096, 32768), sm90).some((p) => describeParams(p) === 'regs.t1024.v4.tpr1024.i1.cap2048.h4096'));
  assert.not.ok(enumerateSpace(makeProblem({ ...lnSpec, dtype: 'fp16' }, 4096, 32768), sm90).some((p) => p.registerCap === 2048), 'fp16 LayerNorm spills at 32 registers');
});

test('unstaged ring twins: at 512-2048 rows and clusters of up to 2, where staged weight and bias leave room for fewer CTAs an SM', () => {
  const lnSpec: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: false } };
  // CTAs an SM by threads and shared memory (228 KiB on sm90, a KiB a CTA besides the ring).
  const perSm = (problem: ReturnType<typeof makeProblem>, p: CudaParams) =>
    Math.min(Math.floor(2048 / p.threads), Math.floor((228 * 1024) / (ringSharedBytes(problem, p) + 1024)));
  let twins = 0;
  for (const [hidden, rows] of [[8192, 2048], [12288, 512], [16384, 2048], [8192, 8192], [65536, 512], [4096, 128]]) {
    const problem = makeProblem(lnSpec, hidden, rows);
    const space = enumerateSpace(problem, sm90);
    const key = (p: CudaParams) => JSON.stringify({ ...p, holdRow: undefined });
    const names = new Set(space.map(key));
    for (const staged of space.filter((p) => p.storage === 'ring' && p.stagedWeights && !p.holdRow)) {
      const unstaged = { ...staged, stagedWeights: false };
      const expected = rows >= 512 && rows <= 2048 && staged.cluster <= 2 && perSm(problem, staged) < perSm(problem, unstaged);
      assert.is(names.has(key(unstaged)), expected, `${hidden} x ${rows}: ${describeParams(staged)}`);
      if (!expected) continue;
      twins++;
      assert.ok(isUnstagedTwin(problem, unstaged, sm90));
      assert.is.not(makeVariant(problem, unstaged).id, makeVariant(problem, staged).id, 'each its own kernel');
    }
    // Twins do not hold their rows (the holding ones were never ahead in the H200 tune of 2026-12-04).
    assert.not.ok(space.some((p) => p.holdRow && isUnstagedTwin(problem, p, sm90)));
  }
  assert.ok(twins > 0, 'some rings have twins');
  // 128 threads, 8 vectors of 8 a thread, 3 stages: 80 KiB staged (two CTAs an SM), 48 KiB not (four).
  assert.ok(enumerateSpace(makeProblem(lnSpec, 8192, 2048), sm90).some((p) => describeParams(p) === 'ring.t128.v8.tpr128.i8.s3.h8192'));
  // Nothing to stage, no twin.
  const bare = makeProblem({ ...lnSpec, op: 'rmsnorm', features: { ...lnSpec.features, weight: 'none', bias: false } }, 8192, 2048);
  assert.not.ok(enumerateSpace(bare, sm90).some((p) => isUnstagedTwin(bare, p, sm90)));
});

test('holdRow: rings of up to 256 threads that read back more than 32 values a thread, not deferred, get a holding twin', () => {
  const lnSpec: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: false } };
  const space = enumerateSpace(makeProblem(lnSpec, 131072, 128), sm90);
  const held = space.filter((p) => p.holdRow);
  assert.ok(held.length > 0);
  for (const p of held) {
    assert.ok(p.storage === 'ring' && !p.deferOutput && p.threads <= 256 && p.items * p.vec > 32 && p.items * p.vec <= 64, describeParams(p));
    assert.match(describeParams(p), /\.hold(\.|$)/);
    assert.ok(space.some((q) => describeParams(q) === describeParams(p).replace('.hold', '')), 'its twin reads back');
  }
  const eligible = space.filter((p) => p.storage === 'ring' && !p.holdRow && !p.deferOutput && p.threads <= 256 && p.items * p.vec > 32 && p.items * p.vec <= 64);
  assert.is(held.length, eligible.length);
  // Rows of at most 32 values a thread are held anyway: no twin.
  assert.not.ok(enumerateSpace(makeProblem(lnSpec, 32768, 128), sm90).some((p) => p.holdRow && p.items * p.vec <= 32));
});

test('vector width follows the strides: odd strides get scalar access', () => {
  assert.is(maxVec(makeProblem(spec, 7, 4)), 1);
  assert.is(maxVec(makeProblem(spec, 7, 4, { x: 8, y: 8, residual: 8, residualOut: 8 })), 8);
  assert.is(maxVec(makeProblem(spec, 4096, 4, { x: 4100, y: 4096, residual: 4096, residualOut: 4096 })), 4);
  assert.is(maxVec(makeProblem({ ...spec, features: { ...spec.features, residual: 'fp32' } }, 4096, 4)), 4);
});

test('the generic variant runs every shape; the baseline every aligned one', () => {
  for (const hidden of [1, 3, 1000, 131072, 1 << 20])
    for (const arch of [sm80, sm90]) {
      const p = makeProblem(spec, hidden, 5);
      assert.is(unsupportedReason(p, GENERIC_PARAMS, arch), null);
      assert.is(unsupportedReason(p, baselineParams(p), arch), null);
    }
});

test('clusters only where the arch has them; shared memory within its limit', () => {
  const p = makeProblem(spec, 65536, 4096);
  assert.ok(enumerateSpace(p, sm90).some((v) => v.cluster > 1));
  assert.ok(!enumerateSpace(p, sm80).some((v) => v.cluster > 1));
  assert.ok(enumerateSpace(p, sm80).every((v) => unsupportedReason(p, v, sm80) === null));
  const clustered = enumerateSpace(p, sm90).find((v) => v.cluster > 1)!;
  assert.match(String(unsupportedReason(p, clustered, sm80)), /sm80 has no thread-block clusters/);
  assert.match(String(unsupportedReason(makeProblem(spec, 1 << 20, 1), { ...GENERIC_PARAMS, storage: 'smem' }, sm90)), /shared memory/);
});

test('clusters of up to the arch\'s size, each CTA keeping at least 2048 columns', () => {
  const clusters = (hidden: number, arch = sm90) => new Set(enumerateSpace(makeProblem(spec, hidden, 4096), arch).map((v) => v.cluster));
  assert.is(Math.max(...clusters(65536)), 16);
  assert.ok(!clusters(16384).has(16) && clusters(16384).has(8), '16384 / 16 leaves 1024 columns a CTA');
  assert.ok(clusters(32768).has(16));
  const sm120 = parseArch('sm120');
  assert.is(sm120.maxCluster, 8);
  assert.equal(Math.max(...clusters(65536, sm120)), 8, 'clusters past 8 are non-portable: sm90 and sm100 only');
  const wideCtas = (op: 'layernorm' | 'rmsnorm') => enumerateSpace(makeProblem({ ...spec, op }, 65536, 4096), sm90).filter((v) => v.cluster === 16).map((v) => v.threads);
  assert.ok(!wideCtas('layernorm').includes(1024), "a LayerNorm exchange of 16 CTAs does not fit 1024-thread CTAs' registers");
  assert.ok(wideCtas('layernorm').includes(512) && wideCtas('rmsnorm').includes(1024));
  const wide = enumerateSpace(makeProblem(spec, 65536, 4096), sm90).find((v) => v.cluster === 16)!;
  assert.match(String(unsupportedReason(makeProblem(spec, 65536, 4096), wide, sm120)), /at most 8 CTAs/);
});

test('staged rows split over clusters of 2 and 4 from hidden 32768, each CTA staging its slice', () => {
  const smemClusters = (hidden: number, arch = sm90, dtype: 'bf16' | 'fp32' = 'bf16') => {
    const p = makeProblem({ ...spec, dtype }, hidden, 4096);
    return enumerateSpace(p, arch).filter((v) => v.storage === 'smem' && v.cluster > 1).map((v) => ({ v, bytes: dynamicSharedBytes(p, v, hidden) }));
  };
  const wide = smemClusters(131072);
  assert.equal(new Set(wide.map(({ v }) => v.cluster)), new Set([2, 4]));
  assert.ok(wide.every(({ v }) => v.threads >= 256 && v.threadsPerRow === v.threads), 'one row a CTA');
  for (const { v, bytes } of wide) assert.is(bytes, (131072 / v.cluster) * 2, 'a CTA stages its slice');
  assert.equal(new Set(smemClusters(131072, sm90, 'fp32').map(({ v }) => v.cluster)), new Set([4]), 'an fp32 half row does not fit');
  assert.is(smemClusters(16384).length, 0);
  assert.is(smemClusters(131072, sm80).length, 0);
});

test('variant ids are stable and distinct', () => {
  const p = makeProblem(spec, 4096, 64);
  const a = enumerateSpace(p, sm90).map((v) => makeVariant(p, v).id);
  const b = enumerateSpace(p, sm90).map((v) => makeVariant(p, v).id);
  assert.equal(a, b);
  assert.is(new Set(a).size, a.length);
  const other = makeVariant({ ...p, op: 'rmsnorm' }, enumerateSpace(p, sm90)[0]).id;
  assert.not.ok(a.includes(other), 'the spec is part of the id');
});

test('the covering set has every axis value of the space', () => {
  const space = enumerateSpace(makeProblem(spec, 8192, 64), sm90);
  const cover = coveringSet(space);
  for (const axis of ['storage', 'threads', 'vec', 'threadsPerRow', 'cluster'] as const)
    assert.equal(new Set(cover.map((v) => v[axis])), new Set(space.map((v) => v[axis])), axis);
  assert.ok(cover.some((v) => v.earlyAffine) && cover.some((v) => !v.earlyAffine), 'early and late weight loads');
  const long = coveringSet(enumerateSpace(makeProblem(spec, 65536, 64), sm90));
  assert.ok(long.some((v) => v.deferOutput) && long.some((v) => v.storage === 'ring' && !v.deferOutput), 'deferred and eager output');
  for (const storage of ['regs', 'smem', 'ring'])
    assert.ok(long.some((v) => v.storage === storage && v.cluster > 1), `${storage} split over a cluster`);
  assert.ok(cover.length < space.length / 2);
});

test('the GPU correctness matrix spans every shape, dtype and feature set', () => {
  const cases = correctnessMatrix(sm90);
  for (const hidden of MATRIX_HIDDEN)
    for (const rows of MATRIX_ROWS)
      for (const dtype of DTYPES) assert.ok(cases.some((c) => c.problem.hidden === hidden && c.problem.rows === rows && c.problem.dtype === dtype));
  for (const op of OPS)
    for (const f of allFeatureCombos())
      assert.ok(cases.some((c) => c.problem.op === op && JSON.stringify(c.problem.features) === JSON.stringify(f)));
  assert.ok(cases.some((c) => c.problem.strides.x !== c.problem.hidden), 'strided rows too');
});

test.run();
