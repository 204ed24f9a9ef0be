// `normgen verify --direction bwd`: every backward variant of the space on a few shapes
// (hidden 1 and untuned sizes among them, strided rows too), every feature set at a
// short row, dx / dweight / dbias checked against float64 on the device with outputs
// poisoned, and each run repeated: the repeats must give the same bits (determinism).

import { formatTable } from '../cli/table.js';
import type { Arch } from '../generator/arch.js';
import { allFeatureCombos, backwardSpec, DTYPES, makeProblem, OPS, problemKey, specKey, type KernelSpec, type Problem } from '../generator/problem.js';
import { baselineBwdParams, BWD_STORAGES, describeBwdParams, enumerateBwdSpace, genericBwdParams } from '../generator/space-bwd.js';
import { BWD_ACC_RTOL, OUTPUT_TOLERANCE } from '../generator/tolerance.js';
import { makeBwdVariant, bwdTemplateHash, type BwdVariant } from '../generator/variant-bwd.js';
import { VERSION } from '../generator/version.js';
import { checkArchMatches, queryDevice, type DeviceId } from './device.js';
import { measureBwd } from './measure-bwd.js';
import { buildRunner, Runner } from './runner.js';
import { isDropped, isFailure } from './measure.js';
import { compileCases } from './verify.js';

export interface BwdCase {
  problem: Problem;
  variants: BwdVariant[];
}

export interface BwdVerifyResult {
  problem: Problem;
  variant: BwdVariant;
  status: string;
  detail: string;
}

/** Every variant of the space plus the generic and the baseline, one per id. */
function allVariants(problem: Problem, arch: Arch): BwdVariant[] {
  const params = [...enumerateBwdSpace(problem, arch), genericBwdParams(problem), baselineBwdParams(problem, arch)];
  return [...new Map(params.map((q) => [makeBwdVariant(problem, q).id, makeBwdVariant(problem, q)])).values()];
}

/** Shapes for the full spaces: hidden 1, odd and untuned sizes (4095: a ragged last chunk in the ring), rows 1 to 4097; [hidden, rows, strided]. */
export const BWD_SHAPES: [number, number, boolean][] = [
  [1, 3, false], [7, 64, true], [1000, 4097, true], [4096, 3000, false], [4095, 300, true], [16384, 700, false], [65536, 3, false],
];

const padded = (hidden: number) => {
  const s = Math.ceil((hidden + 8) / 8) * 8;
  return { x: s, y: s + 8, residual: s + 16, residualOut: s };
};

export function bwdMatrix(arch: Arch, quick = false): BwdCase[] {
  const specs: KernelSpec[] = [];
  for (const dtype of DTYPES) for (const op of OPS) for (const features of allFeatureCombos()) specs.push(backwardSpec({ op, dtype, features }));
  const cases: BwdCase[] = [];
  // Full spaces: per op and dtype, the common feature set (weight, LayerNorm with bias), saved statistics.
  for (const dtype of DTYPES)
    for (const op of OPS) {
      const spec = backwardSpec({ op, dtype, features: { weight: 'same', bias: op === 'layernorm', weightOffset: false, residual: 'none', stats: true } });
      for (const [hidden, rows, strided] of quick ? BWD_SHAPES.filter((_, i) => i % 2 === 0) : BWD_SHAPES) {
        const problem = makeProblem(spec, hidden, rows, strided ? padded(hidden) : {});
        cases.push({ problem, variants: allVariants(problem, arch) });
      }
    }
  // Every feature set (dtype rotating) at a short row: the generic, the baseline and one
  // variant per storage the space offers.
  specs.forEach((spec, i) => {
    if (spec.dtype !== DTYPES[i % DTYPES.length] || (quick && i % 4 !== 0)) return;
    const problem = makeProblem(spec, 1000, 5, i % 2 ? padded(1000) : {});
    const space = enumerateBwdSpace(problem, arch);
    const one = BWD_STORAGES.map((s) => space.find((q) => q.storage === s)).filter((q) => q !== undefined);
    const params = [...one, genericBwdParams(problem), baselineBwdParams(problem, arch)];
    cases.push({ problem, variants: [...new Map(params.map((q) => [makeBwdVariant(problem, q).id, makeBwdVariant(problem, q)])).values()] });
  });
  return cases;
}

export interface BwdVerifyOptions {
  arch: Arch;
  quick: boolean;
  jobs: number;
  gpu: number;
  /** Runs after the first whose bits must match it. */
  repeat: number;
  onProgress: (done: number, total: number, failures: number) => void;
}

