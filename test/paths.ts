// Where the tests find the built CLI and the committed tuning databases and package.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ABOVE_DIST = fileURLToPath(new URL('../../', import.meta.url));
/**
 * The repository: above dist/, or, where dist/ is linked in from elsewhere (the GPU
 * machine's bundle holds dist/ without the sources), the working directory.
 */
export const ROOT = existsSync(join(ABOVE_DIST, 'test/package-harness.c')) ? ABOVE_DIST : process.cwd();
export const CLI = join(ROOT, 'dist/cli/main.js');
/** The H200's forward tune of the default grid. */
export const DB = join(ROOT, 'out/tuning/sm90-h200.jsonl.gz');
/** The WGSL tune of the same H200 (Dawn's OpenGL ES backend): the package's WebGPU table. */
export const WGSL_DB = join(ROOT, 'out/tuning/wgsl-h200-opengles.jsonl');
/** The backward tune of the same H200: the package's backward table. */
export const BWD_DB = join(ROOT, 'out/tuning/sm90-h200-bwd.jsonl');
export const COMMITTED = join(ROOT, 'out/normgen-sm90-h200');
/** The H100's forward and backward tunes, and its package (built with the H200's WGSL table). */
export const H100_DB = join(ROOT, 'out/tuning/sm90-h100-80gb-hbm3.jsonl.gz');
export const H100_BWD_DB = join(ROOT, 'out/tuning/sm90-h100-80gb-hbm3-bwd.jsonl');
/** The H100's tune under plain launches (NORMGEN_PDL=0): the package's plain-launch table. */
export const H100_PLAIN_DB = join(ROOT, 'out/tuning/sm90-h100-80gb-hbm3-plain.jsonl.gz');
export const H100_COMMITTED = join(ROOT, 'out/normgen-sm90-h100-80gb-hbm3');
/** Drives a built package from C without a GPU: argument checks and selection. */
export const HARNESS = join(ROOT, 'test/package-harness.c');
