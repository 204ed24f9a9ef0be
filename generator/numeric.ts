// Number formats and the deterministic input generator shared with the GPU runner.
// The runner (tuner/native/checks.cuh) implements inputValue() bit for bit, so both
// sides see the same random inputs without moving them between machines.

import type { DType } from './problem.js';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function roundToFp32(v: number): number {
  return Math.fround(v);
}

/** Round to bfloat16 (round to nearest, ties to even), returned as a number. */
export function roundToBf16(v: number): number {
  return bf16BitsToNumber(numberToBf16Bits(v));
}

export function numberToBf16Bits(v: number): number {
  f32[0] = v;
  const bits = u32[0];
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return 0x7fc0; // NaN
  const rounded = bits + 0x7fff + ((bits >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

export function bf16BitsToNumber(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0];
}

/** Round to IEEE half precision (ties to even), subnormals and overflow included. */
export function roundToFp16(v: number): number {
  return fp16BitsToNumber(numberToFp16Bits(v));
}

export function numberToFp16Bits(v: number): number {
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  let a = Math.abs(v);
  if (a >= 65520) return sign | 0x7c00; // rounds to infinity
  if (a < 2 ** -24 / 2) return sign; // below half the smallest subnormal
  let exp = Math.floor(Math.log2(a));
  if (2 ** exp > a) exp -= 1; // guard log2 rounding
  if (2 ** (exp + 1) <= a) exp += 1;
  if (exp < -14) {
    // subnormal: multiples of 2^-24
    const m = roundHalfEven(a / 2 ** -24);
    return sign | m; // m may reach 1024, which is the smallest normal: still correct bits
  }
  let m = roundHalfEven((a / 2 ** exp - 1) * 1024);
  if (m === 1024) {
    m = 0;
    exp += 1;
    if (exp > 15) return sign | 0x7c00;
  }
  return sign | ((exp + 15) << 10) | m;
}

export function fp16BitsToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (exp === 0) return sign * m * 2 ** -24;
  if (exp === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (exp - 15);
}

function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

export function roundTo(dtype: DType, v: number): number {
  return dtype === 'fp32' ? Math.fround(v) : dtype === 'bf16' ? roundToBf16(v) : roundToFp16(v);
}

/** Machine epsilon (spacing at 1.0) of each storage format. */
export const EPSILON: Record<DType, number> = { fp32: 2 ** -23, fp16: 2 ** -10, bf16: 2 ** -7 };

// ---- deterministic inputs -------------------------------------------------------

/** Which tensor a value belongs to; part of the hash so tensors differ. */
export const STREAM = { x: 1, residual: 2, weight: 3, bias: 4, dy: 5 } as const;
export type InputStream = keyof typeof STREAM;

/** lowbias32: a well-mixed 32-bit integer hash (Wellons). */
function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Uniform in [0, 1) on a 2^-22 grid from (seed, stream, 64-bit index); identical in
 * the runner (checks.cuh). 22 bits keep every rawInput() exact in fp32, so the runner's float
 * arithmetic and this double arithmetic round to a 16-bit type identically.
 */
export function uniform(seed: number, stream: number, index: number): number {
  const lo = index >>> 0;
  const hi = Math.floor(index / 4294967296) >>> 0;
  let h = mix32((seed ^ Math.imul(stream, 0x9e3779b9)) >>> 0);
  h = mix32((h ^ lo) >>> 0);
  h = mix32((h ^ hi) >>> 0);
  return (h >>> 10) * 2 ** -22;
}

/**
 * The value of input tensor `stream` at logical `index` (row * hidden + col for
 * x and the residual, col for weight and bias), before rounding to its dtype.
 * x has a non-zero mean so LayerNorm's centering is exercised.
 */
export function rawInput(seed: number, stream: InputStream, index: number, weightOffset: boolean): number {
  const u = uniform(seed, STREAM[stream], index);
  switch (stream) {
    case 'x':
      return 4 * u - 1.5;
    case 'residual':
      return 2 * u - 1;
    case 'weight':
      return weightOffset ? u - 0.5 : 0.5 + u;
    case 'bias':
    case 'dy':
      return u - 0.5;
  }
}

export function inputValue(seed: number, stream: InputStream, index: number, dtype: DType, weightOffset = false): number {
  return roundTo(dtype, rawInput(seed, stream, index, weightOffset));
}
