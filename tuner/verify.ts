// `normgen verify`: build the correctness matrix's variants, run each on the GPU with
// outputs poisoned, check every output against the float64 reference (on the device
// for every run, and against the TypeScript reference for small problems), and write
// a summary log.

import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { Arch } from '../generator/arch.js';
import { bf16BitsToNumber, fp16BitsToNumber } from '../generator/numeric.js';
import { problemKey, residualDType, specKey, type DType, type Problem } from '../generator/problem.js';
import { generateInputs, referenceForward } from '../generator/reference.js';
import { describeParams } from '../generator/space.js';
import { OUTPUT_TOLERANCE, STATS_TOLERANCE, withinTolerance, type Tolerance } from '../generator/tolerance.js';
import type { Variant } from '../generator/variant.js';
import { CompilePool, type UnitRequest, type VariantBuild } from './compile-pool.js';
import type { BwdVariant } from '../generator/variant-bwd.js';
import { checkArchMatches, queryDevice, type DeviceId } from './device.js';
import { EPS, isFailure, measure, SEED, type Measurement } from './measure.js';
import { buildRunner, Runner } from './runner.js';
import { correctnessMatrix, type VerifyCase } from './verify-matrix.js';

/** Problems up to this many elements are also checked against the TypeScript reference. */
const TS_CHECK_ELEMENTS = 300_000;

export interface VerifyResult {
  problem: Problem;
  variant: Variant;
  status: string;
  detail: string;
  tsChecked: boolean;
}

function decode(file: string, dtype: DType): Float64Array {
  const buf = readFileSync(file);
  const n = buf.length / (dtype === 'fp32' ? 4 : 2);
  const out = new Float64Array(n);
  if (dtype === 'fp32') {
    const f = new Float32Array(buf.buffer, buf.byteOffset, n);
    for (let i = 0; i < n; i++) out[i] = f[i];
  } else {
    const u = new Uint16Array(buf.buffer, buf.byteOffset, n);
    const conv = dtype === 'bf16' ? bf16BitsToNumber : fp16BitsToNumber;
    for (let i = 0; i < n; i++) out[i] = conv(u[i]);
  }
  return out;
}

/** Compare dumped outputs with the TypeScript reference; a description of the first mismatch, or null. */
export function compareWithTsReference(problem: Problem, prefix: string): string | null {
  const ref = referenceForward(problem, problem.rows, problem.hidden, generateInputs(problem, problem.rows, problem.hidden, SEED), EPS);
  const checks: [string, Float64Array | undefined, DType, Tolerance][] = [
    ['y', ref.y, problem.dtype, OUTPUT_TOLERANCE[problem.dtype]],
    ['residual_out', ref.residualOut, residualDType(problem) ?? 'fp32', OUTPUT_TOLERANCE[residualDType(problem) ?? 'fp32']],
    ['rstd', ref.rstd, 'fp32', STATS_TOLERANCE],
    ['mean', ref.mean, 'fp32', STATS_TOLERANCE],
  ];
  for (const [name, want, dtype, tol] of checks) {
    if (!want) continue;
    const got = decode(`${prefix}.${name}.bin`, dtype);
    if (got.length !== want.length) return `${name}: ${got.length} values, expected ${want.length}`;
    for (let i = 0; i < want.length; i++)
      if (!withinTolerance(got[i], want[i], tol)) return `${name}[${i}] = ${got[i]}, TypeScript reference ${want[i]}`;
  }
  return null;
}

function describe(m: Measurement): string {
  if (m.status === 'OK') return '';
  if (m.bad) return Object.entries(m.bad).map(([k, n]) => `${n} bad ${k}`).join(', ') + (m.errors ? ` (worst error/tolerance ${JSON.stringify(m.errors)})` : '');
  return m.error ?? '';
}

export interface VerifyOptions {
  arch: Arch;
  quick: boolean;
  jobs: number;
  gpu: number;
  onProgress: (done: number, total: number, failures: number) => void;
}

export async function runVerify(o: VerifyOptions): Promise<{ device: DeviceId; results: VerifyResult[]; cases: VerifyCase[] }> {
  const runner = new Runner(await buildRunner(), o.gpu);
  const device = await queryDevice(runner);
  checkArchMatches(o.arch, device);
  const cases = correctnessMatrix(o.arch, o.quick);

  const builds = await compileCases(o.arch, o.jobs, cases);

  const results: VerifyResult[] = [];
  const total = cases.reduce((n, c) => n + c.variants.length, 0);
  let failures = 0;
  const dumpPrefix = join(tmpdir(), `normgen-verify-${process.pid}`);
  for (const c of cases) {
    const tsCheck = c.problem.rows * c.problem.hidden <= TS_CHECK_ELEMENTS;
    for (const v of c.variants) {
      const b = builds.get(v.id)!;
      let status: string = b.status;
      let detail = b.status === 'COMPILE_ERROR' ? b.log.split('\n').find((l) => l.includes('error')) ?? b.log.slice(0, 200) : '';
      if (b.status === 'OK') {
        const m = await measure(runner, c.problem, v, b.cubin, { verify: true, time: false, dump: tsCheck ? dumpPrefix : undefined });
        status = m.status;
        detail = describe(m);
        if (status === 'OK' && tsCheck) {
          const mismatch = compareWithTsReference(c.problem, dumpPrefix);
          if (mismatch) [status, detail] = ['INCORRECT', `against the TypeScript reference: ${mismatch}`];
        }
      }
      if (isFailure({ status })) failures++;
      results.push({ problem: c.problem, variant: v, status, detail, tsChecked: tsCheck && b.status === 'OK' });
      o.onProgress(results.length, total, failures);
    }
  }
  for (const n of ['y', 'residual_out', 'rstd', 'mean']) rmSync(`${dumpPrefix}.${n}.bin`, { force: true });
  await runner.close();
  return { device, results, cases };
}

/** Compile every variant the cases need: one unit per kernel spec (either direction), on a pool. */
export async function compileCases(arch: Arch, jobs: number, cases: { problem: Problem; variants: (Variant | BwdVariant)[] }[]): Promise<Map<string, VariantBuild>> {
  const bySpec = new Map<string, Map<string, Variant | BwdVariant>>();
  for (const c of cases) {
    const m = bySpec.get(specKey(c.problem)) ?? new Map<string, Variant | BwdVariant>();
    for (const v of c.variants) m.set(v.id, v);
    bySpec.set(specKey(c.problem), m);
  }
  const pool = new CompilePool(arch, jobs);
  const builds = new Map<string, VariantBuild>();
  try {
    await Promise.all(
      [...bySpec.values()].map(async (m) => {
        const variants = [...m.values()];
        for (const [id, b] of await pool.build({ spec: variants[0].spec, variants } as UnitRequest)) builds.set(id, b);
      }),
    );
  } finally {
    await pool.close();
  }
  return builds;
}

export function failureLines(results: VerifyResult[], which: (r: VerifyResult) => boolean = isFailure): string[] {
  return results
    .filter(which)
    .map((r) => `${problemKey(r.problem)} ${r.variant.id} ${describeParams(r.variant.params)}: ${r.status} ${r.detail}`);
}
