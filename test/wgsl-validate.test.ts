// Every WGSL variant of a representative set of problems compiles with Tint (Dawn's
// null backend: no driver, no GPU).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { allFeatureCombos, makeProblem, OPS, type Features, type KernelSpec } from '../generator/problem.js';
import { renderWgsl } from '../generator/render-wgsl.js';
import { DEFAULT_LIMITS, enumerateWgslSpace, WGSL_GENERIC_PARAMS, type WgslLimits, type WgslParams } from '../generator/space-wgsl.js';
import { openDevice } from '../tuner/wgsl/dawn.js';
import { compileWgsl, validateAll, validateSpace } from '../tuner/wgsl/validate.js';

/** A desktop-like adapter with every optional feature, so subgroup variants are in the space. */
const LIMITS: WgslLimits = { ...DEFAULT_LIMITS, f16: true, subgroups: true, subgroupMaxSize: 32 };
const DTYPES = ['fp32', 'fp16'] as const;
const SHAPES: [number, number, number?][] = [
  [1, 1],
  [1000, 7],
  [4095, 3],
  [1001, 64, 1004],
  [8192, 100000],
];
const FEATURE_SETS: Features[] = [
  { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false },
  { weight: 'none', bias: true, weightOffset: false, residual: 'fp32', stats: true },
  { weight: 'same', bias: true, weightOffset: true, residual: 'same', stats: true },
  { weight: 'fp32', bias: true, weightOffset: true, residual: 'fp32', stats: false },
];

async function nullDevice(): Promise<GPUDevice> {
  const d = await openDevice('null');
  assert.ok(d, "Dawn's null backend gave no adapter");
  return d.device;
}

/** Shaders by their text: rows and hidden select variants but never change the text. */
function collect(into: Map<string, string>, spec: KernelSpec, params: WgslParams[]) {
  for (const p of params) {
    const code = renderWgsl(spec, p);
    into.set(code, `${spec.op}.${spec.dtype}.${JSON.stringify(spec.features)} ${JSON.stringify(p)}`);
  }
}

async function expectAllValid(shaders: Map<string, string>) {
  const results = await validateAll(await nullDevice(), [...shaders.keys()]);
  const names = [...shaders.values()];
  const failed = results.flatMap((r, i) => (r.status === 'OK' ? [] : [`${names[i]}: ${r.message}`]));
  assert.equal(failed, [], failed.slice(0, 3).join('\n'));
}

test('every variant of the representative problems validates', async () => {
  const shaders = new Map<string, string>();
  for (const op of OPS)
    for (const dtype of DTYPES)
      for (const features of FEATURE_SETS)
        for (const [hidden, rows, stride] of SHAPES) {
          const spec: KernelSpec = { op, dtype, features };
          const s = stride ?? hidden;
          const problem = makeProblem(spec, hidden, rows, { x: s, y: s, residual: s, residualOut: s });
          const space = enumerateWgslSpace(problem, LIMITS);
          assert.ok(space.length > 0);
          collect(shaders, spec, space);
        }
  assert.ok(shaders.size > 500, `only ${shaders.size} distinct shaders`);
  await expectAllValid(shaders);
});

test('every op x dtype x feature combination validates (generic, vec4 and subgroup variants)', async () => {
  const shaders = new Map<string, string>();
  const params: WgslParams[] = [WGSL_GENERIC_PARAMS, { workgroup: 256, vec: 4, threadsPerRow: 64, reduce: 'subgroup' }, { workgroup: 128, vec: 2, threadsPerRow: 4, reduce: 'workgroup' }];
  for (const op of OPS) for (const dtype of DTYPES) for (const features of allFeatureCombos()) collect(shaders, { op, dtype, features }, params);
  assert.is(shaders.size, 2 * 2 * allFeatureCombos().length * params.length);
  await expectAllValid(shaders);
});

test('validateSpace reports every variant of a problem by id', async () => {
  const problem = makeProblem({ op: 'layernorm', dtype: 'fp16', features: FEATURE_SETS[2] }, 4095, 33);
  const results = await validateSpace(await nullDevice(), problem, LIMITS);
  assert.is(results.length, enumerateWgslSpace(problem, LIMITS).length);
  assert.is(new Set(results.map((r) => r.id)).size, results.length);
  assert.ok(results.every((r) => r.status === 'OK' && /^[0-9a-f]{12}$/.test(r.id)));
});

test('a broken shader is a COMPILE_ERROR with its line, not a crash', async () => {
  const device = await nullDevice();
  const good = renderWgsl({ op: 'rmsnorm', dtype: 'fp32', features: FEATURE_SETS[0] }, WGSL_GENERIC_PARAMS);
  const [ok, bad] = await validateAll(device, [good, good.replace('inverseSqrt(', 'inverse_sqrt(')]);
  assert.is(ok.status, 'OK');
  assert.is(bad.status, 'COMPILE_ERROR');
  assert.match(bad.message ?? '', /^\d+:\d+ .*inverse_sqrt/);
  const over = await compileWgsl(device, good.replace('const WG: u32 = 64u;', 'const WG: u32 = 4096u;'));
  assert.ok(over.error, 'a workgroup over the device limit fails at pipeline creation');
});

test.run();
