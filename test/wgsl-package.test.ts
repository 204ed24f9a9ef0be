// The package's WebGPU API from a built package, on a real adapter (on CI: Mesa's
// lavapipe): a table tuned here, the kernels dispatched through createRmsNorm and
// createLayerNorm into a command encoder, every output checked against the float64
// reference; the default for an unknown adapter; clear errors for bad input.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Project, ts } from 'ts-morph';
import { makeProblem, residualDType, type KernelSpec } from '../generator/problem.js';
import { generateInputs, referenceForward } from '../generator/reference.js';
import { renderWgsl, wgslVariantId } from '../generator/render-wgsl.js';
import { OUTPUT_TOLERANCE, withinTolerance } from '../generator/tolerance.js';
import { featuresOf } from '../tuner/grid.js';
import { pack, poisoned, unpack, type Layout } from '../tuner/wgsl/buffers.js';
import { openDevice } from '../tuner/wgsl/dawn.js';
import { tuneWgsl } from '../tuner/wgsl/tune.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'normgen-webgpu-'));
const db = join(dir, 'lavapipe.jsonl');
const QUICK = { full: { samples: 3, sampleMs: 0.5 }, screen: { samples: 1, sampleMs: 0.2 } };

// A small table tuned on this adapter: RMSNorm f32 at hidden 96 and 256, LayerNorm f16 with a residual at 96.
for (const [op, dtype, hiddens] of [['rmsnorm', 'fp32', [96, 256]], ['layernorm+residual', 'fp16', [96]]] as const) {
  const out = await tuneWgsl({
    adapter: { backend: 'vulkan', flags: [] }, grid: { ops: [op], dtypes: [dtype], hiddens: [...hiddens], rows: [4], residual: 'same' },
    search: { kind: 'screen', keep: 1 }, dbPath: db, command: 'test', rotateBytes: 0, timing: QUICK,
  });
  out.db.close();
}
const pkg = join(dir, 'pkg');
const built = execFileSync(process.execPath, [CLI, 'build', '--db', join(ROOT, 'out/tuning/sm90-h200.jsonl.gz'), '--db', db, '--out', pkg], { encoding: 'utf8' });
const source = readFileSync(join(pkg, 'ts/webgpu.ts'), 'utf8');
writeFileSync(join(pkg, 'ts/webgpu.mjs'), ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText);
const mod = await import(pathToFileURL(join(pkg, 'ts/webgpu.mjs')).href);
const dawn = (await openDevice('vulkan'))!;
const device = dawn.device;

