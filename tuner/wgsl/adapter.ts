// Which WebGPU adapter a WGSL tune runs on, and the identity its database is kept by:
// what the adapter says of itself (vendor, architecture, device, description), the
// Dawn backend, and the limits and features that shaped the tuned space.

import { InputError } from '../../generator/problem.js';
import type { WgslLimits } from '../../generator/space-wgsl.js';

export interface AdapterId {
  /** For people (see adapterName); not part of the identity. */
  name: string;
  /** Dawn's backend: vulkan, opengles, metal, d3d12 ... */
  backend: string;
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  limits: WgslLimits;
  /** The optional features the kernels use that the adapter has (shader-f16, subgroups, timestamp-query). */
  features: string[];
}

/** `--adapter`: a Dawn backend, or `auto`, optionally followed by more Dawn flags: `opengles,enable-dawn-features=x`. */
export interface AdapterChoice {
  backend: string;
  /** Extra `create()` flags (key=value), after backend=... */
  flags: string[];
}

export const DAWN_BACKENDS = ['vulkan', 'opengles', 'opengl', 'metal', 'd3d12', 'd3d11', 'null'] as const;

/** What `auto` tries, in order: the platform's native API first, OpenGL ES (compatibility) last. */
export function autoBackends(platform: NodeJS.Platform = process.platform): string[] {
  if (platform === 'darwin') return ['metal'];
  if (platform === 'win32') return ['d3d12', 'vulkan'];
  return ['vulkan', 'opengles'];
}

export function parseAdapter(text: string | undefined): AdapterChoice {
  const [head, ...rest] = (text ?? 'auto').split(',').map((s) => s.trim()).filter(Boolean);
  const backend = (head ?? 'auto').replace(/^backend=/, '');
  if (backend !== 'auto' && !(DAWN_BACKENDS as readonly string[]).includes(backend))
    throw new InputError(`--adapter: unknown Dawn backend '${backend}' (expected auto or one of ${DAWN_BACKENDS.join(', ')})`);
  if (backend === 'null') throw new InputError("--adapter null validates shaders but runs nothing: tuning needs a real adapter");
  for (const f of rest) if (!/^[a-z0-9-]+=\S*$/.test(f)) throw new InputError(`--adapter: '${f}' is not a Dawn flag of the form key=value`);
  return { backend, flags: rest };
}

/** For people: "nvidia-h200-pcie-sse2 (OpenGL version OpenGL ES 3.2 NVIDIA 580.159.04; opengles)". */
export function adapterName(info: { vendor: string; device: string; description: string }, backend: string): string {
  return `${info.device || info.vendor || 'unknown adapter'} (${[info.description, backend].filter(Boolean).join('; ')})`;
}
