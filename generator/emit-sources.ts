// `normgen generate`: the .cu sources of a problem's space and a manifest describing
// every variant (parameters, kernel symbol, launch geometry for the problem's shape).

import { copyFileSync, mkdirSync, renameSync, writeFileSync, accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import type { Arch } from './arch.js';
import { InputError, problemKey, type Problem } from './problem.js';
import { renderCudaUnit, unitFileName } from './render-cuda.js';
import { describeParams, enumerateSpace } from './space.js';
import { TEMPLATE_ROOT, templateHash } from './templates.js';
import { launchGeometry, makeVariant, type Variant } from './variant.js';
import { VERSION } from './version.js';

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

/** Make sure `dir` exists and is writable, or say clearly why not. */
export function prepareOutputDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (e) {
    throw new InputError(`cannot write to output folder '${dir}': ${(e as NodeJS.ErrnoException).code ?? e}`);
  }
}

/** Write a file whole or not at all (temp file, then rename). */
export function writeFileAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
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