test('the build reports the WebGPU table; ts/webgpu.ts type-checks against the DOM WebGPU types', () => {
  assert.match(built, /WebGPU: 3 tuned problems on llvmpipe/);
  const p = new Project({ compilerOptions: { strict: true, noImplicitOverride: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'], types: [] } });
  p.createSourceFile('webgpu.ts', source);
  const d = p.getPreEmitDiagnostics();
  assert.is(d.length, 0, p.formatDiagnosticsWithColorAndContext(d.slice(0, 3)));
});

test('every shader in the package is the text the tuner verified (same spec, parameters and id)', () => {
  assert.ok(mod.WGSL_VARIANTS.length >= 6);
  for (const v of mod.WGSL_VARIANTS as { spec: string; id: string; params: never; shader: string }[]) {
    const s = mod.WGSL_SPECS.find((x: { key: string }) => x.key === v.spec);
    const spec: KernelSpec = { op: s.op, dtype: s.dtype, features: { weight: s.weight, bias: s.bias, weightOffset: s.weightOffset, residual: s.residual, stats: s.stats } };
    assert.is(v.shader, renderWgsl(spec, v.params));
    assert.is(v.id, wgslVariantId(spec, v.params));
  }
  const t = mod.WGSL_TABLES[0];
  assert.is(t.adapter.description, dawn.id.description);
  assert.is(t.adapter.backend, 'vulkan');
  assert.equal(t.rowBuckets, [4]);
});

interface Case {
  op: 'rmsnorm' | 'layernorm+residual';
  dtype: 'fp32' | 'fp16';
  hidden: number;
  rows: number;
  stride?: number;
  adapterInfo?: object;
}

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** Dispatch through the package API and compare every output with the reference; returns the choice. */
async function run(c: Case, m = mod): Promise<{ path: string; table: number; bad: number; first?: string }> {
  const stride = c.stride ?? c.hidden;
  const { op, features } = featuresOf(c.op, 'same');
  const spec: KernelSpec = { op, dtype: c.dtype, features };
  const problem = makeProblem(spec, c.hidden, c.rows, { x: stride, y: stride, residual: stride, residualOut: stride });
  const inputs = generateInputs(problem, c.rows, c.hidden, 7);
  const eps = op === 'rmsnorm' ? 1e-6 : 1e-5;
  const ref = referenceForward(problem, c.rows, c.hidden, inputs, eps);
  const rows = (dtype = c.dtype): Layout => ({ dtype, rows: c.rows, hidden: c.hidden, stride });
  const vector: Layout = { dtype: c.dtype, rows: 1, hidden: c.hidden, stride: c.hidden };
  const upload = (bytes: Uint8Array) => {
    const b = device.createBuffer({ size: bytes.byteLength, usage: STORAGE });
    device.queue.writeBuffer(b, 0, bytes);
    return b;
  };
  const buffers: Record<string, GPUBuffer> = { x: upload(pack(rows(), inputs.x)), y: upload(poisoned(rows())), weight: upload(pack(vector, inputs.weight!)) };
  if (features.bias) buffers.bias = upload(pack(vector, inputs.bias!));
  if (residualDType(spec)) {
    buffers.residual = upload(pack(rows(), inputs.residual!));
    buffers.residualOut = upload(poisoned(rows()));
  }
  const kernel = (op === 'rmsnorm' ? m.createRmsNorm : m.createLayerNorm)(device, {
    hidden: c.hidden, dtype: c.dtype, residual: features.residual, stride, ...(c.adapterInfo ? { adapterInfo: c.adapterInfo } : {}),
  });
  device.pushErrorScope('validation');
  const encoder = device.createCommandEncoder();
  const choice = kernel.encode(encoder, buffers, c.rows);
  device.queue.submit([encoder.finish()]);
  const error = await device.popErrorScope();
  assert.is(error, null, error?.message);
  const read = async (b: GPUBuffer) => {
    const staging = device.createBuffer({ size: b.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const e = device.createCommandEncoder();
    e.copyBufferToBuffer(b, 0, staging, 0, b.size);
    device.queue.submit([e.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const bytes = new Uint8Array(staging.getMappedRange().slice(0));
    staging.destroy();
    return bytes;
  };
  let bad = 0;
  let first: string | undefined;
  const compare = (name: string, got: ArrayLike<number>, want: Float64Array) => {
    for (let i = 0; i < want.length; i++)
      if (!withinTolerance(got[i], want[i], OUTPUT_TOLERANCE[c.dtype])) {
        bad++;
        first ??= `${name}[${i}] = ${got[i]}, expected ${want[i]}`;
      }
  };
  const y = unpack(rows(), await read(buffers.y));
  let refY = ref.y;
  if (buffers.residualOut) {
    const sum = unpack(rows(), await read(buffers.residualOut));
    compare('residualOut', sum.values, ref.residualOut!);
    bad += sum.clobbered;
    // The f16 sum may round either way (WGSL allows it): y normalizes the sum as written.
    refY = referenceForward({ ...problem, features: { ...features, residual: 'none' } }, c.rows, c.hidden, { ...inputs, x: Float64Array.from(sum.values) }, eps).y;
  }
  compare('y', y.values, refY);
  bad += y.clobbered;
  kernel.destroy();
  for (const b of Object.values(buffers)) b.destroy();
  return { path: choice.path, table: kernel.table, bad, first };
}

test('dispatches from the built package match the reference: tuned, nearest, default, strided, 2-D grid', async () => {
  const cases: [Case, string, number][] = [
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 96, rows: 4 }, 'exact', 0],
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 256, rows: 3000 }, 'exact', 0],
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 160, rows: 7 }, 'nearest', 0],
    // Stride 102 allows vec2 and scalar only: nearest when a tuned winner is one of those, else the default.
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 99, rows: 5, stride: 102 }, 'nearest|default', 0],
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 8, rows: 70000 }, 'nearest', 0],
    [{ op: 'layernorm+residual', dtype: 'fp16', hidden: 96, rows: 4 }, 'exact', 0],
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 1000, rows: 9, adapterInfo: { vendor: 'acme', device: 'gpu-1' } }, 'default', -1],
    [{ op: 'layernorm+residual', dtype: 'fp16', hidden: 101, rows: 3, stride: 104, adapterInfo: {} }, 'default', -1],
  ];
  for (const [c, path, table] of cases) {
    const r = await run(c);
    const label = JSON.stringify(c);
    assert.is(r.bad, 0, `${label}: ${r.first}`);
    assert.ok(path.split('|').includes(r.path), `${label}: path ${r.path}, expected ${path}`);
    assert.is(r.table, table, label);
  }
});

