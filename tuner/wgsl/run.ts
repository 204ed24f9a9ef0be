// Running WGSL variants of one problem on a Dawn adapter: inputs from the shared hash
// RNG and the float64 reference made once per problem, then per variant: outputs
// poisoned, one dispatch, every output checked against the reference, then timed.

import { bytesMoved, residualDType, weightDType, biasDType, type DType, type Problem } from '../../generator/problem.js';
import { generateInputs, referenceForward, type ForwardInputs } from '../../generator/reference.js';
import { BINDING, renderWgsl } from '../../generator/render-wgsl.js';
import { dispatchSize, wgslUnsupportedReason, type WgslParams } from '../../generator/space-wgsl.js';
import { OUTPUT_TOLERANCE, STATS_TOLERANCE, type Tolerance } from '../../generator/tolerance.js';
import type { Status } from '../measure.js';
import { byteSize, pack, poisoned, unpack, type Layout } from './buffers.js';
import type { DawnDevice } from './dawn.js';
import { compileWgsl } from './validate.js';

export type WgslStatus = Extract<Status, 'OK' | 'INCORRECT' | 'COMPILE_ERROR' | 'RUNTIME_ERROR' | 'TOO_LARGE' | 'BAD_REQUEST'>;

export interface WgslTiming {
  /** Timed batches; the median batch gives the time. */
  samples: number;
  /** Dispatches per batch are chosen so one batch takes about this long. */
  sampleMs: number;
  /** A fixed number of dispatches per batch instead (tests). */
  iterations?: number;
  /** Time with the wall clock even where the adapter has timestamp queries. */
  wallClock?: boolean;
}

export interface WgslRunOptions {
  seed: number;
  eps: number;
  /** Dispatches timed in one submission; 0: verify only (shorthand for timing: { samples: 1, iterations }). */
  iterations?: number;
  timing?: WgslTiming;
  /** Time over copies of the tensors at least this large in all (cold caches); 0: one copy. */
  rotateBytes?: number;
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
  /** Largest error over tolerance per output (<= 1 passes), as the CUDA runner reports it. */
  errors?: Record<string, number>;
  /** Bad elements per output (outside tolerance, or written outside the rows). */
  bad?: Record<string, number>;
  /** Outputs outside tolerance, plus positions outside the rows that were written. */
  mismatches?: number;
  /** Median time of one dispatch, microseconds (and the fastest and slowest batch's). */
  timeUs?: number;
  minUs?: number;
  maxUs?: number;
  samples?: number;
  /** Dispatches per timed batch, and tensor copies rotated over. */
  dispatchesPerSample?: number;
  copies?: number;
  timer?: 'timestamp-query' | 'wall-clock';
  gbps?: number;
}

type TensorName = keyof typeof BINDING;
const OUTPUTS: TensorName[] = ['y', 'residualOut', 'mean', 'rstd'];
const INPUTS: TensorName[] = ['x', 'residual'];

interface Tensor {
  name: TensorName;
  layout: Layout;
  buffer: GPUBuffer;
  /** Outputs: the poisoned bytes, on the device, copied over the output before each run. */
  poison?: GPUBuffer;
}

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** One problem on one adapter: tensors on the device and the reference, shared by every variant run on it. */
export class WgslProblemRun {
  private readonly tensors: Tensor[] = [];
  private readonly uniform: GPUBuffer;
  /** Extra copies of the rotated tensors (made at the first timing): per copy, name -> buffer. */
  private copies: Map<TensorName, GPUBuffer>[] = [];
  private readonly ref: ReturnType<typeof referenceForward>;
  private readonly inputs: ForwardInputs;

