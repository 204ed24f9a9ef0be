// `normgen generate --backend wgsl`: one .wgsl file per variant of a problem's space
// and a manifest (parameters, dispatch size for the problem's shape, bindings).

import { join } from 'node:path';
import { prepareOutputDir, writeFileAtomic } from './files.js';
import { InputError, problemKey, specKey, type Problem } from './problem.js';
import { BINDING, renderWgsl, wgslVariantId } from './render-wgsl.js';
import {
  DEFAULT_LIMITS,
  describeWgslParams,
  dispatchSize,
  enumerateWgslSpace,
  wgslProblemReason,
  type WgslLimits,
  type WgslParams,
} from './space-wgsl.js';
import { templateHash } from './templates.js';
import { VERSION } from './version.js';

/** Limits assumed without an adapter: WebGPU's defaults, with f16 and subgroups of up to 32. */
export const OFFLINE_LIMITS: WgslLimits = { ...DEFAULT_LIMITS, f16: true, subgroups: true, subgroupMaxSize: 32 };

export interface WgslVariantEntry {
  id: string;
  file: string;
  description: string;
  params: WgslParams;
  dispatch: [number, number];
}

export interface WgslManifest {
  normgen: string;
  templateHash: string;
  limits: WgslLimits;
  problem: Problem;
  bindings: typeof BINDING;
  variants: WgslVariantEntry[];
}

export function wgslVariantsFor(problem: Problem, limits: WgslLimits = OFFLINE_LIMITS): WgslVariantEntry[] {
  const reason = wgslProblemReason(problem, limits);
  if (reason) throw new InputError(`${reason}: pass --dtype fp32 or --dtype fp16`);
  return enumerateWgslSpace(problem, limits).map((params) => {
    const id = wgslVariantId(problem, params);
    return {
      id,
      file: `${specKey(problem)}.${id}.wgsl`,
      description: describeWgslParams(params),
      params,
      dispatch: dispatchSize(params, problem.rows, limits.maxWorkgroupsPerDimension),
    };
  });
}

export function emitWgsl(problem: Problem, dir: string, limits: WgslLimits = OFFLINE_LIMITS): WgslManifest {
  const variants = wgslVariantsFor(problem, limits);
  prepareOutputDir(dir);
  for (const v of variants) writeFileAtomic(join(dir, v.file), renderWgsl(problem, v.params));
  const manifest: WgslManifest = { normgen: VERSION, templateHash: templateHash('wgsl'), limits, problem, bindings: BINDING, variants };
  writeFileAtomic(join(dir, `${problemKey(problem)}.wgsl.manifest.json`), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}
