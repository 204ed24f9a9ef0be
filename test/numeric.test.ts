import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { inputValue, roundToBf16, roundToFp16, uniform, numberToFp16Bits, fp16BitsToNumber } from '../generator/numeric.js';

test('bf16 rounds to nearest, ties to even', () => {
  assert.is(roundToBf16(1), 1);
  assert.is(roundToBf16(1 + 2 ** -8), 1); // tie -> even (1.0)
  assert.is(roundToBf16(1 + 3 * 2 ** -8), 1 + 2 ** -6); // tie -> even (upper)
  assert.is(roundToBf16(1 + 2 ** -8 + 2 ** -12), 1 + 2 ** -7); // above the tie
  assert.is(roundToBf16(-3.14159), -3.140625);
});

test('fp16 rounds normals, subnormals and overflow', () => {
  assert.is(roundToFp16(1 + 2 ** -11), 1); // tie -> even
  assert.is(roundToFp16(1 + 3 * 2 ** -11), 1 + 2 ** -9);
  assert.is(roundToFp16(65504), 65504);
  assert.is(roundToFp16(70000), Infinity);
  assert.is(roundToFp16(2 ** -24), 2 ** -24); // smallest subnormal
  assert.is(roundToFp16(2 ** -26), 0);
  assert.is(roundToFp16(3 * 2 ** -25), 2 ** -23); // subnormal tie -> even
  for (const v of [0.1, -2.5, 1000.3, 6.1e-5]) assert.is(fp16BitsToNumber(numberToFp16Bits(v)), roundToFp16(v));
});

test('uniform is deterministic, in [0, 1), and depends on seed, stream and index', () => {
  const a = uniform(7, 1, 123);
  assert.is(uniform(7, 1, 123), a);
  assert.ok(a >= 0 && a < 1);
  assert.is.not(uniform(8, 1, 123), a);
  assert.is.not(uniform(7, 2, 123), a);
  assert.is.not(uniform(7, 1, 124), a);
  assert.is.not(uniform(7, 1, 123 + 2 ** 32), a); // the high word matters
  let sum = 0;
  for (let i = 0; i < 10000; i++) sum += uniform(1, 1, i);
  assert.ok(Math.abs(sum / 10000 - 0.5) < 0.02, 'roughly uniform');
});

test('generated inputs are random, non-zero and already in their dtype', () => {
  const xs = Array.from({ length: 1000 }, (_, i) => inputValue(3, 'x', i, 'bf16'));
  assert.ok(xs.every((v) => v >= -1.5 && v <= 2.5));
  assert.ok(new Set(xs).size > 100, 'not constant');
  assert.ok(xs.every((v) => roundToBf16(v) === v));
  const mean = xs.reduce((s, v) => s + v, 0) / xs.length;
  assert.ok(mean > 0.3 && mean < 0.7, 'x has a non-zero mean for LayerNorm');
});

test.run();