  private constructor(readonly dawn: DawnDevice, readonly problem: Problem, readonly o: WgslRunOptions) {
    const { device } = dawn;
    const { rows, hidden, strides } = problem;
    this.inputs = generateInputs(problem, rows, hidden, o.seed);
    this.ref = referenceForward(problem, rows, hidden, this.inputs, o.eps);
    const rowsOf = (dtype: DType, stride: number): Layout => ({ dtype, rows, hidden, stride });
    const vector = (dtype: DType): Layout => ({ dtype, rows: 1, hidden, stride: hidden });
    const stat: Layout = { dtype: 'fp32', rows, hidden: 1, stride: 1 };
    const input = (name: TensorName, layout: Layout, values: Float64Array) => this.add(name, layout, pack(layout, values));
    const output = (name: TensorName, layout: Layout) => {
      const bytes = poisoned(layout);
      this.add(name, layout, bytes).poison = this.upload(`${name}-poison`, bytes);
    };
    input('x', rowsOf(problem.dtype, strides.x), this.inputs.x);
    output('y', rowsOf(problem.dtype, strides.y));
    const r = residualDType(problem);
    if (r) {
      input('residual', rowsOf(r, strides.residual), this.inputs.residual!);
      output('residualOut', rowsOf(r, strides.residualOut));
    }
    const w = weightDType(problem);
    if (w) input('weight', vector(w), this.inputs.weight!);
    const b = biasDType(problem);
    if (b) input('bias', vector(b), this.inputs.bias!);
    if (problem.features.stats) {
      if (problem.op === 'layernorm') output('mean', stat);
      output('rstd', stat);
    }
    this.uniform = device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    const words = new Uint32Array(8);
    words.set([rows, hidden, strides.x, strides.y, strides.residual, strides.residualOut]);
    new Float32Array(words.buffer)[6] = o.eps;
    device.queue.writeBuffer(this.uniform, 0, words);
  }

  /** Tensors on the device, or why the problem cannot run on this adapter at all. */
  static prepare(dawn: DawnDevice, problem: Problem, o: WgslRunOptions): WgslProblemRun | WgslMeasurement {
    const { rows, hidden, strides } = problem;
    const largest = Math.max(
      byteSize({ dtype: problem.dtype, rows, hidden, stride: Math.max(strides.x, strides.y) }),
      byteSize({ dtype: residualDType(problem) ?? problem.dtype, rows, hidden, stride: Math.max(strides.residual, strides.residualOut) }),
    );
    const limits = dawn.device.limits;
    const limit = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
    if (largest > limit) return { status: 'TOO_LARGE', message: `a ${largest}-byte tensor exceeds the device's ${limit}-byte binding limit` };
    return new WgslProblemRun(dawn, problem, o);
  }

  private upload(label: string, bytes: Uint8Array): GPUBuffer {
    const buffer = this.dawn.device.createBuffer({ size: bytes.byteLength, usage: STORAGE, label });
    this.dawn.device.queue.writeBuffer(buffer, 0, bytes);
    return buffer;
  }

  private add(name: TensorName, layout: Layout, bytes: Uint8Array): Tensor {
    const t: Tensor = { name, layout, buffer: this.upload(name, bytes) };
    this.tensors.push(t);
    return t;
  }

