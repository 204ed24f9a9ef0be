// normgen list: the pruned tunable space of one problem, as a table.

import type { Argv } from 'yargs';
import { variantsFor } from '../../generator/emit-sources.js';
import { bwdVariantsFor } from '../../generator/emit-sources-bwd.js';
import { OFFLINE_LIMITS, wgslVariantsFor } from '../../generator/emit-wgsl.js';
import { problemKey } from '../../generator/problem.js';
import { capacity, rowsPerCta } from '../../generator/space.js';
import { bwdSharedBytes } from '../../generator/space-bwd.js';
import { rowsPerWorkgroup } from '../../generator/space-wgsl.js';
import { describeBwdVariant } from '../../generator/variant-bwd.js';
import { describeVariant, launchGeometry } from '../../generator/variant.js';
import { backwardOf, problemFromArgs, withBackendOption, withDirectionOption, withProblemOptions, type ProblemArgs } from '../problem-options.js';
import { formatTable } from '../table.js';

export const command = 'list';
export const describe = 'print the pruned tunable space for a problem';
export const builder = (y: Argv) =>
  withDirectionOption(withBackendOption(withProblemOptions(y))).option('limit', { type: 'number', default: 50, describe: 'table rows to print' });

export function handler(args: ProblemArgs & { limit: number; backend: string; direction: string }): void {
  if (args.direction === 'bwd') return listBwd(args);
  if (args.backend === 'wgsl') return listWgsl(args);
  const { problem, arch } = problemFromArgs(args);
  const variants = variantsFor(problem, arch);
  console.log(`${problemKey(problem)} on ${arch.name}: ${variants.length} variants`);
  const rows = variants.slice(0, args.limit).map((v) => {
    const p = v.params;
    const g = launchGeometry(v, problem.rows, problem.hidden);
    const cap = capacity(p);
    return [v.id, describeVariant(v), p.storage, p.threads, p.vec, p.threadsPerRow, rowsPerCta(p), p.items, p.cluster, p.stages, Number.isFinite(cap) ? cap : 'any', g.grid, g.sharedBytes];
  });
  console.log(formatTable(['id', 'variant', 'storage', 'threads', 'vec', 'thr/row', 'rows/cta', 'items', 'cluster', 'stages', 'max hidden', 'grid', 'dyn smem'], rows));
  if (variants.length > args.limit) console.log(`... ${variants.length - args.limit} more (--limit)`);
}

function listBwd(args: ProblemArgs & { limit: number; backend: string }): void {
  const { problem: forward, arch } = problemFromArgs(args);
  const problem = backwardOf(forward, args.backend);
  const variants = bwdVariantsFor(problem, arch);
  console.log(`${problemKey(problem)} on ${arch.name}: ${variants.length} variants`);
  const rows = variants.slice(0, args.limit).map((v) => {
    const p = v.params;
    return [v.id, describeBwdVariant(v), p.storage, p.threads, p.vec, p.threadsPerRow, p.items, p.cluster ?? 1, p.stages ?? '-', p.ctasPerSm, bwdSharedBytes(problem, p, problem.hidden)];
  });
  console.log(formatTable(['id', 'variant', 'storage', 'threads', 'vec', 'thr/row', 'items', 'cluster', 'stages', 'ctas/sm', 'dyn smem'], rows));
  if (variants.length > args.limit) console.log(`... ${variants.length - args.limit} more (--limit)`);
}

function listWgsl(args: ProblemArgs & { limit: number }): void {
  const { problem } = problemFromArgs(args);
  const variants = wgslVariantsFor(problem);
  const l = OFFLINE_LIMITS;
  console.log(`${problemKey(problem)} in WGSL: ${variants.length} variants (adapter assumed: ${l.maxInvocations} invocations, shader-f16, subgroups of up to ${l.subgroupMaxSize})`);
  const rows = variants.slice(0, args.limit).map((v) => {
    const p = v.params;
    return [v.id, p.workgroup, p.vec, p.threadsPerRow, rowsPerWorkgroup(p), p.reduce, v.dispatch.join(' x ')];
  });
  console.log(formatTable(['id', 'workgroup', 'vec', 'inv/row', 'rows/wg', 'reduce', 'dispatch'], rows));
  if (variants.length > args.limit) console.log(`... ${variants.length - args.limit} more (--limit)`);
}
