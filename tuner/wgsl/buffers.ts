// Host-side tensors for the WGSL runner: strided rows packed into the bytes of a
// storage buffer (f32, or f16 bits), poison for outputs, and reading them back.

import { fp16BitsToNumber, numberToFp16Bits } from '../../generator/numeric.js';
import { BYTES, type DType } from '../../generator/problem.js';

/**
 * What an output holds where nothing was written: a quiet NaN with a payload that
 * arithmetic does not produce (a NaN the kernel computes is not mistaken for it).
 */
const POISON_F32 = 0x7fd1f00d;
const POISON_F16 = 0x7e5b;

export interface Layout {
  dtype: DType;
  rows: number;
  hidden: number;
  /** Elements between row starts. */
  stride: number;
}

/** Buffer size: the last row ends the data; round up to 16 bytes for vec4 bindings. */
export function byteSize(l: Layout): number {
  const elems = (l.rows - 1) * l.stride + l.hidden;
  return Math.ceil((elems * BYTES[l.dtype]) / 16) * 16;
}

const elementCount = (l: Layout) => byteSize(l) / BYTES[l.dtype];

/** Logical row-major values into the buffer's layout; gaps hold poison. */
export function pack(l: Layout, values: Float64Array): Uint8Array {
  const bytes = poisoned(l);
  const put = writer(l.dtype, bytes);
  for (let r = 0; r < l.rows; r++)
    for (let c = 0; c < l.hidden; c++) put(r * l.stride + c, values[r * l.hidden + c]);
  return bytes;
}

export function poisoned(l: Layout): Uint8Array {
  const bytes = new Uint8Array(byteSize(l));
  if (l.dtype === 'fp16') new Uint16Array(bytes.buffer).fill(POISON_F16);
  else new Uint32Array(bytes.buffer).fill(POISON_F32);
  return bytes;
}

function writer(dtype: DType, bytes: Uint8Array): (i: number, v: number) => void {
  if (dtype === 'fp32') {
    const a = new Float32Array(bytes.buffer);
    return (i, v) => (a[i] = v);
  }
  if (dtype === 'fp16') {
    const a = new Uint16Array(bytes.buffer);
    return (i, v) => (a[i] = numberToFp16Bits(v));
  }
  throw new Error(`no ${dtype} buffers in WGSL`);
}

export interface Unpacked {
  /** Logical row-major values (contiguous f32 rows: a view of the bytes, not a copy). */
  values: Float64Array | Float32Array;
  /** Positions outside the rows (stride gaps, the rounding at the end) that lost their poison. */
  clobbered: number;
}

/** Every f16 bit pattern's value: reading back millions of f16 outputs is a table lookup each. */
let fp16Table: Float64Array | undefined;
const fp16Values = () => (fp16Table ??= Float64Array.from({ length: 65536 }, (_, bits) => fp16BitsToNumber(bits)));

/** Read a buffer back: the rows' values, and whether anything else was written. */
export function unpack(l: Layout, bytes: Uint8Array): Unpacked {
  const wide = l.dtype === 'fp32';
  const words = wide ? new Uint32Array(bytes.buffer, bytes.byteOffset, elementCount(l)) : new Uint16Array(bytes.buffer, bytes.byteOffset, elementCount(l));
  const f32 = new Float32Array(words.buffer, words.byteOffset, wide ? words.length : 0);
  const half = wide ? undefined : fp16Values();
  const poison = wide ? POISON_F32 : POISON_F16;
  let clobbered = 0;
  if (l.stride === l.hidden) {
    // Contiguous rows (what tune measures): one bulk conversion, then only the padding after the last row.
    const n = l.rows * l.hidden;
    for (let i = n; i < words.length; i++) if (words[i] !== poison) clobbered++;
    if (wide) return { values: f32.subarray(0, n), clobbered };
    const values = new Float64Array(n);
    for (let i = 0; i < n; i++) values[i] = half![words[i]];
    return { values, clobbered };
  }
  const values = new Float64Array(l.rows * l.hidden);
  const inRow = new Uint8Array(words.length);
  for (let r = 0; r < l.rows; r++)
    for (let c = 0; c < l.hidden; c++) {
      const i = r * l.stride + c;
      inRow[i] = 1;
      values[r * l.hidden + c] = wide ? f32[i] : half![words[i]];
    }
  for (let i = 0; i < words.length; i++) if (!inRow[i] && words[i] !== poison) clobbered++;
  return { values, clobbered };
}
