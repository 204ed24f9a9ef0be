// Rendering backward compile units: one .cu per backward kernel spec holding many
// variants (variants that share a kernel, differing only in grid size, render it once).

import { biasDType, weightDType, type KernelSpec } from './problem.js';
import { CUDA_TYPE, unitContext } from './render-cuda.js';
import { bwdRowInRegisters, xDType } from './space-bwd.js';
import { render } from './templates.js';
import { describeBwdVariant, type BwdVariant } from './variant-bwd.js';

export function renderCudaBwdUnit(spec: KernelSpec, variants: BwdVariant[]): string {
  const context = unitContext(spec, variants);
  const kernels = new Map<string, BwdVariant>();
  for (const v of variants) if (!kernels.has(v.symbol)) kernels.set(v.symbol, v);
  const dy = CUDA_TYPE[spec.dtype];
  return render('cuda-bwd', 'norm_bwd.cu.hbs', {
    ...context,
    types: { dy, x: CUDA_TYPE[xDType(spec)], weight: CUDA_TYPE[weightDType(spec) ?? spec.dtype], bias: CUDA_TYPE[biasDType(spec) ?? spec.dtype] },
    kernels: [...kernels.values()].map((v) => ({
      symbol: v.symbol,
      params: v.params,
      description: describeBwdVariant(v).replace(/\.cps\d+/, ''),
      // Register cap: kernels holding rows in registers with up to 512 threads are held to two
      // CTAs per SM (measured: 128 registers and two CTAs beat 147 and one; H200, 2026-11-26);
      // the loop kernels and lean ones to one (lean kernels exist for rows that need the registers).
      minBlocks: bwdRowInRegisters(v.params) && v.params.threads <= 512 && !v.params.lean ? 2 : 1,
    })),
  });
}
