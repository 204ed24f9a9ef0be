// The H200 package emitted into a temporary folder and built with make once per test
// run, with the C harness linked against it; shared by the package tests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findNvcc } from '../tuner/nvcc.js';
import { BWD_DB, CLI, DB, WGSL_DB } from './paths.js';
import { loadBuiltPackage, makePackage } from './test-package.js';

export { CLI, COMMITTED, DB, ROOT } from './paths.js';

/** The README's command: `normgen build` of the committed package into `out` (CUDA forward, backward and WGSL tables). */
export const buildPackage = (out: string) =>
  execFileSync(process.execPath, [CLI, 'build', '--db', DB, '--db', BWD_DB, '--db', WGSL_DB, '--out', out, '--name', 'normgen-sm90-h200'], {
    encoding: 'utf8',
  });

export const pkg = join(mkdtempSync(join(tmpdir(), 'normgen-pkg-')), 'normgen-sm90-h200');
buildPackage(pkg);

export const nvcc = await findNvcc();
makePackage(pkg);
export const library = join(pkg, 'libnormgen.so');
/** The package's TypeScript module, the C harness (linked against the library) run with arguments, and its selection. */
export const { mod, run, selectC, selectAllC } = await loadBuiltPackage(pkg);
export const harness = join(pkg, 'harness');
