// The float64 backward reference against central finite differences of the float64
// forward reference, for every op and feature that changes the gradient.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { referenceForward } from '../generator/reference.js';
import { generateBackwardInputs, referenceBackward } from '../generator/reference-bwd.js';
import { backwardSpec, type Features, type KernelSpec, type Op } from '../generator/problem.js';
import { rawInput, roundTo } from '../generator/numeric.js';

const features = (f: Partial<Features>): Features => ({ weight: 'none', bias: false, weightOffset: false, residual: 'none', stats: true, ...f });
const ROWS = 3;
const HIDDEN = 7;
const EPS = 1e-5;
const H = 1e-6;

/** L = sum(y * dy) + sum(x * dresidual): its gradient in x is dx, in w dweight, in b dbias. */
function loss(spec: KernelSpec, x: Float64Array, dy: Float64Array, w?: Float64Array, b?: Float64Array, dres?: Float64Array): number {
  const fwd: KernelSpec = { op: spec.op, dtype: 'fp32', features: { ...spec.features, residual: 'none', stats: false } };
  const y = referenceForward(fwd, ROWS, HIDDEN, { x, weight: w, bias: b }, EPS).y;
  let l = 0;
  for (let i = 0; i < y.length; i++) l += y[i] * dy[i] + (dres ? x[i] * dres[i] : 0);
  return l;
}

function numericGrad(f: (v: Float64Array) => number, v: Float64Array): Float64Array {
  const g = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const keep = v[i];
    v[i] = keep + H;
    const up = f(v);
    v[i] = keep - H;
    const down = f(v);
    v[i] = keep;
    g[i] = (up - down) / (2 * H);
  }
  return g;
}

function assertClose(what: string, got: Float64Array | undefined, want: Float64Array) {
  assert.ok(got, `${what} missing`);
  for (let i = 0; i < want.length; i++)
    assert.ok(Math.abs(got![i] - want[i]) <= 1e-6 + 1e-6 * Math.abs(want[i]), `${what}[${i}]: analytic ${got![i]}, finite difference ${want[i]}`);
}

const CASES: [Op, Partial<Features>][] = [
  ['rmsnorm', {}],
  ['rmsnorm', { weight: 'fp32' }],
  ['rmsnorm', { weight: 'fp32', weightOffset: true, residual: 'fp32' }],
  ['layernorm', {}],
  ['layernorm', { weight: 'same', bias: true }],
  ['layernorm', { weight: 'same', bias: true, weightOffset: true, residual: 'same' }],
  ['rmsnorm', { bias: true }],
];

for (const [op, f] of CASES) {
  const spec = backwardSpec({ op, dtype: 'fp32', features: features(f) });
  test(`${op} ${JSON.stringify(f)}: gradients match finite differences`, () => {
    const inputs = generateBackwardInputs(spec, ROWS, HIDDEN, 11);
    const bias = f.bias ? Float64Array.from({ length: HIDDEN }, (_, i) => rawInput(3, 'bias', i, false)) : undefined;
    const { x, dy, weight, dresidual } = inputs;
    const got = referenceBackward(spec, ROWS, HIDDEN, inputs, EPS);
    assertClose('dx', got.dx, numericGrad((v) => loss(spec, v, dy, weight, bias, dresidual), x));
    if (weight) assertClose('dweight', got.dweight, numericGrad((v) => loss(spec, x, dy, v, bias, dresidual), weight));
    else assert.is(got.dweight, undefined);
    if (bias) assertClose('dbias', got.dbias, numericGrad((v) => loss(spec, x, dy, weight, v, dresidual), bias));
    else assert.is(got.dbias, undefined);
  });
}

test('hidden 1: LayerNorm passes only dresidual (and no gradient through a constant row)', () => {
  const spec = backwardSpec({ op: 'layernorm', dtype: 'fp32', features: features({ weight: 'fp32', bias: true, residual: 'fp32' }) });
  const out = referenceBackward(spec, 2, 1, { x: Float64Array.from([3, -2]), dy: Float64Array.from([0.5, 0.25]), weight: Float64Array.from([2]), dresidual: Float64Array.from([1, 7]) }, 1e-5);
  assert.equal([...out.dx], [1, 7]);
  assert.equal([...out.dweight!], [0]); // xhat is 0 in a one-element row
  assert.equal([...out.dbias!], [0.75]);
});

test('RMSNorm of a single element: dx = dy * w * rstd * (1 - xhat^2)', () => {
  const spec = backwardSpec({ op: 'rmsnorm', dtype: 'fp32', features: features({ weight: 'fp32' }) });
  const eps = 0.5;
  const out = referenceBackward(spec, 1, 1, { x: Float64Array.from([1]), dy: Float64Array.from([1]), weight: Float64Array.from([3]) }, eps);
  const rstd = 1 / Math.sqrt(1 + eps);
  assert.ok(Math.abs(out.dx[0] - 3 * rstd * (1 - rstd * rstd)) < 1e-15);
  assert.ok(Math.abs(out.dweight![0] - rstd) < 1e-15);
});

test('inputs the runner generates: dy in [-0.5, 0.5), x and dresidual in the backward dtype of x', () => {
  const spec = backwardSpec({ op: 'rmsnorm', dtype: 'bf16', features: features({ weight: 'same', residual: 'fp32' }) });
  const inputs = generateBackwardInputs(spec, 4, 64, 1);
  assert.ok(inputs.dy.every((v) => v >= -0.5 && v < 0.5));
  assert.ok(inputs.dy.some((v) => v !== 0));
  assert.ok(inputs.dresidual && inputs.dresidual.length === 256);
  // x is fp32 here (the residual sum): not every value is representable in bf16.
  assert.ok(inputs.x.every((v) => Math.fround(v) === v));
  assert.ok(inputs.x.some((v) => roundTo('bf16', v) !== v));
});

test('bad input is refused with a clear error', () => {
  const spec = backwardSpec({ op: 'rmsnorm', dtype: 'fp32', features: features({ weight: 'fp32' }) });
  assert.throws(() => referenceBackward(spec, 2, 2, { x: new Float64Array(4), dy: new Float64Array(4) }, 1e-5), /weight missing/);
  assert.throws(() => referenceBackward(spec, 2, 2, { x: new Float64Array(3), dy: new Float64Array(4) }, 1e-5), /wrong length/);
});

test.run();
