// The compile pool's scheduling, with a stand-in worker instead of nvcc.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseArch } from '../generator/arch.js';
import { makeProblem } from '../generator/problem.js';
import { CompilePool } from '../tuner/compile-pool.js';
import { FORWARD } from '../tuner/direction.js';
import type { Variant } from '../generator/variant.js';
import { withFreshCache } from './fresh-cache.js';

const FAKE_WORKER = new URL('./fake-compile-worker.js', import.meta.url).href;

test('units finish in the order they were asked for, though each is several nvcc calls on a busy pool', async () => {
  const sm90 = parseArch('sm90');
  const finished: number[] = [];
  const units = [1024, 2048, 4096, 8192, 12288, 16384].map((hidden) => {
    const p = makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } }, hidden, 32768);
    return FORWARD.variants(p, sm90) as Variant[];
  });
  assert.ok(units.every((vs) => vs.length > 3 * 24), 'each unit takes several nvcc calls');
  // The stand-in's empty cubins go to a cache of their own, never seen by later tests.
  // One worker: piscina may hand a task to a worker still starting up, so with two the
  // order also depends on how long a worker takes to start (CI's busy 2 cores: unit 1
  // once finished before unit 0). One busy worker is enough to scatter chunks without
  // stricterFIFO (this test fails then), and its order depends on nothing else.
  await withFreshCache(async () => {
    const pool = new CompilePool(sm90, 1, FAKE_WORKER);
    try {
      await Promise.all(units.map((variants, i) => pool.build({ spec: variants[0].spec, variants }).then(() => finished.push(i))));
    } finally {
      await pool.close();
    }
  });
  assert.equal(finished, [0, 1, 2, 3, 4, 5]);
});

test.run();
