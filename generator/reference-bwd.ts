// The float64 reference for the backward pass, the definition backward kernels are
// checked against (runner.cu computes the same on the device). x is what the forward
// normalized (x, or the rounded x + residual); the statistics are recomputed from it in
// float64 (saved fp32 ones differ from these by a rounding, which the tolerance covers).

import { inputValue } from './numeric.js';
import { residualDType, weightDType, type DType, type KernelSpec } from './problem.js';
import { xDType } from './space-bwd.js';

export interface BackwardInputs {
  x: Float64Array;
  dy: Float64Array;
  weight?: Float64Array;
  /** Gradient reaching the forward's residual output: added to dx. */
  dresidual?: Float64Array;
}

export interface BackwardOutputs {
  dx: Float64Array;
  dweight?: Float64Array;
  dbias?: Float64Array;
}

export function referenceBackward(spec: KernelSpec, rows: number, hidden: number, inputs: BackwardInputs, eps: number): BackwardOutputs {
  const f = spec.features;
  if (inputs.x.length !== rows * hidden || inputs.dy.length !== rows * hidden) throw new Error('reference: x or dy has the wrong length');
  if (f.weight !== 'none' && !inputs.weight) throw new Error('reference: weight missing');
  if (residualDType(spec) && !inputs.dresidual) throw new Error('reference: dresidual missing');
  const out: BackwardOutputs = { dx: new Float64Array(rows * hidden) };
  if (f.weight !== 'none') out.dweight = new Float64Array(hidden);
  if (f.bias) out.dbias = new Float64Array(hidden);
  const gamma = (c: number) => (inputs.weight ? (f.weightOffset ? 1 + inputs.weight[c] : inputs.weight[c]) : 1);
  const xhat = new Float64Array(hidden);
  for (let r = 0; r < rows; r++) {
    const base = r * hidden;
    let mean = 0;
    if (spec.op === 'layernorm') {
      for (let c = 0; c < hidden; c++) mean += inputs.x[base + c];
      mean /= hidden;
    }
    let sq = 0;
    for (let c = 0; c < hidden; c++) sq += (inputs.x[base + c] - mean) ** 2;
    const rstd = 1 / Math.sqrt(sq / hidden + eps);
    let a = 0;
    let b = 0;
    for (let c = 0; c < hidden; c++) {
      xhat[c] = (inputs.x[base + c] - mean) * rstd;
      const g = inputs.dy[base + c] * gamma(c);
      a += g * xhat[c];
      b += g;
    }
    a /= hidden;
    b = spec.op === 'layernorm' ? b / hidden : 0;
    for (let c = 0; c < hidden; c++) {
      const dy = inputs.dy[base + c];
      out.dx[base + c] = rstd * (dy * gamma(c) - xhat[c] * a - b) + (inputs.dresidual ? inputs.dresidual[base + c] : 0);
      if (out.dweight) out.dweight[c] += dy * xhat[c];
      if (out.dbias) out.dbias[c] += dy;
    }
  }
  return out;
}

/** The backward inputs the GPU runner generates for the same seed. */
export function generateBackwardInputs(spec: KernelSpec, rows: number, hidden: number, seed: number): BackwardInputs {
  const fill = (n: number, stream: 'x' | 'dy' | 'residual' | 'weight', dtype: DType) => {
    const a = new Float64Array(n);
    for (let i = 0; i < n; i++) a[i] = inputValue(seed, stream, i, dtype, spec.features.weightOffset);
    return a;
  };
  const inputs: BackwardInputs = { x: fill(rows * hidden, 'x', xDType(spec)), dy: fill(rows * hidden, 'dy', spec.dtype) };
  const w = weightDType(spec);
  if (w) inputs.weight = fill(hidden, 'weight', w);
  if (residualDType(spec)) inputs.dresidual = fill(rows * hidden, 'residual', xDType(spec));
  return inputs;
}
