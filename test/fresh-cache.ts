// Runs a test step with $NORMGEN_CACHE pointing at a new, empty folder, then removes the
// folder and restores the variable: uvu runs every test file in one process, so a cache left
// behind (or the stand-in compile worker's empty cubins) would be seen by later tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function withFreshCache<T>(step: () => Promise<T>): Promise<T> {
  const saved = process.env.NORMGEN_CACHE;
  const dir = mkdtempSync(join(tmpdir(), 'normgen-cache-'));
  process.env.NORMGEN_CACHE = dir;
  try {
    return await step();
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (saved === undefined) delete process.env.NORMGEN_CACHE;
    else process.env.NORMGEN_CACHE = saved;
  }
}