  /** Verify a variant on this problem, then time it when asked and it passed. */
  async run(params: WgslParams, timing?: WgslTiming, mutate = this.o.mutate): Promise<WgslMeasurement> {
    const { dawn, problem } = this;
    const reason = wgslUnsupportedReason(problem, params, dawn.limits);
    if (reason) return { status: 'BAD_REQUEST', message: reason };
    const { device } = dawn;
    const code = renderWgsl(problem, params);
    const compiled = await compileCached(device, mutate ? mutate(code) : code);
    if (!compiled.pipeline) return { status: 'COMPILE_ERROR', message: compiled.error ?? '' };
    const pipeline = compiled.pipeline;
    const grid = dispatchSize(params, problem.rows, dawn.limits.maxWorkgroupsPerDimension);
    const bindGroup = (swap?: Map<TensorName, GPUBuffer>) =>
      device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: BINDING.params, resource: { buffer: this.uniform } },
          ...this.tensors.map((t) => ({ binding: BINDING[t.name], resource: { buffer: swap?.get(t.name) ?? t.buffer } })),
        ],
      });
    const encodePass = (encoder: GPUCommandEncoder, groups: GPUBindGroup[], times: number, timestampWrites?: GPUComputePassTimestampWrites) => {
      const pass = encoder.beginComputePass(timestampWrites ? { timestampWrites } : {});
      pass.setPipeline(pipeline);
      for (let i = 0; i < times; i++) {
        pass.setBindGroup(0, groups[i % groups.length]);
        pass.dispatchWorkgroups(grid[0], grid[1]);
      }
      pass.end();
    };

    try {
      device.pushErrorScope('validation');
      device.pushErrorScope('out-of-memory');
      const outputs = this.tensors.filter((t) => t.poison);
      const encoder = device.createCommandEncoder();
      for (const t of outputs) encoder.copyBufferToBuffer(t.poison!, 0, t.buffer, 0, t.buffer.size);
      encodePass(encoder, [bindGroup()], 1);
      device.queue.submit([encoder.finish()]);
      const read = await readBack(device, outputs.map((t) => t.buffer));
      const errors = [await device.popErrorScope(), await device.popErrorScope()].filter((e) => e);
      if (errors.length) return { status: 'RUNTIME_ERROR', message: errors.map((e) => e!.message).join('\n') };
      const m = this.check(outputs, read);
      if (m.status === 'OK' && timing) {
        const groups = [bindGroup(), ...this.rotationCopies().map(bindGroup)];
        Object.assign(m, await time(dawn, (enc, n, ts) => encodePass(enc, groups, n, ts), timing, bytesMoved(problem)), { copies: groups.length });
      }
      return m;
    } catch (e) {
      return { status: 'RUNTIME_ERROR', message: (e as Error).message };
    }
  }

  private check(outputs: Tensor[], read: Uint8Array[]): WgslMeasurement {
    const { problem, ref, inputs } = this;
    const { rows, hidden } = problem;
    const check = new Checker();
    const got = outputs.map((t, i) => unpack(t.layout, read[i]));
    // WGSL lets f32 -> f16 conversions round either way: the written sum may be one
    // ulp off the reference's (within tolerance, checked), and y must normalize the
    // sum as written, so y's reference is recomputed from it.
    const sum = got[outputs.findIndex((t) => t.name === 'residualOut')];
    const refY = sum
      ? referenceForward({ ...problem, features: { ...problem.features, residual: 'none' } }, rows, hidden, { ...inputs, x: Float64Array.from(sum.values) }, this.o.eps).y
      : ref.y;
    outputs.forEach((t, i) => {
      const want = t.name === 'y' ? refY : t.name === 'residualOut' ? ref.residualOut! : t.name === 'mean' ? ref.mean! : ref.rstd!;
      const tol = t.name === 'mean' || t.name === 'rstd' ? STATS_TOLERANCE : OUTPUT_TOLERANCE[t.layout.dtype];
      check.compare(t.name, got[i].values, want, tol, t.layout.hidden);
      if (got[i].clobbered) check.clobbered(t.name, got[i].clobbered);
    });
    const m: WgslMeasurement = { status: check.bad ? 'INCORRECT' : 'OK', maxError: check.maxError, mismatches: check.bad, errors: check.errors };
    if (check.bad) m.bad = check.badBy;
    if (check.first) m.message = check.first;
    return m;
  }

  /** Copies of the inputs (same values) and outputs, so timed dispatches cycle through more memory than the caches hold. */
  private rotationCopies(): Map<TensorName, GPUBuffer>[] {
    const rotated = this.tensors.filter((t) => INPUTS.includes(t.name) || OUTPUTS.includes(t.name));
    const perCopy = rotated.reduce((n, t) => n + t.buffer.size, 0);
    const want = Math.max(1, Math.min(64, Math.ceil((this.o.rotateBytes ?? 0) / perCopy)));
    if (this.copies.length + 1 >= want) return this.copies.slice(0, want - 1);
    const { device } = this.dawn;
    const encoder = device.createCommandEncoder();
    while (this.copies.length + 1 < want) {
      const copy = new Map<TensorName, GPUBuffer>();
      for (const t of rotated) {
        const b = device.createBuffer({ size: t.buffer.size, usage: STORAGE, label: `${t.name}-copy` });
        if (INPUTS.includes(t.name)) encoder.copyBufferToBuffer(t.buffer, 0, b, 0, t.buffer.size);
        copy.set(t.name, b);
      }
      this.copies.push(copy);
    }
    device.queue.submit([encoder.finish()]);
    return this.copies;
  }

  destroy(): void {
    for (const t of this.tensors) {
      t.buffer.destroy();
      t.poison?.destroy();
    }
    for (const c of this.copies) for (const b of c.values()) b.destroy();
    this.uniform.destroy();
  }
}

