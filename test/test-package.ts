// A package built from given tuning databases into a folder: compiled with make, the C
// harness linked against it, its TypeScript transpiled and imported. For package tests
// that need other tables than the committed package's, and for GPU checks of a built package.
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ts } from 'ts-morph';
import { findNvcc } from '../tuner/nvcc.js';
import { CLI, HARNESS, ROOT } from './paths.js';

const nvcc = await findNvcc();

/** `nvccFlags`: added to the package's nvcc (e.g. `-cudart shared`). */
export async function buildTestPackage(dir: string, dbs: string[], nvccFlags = '') {
  const log = execFileSync(process.execPath, [CLI, 'build', ...dbs.flatMap((d) => ['--db', d]), '--out', dir], { encoding: 'utf8' });
  makePackage(dir, nvccFlags);
  return { log, ...(await loadBuiltPackage(dir)) };
}

/** The package's Makefile, its nvcc calls (one per source file) in parallel; `nvccFlags` as above. */
export function makePackage(dir: string, nvccFlags = '') {
  execFileSync('make', ['-C', dir, `-j${availableParallelism()}`, `NVCC=${nvcc}${nvccFlags ? ` ${nvccFlags}` : ''}`], { stdio: 'pipe' });
}

/** A call the harness's `select` answers: stride defaults to hidden, alignment to 16 bytes; device: the GPU to select for. */
export interface SelectQuery {
  op: string;
  dtype: string;
  residual: string;
  hidden: number;
  rows: number;
  stride?: number;
  alignBytes?: number;
  device?: { name: string; cc: number };
}

/** A package's files, without build outputs (the library, CMake's build/, Python bytecode). */
const packageFiles = (dir: string): string[] =>
  readdirSync(dir)
    .filter((f) => f !== '__pycache__' && f !== 'build')
    .flatMap((f) => (statSync(join(dir, f)).isDirectory() ? packageFiles(join(dir, f)).map((g) => join(f, g)) : [f]))
    .filter((f) => !f.endsWith('.so') && !f.endsWith('.pyc'))
    .sort();

/** `emitted` has the files of `expected`, each byte for byte (a re-emitted package against the committed one, or two emissions). */
export function assertSamePackage(expected: string, emitted: string) {
  assert.equal(packageFiles(expected), packageFiles(emitted), `${relative(ROOT, expected)}: the same files`);
  for (const f of packageFiles(emitted))
    assert.ok(readFileSync(join(emitted, f)).equals(readFileSync(join(expected, f))), `re-emit differs: ${relative(ROOT, join(expected, f))}`);
}

/** The lookup paths, as the harness numbers them. */
export const SELECT_PATHS = ['exact', 'nearest', 'generic'] as const;

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
  /** The C library's choices (normgen_select), one harness process for all queries: index into VARIANTS (-1: none), lookup path (SELECT_PATHS) and table. */
  const selectAllC = (queries: SelectQuery[], env = process.env) => {
    const line = (q: SelectQuery) =>
      [q.op, q.dtype, q.residual, q.hidden, q.rows, q.stride ?? q.hidden, q.alignBytes ?? 16, ...(q.device ? [q.device.name, q.device.cc] : [])].join('\t');
    const out = execFileSync(harness, ['select'], { encoding: 'utf8', env, input: queries.map(line).join('\n') + '\n', maxBuffer: 64 << 20 });
    const lines = out.trim().split('\n');
    if (lines.length !== queries.length) throw new Error(`harness select: ${lines.length} answers to ${queries.length} queries`);
    return lines.map((l) => {
      const [variant, path, table] = l.split(' ').map(Number);
      return { variant, path, table };
    });
  };
  const selectC = (q: SelectQuery, env = process.env) => selectAllC([q], env)[0];
  return { dir, mod, run, runWith, selectC, selectAllC };
}
