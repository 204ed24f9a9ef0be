// `normgen generate`: the .cu sources of a problem's space and a manifest describing
// every variant (parameters, kernel symbol, launch geometry for the problem's shape).

import { copyFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Arch } from './arch.js';
import { problemKey, type Problem } from './problem.js';
import { renderCudaUnit, unitFileName } from './render-cuda.js';
import { describeParams, enumerateSpace } from './space.js';
import { TEMPLATE_ROOT, templateHash } from './templates.js';
import { launchGeometry, makeVariant, type Variant } from './variant.js';
import { VERSION } from './version.js';
import { prepareOutputDir, writeFileAtomic } from './files.js';

/** What generate writes beside a unit: the problem, the unit's file and an entry per variant. */
export interface GeneratedManifest<Entry> {
  normgen: string;
  templateHash: string;
  arch: string;
  problem: Problem;
  units: { file: string; variants: string[] }[];
  variants: Record<string, Entry>;
}

export type Manifest = GeneratedManifest<{ symbol: string; description: string; params: Variant['params']; launch: ReturnType<typeof launchGeometry> }>;

export function variantsFor(problem: Problem, arch: Arch): Variant[] {
  return enumerateSpace(problem, arch).map((p) => makeVariant(problem, p));
}

export function emitSources(problem: Problem, arch: Arch, dir: string): Manifest {
  const variants = variantsFor(problem, arch);
  const unit = { source: renderCudaUnit(problem, variants), variants, headers: ['cuda/normgen_params.h'], templateHash: templateHash('cuda') };
  return emitUnit(dir, problem, arch, unit, (v) => ({
    symbol: v.symbol,
    description: describeParams(v.params),
    params: v.params,
    launch: launchGeometry(v, problem.rows, problem.hidden),
  }));
}

/**
 * Write one compile unit of a problem's variants into dir, with the headers it includes
 * (paths under templates/) beside it, and its manifest: an entry per variant.
 */
export function emitUnit<V extends { id: string }, Entry>(
  dir: string,
  problem: Problem,
  arch: Arch,
  unit: { source: string; variants: V[]; headers: string[]; templateHash: string },
  entry: (v: V) => Entry,
): GeneratedManifest<Entry> {
  prepareOutputDir(dir);
  const file = unitFileName(problem, unit.variants, arch.name);
  writeFileAtomic(join(dir, file), unit.source);
  for (const header of unit.headers) copyFileSync(join(TEMPLATE_ROOT, header), join(dir, basename(header)));
  const manifest: GeneratedManifest<Entry> = {
    normgen: VERSION,
    templateHash: unit.templateHash,
    arch: arch.name,
    problem,
    units: [{ file, variants: unit.variants.map((v) => v.id) }],
    variants: Object.fromEntries(unit.variants.map((v) => [v.id, entry(v)])),
  };
  writeFileAtomic(join(dir, `${problemKey(problem)}.${arch.name}.manifest.json`), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}
