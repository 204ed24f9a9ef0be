// Export a tuning database in FlashInfer-Bench's dataset layout (its "FlashInfer Trace"
// schema): Definitions of the ops normgen tuned, Solutions holding each winning
// kernel's CUDA source with a TVM-FFI entry point, Workloads (one per tuned row count)
// and Traces with the measured evaluations.
//
//   definitions/<op_type>/<definition>.json
//   solutions/<author>/<op_type>/<definition>/<solution>.json
//   workloads/<op_type>/<definition>.jsonl
//   traces/<author>/<op_type>/<definition>.jsonl
//
// Definitions follow the FlashInfer-Bench dataset's names and semantics where it has
// them (rmsnorm_h4096: bf16, eps 1e-6; fused_add_rmsnorm_h4096: the fp32 sum
// normalized, eps 1e-5); layernorm_h{H} and the fp16/fp32 variants (suffix _fp16,
// _fp32) are normgen's, in the same style.

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fwdParams, type DbResult, type DbSession, type TuningDb } from '../tuner/db.js';
import { winners } from '../tuner/select.js';
import { prepareOutputDir, writeFileAtomic } from './files.js';
import { BYTES, InputError, makeProblem, problemKey, specKey, type DType, type KernelSpec } from './problem.js';
import { renderCudaUnit } from './render-cuda.js';
import { describeParams, dynamicSharedBytes } from './space.js';
import { render, TEMPLATE_ROOT } from './templates.js';
import { OUTPUT_TOLERANCE } from './tolerance.js';
import { makeVariant, type Variant } from './variant.js';
import { VERSION } from './version.js';

export const AUTHOR = 'normgen';

type Family = 'rmsnorm' | 'fused_add_rmsnorm' | 'layernorm';

interface FamilyInfo {
  opType: string;
  inputs: string[];
  eps: number;
  text: string;
}

const FAMILIES: Record<Family, FamilyInfo> = {
  rmsnorm: { opType: 'rmsnorm', inputs: ['hidden_states', 'weight'], eps: 1e-6, text: 'RMSNorm: y = x * rsqrt(mean(x^2) + eps) * weight' },
  fused_add_rmsnorm: { opType: 'rmsnorm', inputs: ['hidden_states', 'residual', 'weight'], eps: 1e-5, text: 'Fused add + RMSNorm: x = hidden_states + residual (fp32), y = x * rsqrt(mean(x^2) + eps) * weight' },
  layernorm: { opType: 'layernorm', inputs: ['hidden_states', 'weight', 'bias'], eps: 1e-5, text: 'LayerNorm: y = (x - mean) * rsqrt(var + eps) * weight + bias' },
};

const FIB_DTYPE: Record<DType, string> = { fp32: 'float32', fp16: 'float16', bf16: 'bfloat16' };

/** The FlashInfer-Bench family of a kernel spec, or null when it has none. */
export function familyOf(spec: KernelSpec): Family | null {
  const f = spec.features;
  if (f.weight !== 'same' || f.weightOffset || f.stats) return null;
  if (spec.op === 'rmsnorm' && !f.bias && f.residual === 'none') return 'rmsnorm';
  if (spec.op === 'rmsnorm' && !f.bias && f.residual === 'same') return 'fused_add_rmsnorm';
  if (spec.op === 'layernorm' && f.bias && f.residual === 'none') return 'layernorm';
  return null;
}

export const definitionName = (family: Family, dtype: DType, hidden: number) => `${family}_h${hidden}${dtype === 'bf16' ? '' : `_${dtype}`}`;

/** FlashInfer-Bench names hardware like NVIDIA_H100. */
export const hardwareName = (device: string) => device.trim().replace(/[^A-Za-z0-9]+/g, '_');

