// Compiling a WGSL shader into a compute pipeline on a Dawn device, with every error
// caught and returned: a variant that does not compile is a result, not a crash.

import type { Problem } from '../../generator/problem.js';
import { renderWgsl, wgslVariantId } from '../../generator/render-wgsl.js';
import { enumerateWgslSpace, type WgslLimits, type WgslParams } from '../../generator/space-wgsl.js';

export interface Compiled {
  pipeline: GPUComputePipeline | null;
  /** Tint's and Dawn's messages, "line:col message", when compilation failed. */
  error: string | null;
}

export async function compileWgsl(device: GPUDevice, code: string, label = 'normgen'): Promise<Compiled> {
  device.pushErrorScope('validation');
  device.pushErrorScope('internal');
  const module = device.createShaderModule({ code, label });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}:${m.linePos} ${m.message}`);
  let pipeline: GPUComputePipeline | null = null;
  if (errors.length === 0) {
    try {
      pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' }, label });
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  for (const scope of [await device.popErrorScope(), await device.popErrorScope()]) {
    if (scope && errors.length === 0) errors.push(scope.message);
  }
  return errors.length ? { pipeline: null, error: errors.join('\n') } : { pipeline, error: null };
}

export interface Validation {
  status: 'OK' | 'COMPILE_ERROR';
  message?: string;
}

/** Validate shaders one after another (the null backend: Tint only, nothing runs). */
export async function validateAll(device: GPUDevice, codes: string[]): Promise<Validation[]> {
  const out: Validation[] = [];
  for (const code of codes) {
    const c = await compileWgsl(device, code);
    out.push(c.error === null ? { status: 'OK' } : { status: 'COMPILE_ERROR', message: c.error });
  }
  return out;
}

export interface VariantValidation extends Validation {
  id: string;
  params: WgslParams;
}

/** Every variant of a problem's space for these limits, rendered and validated. */
export async function validateSpace(device: GPUDevice, problem: Problem, limits: WgslLimits): Promise<VariantValidation[]> {
  const space = enumerateWgslSpace(problem, limits);
  const results = await validateAll(device, space.map((p) => renderWgsl(problem, p)));
  return space.map((params, i) => ({ id: wgslVariantId(problem, params), params, ...results[i] }));
}
