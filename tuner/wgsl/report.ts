// The performance log of a WGSL tune: date, adapter, command, copy bandwidth, and per
// problem the winner against the ONNX-Runtime-style baseline measured in the same run
// and, where a CUDA database of the same GPU is given, against the CUDA winner.

import { formatTable } from '../../cli/table.js';
import { problemKey } from '../../generator/problem.js';
import type { TuningDb } from '../db.js';
import { namedWinnerRow, WGSL_NAMING, winners, WINNER_HEADER } from '../select.js';
import { adapterName } from './adapter.js';
import type { WgslDb } from './tune.js';

const pct = (f: number | undefined) => (f === undefined ? '-' : Number((100 * f).toFixed(1)));
const num = (x: number | undefined, digits = 0) => (x === undefined ? '-' : Number(x.toFixed(digits)));

/**
 * The comparison columns: the WGSL winner and the baseline (time, GB/s, % of the copy
 * measured in the same process); with a CUDA database of the same GPU, both also as %
 * of its cudaMemcpy bandwidth (the card's roofline), and the CUDA winner.
 */
export function comparisonRows(db: WgslDb, cuda?: TuningDb): { header: string[]; rows: (string | number)[][] } {
  const cudaWinners = new Map((cuda ? winners(cuda) : []).map((w) => [problemKey(w.problem), w]));
  const cudaCopy = cuda?.sessions[cuda.sessions.length - 1]?.copyGbps;
  const ofCudaCopy = (gbps: number | undefined) => (cudaCopy && gbps !== undefined ? pct(gbps / cudaCopy) : '-');
  const header = ['problem', 'WGSL winner', 'us', 'GB/s', '% copy', 'baseline us', 'GB/s', '% copy', 'vs baseline'];
  if (cuda) header.push('WGSL % CUDA copy', 'baseline % CUDA copy', 'CUDA us', 'GB/s', '% copy', 'WGSL/CUDA');
  const rows = winners(db, WGSL_NAMING).map((w) => {
    const b = w.best;
    const base = w.baseline;
    const row: (string | number)[] = [problemKey(w.problem), WGSL_NAMING.describe(b.params, w.problem), num(b.medianUs, 2), num(b.gbps), pct(b.fractionOfCopy)];
    row.push(num(base?.medianUs, 2), num(base?.gbps), pct(base?.fractionOfCopy), w.speedup ? num(w.speedup, 2) : '-');
    if (cuda) {
      const c = cudaWinners.get(problemKey(w.problem))?.best;
      row.push(ofCudaCopy(b.gbps), ofCudaCopy(base?.gbps));
      row.push(num(c?.medianUs, 2), num(c?.gbps), pct(c?.fractionOfCopy), c?.gbps && b.gbps ? pct(b.gbps / c.gbps) + '%' : '-');
    }
    return row;
  });
  return { header, rows };
}

/** `seconds`: the run's duration (tune); absent when the report is made again from the database. */
export function wgslTuneReport(db: WgslDb, seconds: number | undefined, cuda?: TuningDb, cudaFile?: string): string {
  const session = db.sessions[db.sessions.length - 1];
  const d = db.header.device;
  const statuses = new Map<string, number>();
  for (const r of db.results) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  const timers = [...new Set(db.results.map((r) => r.timer).filter(Boolean))].join(', ') || 'none';
  const { header, rows } = comparisonRows(db, cuda);
  const cudaSession = cuda?.sessions[cuda.sessions.length - 1];
  const l = d.limits;
  const out = [
    `# WGSL tuning results: ${adapterName(d, d.backend)}`,
    '',
    `- date: ${session?.started ?? 'unknown'}`,
    `- adapter: vendor '${d.vendor}', architecture '${d.architecture}', device '${d.device}', description '${d.description}'; Dawn backend ${d.backend}`,
    `- features: ${d.features.length ? d.features.join(', ') : 'none of shader-f16, subgroups, timestamp-query'}; limits: ${l.maxInvocations} invocations per workgroup, ${l.maxWorkgroupStorage} bytes of workgroup storage, ${l.maxWorkgroupsPerDimension} workgroups per dimension`,
    ...db.sessions.map((s) => `- command${db.sessions.length > 1 ? ` (session ${s.session}, ${s.started})` : ''}: \`${s.command}\``),
    `- normgen ${session?.normgen}, WGSL templates ${session?.templateHash.slice(0, 12)}, ${session?.dawn ?? 'webgpu'}`,
    `- copy bandwidth (same process, buffer-to-buffer copies of 256 MiB, read + write, wall clock): ${session?.copyGbps.toFixed(0)} GB/s`,
    `- timing: ${timers}; each result the median of batches of many dispatches in one submission, cycling through copies of the tensors (192 MiB in all, capped at 64 copies); every timed variant verified first on the same problem (random inputs, outputs poisoned, every element against the float64 reference)`,
    `- ${seconds === undefined ? 'made again from the database by normgen report' : `this run: ${seconds.toFixed(0)} s`}; problems with a winner: ${winners(db, WGSL_NAMING).length}; measurements in the database: ${db.results.length} (${[...statuses].map(([s, n]) => `${s} ${n}`).join(', ')})`,
    '- baseline: the layout of ONNX Runtime Web\'s normalization shaders, rendered from our templates: one workgroup of 64 per row, vec4 (narrower when the row needs it), two passes over the row',
  ];
  if (cuda)
    out.push(
      `- CUDA: the winners of ${cudaFile ?? cuda.path} (${cuda.header.device.name}, tuned ${cudaSession?.started ?? '?'}; % copy there is of its own cudaMemcpy bandwidth, ${cudaSession?.copyGbps.toFixed(0)} GB/s, which the '% CUDA copy' columns also use); WGSL/CUDA compares GB/s`,
    );
  out.push('', '```', formatTable(header, rows), '```', '');
  return out.join('\n');
}

/** The short table tune prints (the same columns as CUDA's). */
export function wgslWinnerTable(db: WgslDb, keys?: Set<string>): string {
  const ws = winners(db, WGSL_NAMING).filter((w) => !keys || keys.has(problemKey(w.problem)));
  return formatTable(WINNER_HEADER, ws.map((w) => namedWinnerRow(w, WGSL_NAMING.describe)));
}
