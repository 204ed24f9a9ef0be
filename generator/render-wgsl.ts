// Rendering a WGSL compute shader: one module per kernel spec and parameter set.

import { createHash } from 'node:crypto';
import { biasDType, residualDType, specKey, weightDType, type DType, type KernelSpec } from './problem.js';
import { describeWgslParams, rowsPerWorkgroup, type WgslParams } from './space-wgsl.js';
import { render, templateHash } from './templates.js';
import { VERSION } from './version.js';

const WGSL_TYPE: Record<DType, string> = { fp32: 'f32', fp16: 'f16', bf16: 'unsupported_bf16' };

/** Binding numbers in templates/wgsl/norm_fwd.wgsl.hbs. */
export const BINDING = { params: 0, x: 1, y: 2, residual: 3, residualOut: 4, weight: 5, bias: 6, mean: 7, rstd: 8 } as const;

export function renderWgsl(spec: KernelSpec, params: WgslParams): string {
  if (spec.dtype === 'bf16') throw new Error('WGSL has no bf16');
  const typeOf = (d: DType | null) => WGSL_TYPE[d ?? spec.dtype];
  const types = {
    x: typeOf(spec.dtype),
    residual: typeOf(residualDType(spec)),
    weight: typeOf(weightDType(spec)),
    bias: typeOf(biasDType(spec)),
  };
  const vecOf = (t: string) => (params.vec === 1 ? t : `vec${params.vec}<${t}>`);
  const used = [spec.dtype, residualDType(spec), weightDType(spec), biasDType(spec)];
  return render('wgsl', 'norm_fwd.wgsl.hbs', {
    version: VERSION,
    opTitle: spec.op === 'rmsnorm' ? 'RMSNorm' : 'LayerNorm',
    description: `${specKey(spec)} ${describeWgslParams(params)}`,
    isLayerNorm: spec.op === 'layernorm',
    features: spec.features,
    hasWeight: spec.features.weight !== 'none',
    hasResidual: spec.features.residual !== 'none',
    hasTail: params.vec > 1,
    roundTrip: residualDType(spec) === 'fp16',
    cached: (params.items ?? 0) > 0,
    f16: used.includes('fp16'),
    subgroup: params.reduce === 'subgroup',
    params,
    rowsPerWorkgroup: rowsPerWorkgroup(params),
    types,
    vtypes: { f32: vecOf('f32'), x: vecOf(types.x), residual: vecOf(types.residual), weight: vecOf(types.weight), bias: vecOf(types.bias) },
  });
}

/** A stable id for a WGSL variant: template text, spec and parameters. */
export function wgslVariantId(spec: KernelSpec, params: WgslParams): string {
  const canonical = JSON.stringify({ spec: specKey(spec), params: describeWgslParams(params) });
  return createHash('sha256').update(templateHash('wgsl')).update(canonical).digest('hex').slice(0, 12);
}
