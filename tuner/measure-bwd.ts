// One backward measurement: a backward variant run by the bench runner's "bwd" command,
// verified (dx, dweight, dbias against float64; optionally repeated for determinism)
// and timed; bytes for the roofline counted with the grid the runner launched.

import { biasDType, residualDType, weightDType, type Problem } from '../generator/problem.js';
import { bytesMovedBwd, bwdRowsPerCta, xDType } from '../generator/space-bwd.js';
import { BWD_ACC_RTOL, OUTPUT_TOLERANCE } from '../generator/tolerance.js';
import { bwdLaunch, type BwdVariant } from '../generator/variant-bwd.js';
import { EPS, SEED, timingFields, toMeasurement, type Measurement, type RunOptions } from './measure.js';
import type { Runner } from './runner.js';

export interface BwdRunOptions extends RunOptions {
  /** Further runs whose outputs must match the first bit for bit. */
  repeat?: number;
}

export function bwdRunRequest(problem: Problem, v: BwdVariant, cubin: string, sms: number, o: BwdRunOptions): Record<string, unknown> {
  const l = bwdLaunch(v, problem.rows, problem.hidden, sms);
  const w = weightDType(problem);
  const b = biasDType(problem);
  const dx = OUTPUT_TOLERANCE[xDType(problem)];
  const dw = OUTPUT_TOLERANCE[w ?? 'fp32'];
  const db = OUTPUT_TOLERANCE[b ?? 'fp32'];
  return {
    cmd: 'bwd',
    cubin,
    symbol: v.symbol,
    block: l.block,
    smem: l.sharedBytes,
    ctasPerSm: v.params.ctasPerSm,
    cluster: v.params.cluster ?? 1,
    rowsPerCta: bwdRowsPerCta(v.params),
    op: problem.op,
    dtype: problem.dtype,
    xDtype: xDType(problem),
    weight: w ?? 'none',
    bias: b ?? 'none',
    offset: problem.features.weightOffset,
    stats: problem.features.stats,
    dresidual: residualDType(problem) !== null,
    rows: problem.rows,
    hidden: problem.hidden,
    xStride: problem.strides.x,
    dyStride: problem.strides.y,
    dresidualStride: problem.strides.residual,
    dxStride: problem.strides.residualOut,
    eps: EPS,
    seed: SEED,
    atol: dx.atol,
    rtol: dx.rtol,
    dwAtol: dw.atol,
    dwRtol: dw.rtol,
    dbAtol: db.atol,
    dbRtol: db.rtol,
    accRtol: BWD_ACC_RTOL,
    repeat: o.repeat ?? 0,
    ...timingFields(o),
  };
}

export async function measureBwd(runner: Runner, problem: Problem, v: BwdVariant, cubin: string, sms: number, o: BwdRunOptions, copyGbps?: number): Promise<Measurement> {
  const reply = await runner.request(bwdRunRequest(problem, v, cubin, sms, o), o.timeoutMs ?? 120_000);
  const grid = typeof reply.grid === 'number' ? reply.grid : 0;
  return toMeasurement(problem, reply, copyGbps, bytesMovedBwd(problem, grid, !v.params.recompute));
}
