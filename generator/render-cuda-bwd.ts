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
      minBlocks: minBlocksPerSm(v.params),
    })),
  });
}

const REREAD_REGISTERS = 128;

/**
 * The launch bounds' CTAs per SM, which caps registers at 64K / (threads * it): kernels
 * holding rows in registers with up to 512 threads are held to two CTAs (measured: 128
 * registers and two CTAs beat 147 and one; H200, 2026-11-26); lean ones, which exist for
 * rows that need the registers, and the loop kernels to one; re-reading ones to 128
 * registers (they need about their sums plus 32; left free, the compiler took 190).
 */
function minBlocksPerSm(p: BwdVariant['params']): number {
  if (p.reread) return Math.max(1, Math.floor(65536 / (p.threads * REREAD_REGISTERS)));
  return bwdRowInRegisters(p) && p.threads <= 512 && !p.lean ? 2 : 1;
}