export async function runVerifyBwd(o: BwdVerifyOptions): Promise<{ device: DeviceId; results: BwdVerifyResult[] }> {
  const runner = new Runner(await buildRunner(), o.gpu);
  const device = await queryDevice(runner);
  checkArchMatches(o.arch, device);
  const cases = bwdMatrix(o.arch, o.quick);
  const builds = await compileCases(o.arch, o.jobs, cases);
  const results: BwdVerifyResult[] = [];
  const total = cases.reduce((n, c) => n + c.variants.length, 0);
  let failures = 0;
  for (const c of cases)
    for (const v of c.variants) {
      const b = builds.get(v.id)!;
      let status: string = b.status;
      let detail = b.status === 'COMPILE_ERROR' ? b.log.split('\n').find((l) => l.includes('error')) ?? b.log.slice(0, 200) : '';
      if (b.status === 'OK') {
        const m = await measureBwd(runner, c.problem, v, b.cubin, device.sms, { verify: true, time: false, repeat: o.repeat });
        status = m.status;
        detail = m.status === 'OK' ? '' : m.bad ? `${JSON.stringify(m.bad)} (worst error/tolerance ${JSON.stringify(m.errors)})` : (m.error ?? '');
      }
      if (isFailure({ status })) failures++;
      results.push({ problem: c.problem, variant: v, status, detail });
      o.onProgress(results.length, total, failures);
    }
  await runner.close();
  return { device, results };
}

export function bwdVerifyReport(device: DeviceId, command: string, results: BwdVerifyResult[], repeat: number, seconds: number): string {
  const failures = results.filter(isFailure);
  const dropped = results.filter(isDropped);
  const count = (key: (r: BwdVerifyResult) => string) => {
    const m = new Map<string, [number, number]>();
    for (const r of results) {
      const [n, f] = m.get(key(r)) ?? [0, 0];
      m.set(key(r), [n + 1, f + (isFailure(r) ? 1 : 0)]);
    }
    return [...m].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true })).map(([k, [n, f]]) => [k, n, f]);
  };
  const line = (r: BwdVerifyResult) => `${problemKey(r.problem)} ${r.variant.id} ${describeBwdParams(r.variant.params)}: ${r.status} ${r.detail}`;
  const out = [
    `# GPU correctness, backward: ${failures.length === 0 ? 'PASS' : 'FAIL'}`,
    '',
    `- date: ${new Date().toISOString()}`,
    `- card: ${device.name} (${device.arch}, ${device.sms} SMs), driver ${device.driver}, CUDA runtime ${device.cudaRuntime}`,
    `- command: \`${command}\``,
    `- normgen ${VERSION}, backward templates ${bwdTemplateHash().slice(0, 12)}; ${seconds.toFixed(0)} s`,
    `- runs: ${results.length - dropped.length}, failures: ${failures.length}, not run (registers spill): ${dropped.length}`,
    `- each run verified, then repeated ${repeat} times: every repeat must write the same bits of dx, dweight and dbias`,
    `- distinct variants: ${new Set(results.map((r) => r.variant.id)).size}; problems: ${new Set(results.map((r) => problemKey(r.problem))).size}`,
    '',
    'Inputs random (x, dy, dresidual, weight from the hash generator), saved statistics from a float64 pass',
    'rounded to fp32; dx, dweight, dbias and the partial sums poisoned (0xFF) before each run; every element',
    'of dx, dweight, dbias checked against float64, dx row padding and 1 KiB guard zones untouched, inputs bit-identical.',
    `Tolerance: |got - ref| <= atol + rtol * |ref| + ${BWD_ACC_RTOL} * (sum of the magnitudes of the terms), atol/rtol per dtype:`,
    '',
    '```',
    formatTable(['dtype', 'atol', 'rtol'], DTYPES.map((d) => [d, String(OUTPUT_TOLERANCE[d].atol), String(OUTPUT_TOLERANCE[d].rtol)])),
    '```',
    '',
  ];
  const section = (title: string, key: (r: BwdVerifyResult) => string) => out.push(`## ${title}`, '', '```', formatTable([title, 'runs', 'failures'], count(key)), '```', '');
  section('hidden x rows', (r) => `h${r.problem.hidden} r${r.problem.rows}${r.problem.strides.x !== r.problem.hidden ? ' strided' : ''}`);
  section('dtype', (r) => r.problem.dtype);
  section('op', (r) => r.problem.op);
  section('features', (r) => specKey(r.problem).split('.').slice(3).join('.') || '(none)');
  section('storage', (r) => r.variant.params.storage);
  section('threads', (r) => String(r.variant.params.threads));
  section('threadsPerRow', (r) => String(r.variant.params.threadsPerRow));
  section('ctasPerSm', (r) => String(r.variant.params.ctasPerSm));
  section('row source', (r) => (r.variant.params.stages ? `ring of ${r.variant.params.stages}` : r.variant.params.prefetch ? 'prefetch' : 'one row'));
  section('statistics', (r) => (r.variant.params.recompute ? 'recomputed' : 'saved'));
  out.push('## failures', '', failures.length ? failures.map((r) => `- ${line(r)}`).join('\n') : 'none');
  if (dropped.length) out.push('', '## not run: registers spill', '', dropped.map((r) => `- ${line(r)}`).join('\n'));
  return out.join('\n') + '\n';
}