/**
 * Pipelines by shader text, per device: a variant's text depends on its kernel spec and
 * parameters, not on the shape (rows and hidden are uniforms), so the problems of one
 * spec share their compiles.
 */
const pipelines = new WeakMap<GPUDevice, Map<string, Promise<Awaited<ReturnType<typeof compileWgsl>>>>>();
function compileCached(device: GPUDevice, code: string) {
  let cache = pipelines.get(device);
  if (!cache) pipelines.set(device, (cache = new Map()));
  let c = cache.get(code);
  if (!c) cache.set(code, (c = compileWgsl(device, code)));
  return c;
}

/** One variant on one problem (prepares the problem for it alone). */
export async function runWgslVariant(dawn: DawnDevice, problem: Problem, params: WgslParams, o: WgslRunOptions): Promise<WgslMeasurement> {
  const reason = wgslUnsupportedReason(problem, params, dawn.limits);
  if (reason) return { status: 'BAD_REQUEST', message: reason };
  const run = WgslProblemRun.prepare(dawn, problem, o);
  if (!(run instanceof WgslProblemRun)) return run;
  try {
    const timing = o.timing ?? (o.iterations ? { samples: 1, sampleMs: 0, iterations: o.iterations, wallClock: o.wallClock } : undefined);
    return await run.run(params, timing);
  } finally {
    run.destroy();
  }
}

class Checker {
  bad = 0;
  maxError = 0;
  first: string | undefined;
  readonly errors: Record<string, number> = {};
  readonly badBy: Record<string, number> = {};

  compare(name: string, got: Float64Array | Float32Array, want: Float64Array, tol: Tolerance, hidden: number) {
    let worst = 0;
    let bad = 0;
    for (let i = 0; i < want.length; i++) {
      const err = Math.abs(got[i] - want[i]);
      const allowed = tol.atol + tol.rtol * Math.abs(want[i]);
      if (err <= allowed) {
        if (err > this.maxError) this.maxError = err;
        if (err / allowed > worst) worst = err / allowed;
        continue;
      }
      // Outside tolerance, or NaN (which fails every comparison).
      bad++;
      this.maxError = Number.isNaN(err) ? Infinity : Math.max(this.maxError, err);
      worst = Number.isNaN(err) ? Infinity : Math.max(worst, err / allowed);
      this.first ??= `${name}[row ${Math.floor(i / hidden)}, col ${i % hidden}] = ${got[i]}, expected ${want[i]}`;
    }
    this.errors[name] = worst;
    if (bad) this.badBy[name] = (this.badBy[name] ?? 0) + bad;
    this.bad += bad;
  }

