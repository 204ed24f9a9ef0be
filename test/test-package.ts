// A package built from given tuning databases into a folder: compiled with make, the C
// harness linked against it, its TypeScript transpiled and imported. For package tests
// that need other tables than the committed package's, and for GPU checks of a built package.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ts } from 'ts-morph';
import { findNvcc } from '../tuner/nvcc.js';
import { CLI, HARNESS } from './paths.js';

const nvcc = await findNvcc();

/** `nvccFlags`: added to the package's nvcc (e.g. `-cudart shared`). */
export async function buildTestPackage(dir: string, dbs: string[], nvccFlags = '') {
  const log = execFileSync(process.execPath, [CLI, 'build', ...dbs.flatMap((d) => ['--db', d]), '--out', dir], { encoding: 'utf8' });
  execFileSync('make', ['-C', dir, `NVCC=${nvcc}${nvccFlags ? ` ${nvccFlags}` : ''}`], { stdio: 'pipe' });
  return { log, ...(await loadBuiltPackage(dir)) };
}

/** A package whose library is built (libnormgen.so in `dir`): the C harness linked against it, its TypeScript imported. */
export async function loadBuiltPackage(dir: string) {
  const harness = join(dir, 'harness');
  execFileSync(nvcc, ['-O1', '-x', 'cu', '-I', join(dir, 'include'), '-o', harness, HARNESS, `-L${dir}`, '-lnormgen', '-Xlinker', `-rpath=${dir}`]);
  const js = ts.transpileModule(readFileSync(join(dir, 'ts/index.ts'), 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  writeFileSync(join(dir, 'ts/index.mjs'), js);
  const mod = await import(pathToFileURL(join(dir, 'ts/index.mjs')).href);
  /** The harness's output for these arguments; runWith: in another environment. */
  const runWith = (env: NodeJS.ProcessEnv, ...args: string[]) => execFileSync(harness, args, { encoding: 'utf8', env }).trim();
  const run = (...args: string[]) => runWith(process.env, ...args);
  return { dir, mod, run, runWith };
}
