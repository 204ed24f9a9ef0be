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

/**
 * Every tuned backward problem of each table in dispatch.json: the package's TypeScript
 * selectBackward on that table's device takes the exact path to a variant of the tuned
 * parameters. Returns the variants picked, per table in its entries' order.
 */
export function assertBackwardWinners(mod: { selectBackward: Function; TABLES: { device: string; computeCapability: number }[] }, dispatch: { tables: { backward?: { entries: BackwardEntry[] } }[] }): unknown[][] {
  return dispatch.tables.map((t, table) =>
    (t.backward?.entries ?? []).map((e) => {
      const [op, , dtype] = e.spec.split('.');
      const device = { name: mod.TABLES[table].device, computeCapability: mod.TABLES[table].computeCapability };
      const got = mod.selectBackward({ op, dtype, bias: e.spec.includes('.bias'), savedStats: e.spec.endsWith('.stats'), hidden: e.hidden, rows: e.rows }, device);
      const label = `${mod.TABLES[table].device} ${e.spec} h${e.hidden} r${e.rows}`;
      assert.is(got?.path, 'exact', label);
      assert.is(got.table, table, label);
      for (const key of ['storage', 'threads', 'vec', 'threadsPerRow', 'items', 'ctasPerSm', 'recompute'])
        assert.is(got.variant[key], e.params[key], `${label}: ${key}`);
      return got.variant;
    }),
  );
}

interface BackwardEntry {
  spec: string;
  hidden: number;
  rows: number;
  params: Record<string, unknown>;
}

/** The lookup paths, as the harness numbers them. */
export const SELECT_PATHS = ['exact', 'nearest', 'generic'] as const;

/** A package's ts/index.ts, transpiled beside it (index.mjs) and imported. */
export async function importPackageTs(dir: string) {
  const js = ts.transpileModule(readFileSync(join(dir, 'ts/index.ts'), 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  writeFileSync(join(dir, 'ts/index.mjs'), js);
  return import(pathToFileURL(join(dir, 'ts/index.mjs')).href);
}

/** A package whose library is built (libnormgen.so in `dir`): the C harness linked against it, its TypeScript imported. */
export async function loadBuiltPackage(dir: string) {
  const harness = join(dir, 'harness');
  execFileSync(nvcc, ['-O1', '-x', 'cu', '-I', join(dir, 'include'), '-o', harness, HARNESS, `-L${dir}`, '-lnormgen', '-Xlinker', `-rpath=${dir}`]);
  const mod = await importPackageTs(dir);
  /** The harness's output for these arguments; runWith: in another environment. */
  const runWith = (env: NodeJS.ProcessEnv, ...args: string[]) => execFileSync(harness, args, { encoding: 'utf8', env }).trim();
  const run = (...args: string[]) => runWith(process.env, ...args);
  /** The harness's answers to one line of fields per query: index into the variants (-1: none), lookup path (SELECT_PATHS) and table. */
  const answers = (mode: string, lines: (string | number)[][], env: NodeJS.ProcessEnv) => {
    const input = lines.map((fields) => fields.join('\t')).join('\n') + '\n';
    const out = execFileSync(harness, [mode], { encoding: 'utf8', env, input, maxBuffer: 64 << 20 }).trim().split('\n');
    if (out.length !== lines.length) throw new Error(`harness ${mode}: ${out.length} answers to ${lines.length} queries`);
    return out.map((l) => {
      const [variant, path, table, twin] = l.split(' ').map(Number);
      return { variant, path, table, ...(twin === undefined ? {} : { twin }) };
    });
  };
  const where = (q: SelectQuery) => [q.stride ?? q.hidden, q.alignBytes ?? 16, ...(q.device ? [q.device.name, q.device.cc] : [])];
  /** The C library's choices (normgen_select), one harness process for all queries (each start initializes CUDA). */
  const selectLines = (queries: SelectQuery[]) => queries.map((q) => [q.op, q.dtype, q.residual, q.hidden, q.rows, ...where(q)]);
  const selectAllC = (queries: SelectQuery[], env = process.env) => answers('select', selectLines(queries), env);
  const selectC = (q: SelectQuery, env = process.env) => selectAllC([q], env)[0];
  /** The C library's choices for plain launches (normgen_select_plain_in), and twin: 1 where it runs as its plain twin (normgen_plain_twin_in). */
  const selectAllPlainC = (queries: SelectQuery[]) => answers('select-plain', selectLines(queries), process.env);
  /** The same for backward calls (normgen_select_backward_in; saved statistics not given, no residual): index into BWD_VARIANTS. */
  const selectAllBwdC = (queries: Omit<SelectQuery, 'residual'>[], env = process.env) =>
    answers('select-bwd', queries.map((q) => [q.op, q.dtype, q.hidden, q.rows, ...where({ ...q, residual: 'none' })]), env);
  return { dir, mod, run, runWith, selectC, selectAllC, selectAllPlainC, selectAllBwdC };
}