  clobbered(name: string, count: number) {
    this.bad += count;
    this.badBy[name] = (this.badBy[name] ?? 0) + count;
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

/** Seconds for one batch of `n` dispatches in one pass and one submission. */
async function batch(dawn: DawnDevice, encodePass: EncodePass, n: number, timestamps: boolean): Promise<number> {
  const { device } = dawn;
  const encoder = device.createCommandEncoder();
  if (timestamps) {
    const querySet = device.createQuerySet({ type: 'timestamp', count: 2 });
    const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    encodePass(encoder, n, { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 });
    encoder.resolveQuerySet(querySet, 0, 2, resolved, 0);
    device.queue.submit([encoder.finish()]);
    const [bytesBack] = await readBack(device, [resolved]);
    const [start, end] = new BigUint64Array(bytesBack.buffer);
    querySet.destroy();
    resolved.destroy();
    return Number(end - start) * 1e-9;
  }
  encodePass(encoder, n);
  const commands = encoder.finish();
  const t0 = performance.now();
  device.queue.submit([commands]);
  await device.queue.onSubmittedWorkDone();
  return (performance.now() - t0) * 1e-3;
}

/**
 * Batches of many dispatches, each in one submission: GPU timestamps around the pass
 * where available, else the wall clock from submit to completion. A warm-up batch
 * sizes the batches; the median batch gives the time per dispatch.
 */
async function time(dawn: DawnDevice, encodePass: EncodePass, t: WgslTiming, bytes: number): Promise<Partial<WgslMeasurement>> {
  let timestamps = dawn.timestamps && !t.wallClock;
  const probe = 4;
  const warm = await batch(dawn, encodePass, probe, timestamps);
  let n = t.iterations ?? Math.max(1, Math.min(MAX_DISPATCHES, Math.ceil((t.sampleMs * 1e-3) / Math.max(warm / probe, 1e-7))));
  for (;;) {
    const per: number[] = [];
    for (let s = 0; s < Math.max(1, t.samples); s++) per.push((await batch(dawn, encodePass, n, timestamps)) / n);
    per.sort((a, b) => a - b);
    const median = per[Math.floor(per.length / 2)];
    // A batch shorter than the timer can resolve (a coarse timestamp period reads 0) is no
    // measurement: batch more dispatches, and past the cap use the wall clock.
    if (median * n < MIN_BATCH_S) {
      if (n < MAX_DISPATCHES && t.iterations === undefined) {
        n = Math.min(MAX_DISPATCHES, n * 10);
        continue;
      }
      if (timestamps) {
        timestamps = false;
        continue;
      }
    }
    return {
      timeUs: median * 1e6,
      minUs: per[0] * 1e6,
      maxUs: per[per.length - 1] * 1e6,
      samples: per.length,
      dispatchesPerSample: n,
      timer: timestamps ? 'timestamp-query' : 'wall-clock',
      gbps: median > 0 ? bytes / median / 1e9 : undefined,
    };
  }
}

const MAX_DISPATCHES = 20000;
/** The shortest batch taken as a time (a wall-clock batch always includes a submission, some microseconds). */
const MIN_BATCH_S = 1e-6;

/**
 * Device-to-device copy bandwidth (bytes read + written per second) in this process:
 * buffer-to-buffer copies, many per submission, wall clock, median of `samples`.
 */
export async function copyBandwidthWgsl(dawn: DawnDevice, bytes = 256 * 2 ** 20, samples = 7): Promise<number> {
  const { device } = dawn;
  const size = Math.min(bytes, device.limits.maxBufferSize) & ~3;
  const a = device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const b = device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(a, 0, new Uint8Array(Math.min(size, 2 ** 24)).fill(7));
  const run = async (n: number) => {
    const encoder = device.createCommandEncoder();
    for (let i = 0; i < n; i++) encoder.copyBufferToBuffer(i % 2 ? b : a, 0, i % 2 ? a : b, 0, size);
    const commands = encoder.finish();
    const t0 = performance.now();
    device.queue.submit([commands]);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t0) * 1e-3;
  };
  const warm = await run(2);
  const n = Math.max(2, Math.min(200, Math.ceil(0.02 / (warm / 2))));
  const rates: number[] = [];
  for (let s = 0; s < samples; s++) rates.push((2 * size * n) / (await run(n)) / 1e9);
  a.destroy();
  b.destroy();
  rates.sort((x, y) => x - y);
  return rates[Math.floor(rates.length / 2)];
}
