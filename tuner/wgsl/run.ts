// Running one WGSL variant on a Dawn adapter: inputs from the shared hash RNG,
// outputs poisoned, every output checked against the float64 reference, then timed.

import { bytesMoved, residualDType, weightDType, biasDType, type DType, type Problem } from '../../generator/problem.js';
import { generateInputs, referenceForward } from '../../generator/reference.js';
import { BINDING, renderWgsl } from '../../generator/render-wgsl.js';
import { dispatchSize, wgslUnsupportedReason, type WgslParams } from '../../generator/space-wgsl.js';
import { OUTPUT_TOLERANCE, STATS_TOLERANCE, withinTolerance, type Tolerance } from '../../generator/tolerance.js';
import type { Status } from '../measure.js';
import { byteSize, pack, poisoned, unpack, type Layout } from './buffers.js';
import type { DawnDevice } from './dawn.js';
import { compileWgsl } from './validate.js';

export type WgslStatus = Extract<Status, 'OK' | 'INCORRECT' | 'COMPILE_ERROR' | 'RUNTIME_ERROR' | 'TOO_LARGE' | 'BAD_REQUEST'>;

export interface WgslRunOptions {
  seed: number;
  eps: number;
  /** Dispatches timed in one submission; 0: verify only. */
  iterations: number;
  /** Time with the wall clock even where the adapter has timestamp queries. */
  wallClock?: boolean;
  /** Tests only: alter the shader text, to prove the checks catch a wrong kernel. */
  mutate?: (code: string) => string;
}

export interface WgslMeasurement {
  status: WgslStatus;
  /** Compiler output, the first mismatch, or why the variant cannot run. */
  message?: string;
  /** Largest |got - ref| over y (and the residual sum and statistics). */
  maxError?: number;
  /** Outputs outside tolerance, plus positions outside the rows that were written. */
  mismatches?: number;
  /** Mean time of one dispatch, microseconds. */
  timeUs?: number;
  timer?: 'timestamp-query' | 'wall-clock';
  gbps?: number;
}

interface Tensor {
  name: keyof typeof BINDING;
  layout: Layout;
  buffer: GPUBuffer;
}

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

export async function runWgslVariant(dawn: DawnDevice, problem: Problem, params: WgslParams, o: WgslRunOptions): Promise<WgslMeasurement> {
  const reason = wgslUnsupportedReason(problem, params, dawn.limits);
  if (reason) return { status: 'BAD_REQUEST', message: reason };
  const { device } = dawn;
  const code = renderWgsl(problem, params);
  const compiled = await compileWgsl(device, o.mutate ? o.mutate(code) : code);
  if (!compiled.pipeline) return { status: 'COMPILE_ERROR', message: compiled.error ?? '' };

  const { rows, hidden, strides } = problem;
  const largest = Math.max(
    byteSize({ dtype: problem.dtype, rows, hidden, stride: Math.max(strides.x, strides.y) }),
    byteSize({ dtype: residualDType(problem) ?? problem.dtype, rows, hidden, stride: Math.max(strides.residual, strides.residualOut) }),
  );
  const limit = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  if (largest > limit) return { status: 'TOO_LARGE', message: `a ${largest}-byte tensor exceeds the device's ${limit}-byte binding limit` };
  const inputs = generateInputs(problem, rows, hidden, o.seed);
  const ref = referenceForward(problem, rows, hidden, inputs, o.eps);
  const tensors: Tensor[] = [];
  const add = (name: Tensor['name'], layout: Layout, bytes: Uint8Array) => {
    const buffer = device.createBuffer({ size: bytes.byteLength, usage: STORAGE, label: name });
    device.queue.writeBuffer(buffer, 0, bytes);
    tensors.push({ name, layout, buffer });
  };
  const rowsOf = (dtype: DType, stride: number): Layout => ({ dtype, rows, hidden, stride });
  const vector = (dtype: DType): Layout => ({ dtype, rows: 1, hidden, stride: hidden });
  const stat: Layout = { dtype: 'fp32', rows, hidden: 1, stride: 1 };

  add('x', rowsOf(problem.dtype, strides.x), pack(rowsOf(problem.dtype, strides.x), inputs.x));
  add('y', rowsOf(problem.dtype, strides.y), poisoned(rowsOf(problem.dtype, strides.y)));
  const r = residualDType(problem);
  if (r) {
    add('residual', rowsOf(r, strides.residual), pack(rowsOf(r, strides.residual), inputs.residual!));
    add('residualOut', rowsOf(r, strides.residualOut), poisoned(rowsOf(r, strides.residualOut)));
  }
  const w = weightDType(problem);
  if (w) add('weight', vector(w), pack(vector(w), inputs.weight!));
  const b = biasDType(problem);
  if (b) add('bias', vector(b), pack(vector(b), inputs.bias!));
  if (problem.features.stats) {
    if (problem.op === 'layernorm') add('mean', stat, poisoned(stat));
    add('rstd', stat, poisoned(stat));
  }
  const uniform = device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const words = new Uint32Array(8);
  words.set([rows, hidden, strides.x, strides.y, strides.residual, strides.residualOut]);
  new Float32Array(words.buffer)[6] = o.eps;
  device.queue.writeBuffer(uniform, 0, words);

  const pipeline = compiled.pipeline;
  const bindGroup = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: BINDING.params, resource: { buffer: uniform } }, ...tensors.map((t) => ({ binding: BINDING[t.name], resource: { buffer: t.buffer } }))],
  });
  const grid = dispatchSize(params, rows, dawn.limits.maxWorkgroupsPerDimension);
  const encodePass = (encoder: GPUCommandEncoder, times: number, timestampWrites?: GPUComputePassTimestampWrites) => {
    const pass = encoder.beginComputePass(timestampWrites ? { timestampWrites } : {});
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    for (let i = 0; i < times; i++) pass.dispatchWorkgroups(grid[0], grid[1]);
    pass.end();
  };

  try {
    device.pushErrorScope('validation');
    device.pushErrorScope('out-of-memory');
    const encoder = device.createCommandEncoder();
    encodePass(encoder, 1);
    device.queue.submit([encoder.finish()]);
    const outputs = tensors.filter((t) => ['y', 'residualOut', 'mean', 'rstd'].includes(t.name));
    const read = await readBack(device, outputs.map((t) => t.buffer));
    const errors = [await device.popErrorScope(), await device.popErrorScope()].filter((e) => e);
    if (errors.length) return { status: 'RUNTIME_ERROR', message: errors.map((e) => e!.message).join('\n') };

    const check = new Checker();
    const got = outputs.map((t, i) => unpack(t.layout, read[i]));
    // WGSL lets f32 -> f16 conversions round either way: the written sum may be one
    // ulp off the reference's (within tolerance, checked), and y must normalize the
    // sum as written, so y's reference is recomputed from it.
    const sum = got[outputs.findIndex((t) => t.name === 'residualOut')];
    const refY = sum ? referenceForward({ ...problem, features: { ...problem.features, residual: 'none' } }, rows, hidden, { ...inputs, x: sum.values }, o.eps).y : ref.y;
    outputs.forEach((t, i) => {
      const want = t.name === 'y' ? refY : t.name === 'residualOut' ? ref.residualOut! : t.name === 'mean' ? ref.mean! : ref.rstd!;
      const tol = t.name === 'mean' || t.name === 'rstd' ? STATS_TOLERANCE : OUTPUT_TOLERANCE[t.layout.dtype];
      check.compare(t.name, got[i].values, want, tol, t.layout.hidden);
      if (got[i].clobbered) check.clobbered(t.name, got[i].clobbered);
    });
    const m: WgslMeasurement = { status: check.bad ? 'INCORRECT' : 'OK', maxError: check.maxError, mismatches: check.bad };
    if (check.first) m.message = check.first;
    if (m.status === 'OK' && o.iterations > 0) Object.assign(m, await time(dawn, encodePass, o.iterations, bytesMoved(problem), o.wallClock ?? false));
    return m;
  } catch (e) {
    return { status: 'RUNTIME_ERROR', message: (e as Error).message };
  } finally {
    for (const t of tensors) t.buffer.destroy();
    uniform.destroy();
  }
}

