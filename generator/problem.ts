// What a normalization problem is: the op, its features (which define a kernel's
// signature and semantics) and the shape (which only selects among kernels).

export const OPS = ['rmsnorm', 'layernorm'] as const;
export type Op = (typeof OPS)[number];

export const DTYPES = ['fp32', 'fp16', 'bf16'] as const;
export type DType = (typeof DTYPES)[number];

/** Weight (gamma) storage: absent, fp32, or the same dtype as x. */
export const WEIGHT_KINDS = ['none', 'fp32', 'same'] as const;
export type WeightKind = (typeof WEIGHT_KINDS)[number];

/** Fused residual: absent, or r and the written sum x + r in x's dtype or in fp32. */
export const RESIDUAL_KINDS = ['none', 'same', 'fp32'] as const;
export type ResidualKind = (typeof RESIDUAL_KINDS)[number];

export interface Features {
  weight: WeightKind;
  /** y += bias (bias has the weight's dtype, or x's when there is no weight). */
  bias: boolean;
  /** Gemma-style: the weight applied is (1 + w). Needs a weight. */
  weightOffset: boolean;
  residual: ResidualKind;
  /** Write fp32 rstd (and mean for LayerNorm) per row. */
  stats: boolean;
}

/**
 * The part of a problem that fixes a kernel's code: op, dtype and features, and the
 * direction (absent: forward). In a backward spec the features describe the forward
 * being differentiated: `residual` means a gradient of the residual output (in the
 * residual's dtype) is added to dx, and x (what was normalized) and dx have that dtype;
 * `stats` means the forward's saved rstd (and mean) are given (else they are recomputed).
 */
export interface KernelSpec {
  op: Op;
  dtype: DType;
  features: Features;
  direction?: 'bwd';
}

export const isBackward = (spec: KernelSpec) => spec.direction === 'bwd';

/**
 * Strides in elements between consecutive rows; each defaults to hidden. Backward
 * problems use them for x, dy, dresidual and dx, in that order.
 */
export interface RowStrides {
  x: number;
  y: number;
  residual: number;
  residualOut: number;
}

export interface Problem extends KernelSpec {
  hidden: number;
  rows: number;
  strides: RowStrides;
}

export const BYTES: Record<DType, number> = { fp32: 4, fp16: 2, bf16: 2 };

export class InputError extends Error {
  override name = 'InputError';
}

export const DEFAULT_FEATURES: Features = {
  weight: 'same',
  bias: false,
  weightOffset: false,
  residual: 'none',
  stats: false,
};

export function weightDType(spec: KernelSpec): DType | null {
  const w = spec.features.weight;
  return w === 'none' ? null : w === 'fp32' ? 'fp32' : spec.dtype;
}

/** Bias shares the weight's dtype; without a weight it has x's dtype. */
export function biasDType(spec: KernelSpec): DType | null {
  if (!spec.features.bias) return null;
  return weightDType(spec) ?? spec.dtype;
}

export function residualDType(spec: KernelSpec): DType | null {
  const r = spec.features.residual;
  return r === 'none' ? null : r === 'fp32' ? 'fp32' : spec.dtype;
}

function checkChoice<T extends string>(what: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new InputError(`unknown ${what} '${value}' (expected one of: ${allowed.join(', ')})`);
  }
  return value as T;
}

export const parseOp = (v: string): Op => checkChoice('op', v, OPS);
export const parseDType = (v: string): DType => checkChoice('dtype', v, DTYPES);
export const parseWeight = (v: string): WeightKind => checkChoice('weight kind', v, WEIGHT_KINDS);
export const parseResidual = (v: string): ResidualKind => checkChoice('residual kind', v, RESIDUAL_KINDS);

/** A positive integer that fits the kernels' index types, or a clear error. */
export function checkPositiveInt(what: string, value: unknown, max = Number.MAX_SAFE_INTEGER): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) {
    throw new InputError(`${what} must be a positive integer, got '${String(value)}'`);
  }
  if (n > max) throw new InputError(`${what} must be at most ${max}, got ${n}`);
  return n;
}

export function checkFeatures(f: Features): Features {
  if (f.weightOffset && f.weight === 'none') {
    throw new InputError('a weight offset (1 + w) needs a weight: pass --weight fp32 or --weight same');
  }
  return f;
}

export const MAX_HIDDEN = 2 ** 30;

export function makeProblem(
  spec: KernelSpec,
  hidden: number,
  rows: number,
  strides: Partial<RowStrides> = {},
): Problem {
  checkFeatures(spec.features);
  checkPositiveInt('hidden', hidden, MAX_HIDDEN);
  checkPositiveInt('rows', rows);
  const full: RowStrides = {
    x: strides.x ?? hidden,
    y: strides.y ?? hidden,
    residual: strides.residual ?? hidden,
    residualOut: strides.residualOut ?? hidden,
  };
  for (const [name, s] of Object.entries(full)) {
    checkPositiveInt(`${name} row stride`, s);
    if (s < hidden) throw new InputError(`${name} row stride ${s} is smaller than hidden ${hidden}`);
  }
  return { ...spec, features: { ...spec.features }, hidden, rows, strides: full };
}

/** The spec of the backward of a forward spec (or the spec itself when already backward). */
export function backwardSpec(spec: KernelSpec): KernelSpec {
  return { op: spec.op, dtype: spec.dtype, features: { ...spec.features }, direction: 'bwd' };
}

/** Short stable text for a kernel spec, used in file names and tables. */
export function specKey(spec: KernelSpec): string {
  const f = spec.features;
  const parts: string[] = [spec.op, ...(isBackward(spec) ? ['bwd'] : []), spec.dtype, `w-${f.weight}`];
  if (f.weightOffset) parts.push('offset');
  if (f.bias) parts.push('bias');
  if (f.residual !== 'none') parts.push(`res-${f.residual}`);
  if (f.stats) parts.push('stats');
  return parts.join('.');
}

export function problemKey(p: Problem): string {
  const s = p.strides;
  const strided = s.x !== p.hidden || s.y !== p.hidden || s.residual !== p.hidden || s.residualOut !== p.hidden;
  const tail = strided ? `.s${s.x}-${s.y}-${s.residual}-${s.residualOut}` : '';
  return `${specKey(p)}.h${p.hidden}.r${p.rows}${tail}`;
}

/** Bytes a forward pass must move at least: the roofline numerator (backward: see space-bwd.ts). */
export function bytesMoved(p: Problem): number {
  const elems = p.rows * p.hidden;
  let bytes = 2 * elems * BYTES[p.dtype];
  const w = weightDType(p);
  if (w) bytes += p.hidden * BYTES[w];
  const b = biasDType(p);
  if (b) bytes += p.hidden * BYTES[b];
  const r = residualDType(p);
  if (r) bytes += 2 * elems * BYTES[r];
  if (p.features.stats) bytes += p.rows * 4 * (p.op === 'layernorm' ? 2 : 1);
  return bytes;
}

/** Every combination of features, for coverage in tests and verification. */
export function allFeatureCombos(): Features[] {
  const out: Features[] = [];
  for (const weight of WEIGHT_KINDS)
    for (const weightOffset of weight === 'none' ? [false] : [false, true])
      for (const bias of [false, true])
        for (const residual of RESIDUAL_KINDS)
          for (const stats of [false, true]) out.push({ weight, weightOffset, bias, residual, stats });
  return out;
}
