// WGSL variants executed on a real WebGPU adapter (on CI: Mesa's lavapipe, on the
// CPU) and checked element by element against the float64 reference.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { allFeatureCombos, makeProblem, OPS, type KernelSpec, type Problem } from '../generator/problem.js';
import { describeWgslParams, itemsFor, MAX_ITEMS, wgslMaxVec, wgslUnsupportedReason, type WgslParams } from '../generator/space-wgsl.js';
import { openDevice, type DawnDevice } from '../tuner/wgsl/dawn.js';
import { runWgslVariant, type WgslRunOptions } from '../tuner/wgsl/run.js';

const VERIFY: WgslRunOptions = { seed: 20261125, eps: 1e-6, iterations: 0 };

async function adapter(): Promise<DawnDevice> {
  const d = await openDevice('vulkan');
  if (!d)
    assert.unreachable(
      'no Vulkan WebGPU adapter: install Mesa 25 lavapipe (mesa-vulkan-drivers from bookworm-backports; .ci/run does) ' +
        'or point VK_ICD_FILENAMES at its lvp_icd json',
    );
  for (const f of ['f16', 'subgroups'] as const) assert.ok(d!.limits[f], `the adapter (${d!.description}) lacks ${f}`);
  return d!;
}

/** Shapes: [hidden, rows, row stride]; strides past hidden leave a tail for vec4. */
const SHAPES: [number, number, number][] = [
  [1000, 3, 1000],
  [4095, 2, 4095],
  [1001, 5, 1004],
  [1, 9, 1],
  [4096, 17, 4096],
  [333, 64, 336],
  [96, 40, 96],
  [32768, 2, 32768],
];
/** Axis values, cycled independently of the shapes so every pairing drifts. */
const PARAMS: WgslParams[] = [
  { workgroup: 64, vec: 4, threadsPerRow: 64, reduce: 'workgroup' },
  { workgroup: 128, vec: 2, threadsPerRow: 16, reduce: 'subgroup' },
  { workgroup: 256, vec: 1, threadsPerRow: 256, reduce: 'subgroup' },
  { workgroup: 256, vec: 4, threadsPerRow: 32, reduce: 'workgroup' },
  { workgroup: 128, vec: 4, threadsPerRow: 128, reduce: 'subgroup' },
  { workgroup: 64, vec: 2, threadsPerRow: 1, reduce: 'workgroup' },
  { workgroup: 64, vec: 1, threadsPerRow: 8, reduce: 'subgroup' },
  { workgroup: 256, vec: 2, threadsPerRow: 4, reduce: 'workgroup' },
  { workgroup: 128, vec: 4, threadsPerRow: 32, reduce: 'subgroup', items: MAX_ITEMS },
  { workgroup: 64, vec: 2, threadsPerRow: 64, reduce: 'workgroup', items: MAX_ITEMS },
];

/** The widest legal vector no wider than asked (scalar rows stay scalar); a cache just big enough, where one fits. */
function fit(problem: Problem, p: WgslParams): WgslParams {
  const vec = Math.min(p.vec, wgslMaxVec(problem));
  const need = Math.max(1, itemsFor(problem.hidden, vec, p.threadsPerRow));
  const items = p.items && need <= MAX_ITEMS ? need : 0;
  return { workgroup: p.workgroup, threadsPerRow: p.threadsPerRow, reduce: p.reduce, vec, ...(items ? { items } : {}) };
}

interface Case {
  problem: Problem;
  params: WgslParams;
}

/** Every op x dtype x feature combination once, each with the next shape and axis values. */
function sample(d: DawnDevice): Case[] {
  const cases: Case[] = [];
  let k = 0;
  for (const op of OPS)
    for (const dtype of ['fp32', 'fp16'] as const)
      for (const features of allFeatureCombos()) {
        const spec: KernelSpec = { op, dtype, features };
        const [hidden, rows, s] = SHAPES[k % SHAPES.length];
        const problem = makeProblem(spec, hidden, rows, { x: s, y: s, residual: s, residualOut: s });
        const params = fit(problem, PARAMS[k % PARAMS.length]);
        assert.is(wgslUnsupportedReason(problem, params, d.limits), null);
        cases.push({ problem, params });
        k++;
      }
  return cases;
}

