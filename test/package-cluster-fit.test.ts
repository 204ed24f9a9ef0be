// Clusters of more than 8 CTAs are non-portable: another GPU of the tuned arch may hold
// none. The package's selection asks the GPU (cudaOccupancyMaxActiveClusters) and passes
// such a kernel over. Without a GPU here, the library is linked against the shared CUDA
// runtime and three of its calls are replaced (LD_PRELOAD) by a stand-in for such a GPU.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeDeviceDb } from './fake-device-db.js';
import { DB } from './paths.js';
import { buildTestPackage, SELECT_PATHS } from './test-package.js';
import { findNvcc } from '../tuner/nvcc.js';

const nvcc = await findNvcc();
const work = mkdtempSync(join(tmpdir(), 'normgen-cluster-fit-'));
const db = join(work, 'rmsnorm-bf16.jsonl');
fakeDeviceDb(DB, db, { device: {}, keep: (r) => r.problemKey.startsWith('rmsnorm.bf16.w-same.h') });
const { mod, selectC: select } = await buildTestPackage(join(work, 'pkg'), [db], '-cudart shared');

// A GPU on which 4 clusters of up to 8 CTAs fit and none larger.
const stub = join(work, 'small-gpcs.so');
writeFileSync(
  join(work, 'small-gpcs.c'),
  `#include <cuda_runtime.h>
cudaError_t cudaGetDevice(int* device) { *device = 0; return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void* f, enum cudaFuncAttribute a, int v) { (void)f; (void)a; (void)v; return cudaSuccess; }
cudaError_t cudaOccupancyMaxActiveClusters(int* n, const void* f, const cudaLaunchConfig_t* c) { (void)f; *n = c->gridDim.x > 8 ? 0 : 4; return cudaSuccess; }
`,
);
execFileSync(nvcc, ['-shared', '-cudart', 'none', '-Xcompiler', '-fPIC', '-o', stub, join(work, 'small-gpcs.c')]);

interface Choice {
  cluster: number;
  symbol: string;
  path: string;
}

function selectC(hidden: number, rows: number, env: NodeJS.ProcessEnv): Choice {
  const { variant, path } = select({ op: 'rmsnorm', dtype: 'bf16', residual: 'none', hidden, rows, device: { name: 'NVIDIA H200', cc: 90 } }, env);
  return { cluster: mod.VARIANTS[variant].cluster, symbol: mod.VARIANTS[variant].symbol, path: SELECT_PATHS[path] };
}

const shapes = [32768, 65536, 100000, 131072].flatMap((hidden) => [1, 32, 512, 2048, 32768].map((rows) => [hidden, rows] as const));
const tsChoice = ([hidden, rows]: readonly [number, number]) => mod.select({ op: 'rmsnorm', dtype: 'bf16', hidden, rows }, { name: 'NVIDIA H200', computeCapability: 90 });

test('the tuned table picks 16-CTA kernels here, and with no answer from a GPU the C selection keeps them', () => {
  const wide = shapes.filter((s) => tsChoice(s).variant.cluster > 8);
  assert.ok(wide.length >= 2, `shapes whose tuned kernel has clusters of 16: ${wide.length}`);
  for (const [hidden, rows] of shapes) {
    const c = selectC(hidden, rows, process.env);
    assert.is(c.symbol, tsChoice([hidden, rows]).variant.symbol, `h${hidden} r${rows}`);
  }
});

test('on a GPU that holds no cluster of 16, each such kernel is passed over for one that runs there', () => {
  let replaced = 0;
  for (const [hidden, rows] of shapes) {
    const want = tsChoice([hidden, rows]);
    const c = selectC(hidden, rows, { ...process.env, LD_PRELOAD: stub });
    if (want.variant.cluster <= 8) {
      assert.is(c.symbol, want.variant.symbol, `h${hidden} r${rows}: nothing to replace`);
      continue;
    }
    replaced++;
    assert.ok(c.cluster <= 8, `h${hidden} r${rows}: clusters of ${c.cluster}`);
    assert.is.not(c.path, 'exact', `h${hidden} r${rows}`);
  }
  assert.ok(replaced >= 2);
});

test.run();
