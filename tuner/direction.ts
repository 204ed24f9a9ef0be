// What differs between tuning forward and backward kernels, behind one small interface:
// the variants of a problem (with the baseline), the templates' hash, and how one
// variant is measured. tune, select and reports use it; everything else is shared.

import type { Arch } from '../generator/arch.js';
import { isBackward, type Problem } from '../generator/problem.js';
import { baselineParams, describeParams, enumerateSpace, type CudaParams } from '../generator/space.js';
import { baselineBwdParams, describeBwdParams, enumerateBwdSpace, type BwdParams } from '../generator/space-bwd.js';
import { templateHash } from '../generator/templates.js';
import { makeVariant, type Variant } from '../generator/variant.js';
import { bwdTemplateHash, makeBwdVariant, type BwdVariant } from '../generator/variant-bwd.js';
import type { DeviceId } from './device.js';
import { measure, type Measurement, type RunOptions } from './measure.js';
import { measureBwd } from './measure-bwd.js';
import type { Runner } from './runner.js';

export type Direction = 'fwd' | 'bwd';
export type AnyVariant = Variant | BwdVariant;
export type AnyParams = CudaParams | BwdParams;

export interface DirectionOps {
  direction: Direction;
  templateHash(): string;
  /** The pruned space and the baseline, one variant per id. */
  variants(problem: Problem, arch: Arch): AnyVariant[];
  baseline(problem: Problem, arch: Arch): AnyVariant;
  measure(runner: Runner, problem: Problem, v: AnyVariant, cubin: string, o: RunOptions, device: DeviceId, copyGbps?: number): Promise<Measurement>;
}

const unique = (vs: AnyVariant[]) => [...new Map(vs.map((v) => [v.id, v])).values()];

export const FORWARD: DirectionOps = {
  direction: 'fwd',
  templateHash: () => templateHash('cuda'),
  variants: (p, arch) => unique([...enumerateSpace(p, arch), baselineParams(p)].map((q) => makeVariant(p, q))),
  baseline: (p) => makeVariant(p, baselineParams(p)),
  measure: (runner, p, v, cubin, o, _device, copyGbps) => measure(runner, p, v as Variant, cubin, o, copyGbps),
};

export const BACKWARD: DirectionOps = {
  direction: 'bwd',
  templateHash: bwdTemplateHash,
  variants: (p, arch) => unique([...enumerateBwdSpace(p, arch), baselineBwdParams(p, arch)].map((q) => makeBwdVariant(p, q))),
  baseline: (p, arch) => makeBwdVariant(p, baselineBwdParams(p, arch)),
  measure: (runner, p, v, cubin, o, device, copyGbps) => measureBwd(runner, p, v as BwdVariant, cubin, device.sms, o, copyGbps),
};

export const directionOf = (p: Problem): DirectionOps => (isBackward(p) ? BACKWARD : FORWARD);

/** Parameters as text, for either direction. */
export const describeAny = (p: Problem, params: AnyParams) =>
  isBackward(p) ? describeBwdParams(params as BwdParams) : describeParams(params as CudaParams);