class Checker {
  bad = 0;
  maxError = 0;
  first: string | undefined;

  compare(name: string, got: Float64Array, want: Float64Array, tol: Tolerance, hidden: number) {
    for (let i = 0; i < want.length; i++) {
      const err = Math.abs(got[i] - want[i]);
      this.maxError = Number.isNaN(err) ? Infinity : Math.max(this.maxError, err);
      if (!withinTolerance(got[i], want[i], tol)) {
        this.bad++;
        this.first ??= `${name}[row ${Math.floor(i / hidden)}, col ${i % hidden}] = ${got[i]}, expected ${want[i]}`;
      }
    }
  }

  clobbered(name: string, count: number) {
    this.bad += count;
    this.first ??= `${name}: ${count} element(s) outside the rows were written`;
  }
}

async function readBack(device: GPUDevice, sources: GPUBuffer[]): Promise<Uint8Array[]> {
  const encoder = device.createCommandEncoder();
  const staging = sources.map((s) => {
    const d = device.createBuffer({ size: s.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.copyBufferToBuffer(s, 0, d, 0, s.size);
    return d;
  });
  device.queue.submit([encoder.finish()]);
  return Promise.all(
    staging.map(async (d) => {
      await d.mapAsync(GPUMapMode.READ);
      const bytes = new Uint8Array(d.getMappedRange().slice(0));
      d.destroy();
      return bytes;
    }),
  );
}

type EncodePass = (encoder: GPUCommandEncoder, times: number, timestampWrites?: GPUComputePassTimestampWrites) => void;

/** Many dispatches in one pass: GPU timestamps around it where available, else the wall clock. */
async function time(dawn: DawnDevice, encodePass: EncodePass, iterations: number, bytes: number, wallClock: boolean): Promise<Partial<WgslMeasurement>> {
  const { device } = dawn;
  const warm = device.createCommandEncoder();
  encodePass(warm, 2);
  device.queue.submit([warm.finish()]);
  await device.queue.onSubmittedWorkDone();

  let seconds: number;
  let timer: WgslMeasurement['timer'];
  const encoder = device.createCommandEncoder();
  if (dawn.timestamps && !wallClock) {
    const querySet = device.createQuerySet({ type: 'timestamp', count: 2 });
    const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    encodePass(encoder, iterations, { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 });
    encoder.resolveQuerySet(querySet, 0, 2, resolved, 0);
    device.queue.submit([encoder.finish()]);
    const [bytesBack] = await readBack(device, [resolved]);
    const [start, end] = new BigUint64Array(bytesBack.buffer);
    seconds = Number(end - start) * 1e-9;
    timer = 'timestamp-query';
    querySet.destroy();
    resolved.destroy();
  } else {
    encodePass(encoder, iterations);
    const t0 = performance.now();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
    seconds = (performance.now() - t0) * 1e-3;
    timer = 'wall-clock';
  }
  const per = seconds / iterations;
  return { timeUs: per * 1e6, timer, gbps: per > 0 ? bytes / per / 1e9 : undefined };
}
