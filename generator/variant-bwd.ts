// A backward variant: a kernel spec (direction 'bwd') and backward parameters, named
// like forward variants by a hash of the templates, the spec and the parameters. The
// kernel's symbol leaves out the grid size (ctasPerSm), which changes the launch only,
// so variants differing in it share one compiled kernel.

import { createHash } from 'node:crypto';
import { isBackward, specKey, type KernelSpec } from './problem.js';
import { bwdGrid, bwdSharedBytes, describeBwdParams, type BwdParams } from './space-bwd.js';
import { templateHash } from './templates.js';

export interface BwdVariant {
  backend: 'cuda';
  spec: KernelSpec;
  params: BwdParams;
  id: string;
  /** The row kernel's extern "C" name; the column reduction is `${symbol}_reduce`. */
  symbol: string;
}

let hash: string | undefined;
/** The backward family's templates plus the forward helpers they include. */
export function bwdTemplateHash(): string {
  hash ??= createHash('sha256').update(templateHash('cuda-bwd')).update(templateHash('cuda')).digest('hex');
  return hash;
}

const digest = (text: string) => createHash('sha256').update(bwdTemplateHash()).update(text).digest('hex').slice(0, 12);

export function makeBwdVariant(spec: KernelSpec, params: BwdParams): BwdVariant {
  if (!isBackward(spec)) throw new Error(`makeBwdVariant: ${specKey(spec)} is not a backward spec`);
  const code = [params.storage, params.threads, params.vec, params.threadsPerRow, params.items, params.recompute, ...(params.prefetch ? ['prefetch'] : []), ...(params.stages ? [`s${params.stages}`] : []), ...(params.lean ? ['lean'] : []), ...(params.reread ? ['reread'] : []), ...(params.stagedWeight ? ['sw'] : []), ...(params.cluster ? [`c${params.cluster}`] : [])];
  const id = digest(JSON.stringify({ spec: specKey(spec), params: [...code, params.ctasPerSm] }));
  const symbol = `normgen_${spec.op}_bwd_${digest(JSON.stringify({ spec: specKey(spec), code }))}`;
  return { backend: 'cuda', spec, params, id, symbol };
}

export interface BwdLaunch {
  /** CTAs asked for on a GPU with `sms` SMs (the runner and launcher also cap it by occupancy). */
  grid: number;
  block: number;
  sharedBytes: number;
  reduceSymbol: string;
}

export function bwdLaunch(v: BwdVariant, rows: number, hidden: number, sms: number): BwdLaunch {
  return { grid: bwdGrid(v.params, rows, sms), block: v.params.threads, sharedBytes: bwdSharedBytes(v.spec, v.params, hidden), reduceSymbol: `${v.symbol}_reduce` };
}

export const describeBwdVariant = (v: BwdVariant) => describeBwdParams(v.params);
