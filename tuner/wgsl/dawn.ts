// Dawn (the `webgpu` package) as the WGSL backend's device: the null backend, which
// validates shaders with Tint and runs nothing, or a real adapter (on CI: Mesa's
// lavapipe through Vulkan). 'opengles' (Mesa's EGL without a display, f32 only) ran
// the f32 variants by hand; no test depends on it.

import { create, globals } from 'webgpu';
import type { WgslLimits } from '../../generator/space-wgsl.js';

Object.assign(globalThis, globals);

export type DawnBackend = 'null' | 'vulkan' | 'opengles';

export interface DawnDevice {
  device: GPUDevice;
  limits: WgslLimits;
  /** e.g. "llvmpipe: Mesa 25.0.7 ..." */
  description: string;
  timestamps: boolean;
}

// Dawn's GPU objects must outlive every device made from them: keep them here.
const gpus = new Map<DawnBackend, GPU>();
const devices = new Map<DawnBackend, Promise<DawnDevice | null>>();

function gpuFor(backend: DawnBackend): GPU {
  let gpu = gpus.get(backend);
  if (!gpu) {
    if (backend === 'opengles') process.env.EGL_PLATFORM ??= 'surfaceless';
    gpu = create([`backend=${backend}`]) as GPU;
    gpus.set(backend, gpu);
  }
  return gpu;
}

const OPTIONAL_FEATURES = ['shader-f16', 'subgroups', 'timestamp-query'] as const;

/** A device on the backend with every feature and limit the kernels use, or null. */
export function openDevice(backend: DawnBackend): Promise<DawnDevice | null> {
  let d = devices.get(backend);
  if (!d) {
    d = open(backend);
    devices.set(backend, d);
  }
  return d;
}

async function open(backend: DawnBackend): Promise<DawnDevice | null> {
  const adapter = await gpuFor(backend).requestAdapter(backend === 'opengles' ? { featureLevel: 'compatibility' } : {});
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
  return {
    device,
    description: info.description || backend,
    timestamps: features.includes('timestamp-query'),
    limits: {
      maxInvocations: Math.min(a.maxComputeInvocationsPerWorkgroup, a.maxComputeWorkgroupSizeX),
      maxWorkgroupStorage: a.maxComputeWorkgroupStorageSize,
      maxWorkgroupsPerDimension: a.maxComputeWorkgroupsPerDimension,
      f16: features.includes('shader-f16'),
      subgroups: features.includes('subgroups'),
      subgroupMaxSize: info.subgroupMaxSize ?? 128,
    },
  };
}
