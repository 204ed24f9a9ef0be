import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { allFeatureCombos, DTYPES, makeProblem, OPS, type KernelSpec } from '../generator/problem.js';
import { renderCudaUnit, renderPackageUnit, twinKeepsPrefetch } from '../generator/render-cuda.js';
import { parseArch } from '../generator/arch.js';
import { ctasByRegisters, enumerateSpace, GENERIC_PARAMS } from '../generator/space.js';
import { FAULTS, makeVariant } from '../generator/variant.js';

const TYPES = { fp32: 'float', fp16: '__half', bf16: '__nv_bfloat16' };

test('every op x dtype x feature combination renders its configuration', () => {
  let n = 0;
  for (const op of OPS)
    for (const dtype of DTYPES)
      for (const features of allFeatureCombos()) {
        const spec: KernelSpec = { op, dtype, features };
        const v = makeVariant(spec, GENERIC_PARAMS);
        const src = renderCudaUnit(spec, [v]);
        assert.ok(src.includes(`using T = ${TYPES[dtype]};`));
        assert.ok(src.includes(`kLayerNorm = ${op === 'layernorm'};`));
        assert.ok(src.includes(`kWeight = ${features.weight !== 'none'};`));
        assert.ok(src.includes(`kWeightOffset = ${features.weightOffset};`));
        assert.ok(src.includes(`kBias = ${features.bias};`));
        assert.ok(src.includes(`kResidual = ${features.residual !== 'none'};`));
        assert.ok(src.includes(`kStats = ${features.stats};`));
        if (features.residual === 'fp32') assert.ok(src.includes('using R = float;'));
        if (features.weight === 'fp32') assert.ok(src.includes('using W = float;'));
        assert.ok(src.includes(`extern "C" __global__ void __launch_bounds__(256, 1)\n${v.symbol}(`));
        assert.not.ok(src.includes('Deliberately broken'));
        n++;
      }
  assert.is(n, 360);
});

test('cluster variants carry their cluster dimensions', () => {
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: allFeatureCombos()[0] };
  const v = makeVariant(spec, { storage: 'regs', threads: 256, vec: 8, threadsPerRow: 256, items: 4, cluster: 4, stages: 0, stagedWeights: false });
  assert.match(renderCudaUnit(spec, [v]), /__cluster_dims__\(4, 1, 1\) __launch_bounds__\(256, 1\)/);
});

test('a register-capped variant asks for its resident threads per SM in its launch bounds', () => {
  const spec: KernelSpec = { op: 'layernorm', dtype: 'bf16', features: allFeatureCombos()[0] };
  const params = { storage: 'reload', threads: 256, vec: 8, threadsPerRow: 256, items: 0, cluster: 1, stages: 0, stagedWeights: false } as const;
  assert.match(renderCudaUnit(spec, [makeVariant(spec, { ...params, registerCap: 1024 })]), /__launch_bounds__\(256, 4\)/);
  assert.match(renderCudaUnit(spec, [makeVariant(spec, { ...params, registerCap: 1536 })]), /__launch_bounds__\(256, 6\)/);
  assert.match(renderCudaUnit(spec, [makeVariant(spec, params)]), /__launch_bounds__\(256, 1\)/);
});

test('a unit refuses variants of another spec', () => {
  const a: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: allFeatureCombos()[0] };
  const b: KernelSpec = { ...a, dtype: 'fp16' };
  assert.throws(() => renderCudaUnit(a, [makeVariant(b, GENERIC_PARAMS)]), /another kernel spec/);
});

test('fault variants render only their fault and have their own ids', () => {
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: allFeatureCombos()[0] };
  const ids = new Set([makeVariant(spec, GENERIC_PARAMS).id]);
  for (const f of FAULTS) {
    const v = makeVariant(spec, GENERIC_PARAMS, f);
    ids.add(v.id);
    assert.ok(renderCudaUnit(makeProblem(spec, 8, 1), [v]).includes(`Deliberately broken (${f})`));
  }
  assert.is(ids.size, FAULTS.length + 1);
});

test('every storage but reload prefetches its first rows into L2 between releasing dependents and waiting', () => {
  const residual = allFeatureCombos().find((f) => f.residual === 'same' && !f.bias && !f.stats && !f.weightOffset && f.weight === 'same')!;
  const problems = [
    makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: residual }, 8192, 2048),
    makeProblem({ op: 'layernorm', dtype: 'fp32', features: { ...residual, residual: 'none', bias: true } }, 32768, 2048),
  ];
  const seen = new Set<string>();
  for (const problem of problems)
    for (const params of enumerateSpace(problem, parseArch('sm90'))) {
      const kind = `${params.storage}${params.cluster > 1 ? '.cl' : ''}`;
      if (seen.has(kind)) continue;
      seen.add(kind);
      const v = makeVariant(problem, params);
      const src = renderCudaUnit(problem, [v]);
      const body = src.slice(src.indexOf(`${v.symbol}(`));
      const order = ['release_dependents();', 'prefetch_first_rows<', 'wait_for_previous_grid();', `${params.storage}_kernel<`].map((s) => body.indexOf(s));
      if (params.storage === 'reload') {
        assert.is(order[1], -1, kind);
        continue;
      }
      assert.ok(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1])), `${kind}: release, prefetch, wait, kernel in that order`);
      const args = `${params.threads}, ${params.vec}, ${params.threadsPerRow}, ${params.items}, ${params.cluster}, ${params.fixedHidden ?? 0}>(p);`;
      assert.ok(body.includes(`prefetch_first_rows<Config, ${args}`), `${kind}: prefetch shaped like the kernel`);
    }
  for (const kind of ['pipelined.cl', 'regs', 'regs.cl', 'reload', 'ring', 'ring.cl', 'smem', 'smem.cl']) assert.ok(seen.has(kind), kind);
});

