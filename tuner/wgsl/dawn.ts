// Dawn (the `webgpu` package) as the WGSL backend's device: the null backend, which
// validates shaders with Tint and runs nothing, or a real adapter (on CI: Mesa's
// lavapipe through Vulkan; on NVIDIA machines without a Vulkan driver: OpenGL ES on
// EGL, WebGPU's compatibility level, f32 only).

import { create, globals } from 'webgpu';
import type { WgslLimits } from '../../generator/space-wgsl.js';
import { adapterName, type AdapterId } from './adapter.js';

Object.assign(globalThis, globals);

export type DawnBackend = 'null' | 'vulkan' | 'opengles';

export interface DawnDevice {
  device: GPUDevice;
  limits: WgslLimits;
  /** e.g. "llvmpipe: Mesa 25.0.7 ..." */
  description: string;
  timestamps: boolean;
  /** What the tuning database is keyed by. */
  id: AdapterId;
}

// Dawn's GPU objects must outlive every device made from them (a collected one crashes
// the process): keep them here for the life of the process.
const gpus = new Map<string, GPU>();
const devices = new Map<string, Promise<DawnDevice | null>>();

function gpuFor(flags: string[]): GPU {
  const key = flags.join(',');
  let gpu = gpus.get(key);
  if (!gpu) {
    if (flags.includes('backend=opengles') || flags.includes('backend=opengl')) process.env.EGL_PLATFORM ??= 'surfaceless';
    gpu = create(flags) as GPU;
    gpus.set(key, gpu);
  }
  return gpu;
}

const OPTIONAL_FEATURES = ['shader-f16', 'subgroups', 'timestamp-query'] as const;

/** A device on the backend with every feature and limit the kernels use, or null. Extra Dawn flags may follow. */
export function openDevice(backend: string, flags: string[] = []): Promise<DawnDevice | null> {
  const all = [`backend=${backend}`, ...flags];
  let d = devices.get(all.join(','));
  if (!d) {
    d = open(backend, all);
    devices.set(all.join(','), d);
  }
  return d;
}

async function open(backend: string, flags: string[]): Promise<DawnDevice | null> {
  // OpenGL ES cannot give WebGPU's core level; it offers 'compatibility'.
  const compat = backend === 'opengles' || backend === 'opengl';
  const adapter = await gpuFor(flags).requestAdapter(compat ? { featureLevel: 'compatibility' } : {});
  if (!adapter) return null;
  const features = OPTIONAL_FEATURES.filter((f) => adapter.features.has(f));
  const a = adapter.limits;
  const device = await adapter.requestDevice({
    requiredFeatures: features as GPUFeatureName[],
    requiredLimits: {
      maxComputeInvocationsPerWorkgroup: a.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: a.maxComputeWorkgroupSizeX,
      maxComputeWorkgroupStorageSize: a.maxComputeWorkgroupStorageSize,
      maxStorageBufferBindingSize: a.maxStorageBufferBindingSize,
      maxBufferSize: a.maxBufferSize,
      maxStorageBuffersPerShaderStage: a.maxStorageBuffersPerShaderStage,
    },
  });
  const info = adapter.info as GPUAdapterInfo & { subgroupMaxSize?: number };
  const limits: WgslLimits = {
    maxInvocations: Math.min(a.maxComputeInvocationsPerWorkgroup, a.maxComputeWorkgroupSizeX),
    maxWorkgroupStorage: a.maxComputeWorkgroupStorageSize,
    maxWorkgroupsPerDimension: a.maxComputeWorkgroupsPerDimension,
    f16: features.includes('shader-f16'),
    subgroups: features.includes('subgroups'),
    subgroupMaxSize: info.subgroupMaxSize ?? 128,
  };
  const ident = { vendor: info.vendor ?? '', architecture: info.architecture ?? '', device: info.device ?? '', description: info.description ?? '' };
  return {
    device,
    description: info.description || backend,
    timestamps: features.includes('timestamp-query'),
    limits,
    id: { name: adapterName(ident, backend), backend, ...ident, limits, features: [...features] },
  };
}