test('a sample covering every op, dtype, feature and axis value matches the reference', async () => {
  const d = await adapter();
  const cases = sample(d);
  const seen = new Set<string>();
  const failures: string[] = [];
  for (const { problem, params } of cases) {
    const m = await runWgslVariant(d, problem, params, VERIFY);
    if (m.status !== 'OK') failures.push(`${problem.op}.${problem.dtype} ${JSON.stringify(problem.features)} h${problem.hidden} r${problem.rows} ${describeWgslParams(params)}: ${m.status} ${m.message}`);
    for (const [axis, value] of Object.entries(params)) seen.add(`${axis}=${value}`);
    if (params.items) seen.add('cached');
    if (problem.hidden % params.vec !== 0) seen.add('tail');
    if (problem.strides.x > problem.hidden) seen.add('strided');
  }
  assert.equal(failures, [], failures.slice(0, 5).join('\n'));
  for (const v of ['workgroup=64', 'workgroup=128', 'workgroup=256', 'vec=1', 'vec=2', 'vec=4', 'reduce=workgroup', 'reduce=subgroup', 'threadsPerRow=1', 'tail', 'strided', 'cached'])
    assert.ok(seen.has(v), `the sample misses ${v}`);
});

test('more rows than one dispatch dimension allows (2-D grid)', async () => {
  const d = await adapter();
  const spec: KernelSpec = { op: 'layernorm', dtype: 'fp32', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: true } };
  const problem = makeProblem(spec, 8, d.limits.maxWorkgroupsPerDimension + 1000);
  const m = await runWgslVariant(d, problem, { workgroup: 64, vec: 4, threadsPerRow: 64, reduce: 'workgroup' }, VERIFY);
  assert.is(m.status, 'OK', m.message);
});

test('wrong kernels are caught: a wrong value, an unwritten row, a write past the row', async () => {
  const d = await adapter();
  const spec: KernelSpec = { op: 'layernorm', dtype: 'fp16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'same', stats: true } };
  const problem = makeProblem(spec, 1001, 6, { x: 1004, y: 1004, residual: 1004, residualOut: 1004 });
  const params: WgslParams = { workgroup: 128, vec: 4, threadsPerRow: 64, reduce: 'workgroup' };
  const run = (mutate?: (code: string) => string) => runWgslVariant(d, problem, params, { ...VERIFY, eps: 0.5, mutate });
  assert.is((await run()).status, 'OK');
  const faults: [string, string, RegExp][] = [
    ['/ n + P.eps', '/ n + 2.0 * P.eps', /^y\[row 0, col \d+\]/],
    ['if (group * ROWS_PER_WG >= P.rows)', 'if (group * ROWS_PER_WG + 2u >= P.rows)', /row [45]/],
    ['for (var c = lane; c < tail; c += TPR) {\n    store_t', 'for (var c = lane; c <= tail; c += TPR) {\n    store_t', /outside the rows were written/],
  ];
  for (const [from, to, message] of faults) {
    let changed = false;
    const m = await run((code) => {
      changed = code.includes(from);
      return code.replace(from, to);
    });
    assert.ok(changed, `the fault '${to}' was not injected`);
    assert.is(m.status, 'INCORRECT', to);
    assert.ok(m.mismatches! > 0);
    assert.match(m.message ?? '', message);
  }
  const broken = await run((code) => code.replace('inverseSqrt(', 'inverse_sqrt('));
  assert.is(broken.status, 'COMPILE_ERROR');
});

test('a tensor past the binding limit is TOO_LARGE, a bf16 problem a BAD_REQUEST', async () => {
  const d = await adapter();
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'fp32', features: { weight: 'none', bias: false, weightOffset: false, residual: 'none', stats: false } };
  const rows = Math.ceil(d.device.limits.maxStorageBufferBindingSize / 4096) + 1;
  const params: WgslParams = { workgroup: 256, vec: 4, threadsPerRow: 256, reduce: 'workgroup' };
  assert.is((await runWgslVariant(d, makeProblem(spec, 1024, rows), params, VERIFY)).status, 'TOO_LARGE');
  assert.is((await runWgslVariant(d, makeProblem({ ...spec, dtype: 'bf16' }, 1024, 2), params, VERIFY)).status, 'BAD_REQUEST');
});

test('timing reports a positive time per dispatch, by timestamps and by the wall clock', async () => {
  const d = await adapter();
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'fp16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'same', stats: false } };
  const m = await runWgslVariant(d, makeProblem(spec, 2048, 32), { workgroup: 128, vec: 4, threadsPerRow: 128, reduce: 'subgroup' }, { ...VERIFY, iterations: 10 });
  assert.is(m.status, 'OK', m.message);
  assert.ok(m.timeUs! > 0 && Number.isFinite(m.timeUs!));
  assert.is(m.timer, d.timestamps ? 'timestamp-query' : 'wall-clock');
  assert.ok(m.gbps! > 0);
  const wall = await runWgslVariant(d, makeProblem(spec, 2048, 32), { workgroup: 128, vec: 4, threadsPerRow: 128, reduce: 'subgroup' }, { ...VERIFY, iterations: 10, wallClock: true });
  assert.is(wall.timer, 'wall-clock');
  assert.ok(wall.timeUs! > 0 && Number.isFinite(wall.timeUs!));
});

test.run();