/** A stable UUID (RFC 4122 layout, version 5 bits) for a workload. */
function workloadUuid(definition: string, rows: number): string {
  const h = createHash('sha1').update(`normgen:${definition}:batch_size=${rows}`).digest('hex');
  const variant = ((Number.parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * JSON as FlashInfer-Bench writes it (pydantic): 2-space indent for files, compact for
 * JSON lines; non-finite floats as the strings "NaN", "Infinity", "-Infinity".
 */
export function fibJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? (Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity') : v), indent);
}

interface DefinitionPlan {
  name: string;
  family: Family;
  spec: KernelSpec;
  hidden: number;
  rows: Set<number>;
}

function definitionJson(d: DefinitionPlan): object {
  const info = FAMILIES[d.family];
  const dtype = FIB_DTYPE[d.spec.dtype];
  const tensor = (shape: string[], description: string) => ({ shape, dtype, description });
  const inputs: Record<string, object> = {
    hidden_states: tensor(['batch_size', 'hidden_size'], 'Input rows.'),
    residual: tensor(['batch_size', 'hidden_size'], 'Residual added to the input before normalizing.'),
    weight: tensor(['hidden_size'], 'Scale (gamma).'),
    bias: tensor(['hidden_size'], 'Shift (beta).'),
  };
  return {
    name: d.name,
    op_type: info.opType,
    description: `${info.text}, eps = ${info.eps.toExponential()}; hidden size ${d.hidden}, ${dtype}; fp32 arithmetic, result rounded to ${dtype}.`,
    tags: d.family === 'fused_add_rmsnorm' ? ['fused'] : [],
    axes: {
      batch_size: { type: 'var', description: 'Number of rows (tokens).' },
      hidden_size: { type: 'const', value: d.hidden, description: 'Row length, normalized over.' },
    },
    inputs: Object.fromEntries(info.inputs.map((n) => [n, inputs[n]])),
    outputs: { output: tensor(['batch_size', 'hidden_size'], 'Normalized rows.') },
    reference: render('flashinfer', 'reference.py.hbs', { family: d.family, hidden: d.hidden, eps: info.eps.toExponential() }),
  };
}

function workloadJson(d: DefinitionPlan, rows: number): object {
  return { axes: { batch_size: rows }, inputs: Object.fromEntries(FAMILIES[d.family].inputs.map((n) => [n, { type: 'random' }])), uuid: workloadUuid(d.name, rows) };
}

const cudaVersion = (v: number) => `${Math.floor(v / 1000)}.${(v % 1000) / 10}`;

/** One measurement of an exported kernel as a FlashInfer-Bench evaluation. */
function evaluationJson(r: DbResult, session: DbSession, db: TuningDb, baselineUs: number | undefined): object {
  const d = db.header.device;
  const environment = { hardware: hardwareName(d.name), libs: { normgen: session.normgen, nvcc: session.nvcc, cuda_driver: d.driver, cuda_runtime: cudaVersion(d.cudaRuntime) } };
  const tol = OUTPUT_TOLERANCE[r.problem.dtype];
  // normgen records each output's largest |error| / (atol + rtol |reference|), not the
  // absolute and relative errors FlashInfer-Bench asks for: those are NaN ("not measured").
  const checked = Object.fromEntries(Object.entries(r.errors ?? {}).filter(([k]) => k === 'y' || (k === 'residual_out' && r.problem.features.residual !== 'none')));
  const correctness = { max_relative_error: NaN, max_absolute_error: NaN, extra: { error_over_tolerance: checked, atol: tol.atol, rtol: tol.rtol, reference: 'float64' } };
  const how = `normgen ${session.normgen} tune session ${session.session} on ${d.name} (${db.header.arch}): ${session.command}`;
  const common = { environment, timestamp: session.started };
  if (r.status === 'OK') {
    const baseline = baselineUs ? `; normgen's baseline variant (one row per CTA, 256 threads) took ${baselineUs.toFixed(3)} us` : '';
    const log = `${how}. Verified on the device against a float64 reference (eps 1e-6, random inputs). latency_ms is the median of ${r.samples ?? '?'} timings of back-to-back launches in a CUDA graph with inputs larger than L2; the PyTorch reference was not timed, so reference_latency_ms and speedup_factor are 0${baseline}.`;
    return { status: 'PASSED', ...common, log, correctness, performance: { latency_ms: r.medianUs! / 1000, reference_latency_ms: 0, speedup_factor: 0 } };
  }
  const status = r.status === 'INCORRECT' ? 'INCORRECT_NUMERICAL' : r.status === 'TIMEOUT' ? 'TIMEOUT' : r.status === 'COMPILE_ERROR' ? 'COMPILE_ERROR' : 'RUNTIME_ERROR';
  return { status, ...common, log: `${how}. ${r.status}${r.error ? `: ${r.error}` : ''}`, ...(status === 'INCORRECT_NUMERICAL' ? { correctness } : {}) };
}

/** A Solution: the kernel, its parameters header and a TVM-FFI entry point launching it. */
function solutionJson(name: string, d: DefinitionPlan, v: Variant, wonRows: number[], db: TuningDb): object {
  const family = FAMILIES[d.family];
  const device = db.header.device.name;
  const main = render('flashinfer', 'main.cu.hbs', {
    solution: name,
    definition: d.name,
    description: describeParams(v.params),
    device,
    version: VERSION,
    symbol: v.symbol,
    hidden: d.hidden,
    eps: family.eps.toExponential(),
    params: v.params,
    persistent: v.params.storage === 'pipelined' ? 'true' : 'false',
    sharedBytes: dynamicSharedBytes(d.spec, v.params, d.hidden),
    dtypeName: FIB_DTYPE[d.spec.dtype],
    dlpackCode: d.spec.dtype === 'bf16' ? 'kDLBfloat' : 'kDLFloat',
    dtypeBits: 8 * BYTES[d.spec.dtype],
    elementBytes: BYTES[d.spec.dtype],
    inputs: family.inputs,
    bias: family.inputs.includes('bias'),
    residual: family.inputs.includes('residual'),
  });
  const won = [...wonRows].sort((a, b) => a - b).join(', ');
  const fused = d.family === 'fused_add_rmsnorm' ? '; the sum hidden_states + residual is rounded to the input dtype (and written to scratch memory) before it is normalized' : '';
  return {
    name,
    definition: d.name,
    author: AUTHOR,
    spec: { language: 'cuda', target_hardware: [hardwareName(device)], entry_point: 'main.cu::run', dependencies: [], destination_passing_style: true, binding: 'tvm-ffi' },
    sources: [
      { path: 'main.cu', content: main },
      { path: 'kernel.cu', content: renderCudaUnit(d.spec, [v]) },
      { path: 'normgen_params.h', content: readFileSync(join(TEMPLATE_ROOT, 'cuda', 'normgen_params.h'), 'utf8') },
    ],
    description: `normgen ${describeParams(v.params)} kernel (variant ${v.id}), the fastest verified variant on ${device} (${db.header.arch}) for batch_size ${won}. fp32 arithmetic${fused}.`,
  };
}

export interface ExportSummary {
  definitions: number;
  solutions: number;
  workloads: number;
  traces: number;
  /** Kernel specs with no FlashInfer-Bench definition (stats, offsets, ...). */
  skipped: string[];
  files: string[];
}

export function exportFlashInferBench(db: TuningDb, out: string): ExportSummary {
  const sessions = new Map(db.sessions.map((s) => [s.session, s]));
  const defs = new Map<string, DefinitionPlan>();
  const skipped = new Set<string>();
  /** solution name -> its definition and the winning result that made it. */
  const solutions = new Map<string, { def: DefinitionPlan; best: DbResult; wonRows: number[] }>();
  const ws = winners(db);
  const baselineUs = new Map(ws.map((w) => [problemKey(w.problem), w.baseline?.medianUs]));
  for (const w of ws) {
    const p = w.problem;
    const family = familyOf(p);
    if (!family) {
      skipped.add(specKey(p));
      continue;
    }
    const strided = Object.values(p.strides).some((s) => s !== p.hidden);
    if (strided) {
      skipped.add(`${problemKey(p)} (strided rows)`);
      continue;
    }
    const name = definitionName(family, p.dtype, p.hidden);
    const def = defs.get(name) ?? { name, family, spec: p, hidden: p.hidden, rows: new Set<number>() };
    def.rows.add(p.rows);
    defs.set(name, def);
    const solution = `${AUTHOR}_${name}_${w.best.variantId}`;
    const s = solutions.get(solution) ?? { def, best: w.best, wonRows: [] };
    s.wonRows.push(p.rows);
    solutions.set(solution, s);
  }
  if (defs.size === 0) throw new InputError(`${db.path} has no verified winners of an op FlashInfer-Bench defines (rmsnorm, fused add rmsnorm, layernorm with weight and bias)`);

  const files: [string, string][] = [];
  for (const d of [...defs.values()].sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }))) {
    const opType = FAMILIES[d.family].opType;
    files.push([`definitions/${opType}/${d.name}.json`, fibJson(definitionJson(d), 2) + '\n']);
    const rows = [...d.rows].sort((a, b) => a - b);
    files.push([`workloads/${opType}/${d.name}.jsonl`, rows.map((r) => fibJson({ definition: d.name, workload: workloadJson(d, r), solution: null, evaluation: null })).join('\n') + '\n']);
    const traces: string[] = [];
    for (const [name, s] of [...solutions].filter(([, s]) => s.def === d).sort(([a], [b]) => a.localeCompare(b))) {
      const v = makeVariant(d.spec, fwdParams(s.best));
      if (v.id !== s.best.variantId) throw new InputError(`${db.path}: variant ${s.best.variantId} of ${d.name} no longer renders the same kernel: re-tune with these templates`);
      const solution = solutionJson(name, d, v, s.wonRows, db);
      files.push([`solutions/${AUTHOR}/${opType}/${d.name}/${name}.json`, fibJson(solution, 2) + '\n']);
      // Traces: every full timing of this kernel on this definition's workloads.
      const keys = new Set([...d.rows].map((rows) => problemKey(makeProblem(d.spec, d.hidden, rows))));
      const measured = db.results.filter((r) => r.stage === 'final' && r.variantId === v.id && keys.has(r.problemKey));
      for (const r of measured.sort((a, b) => a.problem.rows - b.problem.rows)) {
        const evaluation = evaluationJson(r, sessions.get(r.session)!, db, baselineUs.get(r.problemKey));
        traces.push(fibJson({ definition: d.name, workload: workloadJson(d, r.problem.rows), solution: name, evaluation }));
      }
    }
    files.push([`traces/${AUTHOR}/${opType}/${d.name}.jsonl`, traces.join('\n') + '\n']);
  }

  prepareOutputDir(out);
  for (const [name, text] of files) {
    mkdirSync(dirname(join(out, name)), { recursive: true });
    writeFileAtomic(join(out, name), text);
  }
  const count = (prefix: string) => files.filter(([n]) => n.startsWith(prefix)).length;
  const lines = (prefix: string) => files.filter(([n]) => n.startsWith(prefix)).reduce((n, [, t]) => n + t.trim().split('\n').length, 0);
  return { definitions: count('definitions/'), solutions: count('solutions/'), workloads: lines('workloads/'), traces: lines('traces/'), skipped: [...skipped].sort(), files: files.map(([n]) => n) };
}
