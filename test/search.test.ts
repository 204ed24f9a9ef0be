// The search's accounting of work for the progress line: what count() plans is what run()
// reports done, finals included, when a tune runs to its end and when it resumes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeProblem, problemKey, type KernelSpec, type Problem } from '../generator/problem.js';
import { TuningDb, type Stage } from '../tuner/db.js';
import type { DeviceId } from '../tuner/device.js';
import { measurementCost, SearchPlan } from '../tuner/search.js';

const device: DeviceId = { name: 'NVIDIA H200', arch: 'sm90', computeCapability: '9.0', sms: 132, memoryBytes: 150e9, l2Bytes: 62914560, driver: '580.1', driverCuda: 13000, cudaRuntime: 13000, uuid: 'x' };
const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
const small = makeProblem(spec, 4096, 8);
const large = makeProblem(spec, 16384, 32768);
const ids = ['a', 'b', 'c', 'd', 'e', 'f'];

function freshPlan(baseline: string) {
  const db = TuningDb.open(join(mkdtempSync(join(tmpdir(), 'normgen-search-')), 'db.jsonl'), { backend: 'cuda', arch: 'sm90', device });
  const session = db.startSession({ started: 'now', command: 'test', normgen: '0', templateHash: 'h', nvcc: '13', copyGbps: 4000 });
  const plan = new SearchPlan(db, { kind: 'screen', keep: 2 }, () => baseline);
  // Variant 'a' is fastest, then 'b', ...; times grow with the id.
  const measure = (p: Problem) => async (id: string, stage: Stage) =>
    db.record({ session: session.session, problemKey: problemKey(p), problem: p, variantId: id, params: {} as never, stage, status: 'OK', medianUs: 1 + ids.indexOf(id) });
  return { db, plan, measure };
}

async function runAll(plan: SearchPlan<object>, measure: (p: Problem) => (id: string, stage: Stage) => Promise<never>) {
  let worked = 0;
  let counted = 0;
  for (const p of [small, large]) await plan.run(p, ids, measure(p) as never, () => counted++, (c) => (worked += c));
  return { worked, counted };
}

test('a measurement of more bytes costs more; a final costs several screenings', () => {
  assert.ok(measurementCost(large, 'screen') > 1.5 * measurementCost(small, 'screen'));
  assert.ok(measurementCost(small, 'final') > 4 * measurementCost(small, 'screen'));
  assert.ok(measurementCost(large, 'final') > measurementCost(large, 'screen'));
});

test('count() plans the screenings and keep + 1 finals; run() reports that work done', async () => {
  const { plan, measure } = freshPlan('f'); // the baseline is the slowest: three finals a problem
  const { total, skipped, work } = plan.count([[small, ids], [large, ids]]);
  assert.is(total, 12);
  assert.is(skipped, 0);
  const expected = [small, large].reduce((s, p) => s + 6 * measurementCost(p, 'screen') + 3 * measurementCost(p, 'final'), 0);
  assert.ok(Math.abs(work - expected) < 1e-9, `${work} vs ${expected}`);
  const { worked, counted } = await runAll(plan as never, measure as never);
  assert.is(counted, 12);
  assert.ok(Math.abs(worked - work) < 1e-9, `${worked} vs ${work}`);
});

test('fewer finals than planned (the baseline among the best) still add up to the plan', async () => {
  const { plan, measure } = freshPlan('a');
  const { work } = plan.count([[small, ids], [large, ids]]);
  const { worked } = await runAll(plan as never, measure as never);
  assert.ok(Math.abs(worked - work) < 1e-9, `${worked} vs ${work}`);
});

test('a resumed tune plans only what is missing: finals of a screened problem, nothing for a finished one', async () => {
  const { db, plan, measure } = freshPlan('f');
  await plan.run(small, ids, measure(small), () => undefined);
  // The large problem screened, its finals lost (as when a tune is killed between them).
  for (const id of ids) await measure(large)(id, 'screen');
  const resumed = new SearchPlan(db, { kind: 'screen', keep: 2 }, () => 'f');
  const { total, skipped, work } = resumed.count([[small, ids], [large, ids]]);
  assert.is(total, 0);
  assert.is(skipped, 12);
  assert.ok(Math.abs(work - 3 * measurementCost(large, 'final')) < 1e-9, String(work));
  let worked = 0;
  await resumed.run(large, ids, measure(large), () => undefined, (c) => (worked += c));
  assert.ok(Math.abs(worked - work) < 1e-9, `${worked} vs ${work}`);
  assert.is(resumed.count([[small, ids], [large, ids]]).work, 0);
});

test.run();
