import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { referenceForward } from '../generator/reference.js';
import type { Features, KernelSpec } from '../generator/problem.js';

const features = (f: Partial<Features>): Features => ({ weight: 'none', bias: false, weightOffset: false, residual: 'none', stats: true, ...f });
const near = (a: number, b: number, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, `${a} != ${b}`);

test('RMSNorm of [3, 4] by hand', () => {
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'fp32', features: features({}) };
  const out = referenceForward(spec, 1, 2, { x: Float64Array.from([3, 4]) }, 0);
  const rms = Math.sqrt((9 + 16) / 2);
  near(out.y[0], 3 / rms);
  near(out.y[1], 4 / rms);
  near(out.rstd![0], 1 / rms);
  assert.is(out.mean, undefined);
});

test('LayerNorm of [1, 2, 3, 4] with weight, bias and eps by hand', () => {
  const spec: KernelSpec = { op: 'layernorm', dtype: 'fp32', features: features({ weight: 'fp32', bias: true }) };
  const x = Float64Array.from([1, 2, 3, 4, 10, 10, 10, 10]);
  const out = referenceForward(spec, 2, 4, { x, weight: Float64Array.from([1, 2, 3, 4]), bias: Float64Array.from([0, 0, 1, 1]) }, 0.25);
  const rstd = 1 / Math.sqrt(1.25 + 0.25);
  near(out.mean![0], 2.5);
  near(out.rstd![0], rstd);
  near(out.y[0], -1.5 * rstd * 1);
  near(out.y[3], 1.5 * rstd * 4 + 1);
  // A constant row: variance 0, only eps remains.
  near(out.mean![1], 10);
  near(out.rstd![1], 2);
  near(out.y[6], 1);
});

test('Gemma offset multiplies by (1 + w)', () => {
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'fp32', features: features({ weight: 'same', weightOffset: true }) };
  const out = referenceForward(spec, 1, 1, { x: Float64Array.from([2]), weight: Float64Array.from([0.5]) }, 0);
  near(out.y[0], 1.5); // 2 / |2| * (1 + 0.5)
});

test('the fused residual sum is rounded to its dtype before normalizing', () => {
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: features({ residual: 'same' }) };
  const out = referenceForward(spec, 1, 2, { x: Float64Array.from([1, 1]), residual: Float64Array.from([2 ** -9, 1]) }, 0);
  assert.equal([...out.residualOut!], [1, 2]); // 1 + 2^-9 rounds to 1 in bf16
  const rms = Math.sqrt((1 + 4) / 2);
  near(out.y[0], 1 / rms);
  const fp32: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: features({ residual: 'fp32' }) };
  const kept = referenceForward(fp32, 1, 2, { x: Float64Array.from([1, 1]), residual: Float64Array.from([2 ** -9, 1]) }, 0);
  assert.is(kept.residualOut![0], 1 + 2 ** -9); // fp32 keeps it
});

test('missing inputs are an error, not a silent zero', () => {
  const spec: KernelSpec = { op: 'rmsnorm', dtype: 'fp32', features: features({ weight: 'fp32' }) };
  assert.throws(() => referenceForward(spec, 1, 2, { x: Float64Array.from([1, 2]) }, 0), /weight missing/);
  assert.throws(() => referenceForward(spec, 2, 2, { x: Float64Array.from([1, 2]), weight: Float64Array.from([1, 1]) }, 0), /wrong length/);
});

test.run();
