// normgen export flashinfer-bench: the H200 database as a FlashInfer-Bench dataset,
// checked file by file against that project's schema (test/flashinfer-schema.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { definitionName, familyOf } from '../generator/flashinfer.js';
import { problemKey, type KernelSpec } from '../generator/problem.js';
import { readDbText, TuningDb } from '../tuner/db.js';
import { DEFAULT_HIDDEN } from '../tuner/grid.js';
import { findNvcc } from '../tuner/nvcc.js';
import { winners } from '../tuner/select.js';
import { checkDataset, checkDefinition, checkSolution, checkTrace } from './flashinfer-schema.js';

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const DB = fileURLToPath(new URL('../../out/tuning/sm90-h200.jsonl.gz', import.meta.url));
const exportTo = (out: string, db = DB) => spawnSync(process.execPath, [CLI, 'export', 'flashinfer-bench', '--db', db, '--out', out], { encoding: 'utf8' });
const out = join(mkdtempSync(join(tmpdir(), 'normgen-fib-')), 'dataset');
const run = exportTo(out);
const json = (p: string) => JSON.parse(readFileSync(join(out, p), 'utf8'));
const jsonl = (p: string) => readFileSync(join(out, p), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const ws = winners(TuningDb.read(DB));

test('the export passes every schema and layout check', () => {
  assert.is(run.status, 0, run.stderr);
  const { errors, counts } = checkDataset(out);
  assert.equal(errors, []);
  assert.is(counts.definitions, 3 * 3 * DEFAULT_HIDDEN.length); // {rmsnorm, fused add, layernorm} x {bf16, fp16, fp32} x the grid's hidden sizes
  assert.is(counts.workloads, ws.length, 'one workload per tuned problem');
  assert.ok(counts.solutions >= counts.definitions && counts.traces >= ws.length, JSON.stringify(counts));
  assert.match(run.stdout, new RegExp(`${counts.definitions} definitions, \\d+ solutions, ${ws.length} workloads, \\d+ traces`));
  assert.equal(readdirSync(out).sort(), ['definitions', 'solutions', 'traces', 'workloads']);
});

test('definitions use the dataset names and semantics', () => {
  const rms = json('definitions/rmsnorm/rmsnorm_h4096.json');
  assert.is(rms.op_type, 'rmsnorm');
  assert.equal(Object.keys(rms.inputs), ['hidden_states', 'weight']);
  assert.equal(rms.axes.hidden_size, { type: 'const', value: 4096, description: 'Row length, normalized over.' });
  assert.is(rms.axes.batch_size.type, 'var');
  assert.is(rms.inputs.hidden_states.dtype, 'bfloat16');
  assert.match(rms.reference, /^def run\(hidden_states, weight\):$/m);
  assert.match(rms.reference, /EPS = 1e-6/);
  const fused = json('definitions/rmsnorm/fused_add_rmsnorm_h4096.json');
  assert.equal(Object.keys(fused.inputs), ['hidden_states', 'residual', 'weight']);
  assert.match(fused.reference, /EPS = 1e-5/);
  const ln = json('definitions/layernorm/layernorm_h8192_fp32.json');
  assert.equal(Object.keys(ln.inputs), ['hidden_states', 'weight', 'bias']);
  assert.is(ln.outputs.output.dtype, 'float32');
  const spec = (op: 'rmsnorm' | 'layernorm', residual: 'none' | 'same', bias = false, stats = false): KernelSpec => ({ op, dtype: 'bf16', features: { weight: 'same', bias, weightOffset: false, residual, stats } });
  assert.is(familyOf(spec('rmsnorm', 'same')), 'fused_add_rmsnorm');
  assert.is(familyOf(spec('layernorm', 'none', true)), 'layernorm');
  assert.is(familyOf(spec('rmsnorm', 'none', false, true)), null, 'statistics have no definition');
  assert.is(familyOf(spec('layernorm', 'none')), null, 'LayerNorm without bias has none either');
});

test("each tuned problem's winner is a solution with a PASSED trace of its time; NaN written as a string", () => {
  for (const w of ws) {
    const def = definitionName(familyOf(w.problem)!, w.problem.dtype, w.problem.hidden);
    const opType = def.startsWith('layernorm') ? 'layernorm' : 'rmsnorm';
    const name = `normgen_${def}_${w.best.variantId}`;
    const solution = json(`solutions/normgen/${opType}/${def}/${name}.json`);
    assert.equal(solution.sources.map((s: { path: string }) => s.path), ['main.cu', 'kernel.cu', 'normgen_params.h']);
    const symbol = `normgen_${w.problem.op}_fwd_${w.best.variantId}`;
    assert.ok(solution.sources[1].content.includes(symbol), problemKey(w.problem));
    assert.match(solution.sources[0].content, new RegExp(`extern "C" __global__ void ${symbol}\\(`));
    assert.match(solution.sources[0].content, /TVM_FFI_DLL_EXPORT_TYPED_FUNC\(run, Run\);/);
    assert.equal(solution.spec.target_hardware, ['NVIDIA_H200']);
    const trace = jsonl(`traces/normgen/${opType}/${def}.jsonl`).find((t) => t.solution === name && t.workload.axes.batch_size === w.problem.rows);
    assert.ok(trace, `a trace of ${name} at batch_size ${w.problem.rows}`);
    assert.is(trace.evaluation.status, 'PASSED');
    assert.is(trace.evaluation.performance.latency_ms, w.best.medianUs! / 1000);
    assert.is(trace.evaluation.correctness.max_absolute_error, 'NaN');
    assert.is(trace.evaluation.correctness.extra.error_over_tolerance.y, w.best.errors!.y);
  }
  const raw = readFileSync(join(out, 'traces/normgen/rmsnorm/rmsnorm_h4096.jsonl'), 'utf8');
  assert.match(raw, /"max_relative_error":"NaN"/);
  assert.not.match(raw, /:NaN|:null,"max/);
});

test('the checker is not vacuous: it catches what the pydantic models and the validator reject', () => {
  const def = json('definitions/rmsnorm/rmsnorm_h4096.json');
  const broken = (mutate: (d: any) => void, base: unknown = def) => {
    const d = structuredClone(base);
    mutate(d);
    return d;
  };
  assert.match(checkDefinition(broken((d) => (d.inputs.weight.shape = ['hidden'])), 'd').join(), /references undefined axis "hidden"/);
  assert.match(checkDefinition(broken((d) => (d.outputs.weight = d.outputs.output)), 'd').join(), /must not overlap/);
  assert.match(checkDefinition(broken((d) => (d.reference = 'def forward(x):\n  return x\n')), 'd').join(), /function named 'run'/);
  assert.match(checkDefinition(broken((d) => (d.inputs.weight.dtype = 'bf16')), 'd').join(), /dtype: must be one of/);
  assert.match(checkDefinition(broken((d) => (d.opType = d.op_type)), 'd').join(), /unknown field 'opType'/);
  const sol = json(readdirSync(join(out, 'solutions/normgen/rmsnorm/rmsnorm_h4096')).map((f) => `solutions/normgen/rmsnorm/rmsnorm_h4096/${f}`)[0]);
  assert.equal(checkSolution(sol, 's'), []);
  assert.match(checkSolution(broken((s) => (s.spec.entry_point = 'main.cu:run'), sol), 's').join(), /<file_path>::<function_name>/);
  assert.match(checkSolution(broken((s) => (s.spec.entry_point = 'kernel_main.cu::run'), sol), 's').join(), /entry source file 'kernel_main.cu' not found/);
  assert.match(checkSolution(broken((s) => (s.sources[1].path = '../kernel.cu'), sol), 's').join(), /traversal/);
  assert.match(checkSolution(broken((s) => (s.spec.language = 'CUDA'), sol), 's').join(), /language: must be one of/);
  const trace = jsonl('traces/normgen/rmsnorm/rmsnorm_h4096.jsonl')[0];
  assert.equal(checkTrace(trace, 't'), []);
  assert.match(checkTrace(broken((t) => delete t.evaluation.performance, trace), 't').join(), /PASSED needs correctness and performance/);
  assert.match(checkTrace(broken((t) => (t.evaluation.correctness.max_relative_error = -1), trace), 't').join(), /non-negative or NaN/);
  assert.match(checkTrace(broken((t) => (t.evaluation.correctness.max_relative_error = null), trace), 't').join(), /must be a float/);
  assert.match(checkTrace(broken((t) => (t.evaluation.status = 'OK'), trace), 't').join(), /status: must be one of/);
  // Layout: a trace naming a solution that does not exist, a workload missing an axis.
  const copy = join(mkdtempSync(join(tmpdir(), 'normgen-fib-')), 'dataset');
  execFileSync('cp', ['-r', out, copy]);
  const tracePath = join(copy, 'traces/normgen/rmsnorm/rmsnorm_h4096.jsonl');
  writeFileSync(tracePath, JSON.stringify({ ...trace, solution: 'nobody' }) + '\n');
  const workloadPath = join(copy, 'workloads/rmsnorm/rmsnorm_h1024.jsonl');
  const w = JSON.parse(readFileSync(workloadPath, 'utf8').split('\n')[0]);
  writeFileSync(workloadPath, JSON.stringify({ ...w, workload: { ...w.workload, axes: {} } }) + '\n');
  const errors = checkDataset(copy).errors.join('\n');
  assert.match(errors, /rmsnorm_h4096\.jsonl:1: unknown solution nobody/);
  assert.match(errors, /rmsnorm_h1024\.jsonl:1: workload axes {2}do not match the var axes batch_size/);
});

test("solutions' kernel sources compile on their own (nvcc, sm_90a)", async () => {
  const nvcc = await findNvcc();
  const all = (dir: string): string[] => readdirSync(join(out, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? all(join(dir, e.name)) : [join(dir, e.name)]));
  const solutions = all('solutions').map((p) => json(p));
  // A cluster kernel, a shared-memory one and a persistent one: the launch shapes the entry point handles.
  const picks = [/\.c\d/, /smem\./, /pipelined\./].map((re) => solutions.find((s) => re.test(s.description)));
  assert.ok(picks.every(Boolean), 'the export has each kind');
  for (const s of picks) {
    const dir = mkdtempSync(join(tmpdir(), 'normgen-fib-src-'));
    for (const f of s.sources) writeFileSync(join(dir, f.path), f.content);
    execFileSync(nvcc, ['-c', '-arch=sm_90a', '-I', dir, '-o', join(dir, 'kernel.o'), join(dir, 'kernel.cu')], { stdio: 'pipe' });
    assert.match(s.sources[0].content, /kPersistent = (true|false);/);
  }
  assert.match(picks[1].sources[0].content, /kSharedBytes = [1-9]\d*;/);
  assert.match(picks[2].sources[0].content, /kPersistent = true;/);
});

test('bad input: one line, exit 2', () => {
  const bad = spawnSync(process.execPath, [CLI, 'export', 'onnx', '--db', DB, '--out', out], { encoding: 'utf8' });
  assert.is(bad.status, 2);
  assert.match(bad.stderr, /^normgen: Invalid values: Argument: format, Given: "onnx", Choices: "flashinfer-bench"\n$/);
  // A database whose only problems have statistics: nothing FlashInfer-Bench defines.
  const stats = join(mkdtempSync(join(tmpdir(), 'normgen-fib-')), 'stats.jsonl');
  const all = readDbText(DB).trim().split('\n');
  const final = all.find((l) => l.includes('"stage":"final"') && l.includes('"status":"OK"'))!;
  writeFileSync(stats, [all[0], all[1], final.replace('"stats":false', '"stats":true')].join('\n') + '\n');
  const none = exportTo(join(mkdtempSync(join(tmpdir(), 'normgen-fib-')), 'x'), stats);
  assert.is(none.status, 2, none.stderr);
  assert.match(none.stderr, /^normgen: .*has no verified winners of an op FlashInfer-Bench defines/);
});

test.run();
