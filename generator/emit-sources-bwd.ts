// `normgen generate --direction bwd`: the backward .cu unit of a problem's space and a
// manifest, as emit-sources.ts writes the forward's. A backward grid depends on the GPU's
// SM count (ctasPerSm CTAs an SM, no more than the rows need), so the manifest gives that.

import type { Arch } from './arch.js';
import { emitUnit, type GeneratedManifest } from './emit-sources.js';
import type { Problem } from './problem.js';
import { renderCudaBwdUnit } from './render-cuda-bwd.js';
import { bwdSharedBytes, enumerateBwdSpace, type BwdParams } from './space-bwd.js';
import { bwdTemplateHash, describeBwdVariant, makeBwdVariant, type BwdVariant } from './variant-bwd.js';

export type BwdManifest = GeneratedManifest<{
  symbol: string;
  /** The column reduction of dweight and dbias, launched after the row kernel. */
  reduceSymbol: string;
  description: string;
  params: BwdParams;
  launch: { ctasPerSm: number; block: number; sharedBytes: number; cluster: number };
}>;

export const bwdVariantsFor = (problem: Problem, arch: Arch): BwdVariant[] => enumerateBwdSpace(problem, arch).map((p) => makeBwdVariant(problem, p));

export function emitBwdSources(problem: Problem, arch: Arch, dir: string): BwdManifest {
  const variants = bwdVariantsFor(problem, arch);
  const headers = ['cuda/normgen_params.h', 'cuda-bwd/normgen_bwd_params.h'];
  const unit = { source: renderCudaBwdUnit(problem, variants), variants, headers, templateHash: bwdTemplateHash() };
  return emitUnit(dir, problem, arch, unit, (v) => ({
    symbol: v.symbol,
    reduceSymbol: `${v.symbol}_reduce`,
    description: describeBwdVariant(v),
    params: v.params,
    launch: { ctasPerSm: v.params.ctasPerSm, block: v.params.threads, sharedBytes: bwdSharedBytes(problem, v.params, problem.hidden), cluster: v.params.cluster ?? 1 },
  }));
}