test('the committed package: the H200 table by its adapter identity (its shaders run here too), the default elsewhere', async () => {
  const committed = join(dir, 'committed-webgpu.mjs');
  const text = readFileSync(join(ROOT, 'out/normgen-sm90-h200/ts/webgpu.ts'), 'utf8');
  writeFileSync(committed, ts.transpileModule(text, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText);
  const h200 = await import(pathToFileURL(committed).href);
  const adapter = h200.WGSL_TABLES[0].adapter;
  assert.is(adapter.device, 'nvidia-h200-pcie-sse2');
  const cases: [Case, string, number][] = [
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 4096, rows: 2048, adapterInfo: adapter }, 'exact', 0],
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 1024, rows: 40, adapterInfo: { ...adapter, description: 'a newer driver' } }, 'exact', 0],
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 3000, rows: 100, adapterInfo: adapter }, 'nearest', 0],
    [{ op: 'rmsnorm', dtype: 'fp32', hidden: 4096, rows: 32 }, 'default', -1],
  ];
  for (const [c, path, table] of cases) {
    const r = await run(c, h200);
    assert.is(r.bad, 0, `${JSON.stringify(c)}: ${r.first}`);
    assert.is(r.path, path);
    assert.is(r.table, table);
  }
});

test('bad input: a NormError with a sentence, and nothing recorded', async () => {
  const b = (size: number, usage = STORAGE) => device.createBuffer({ size, usage });
  const rms = mod.createRmsNorm(device, { hidden: 96 });
  const ok = { x: b(4 * 96 * 4), y: b(4 * 96 * 4), weight: b(96 * 4) };
  const cases: [() => unknown, RegExp][] = [
    [() => mod.createRmsNorm(device, { hidden: 0 }), /hidden must be an integer >= 1, got 0/],
    [() => mod.createRmsNorm(device, { hidden: 96, dtype: 'bf16' }), /WGSL has no bf16/],
    [() => mod.createRmsNorm(device, { hidden: 96, stats: true }), /no WGSL kernel for .*it has: layernorm\.fp16\.w-same\.bias\.res-same, rmsnorm\.fp32\.w-same/],
    [() => mod.createRmsNorm(device, { hidden: 96, stride: 50 }), /stride 50 is smaller than hidden 96/],
    [() => mod.createRmsNorm(device, { hidden: 96, eps: -1 }), /eps must be a number >= 0/],
    [() => rms.encode(device.createCommandEncoder(), { x: ok.x, y: ok.y }, 4), /weight is required/],
    [() => rms.encode(device.createCommandEncoder(), { ...ok, bias: b(96 * 4) }, 4), /bias was given, but this rmsnorm\.fp32\.w-same kernel does not use it/],
    [() => rms.encode(device.createCommandEncoder(), { ...ok, x: b(64) }, 4), /x is 64 bytes; 4 rows need 1536/],
    [() => rms.encode(device.createCommandEncoder(), { ...ok, y: b(4 * 96 * 4, GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ) }, 4), /y needs GPUBufferUsage\.STORAGE/],
    [() => rms.encode(device.createCommandEncoder(), ok, 0), /rows must be an integer >= 1, got 0/],
  ];
  for (const [call, message] of cases) {
    assert.throws(call, (e: Error) => e.name === 'NormError' && message.test(e.message), String(message));
  }
  // A throw leaves the encoder as it was: it still finishes and submits cleanly.
  device.pushErrorScope('validation');
  const encoder = device.createCommandEncoder();
  assert.throws(() => rms.encode(encoder, { x: ok.x, y: ok.y }, 4));
  device.queue.submit([encoder.finish()]);
  assert.is(await device.popErrorScope(), null);
});

test.run();