test("a package unit's plain twins run each kernel's own call, under its bounds, without the release and the wait", () => {
  const residual = allFeatureCombos().find((f) => f.residual === 'same' && !f.bias && !f.stats && !f.weightOffset && f.weight === 'same')!;
  const problems = [
    makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: residual }, 8192, 2048),
    makeProblem({ op: 'layernorm', dtype: 'fp32', features: { ...residual, residual: 'none', bias: true } }, 32768, 2048),
    makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: { ...residual, residual: 'none' } }, 1024, 32),
  ];
  let twins = 0;
  const keeps = [0, 0];
  for (const problem of problems) {
    const variants = enumerateSpace(problem, parseArch('sm90')).map((params) => makeVariant(problem, params));
    const unit = renderPackageUnit(problem, variants, new Map());
    assert.ok(unit.startsWith(renderCudaUnit(problem, variants)), 'the tuned kernels as the tuner compiled them, then the twins');
    // A kernel's text: from the line before its name (attributes) to the end of its body.
    const kernel = (symbol: string) => {
      const at = unit.indexOf(`\n${symbol}(const NormgenFwdParams p) {`);
      assert.ok(at > 0, symbol);
      const head = unit.lastIndexOf('extern "C"', at);
      return { attributes: unit.slice(head, at), body: unit.slice(at, unit.indexOf('\n}\n', at)) };
    };
    for (const v of variants) {
      const [tuned, twin] = [kernel(v.symbol), kernel(`${v.symbol}_plain`)];
      const call = (body: string) => body.split('\n').find((l) => l.startsWith(`  normgen::${v.params.storage}_kernel<`));
      assert.ok(call(tuned.body), v.symbol);
      assert.is(call(twin.body), call(tuned.body), `${v.symbol}: the twin makes the kernel's call`);
      assert.is(twin.attributes, tuned.attributes, `${v.symbol}: same cluster dims and launch bounds`);
      for (const prologue of ['release_dependents', 'wait_for_previous_grid']) assert.not.ok(twin.body.includes(prologue), `${v.symbol}: ${prologue}`);
      const prefetch = (body: string) => body.split('\n').find((l) => l.startsWith('  normgen::prefetch_first_rows<'));
      if (twinKeepsPrefetch(v.params)) assert.is(prefetch(twin.body), prefetch(tuned.body)!, `${v.symbol}: a persistent or cluster kernel's twin keeps its prefetch`);
      else assert.is(prefetch(twin.body), undefined, `${v.symbol}: no prefetch`);
      keeps[twinKeepsPrefetch(v.params) ? 1 : 0]++;
      twins++;
    }
  }
  assert.ok(twins > 100, `${twins} twins`);
  assert.ok(keeps[0] > 10 && keeps[1] > 10, `twins without the prefetch ${keeps[0]}, with it ${keeps[1]}`);
});

test('CTAs an SM holds by registers: 256 a warp from a quarter of the file, at least 1, at most 2048 threads', () => {
  assert.is(ctasByRegisters(512, 62), 2);  // 64 a thread after rounding: 2 x 512 x 64 fill the file
  assert.is(ctasByRegisters(512, 72), 1);
  assert.is(ctasByRegisters(64, 74), 12);  // 80 a thread: 6 warps a quarter of the file, 12 CTAs of 2
  assert.is(ctasByRegisters(64, 40), 24);  // 12 warps a quarter (the whole file: 51), which ptxas fits in 40 registers
  assert.is(ctasByRegisters(64, 28), 32);  // the thread limit, not the registers
  assert.is(ctasByRegisters(1024, 255), 1);
});

test("a plain twin's launch bounds keep the occupancy its kernel's registers allowed", () => {
  const problem = makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: allFeatureCombos().find((f) => f.weight === 'same' && f.residual === 'none' && !f.bias && !f.stats && !f.weightOffset)! }, 16384, 2048);
  const variants = enumerateSpace(problem, parseArch('sm90')).map((params) => makeVariant(problem, params)).filter((v) => v.params.threads === 512 && !v.params.registerCap);
  assert.ok(variants.length > 0);
  const unit = renderPackageUnit(problem, variants, new Map(variants.map((v) => [v.id, 62])));
  const bounds = (symbol: string) => new RegExp(`__launch_bounds__\\((\\d+), (\\d+)\\)\n${symbol}\\(`).exec(unit)?.slice(1);
  for (const v of variants) {
    assert.equal(bounds(v.symbol), ['512', '1'], `${v.symbol}: the tuned kernel as the tuner compiled it`);
    assert.equal(bounds(`${v.symbol}_plain`), ['512', '2'], `${v.symbol}: its twin asks for 2 CTAs, as 62 registers allowed`);
  }
});

test.run();
