// The H200 package emitted into a temporary folder and built with make once per test
// run, with the C harness linked against it; shared by the package tests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findNvcc } from '../tuner/nvcc.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist/cli/main.js');
export const DB = join(ROOT, 'out/tuning/sm90-h200.jsonl.gz');
/** The WGSL tune of the same H200 (Dawn's OpenGL ES backend): the package's WebGPU table. */
export const WGSL_DB = join(ROOT, 'out/tuning/wgsl-h200-opengles.jsonl');
/** The backward tune of the same H200: the package's backward table. */
export const BWD_DB = join(ROOT, 'out/tuning/sm90-h200-bwd.jsonl');
export const COMMITTED = join(ROOT, 'out/normgen-sm90-h200');

/** The README's command: `normgen build` of the committed package into `out` (CUDA forward, backward and WGSL tables). */
export const buildPackage = (out: string) =>
  execFileSync(process.execPath, [CLI, 'build', '--db', DB, '--db', BWD_DB, '--db', WGSL_DB, '--out', out, '--name', 'normgen-sm90-h200'], {
    encoding: 'utf8',
  });

export const pkg = join(mkdtempSync(join(tmpdir(), 'normgen-pkg-')), 'normgen-sm90-h200');
buildPackage(pkg);

export const nvcc = await findNvcc();
execFileSync('make', ['-C', pkg, `NVCC=${nvcc}`], { stdio: 'pipe' });
export const library = join(pkg, 'libnormgen.so');
export const harness = join(pkg, 'harness');
execFileSync(nvcc, ['-O1', '-x', 'cu', '-I', join(pkg, 'include'), '-o', harness, join(ROOT, 'test/package-harness.c'), `-L${pkg}`, '-lnormgen', `-Xlinker`, `-rpath=${pkg}`]);
