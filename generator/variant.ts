// A variant: one kernel of one backend, fixed by a kernel spec and tunable parameters,
// named by a stable id (hash of template text, spec and parameters) so results cache.

import { createHash } from 'node:crypto';
import { specKey, type KernelSpec } from './problem.js';
import { capName, describeParams, dynamicSharedBytes, rowsPerCta, type CudaParams } from './space.js';
import { templateHash } from './templates.js';

/** Deliberate failures, rendered only by tests that prove the tuner catches them. */
export const FAULTS = ['wrong-value', 'out-of-bounds', 'illegal-address', 'hang', 'compile-error'] as const;
export type Fault = (typeof FAULTS)[number];

export interface Variant {
  backend: 'cuda';
  spec: KernelSpec;
  params: CudaParams;
  fault?: Fault;
  /** 12 hex digits; changes whenever the templates, the spec or the parameters do. */
  id: string;
  /** The kernel's extern "C" name. */
  symbol: string;
}

export function makeVariant(spec: KernelSpec, params: CudaParams, fault?: Fault): Variant {
  const canonical = JSON.stringify({
    spec: specKey(spec),
    params: [params.storage, params.threads, params.vec, params.threadsPerRow, params.items, params.cluster, params.stages, params.stagedWeights,
      ...(params.fixedHidden ? [params.fixedHidden] : []), ...(params.earlyAffine ? ['early'] : []), ...(params.deferOutput ? ['defer'] : []),
      ...(params.registerCap ? [capName(params.registerCap)] : []), ...(params.holdRow ? ['hold'] : [])],
    ...(fault ? { fault } : {}),
  });
  const id = createHash('sha256').update(templateHash('cuda')).update(canonical).digest('hex').slice(0, 12);
  const variant: Variant = { backend: 'cuda', spec, params, id, symbol: `normgen_${spec.op}_fwd_${id}` };
  if (fault) variant.fault = fault;
  return variant;
}

export interface LaunchGeometry {
  grid: number;
  block: number;
  /** Dynamic shared memory in bytes. */
  sharedBytes: number;
  /** CTAs per cluster (1: no cluster). */
  cluster: number;
  /** The kernel loops over rows: launch min(grid, CTAs resident on the GPU at once). */
  persistent: boolean;
}

export function launchGeometry(v: Variant, rows: number, hidden: number): LaunchGeometry {
  const p = v.params;
  return {
    grid: Math.ceil(rows / rowsPerCta(p)) * p.cluster,
    block: p.threads,
    sharedBytes: dynamicSharedBytes(v.spec, p, hidden),
    cluster: p.cluster,
    persistent: p.storage === 'pipelined' || p.storage === 'ring',
  };
}

export const describeVariant = (v: Variant) => describeParams(v.params);
