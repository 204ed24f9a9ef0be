import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { makeProblem, type KernelSpec } from '../generator/problem.js';
import { renderWgsl } from '../generator/render-wgsl.js';
import {
  DEFAULT_LIMITS,
  dispatchSize,
  enumerateWgslSpace,
  MAX_ITEMS,
  wgslMaxVec,
  wgslUnsupportedReason,
  type WgslLimits,
} from '../generator/space-wgsl.js';

const spec = (over: Partial<KernelSpec> = {}): KernelSpec => ({
  op: 'rmsnorm',
  dtype: 'fp32',
  features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false },
  ...over,
});
const RICH: WgslLimits = { ...DEFAULT_LIMITS, maxInvocations: 1024, f16: true, subgroups: true, subgroupMaxSize: 32 };

test('vector width follows the row strides', () => {
  assert.is(wgslMaxVec(makeProblem(spec(), 4096, 4)), 4);
  assert.is(wgslMaxVec(makeProblem(spec(), 1002, 4)), 2);
  assert.is(wgslMaxVec(makeProblem(spec(), 4095, 4)), 1);
  assert.is(wgslMaxVec(makeProblem(spec(), 1001, 4, { x: 1004, y: 1004 })), 4);
  const res = spec({ features: { ...spec().features, residual: 'same' } });
  assert.is(wgslMaxVec(makeProblem(res, 1001, 4, { x: 1004, y: 1004 })), 1, 'the residual strides count too');
});

test('the space respects the adapter limits and features', () => {
  const p = makeProblem(spec(), 4096, 1000);
  const plain = enumerateWgslSpace(p, DEFAULT_LIMITS);
  assert.ok(plain.length > 10);
  assert.ok(plain.every((v) => v.workgroup <= 256 && v.reduce === 'workgroup'));
  const small = enumerateWgslSpace(p, { ...DEFAULT_LIMITS, maxInvocations: 128 });
  assert.ok(small.every((v) => v.workgroup <= 128));
  const rich = enumerateWgslSpace(p, RICH);
  const sub = rich.filter((v) => v.reduce === 'subgroup');
  assert.ok(sub.length > 0);
  assert.ok(sub.every((v) => v.threadsPerRow >= 32), 'subgroups never span two rows');
  assert.equal(new Set(rich.map((v) => v.vec)), new Set([4, 2, 1]));
  for (const v of rich) assert.is(wgslUnsupportedReason(p, v, RICH), null);
  assert.ok(wgslUnsupportedReason(p, { workgroup: 256, vec: 4, threadsPerRow: 64, reduce: 'workgroup' }, { ...DEFAULT_LIMITS, maxWorkgroupStorage: 512 }));
});

test('cached rows: offered where the row fits, refused where it does not', () => {
  const p = makeProblem(spec(), 4096, 1000);
  const cached = enumerateWgslSpace(p, DEFAULT_LIMITS).filter((v) => v.items);
  assert.ok(cached.length > 0);
  for (const v of cached) assert.ok(v.items! * v.threadsPerRow * v.vec >= 4096 && v.items! <= MAX_ITEMS, JSON.stringify(v));
  const v = { workgroup: 256, vec: 4, threadsPerRow: 256, reduce: 'workgroup' as const, items: 4 };
  assert.is(wgslUnsupportedReason(p, v, DEFAULT_LIMITS), null);
  assert.match(wgslUnsupportedReason(makeProblem(spec(), 4100, 1), v, DEFAULT_LIMITS) ?? '', /exceeds the 4 cached vectors/);
  assert.is(wgslUnsupportedReason(makeProblem(spec(), 4099, 1, { x: 4100, y: 4100 }), v, DEFAULT_LIMITS), null, 'the tail is not cached');
});

test('dtypes the adapter cannot run give an empty space', () => {
  assert.equal(enumerateWgslSpace(makeProblem(spec({ dtype: 'bf16' }), 64, 1), RICH), []);
  assert.equal(enumerateWgslSpace(makeProblem(spec({ dtype: 'fp16' }), 64, 1), DEFAULT_LIMITS), []);
  assert.ok(enumerateWgslSpace(makeProblem(spec({ dtype: 'fp16' }), 64, 1), RICH).length > 0);
});

test('tiny problems still get a variant; short rows get no idle lanes', () => {
  assert.ok(enumerateWgslSpace(makeProblem(spec(), 1, 1), DEFAULT_LIMITS).length >= 1);
  const short = enumerateWgslSpace(makeProblem(spec(), 8, 4096), DEFAULT_LIMITS);
  assert.ok(short.every((v) => v.threadsPerRow === 1 || v.threadsPerRow * v.vec < 16));
});

test('more workgroups than one dimension allows wrap into a 2-D grid', () => {
  const v = { workgroup: 64, vec: 1, threadsPerRow: 64, reduce: 'workgroup' as const };
  assert.equal(dispatchSize(v, 1000, 65535), [1000, 1]);
  assert.equal(dispatchSize(v, 200000, 65535), [65535, 4]);
  assert.equal(dispatchSize({ ...v, threadsPerRow: 16 }, 200000, 65535), [50000, 1]);
});

test('rendered shaders carry their features and no unused bindings', () => {
  const full = spec({ op: 'layernorm', dtype: 'fp16', features: { weight: 'fp32', bias: true, weightOffset: true, residual: 'same', stats: true } });
  const src = renderWgsl(full, { workgroup: 128, vec: 4, threadsPerRow: 32, reduce: 'subgroup' });
  for (const s of ['enable f16;', 'enable subgroups;', 'subgroupAdd', 'alias XV = vec4<f16>;', 'alias WV = vec4<f32>;', '1.0 + ', 'mean_out', 'rstd_out', 'residual_out', 'first_t']) assert.ok(src.includes(s), s);
  const bare = renderWgsl(spec({ features: { weight: 'none', bias: false, weightOffset: false, residual: 'none', stats: false } }), { workgroup: 64, vec: 1, threadsPerRow: 64, reduce: 'workgroup' });
  for (const s of ['enable', 'weight', 'bias', 'residual', 'rstd_out', 'mean_out', 'subgroupAdd', 'first_t']) assert.not.ok(bare.includes(s), s);
  assert.ok(bare.includes('alias XV = f32;'));
});

test.run();
