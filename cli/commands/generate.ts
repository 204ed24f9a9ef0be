// normgen generate: the .cu (or .wgsl) sources and manifest of one problem's space.

import type { Argv } from 'yargs';
import { emitSources } from '../../generator/emit-sources.js';
import { emitBwdSources } from '../../generator/emit-sources-bwd.js';
import { emitWgsl } from '../../generator/emit-wgsl.js';
import { problemKey } from '../../generator/problem.js';
import { describeParams } from '../../generator/space.js';
import { backwardOf, problemFromArgs, withBackendOption, withDirectionOption, withProblemOptions, type ProblemArgs } from '../problem-options.js';

export const command = 'generate';
export const describe = 'write the .cu (or .wgsl) sources and a manifest for a problem';
export const builder = (y: Argv) =>
  withDirectionOption(withBackendOption(withProblemOptions(y))).option('out', { type: 'string', demandOption: true, describe: 'output folder' });

export function handler(args: ProblemArgs & { out: string; backend: string; direction: string }): void {
  if (args.direction === 'bwd') {
    const { problem, arch } = problemFromArgs(args);
    const manifest = emitBwdSources(backwardOf(problem, args.backend), arch, args.out);
    const n = Object.keys(manifest.variants).length;
    console.log(`wrote ${n} backward variants of ${problemKey(manifest.problem)} for ${arch.name} to ${args.out}: ${manifest.units[0].file} and a manifest`);
    return;
  }
  if (args.backend === 'wgsl') {
    const { problem } = problemFromArgs(args);
    const manifest = emitWgsl(problem, args.out);
    console.log(`wrote ${manifest.variants.length} WGSL variants of ${problemKey(problem)} to ${args.out}, and a manifest`);
    for (const v of manifest.variants.slice(0, 3)) console.log(`  ${v.file} ${v.description}`);
    return;
  }
  const { problem, arch } = problemFromArgs(args);
  const manifest = emitSources(problem, arch, args.out);
  const n = Object.keys(manifest.variants).length;
  console.log(`wrote ${n} variants of ${problemKey(problem)} for ${arch.name} to ${args.out}: ${manifest.units.map((u) => u.file).join(', ')} and a manifest`);
  for (const [id, v] of Object.entries(manifest.variants).slice(0, 3)) console.log(`  ${id} ${describeParams(v.params)}`);
}
