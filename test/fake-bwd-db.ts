// A backward tuning database for the H200 of the committed forward database, with
// made-up times (deterministic per variant): every variant of the backward space of a
// small grid "measured" OK, so packages with a backward table can be built and checked
// without a GPU. Variants needing more dynamic shared memory than a machine without a GPU
// grants (the library then assumes 48 KiB) are made slow, so every made-up winner is one
// the library's selection can take there whatever the hash draws.
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { parseArch } from '../generator/arch.js';
import { problemKey } from '../generator/problem.js';
import { bwdSharedBytes, type BwdParams } from '../generator/space-bwd.js';
import { bwdTemplateHash } from '../generator/variant-bwd.js';
import { readDbText, TuningDb, type DbHeader } from '../tuner/db.js';
import { BACKWARD } from '../tuner/direction.js';
import { gridProblems, type GridSpec } from '../tuner/grid.js';

/** salt: other made-up times (another GPU's table); dtypes: fewer kernel specs (a shorter compile). */
export function fakeBwdDb(forwardDb: string, target: string, options: { salt?: string; dtypes?: ('bf16' | 'fp32')[] } = {}): void {
  const header = JSON.parse(readDbText(forwardDb).split('\n')[0]) as DbHeader;
  rmSync(target, { force: true });
  const db = TuningDb.open(target, { backend: 'cuda', arch: header.arch, device: header.device });
  const s = db.startSession({ started: '2026-11-26T00:00:00.000Z', command: 'fake', normgen: 'test', templateHash: bwdTemplateHash(), nvcc: 'test', copyGbps: 4000 });
  const arch = parseArch(header.arch);
  const grid: GridSpec = { ops: ['rmsnorm', 'layernorm'], dtypes: options.dtypes ?? ['bf16', 'fp32'], hiddens: [4096, 16384], rows: [32768], residual: 'same' };
  for (const p of gridProblems(grid, 1e12, 'bwd').problems)
    for (const v of BACKWARD.variants(p, arch)) {
      const needsGpu = bwdSharedBytes(p, v.params as BwdParams, p.hidden) + 1024 > 48 * 1024;
      const medianUs = 100 + (createHash('sha256').update(v.id + (options.salt ?? '')).digest().readUInt32BE(0) % 1000) + (needsGpu ? 2000 : 0);
      db.record({ session: s.session, problemKey: problemKey(p), problem: p, variantId: v.id, params: v.params, stage: 'final', status: 'OK', medianUs, minUs: medianUs, maxUs: medianUs, samples: 15, gbps: 1, fractionOfCopy: 0.5 });
    }
  db.close();
}
