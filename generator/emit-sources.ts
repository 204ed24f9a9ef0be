// `normgen generate`: the .cu sources of a problem's space and a manifest describing
// every variant (parameters, kernel symbol, launch geometry for the problem's shape).

import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Arch } from './arch.js';
import { problemKey, type Problem } from './problem.js';
import { renderCudaUnit, unitFileName } from './render-cuda.js';
import { describeParams, enumerateSpace } from './space.js';
import { TEMPLATE_ROOT, templateHash } from './templates.js';
import { launchGeometry, makeVariant, type Variant } from './variant.js';
import { VERSION } from './version.js';
import { prepareOutputDir, writeFileAtomic } from './files.js';

export interface Manifest {
  normgen: string;
  templateHash: string;
  arch: string;
  problem: Problem;
  units: { file: string; variants: string[] }[];
  variants: Record<string, { symbol: string; description: string; params: Variant['params']; launch: ReturnType<typeof launchGeometry> }>;
}

export function variantsFor(problem: Problem, arch: Arch): Variant[] {
  return enumerateSpace(problem, arch).map((p) => makeVariant(problem, p));
}

export function emitSources(problem: Problem, arch: Arch, dir: string): Manifest {
  prepareOutputDir(dir);
  const variants = variantsFor(problem, arch);
  const file = unitFileName(problem, variants, arch.name);
  writeFileAtomic(join(dir, file), renderCudaUnit(problem, variants));
  copyFileSync(join(TEMPLATE_ROOT, 'cuda', 'normgen_params.h'), join(dir, 'normgen_params.h'));
  const manifest: Manifest = {
    normgen: VERSION,
    templateHash: templateHash('cuda'),
    arch: arch.name,
    problem,
    units: [{ file, variants: variants.map((v) => v.id) }],
    variants: Object.fromEntries(
      variants.map((v) => [
        v.id,
        { symbol: v.symbol, description: describeParams(v.params), params: v.params, launch: launchGeometry(v, problem.rows, problem.hidden) },
      ]),
    ),
  };
  writeFileAtomic(join(dir, `${problemKey(problem)}.${arch.name}.manifest.json`), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}
