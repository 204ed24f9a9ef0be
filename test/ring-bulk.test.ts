// Which rings fill their slots with bulk copies (cp.async.bulk) and which with per-thread
// cp.async, in the PTX nvcc makes of them: cluster rings compiled for their hidden size with
// 16-byte vectors take bulk copies; rings without clusters, rings for any hidden size and
// narrower vectors keep cp.async (test/gpu/bulk-ring.md measured why).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeProblem, type KernelSpec } from '../generator/problem.js';
import { renderCudaUnit } from '../generator/render-cuda.js';
import { type CudaParams } from '../generator/space.js';
import { makeVariant, type Variant } from '../generator/variant.js';
import { findNvcc, unitFlags } from '../tuner/nvcc.js';

const spec = (dtype: 'bf16' | 'fp32', residual: 'none' | 'same' | 'fp32'): KernelSpec => ({
  op: 'rmsnorm',
  dtype,
  features: { weight: 'same', bias: false, weightOffset: false, residual, stats: false },
});
const ring = (p: Partial<CudaParams>): CudaParams => ({ storage: 'ring', threads: 256, vec: 8, threadsPerRow: 256, items: 8, cluster: 4, stages: 3, stagedWeights: true, ...p });

/** Each variant's PTX entry, by symbol, from one nvcc -ptx run over its unit. */
async function ptxBySymbol(s: KernelSpec, variants: Variant[]): Promise<Map<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-bulk-'));
  try {
    const source = join(dir, 'unit.cu');
    writeFileSync(source, renderCudaUnit(s, variants));
    const ptx = join(dir, 'unit.ptx');
    const r = spawnSync(await findNvcc(), ['-ptx', ...unitFlags('sm_90a'), '-o', ptx, source], { encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    const text = readFileSync(ptx, 'utf8');
    const entries = text.split(/\.visible \.entry /).slice(1);
    return new Map(entries.map((e) => [e.slice(0, e.indexOf('(')), e]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const BULK = /cp\.async\.bulk\.shared::cluster\.global/;
const PER_THREAD = /cp\.async\.cg\.shared\.global/;

test('cluster rings of a fixed hidden size take bulk copies; the others keep cp.async', async () => {
  const hidden = 65536; // 8 vectors of 8 x 256 threads x 4 CTAs: whole slices
  const cases: { s: KernelSpec; params: CudaParams; bulk: boolean; why: string }[] = [
    { s: spec('bf16', 'none'), params: ring({ fixedHidden: hidden }), bulk: true, why: 'cluster ring, fixed hidden' },
    { s: spec('bf16', 'none'), params: ring({ fixedHidden: hidden, stages: 4, deferOutput: true }), bulk: true, why: 'deferred output' },
    { s: spec('bf16', 'same'), params: ring({ fixedHidden: hidden }), bulk: true, why: 'with a residual of the same dtype' },
    { s: spec('bf16', 'none'), params: ring({}), bulk: false, why: 'any hidden size' },
    { s: spec('bf16', 'none'), params: ring({ fixedHidden: hidden / 2, cluster: 1, threads: 1024, threadsPerRow: 1024, items: 4, stages: 2, stagedWeights: false }), bulk: false, why: 'no cluster' },
    { s: spec('bf16', 'fp32'), params: ring({ fixedHidden: hidden }), bulk: false, why: 'fp32 residual: 32-byte vectors' },
    { s: spec('fp32', 'none'), params: ring({ fixedHidden: hidden, vec: 4, cluster: 8, stagedWeights: false }), bulk: true, why: 'fp32, 4-wide' },
  ];
  for (const c of cases) {
    const problem = makeProblem(c.s, c.params.fixedHidden ?? hidden, 8192);
    const v = makeVariant(problem, c.params);
    const ptx = (await ptxBySymbol(c.s, [v])).get(v.symbol);
    assert.ok(ptx, `${c.why}: ${v.symbol} is in the PTX`);
    assert.is(BULK.test(ptx!), c.bulk, `${c.why}: bulk copies`);
    assert.is(PER_THREAD.test(ptx!), !c.bulk, `${c.why}: per-thread cp.async`);
  }
});

test.run();
