// A variant: one kernel of one backend, fixed by a kernel spec and tunable parameters,
// named by a stable id (hash of template text, spec and parameters) so results cache.

import { createHash } from 'node:crypto';
import { specKey, type KernelSpec } from './problem.js';
import { describeParams, dynamicSharedBytes, rowsPerCta, type CudaParams } from './space.js';
import { templateHash } from './templates.js';

export interface Variant {
  backend: 'cuda';
  spec: KernelSpec;
  params: CudaParams;
  /** 12 hex digits; changes whenever the templates, the spec or the parameters do. */
  id: string;
  /** The kernel's extern "C" name. */
  symbol: string;
}

export function makeVariant(spec: KernelSpec, params: CudaParams): Variant {
  const canonical = JSON.stringify({
    spec: specKey(spec),
    params: [params.storage, params.threads, params.vec, params.threadsPerRow, params.items, params.cluster],
  });
  const id = createHash('sha256').update(templateHash('cuda')).update(canonical).digest('hex').slice(0, 12);
  return { backend: 'cuda', spec, params, id, symbol: `normgen_${spec.op}_fwd_${id}` };
}

export interface LaunchGeometry {
  grid: number;
  block: number;
  /** Dynamic shared memory in bytes. */
  sharedBytes: number;
  /** CTAs per cluster (1: no cluster). */
  cluster: number;
}

export function launchGeometry(v: Variant, rows: number, hidden: number): LaunchGeometry {
  const p = v.params;
  return {
    grid: Math.ceil(rows / rowsPerCta(p)) * p.cluster,
    block: p.threads,
    sharedBytes: dynamicSharedBytes(v.spec, p, hidden),
    cluster: p.cluster,
  };
}

export const describeVariant = (v: Variant) => describeParams(v.params);
