import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { allFeatureCombos, bytesMoved, InputError, makeProblem, parseDType, parseOp, type KernelSpec } from '../generator/problem.js';

const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };

test('bad shapes and choices are InputErrors with clear messages', () => {
  assert.throws(() => makeProblem(spec, 0, 1), (e: Error) => e instanceof InputError && /hidden must be a positive integer/.test(e.message));
  assert.throws(() => makeProblem(spec, 4, 0), /rows must be a positive integer/);
  assert.throws(() => makeProblem(spec, 4, 1.5), /rows must be a positive integer/);
  assert.throws(() => makeProblem(spec, 8, 1, { x: 4 }), /x row stride 4 is smaller than hidden 8/);
  assert.throws(() => makeProblem({ ...spec, features: { ...spec.features, weight: 'none', weightOffset: true } }, 8, 1), /offset .* needs a weight/);
  assert.throws(() => parseOp('groupnorm'), /unknown op 'groupnorm'/);
  assert.throws(() => parseDType('fp8'), /unknown dtype 'fp8'/);
});

test('strides default to hidden', () => {
  const p = makeProblem(spec, 10, 3);
  assert.equal(p.strides, { x: 10, y: 10, residual: 10, residualOut: 10 });
});

test('bytes moved count every tensor once', () => {
  assert.is(bytesMoved(makeProblem(spec, 1024, 8)), 2 * 8 * 1024 * 2 + 1024 * 2);
  const full: KernelSpec = { op: 'layernorm', dtype: 'fp16', features: { weight: 'fp32', bias: true, weightOffset: false, residual: 'fp32', stats: true } };
  assert.is(bytesMoved(makeProblem(full, 100, 10)), 2 * 1000 * 2 + 100 * 4 * 2 + 2 * 1000 * 4 + 10 * 8);
});

test('every feature combination, each once', () => {
  const combos = allFeatureCombos();
  assert.is(combos.length, 60); // weight none (no offset) 12 + fp32 24 + same 24
  assert.is(new Set(combos.map((c) => JSON.stringify(c))).size, 60);
  assert.ok(combos.every((c) => !(c.weightOffset && c.weight === 'none')));
});

test.run();
