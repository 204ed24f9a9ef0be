// The GPU correctness matrix: which problems and variants `normgen verify` checks.
// Every shape x dtype is checked with rotating feature sets, every feature set at a
// few shapes, and each problem with a set of variants covering every axis value its
// space offers (plus the generic and baseline variants).

import type { Arch } from '../generator/arch.js';
import { allFeatureCombos, DTYPES, makeProblem, OPS, type KernelSpec, type Problem } from '../generator/problem.js';
import { baselineParams, enumerateSpace, GENERIC_PARAMS, type CudaParams } from '../generator/space.js';
import { makeVariant, type Variant } from '../generator/variant.js';

// 40008: a long row whose slices over a cluster of 2 or 4 CTAs differ in length (the last is shorter).
export const MATRIX_HIDDEN = [1, 7, 127, 768, 1000, 4096, 5120, 8192, 12288, 32768, 40008, 65536];
export const MATRIX_ROWS = [1, 3, 64, 4097];

export interface VerifyCase {
  problem: Problem;
  variants: Variant[];
}

// Clusters per storage too: each storage splits a row over a cluster its own way.
const axisKeys = (p: CudaParams) => [`storage=${p.storage}`, `${p.storage} cluster=${p.cluster > 1}`, `threads=${p.threads}`, `vec=${p.vec}`, `threadsPerRow=${p.threadsPerRow}`, `cluster=${p.cluster}`, `stages=${p.stages}`, `stagedWeights=${p.stagedWeights}`, `fixedHidden=${p.fixedHidden !== undefined}`, `earlyAffine=${p.earlyAffine === true}`, `deferOutput=${p.deferOutput === true}`, `registerCap=${p.registerCap ?? 0}`, `holdRow=${p.holdRow === true}`];

/** Greedy set cover of the axis values present in `space`. */
export function coveringSet(space: CudaParams[]): CudaParams[] {
  const uncovered = new Set(space.flatMap(axisKeys));
  const chosen: CudaParams[] = [];
  while (uncovered.size > 0) {
    let best = space[0];
    let gain = -1;
    for (const p of space) {
      const g = axisKeys(p).filter((k) => uncovered.has(k)).length;
      if (g > gain) [best, gain] = [p, g];
    }
    chosen.push(best);
    for (const k of axisKeys(best)) uncovered.delete(k);
  }
  return chosen;
}

function variantsFor(problem: Problem, arch: Arch): Variant[] {
  const params = [...coveringSet(enumerateSpace(problem, arch)), GENERIC_PARAMS, baselineParams(problem)];
  const byId = new Map(params.map((p) => [makeVariant(problem, p).id, makeVariant(problem, p)]));
  return [...byId.values()];
}

/** Row strides padded past hidden (and still 16-byte aligned), to test strided access. */
function padded(hidden: number) {
  const s = Math.ceil((hidden + 8) / 8) * 8;
  return { x: s, y: s + 8, residual: s + 16, residualOut: s };
}

export function correctnessMatrix(arch: Arch, quick = false): VerifyCase[] {
  const specs: KernelSpec[] = [];
  for (const dtype of DTYPES) for (const op of OPS) for (const features of allFeatureCombos()) specs.push({ op, dtype, features });
  const cases: VerifyCase[] = [];
  const hiddens = quick ? [7, 1000, 4096, 65536] : MATRIX_HIDDEN;
  const rowsList = quick ? [3, 64] : MATRIX_ROWS;
  // Every shape and dtype, two feature sets each (rotating through all of them), one strided.
  let turn = 0;
  for (const dtype of DTYPES)
    for (const hidden of hiddens)
      for (const rows of rowsList)
        for (const strided of [false, true]) {
          const ofDtype = specs.filter((s) => s.dtype === dtype);
          const spec = ofDtype[(turn++ * 7) % ofDtype.length];
          const problem = makeProblem(spec, hidden, rows, strided ? padded(hidden) : {});
          cases.push({ problem, variants: variantsFor(problem, arch) });
        }
  // Every feature set of every op and dtype at a short and a long row.
  for (const spec of quick ? specs.filter((_, i) => i % 9 === 0) : specs)
    for (const [hidden, rows] of [[1000, 3], [8192, 64]]) {
      const problem = makeProblem(spec, hidden, rows);
      cases.push({ problem, variants: variantsFor(problem, arch) });
    }
  return cases;
}
