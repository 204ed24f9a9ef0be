// The committed summary of a `normgen verify` run.

import { formatTable } from '../cli/table.js';
import { DTYPES } from '../generator/problem.js';
import { OUTPUT_TOLERANCE, STATS_TOLERANCE } from '../generator/tolerance.js';
import { templateHash } from '../generator/templates.js';
import { VERSION } from '../generator/version.js';
import type { DeviceId } from './device.js';
import { isDropped, isFailure } from './measure.js';
import { failureLines, type VerifyResult } from './verify.js';
import { MATRIX_HIDDEN, MATRIX_ROWS } from './verify-matrix.js';

function countBy(results: VerifyResult[], key: (r: VerifyResult) => string): [string, number, number][] {
  const m = new Map<string, [number, number]>();
  for (const r of results) {
    const k = key(r);
    const [n, f] = m.get(k) ?? [0, 0];
    m.set(k, [n + 1, f + (isFailure(r) ? 1 : 0)]);
  }
  return [...m.entries()].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true })).map(([k, [n, f]]) => [k, n, f]);
}

export function verifyReport(device: DeviceId, command: string, results: VerifyResult[], seconds: number): string {
  const failures = results.filter(isFailure);
  const dropped = results.filter(isDropped);
  const out: string[] = [];
  out.push(`# GPU correctness: ${failures.length === 0 ? 'PASS' : 'FAIL'}`, '');
  out.push(`- date: ${new Date().toISOString()}`);
  out.push(`- card: ${device.name} (${device.arch}, compute capability ${device.computeCapability}, ${device.sms} SMs), driver ${device.driver}, CUDA runtime ${device.cudaRuntime}`);
  out.push(`- command: \`${command}\``);
  out.push(`- normgen ${VERSION}, CUDA templates ${templateHash('cuda').slice(0, 12)}; ${seconds.toFixed(0)} s`);
  out.push(`- runs: ${results.length - dropped.length}, failures: ${failures.length}; also checked against the TypeScript float64 reference: ${results.filter((r) => r.tsChecked).length} runs`);
  if (dropped.length) out.push(`- not run: ${dropped.length} variant(s) whose registers spill (the tuner drops these at compile time; listed at the end)`);
  out.push(`- distinct variants: ${new Set(results.map((r) => r.variant.id)).size}; problems: ${new Set(results.map((r) => r.problem)).size}`, '');
  out.push('Each run: inputs random (hash generator, x with mean 0.5), outputs and padding poisoned with 0xFF (NaN),');
  out.push('every element of y, the residual sum, mean and rstd checked against a float64 reference on the device,');
  out.push('row padding and 1 KiB guard zones around every buffer checked untouched, inputs checked bit-identical.', '');
  out.push('Tolerances, |got - ref| <= atol + rtol * |ref|:', '');
  out.push('```');
  out.push(formatTable(['output', 'atol', 'rtol'], [...DTYPES.map((d) => [`${d} y / residual sum`, String(OUTPUT_TOLERANCE[d].atol), String(OUTPUT_TOLERANCE[d].rtol)]), ['mean, rstd (fp32)', String(STATS_TOLERANCE.atol), String(STATS_TOLERANCE.rtol)]]));
  out.push('```', '');
  const section = (title: string, key: (r: VerifyResult) => string) => {
    out.push(`## ${title}`, '', '```', formatTable([title, 'runs', 'failures'], countBy(results, key)), '```', '');
  };
  out.push('## hidden x rows (runs / failures)', '', '```');
  const rows = MATRIX_HIDDEN.map((h) => [String(h), ...MATRIX_ROWS.map((r) => {
    const sel = results.filter((x) => x.problem.hidden === h && x.problem.rows === r);
    return `${sel.length}/${sel.filter(isFailure).length}`;
  })]);
  out.push(formatTable(['hidden', ...MATRIX_ROWS.map((r) => `rows ${r}`)], rows), '```', '');
  section('dtype', (r) => r.problem.dtype);
  section('op', (r) => r.problem.op);
  section('weight', (r) => `${r.problem.features.weight}${r.problem.features.weightOffset ? ' + offset' : ''}`);
  section('bias', (r) => String(r.problem.features.bias));
  section('residual', (r) => r.problem.features.residual);
  section('stats', (r) => String(r.problem.features.stats));
  section('strided', (r) => String(r.problem.strides.x !== r.problem.hidden));
  section('storage', (r) => r.variant.params.storage);
  section('threads', (r) => String(r.variant.params.threads));
  section('vec', (r) => String(r.variant.params.vec));
  section('threadsPerRow', (r) => String(r.variant.params.threadsPerRow));
  section('cluster', (r) => String(r.variant.params.cluster));
  section('stages', (r) => String(r.variant.params.stages));
  out.push('## failures', '');
  out.push(failures.length ? failureLines(results).map((l) => `- ${l}`).join('\n') : 'none');
  if (dropped.length) out.push('', '## not run: registers spill', '', failureLines(results, isDropped).map((l) => `- ${l}`).join('\n'));
  return out.join('\n') + '\n';
}
