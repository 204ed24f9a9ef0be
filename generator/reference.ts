// The float64 reference for the forward pass: the definition every kernel is checked
// against. Tensors here are logical (row-major, no stride), values already rounded to
// their storage dtype.

import { inputValue, roundTo } from './numeric.js';
import { biasDType, residualDType, weightDType, type DType, type KernelSpec } from './problem.js';

export interface ForwardInputs {
  x: Float64Array;
  residual?: Float64Array;
  weight?: Float64Array;
  bias?: Float64Array;
}

export interface ForwardOutputs {
  /** Unrounded: the comparison's tolerance covers the output dtype's rounding. */
  y: Float64Array;
  /** x + residual rounded to the residual dtype: this is what gets normalized. */
  residualOut?: Float64Array;
  mean?: Float64Array;
  rstd?: Float64Array;
}

export function referenceForward(
  spec: KernelSpec,
  rows: number,
  hidden: number,
  inputs: ForwardInputs,
  eps: number,
): ForwardOutputs {
  const f = spec.features;
  const resType = residualDType(spec);
  if (inputs.x.length !== rows * hidden) throw new Error('reference: x has the wrong length');
  if (resType && !inputs.residual) throw new Error('reference: residual input missing');
  if (f.weight !== 'none' && !inputs.weight) throw new Error('reference: weight missing');
  if (f.bias && !inputs.bias) throw new Error('reference: bias missing');

  const out: ForwardOutputs = { y: new Float64Array(rows * hidden) };
  if (resType) out.residualOut = new Float64Array(rows * hidden);
  if (f.stats) {
    out.rstd = new Float64Array(rows);
    if (spec.op === 'layernorm') out.mean = new Float64Array(rows);
  }
  const s = new Float64Array(hidden);
  for (let r = 0; r < rows; r++) {
    const base = r * hidden;
    for (let c = 0; c < hidden; c++) {
      let v = inputs.x[base + c];
      if (resType) {
        v = roundTo(resType, v + inputs.residual![base + c]);
        out.residualOut![base + c] = v;
      }
      s[c] = v;
    }
    let mean = 0;
    if (spec.op === 'layernorm') {
      for (let c = 0; c < hidden; c++) mean += s[c];
      mean /= hidden;
    }
    let sq = 0;
    for (let c = 0; c < hidden; c++) sq += (s[c] - mean) ** 2;
    const rstd = 1 / Math.sqrt(sq / hidden + eps);
    for (let c = 0; c < hidden; c++) {
      let v = (s[c] - mean) * rstd;
      if (inputs.weight) v *= f.weightOffset ? 1 + inputs.weight[c] : inputs.weight[c];
      if (inputs.bias) v += inputs.bias[c];
      out.y[base + c] = v;
    }
    if (out.rstd) out.rstd[r] = rstd;
    if (out.mean) out.mean[r] = mean;
  }
  return out;
}

/** The inputs the GPU runner generates for the same seed (see numeric.ts). */
export function generateInputs(spec: KernelSpec, rows: number, hidden: number, seed: number): ForwardInputs {
  const fill = (n: number, stream: 'x' | 'residual' | 'weight' | 'bias', dtype: DType) => {
    const a = new Float64Array(n);
    for (let i = 0; i < n; i++) a[i] = inputValue(seed, stream, i, dtype, spec.features.weightOffset);
    return a;
  };
  const inputs: ForwardInputs = { x: fill(rows * hidden, 'x', spec.dtype) };
  const r = residualDType(spec);
  if (r) inputs.residual = fill(rows * hidden, 'residual', r);
  const w = weightDType(spec);
  if (w) inputs.weight = fill(hidden, 'weight', w);
  const b = biasDType(spec);
  if (b) inputs.bias = fill(hidden, 'bias', b);
  return inputs;
}
