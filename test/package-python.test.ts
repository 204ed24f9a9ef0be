// The emitted PyTorch binding without a GPU or torch: both Python files compile, the
// ctypes struct matches normgen_fwd_desc in the C header (fields in order, kinds,
// offsets), the constants match the header's enums, and calls through ctypes reach
// the built library (same selection as the C harness, errors raised with C's message).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PYTHON_DIR } from '../generator/package.js';
import { library, nvcc, pkg, ROOT, selectAllC } from './built-package.js';

const PYTHON = process.env.PYTHON ?? 'python3';
try {
  execFileSync(PYTHON, ['--version'], { stdio: 'pipe' });
} catch {
  throw new Error(`the Python binding tests need ${PYTHON} (install python3 or set $PYTHON)`);
}
const ABI = join(pkg, PYTHON_DIR, 'abi.py');
const INIT = join(pkg, PYTHON_DIR, '__init__.py');
// -B: no __pycache__ next to the emitted files.
const python = (args: string[], input?: string) => execFileSync(PYTHON, ['-B', ...args], { encoding: 'utf8', input });

interface Field { name: string; kind: string; offset?: number; size?: number }

const C_KINDS: Record<string, string> = { int: 'int', normgen_op: 'int', normgen_dtype: 'int', int64_t: 'int64_t', float: 'float' };

/** The fields of normgen_fwd_desc in the header, in order, with the ctypes kind each needs. */
function headerFields(header: string): Field[] {
  const m = header.match(/typedef struct normgen_fwd_desc \{([\s\S]*?)\} normgen_fwd_desc;/);
  if (!m) throw new Error('normgen_fwd_desc not found in the header');
  const body = m[1].replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const fields: Field[] = [];
  for (const decl of body.split(';').map((s) => s.trim()).filter(Boolean)) {
    const [, type, declarators] = decl.match(/^(?:const\s+)?(\w+)\s*([\s\S]*)$/) ?? [];
    for (const d of declarators.split(',')) {
      const [, stars, name] = d.trim().match(/^(\**)\s*(\w+)$/) ?? [];
      if (!name) throw new Error(`cannot read the declaration '${decl}'`);
      const kind = stars ? 'pointer' : C_KINDS[type];
      if (!kind) throw new Error(`no ctypes kind for the C type '${type}' of ${name}: add it to the test and to abi.py`);
      fields.push({ name, kind });
    }
  }
  return fields;
}

/** NORMGEN_* enum constants of the header, without the prefix (as abi.py names them). */
function headerConstants(header: string): Record<string, number> {
  const code = header.replace(/\/\*[\s\S]*?\*\//g, ''); // comments may name NORMGEN_PDL=0, an environment setting
  return Object.fromEntries([...code.matchAll(/\bNORMGEN_(\w+)\s*=\s*(-?\d+)/g)].map((m) => [m[1], Number(m[2])]));
}

const header = readFileSync(join(pkg, 'include/normgen.h'), 'utf8');
const described = JSON.parse(python([join(ROOT, 'test/package-abi.py'), 'describe', ABI]));

test('both Python files of the binding compile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-pyc-'));
  for (const [i, f] of [ABI, INIT].entries())
    python(['-c', 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)', f, join(dir, `${i}.pyc`)]);
});

test('the header parser reads every declaration form the struct uses', () => {
  const fields = headerFields('typedef struct normgen_fwd_desc {\n  normgen_op op; /* c */\n  const void* x; void *y;\n  int64_t rows, hidden;\n  float eps;\n} normgen_fwd_desc;');
  assert.equal(fields, [
    { name: 'op', kind: 'int' }, { name: 'x', kind: 'pointer' }, { name: 'y', kind: 'pointer' },
    { name: 'rows', kind: 'int64_t' }, { name: 'hidden', kind: 'int64_t' }, { name: 'eps', kind: 'float' },
  ]);
  assert.throws(() => headerFields('typedef struct normgen_fwd_desc { double eps; } normgen_fwd_desc;'), /no ctypes kind/);
});

test('FwdDesc has the header fields of normgen_fwd_desc in order, with matching kinds', () => {
  const want = headerFields(header);
  assert.ok(want.length >= 20, `parsed ${want.length} fields`);
  assert.equal(described.fields.map((f: Field) => ({ name: f.name, kind: f.kind })), want);
});

test('FwdDesc has the C compiler’s offsets and size', () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-layout-'));
  const src = join(dir, 'layout.c');
  const lines = headerFields(header).map((f) => `  printf("${f.name} %zu %zu\\n", offsetof(normgen_fwd_desc, ${f.name}), sizeof(((normgen_fwd_desc*)0)->${f.name}));`);
  writeFileSync(src, `#include <stddef.h>\n#include <stdio.h>\n#include "normgen.h"\nint main(void) {\n  printf("size %zu\\n", sizeof(normgen_fwd_desc));\n${lines.join('\n')}\n  return 0;\n}\n`);
  execFileSync(nvcc, ['-x', 'cu', '-I', join(pkg, 'include'), '-o', join(dir, 'layout'), src]);
  const out = execFileSync(join(dir, 'layout'), { encoding: 'utf8' }).trim().split('\n').map((l) => l.split(' '));
  assert.is(described.size, Number(out[0][1]), 'sizeof(normgen_fwd_desc)');
  assert.equal(described.fields.map((f: Field) => `${f.name} ${f.offset} ${f.size}`), out.slice(1).map((l) => l.join(' ')));
});

test('the status, dtype and op constants match the header enums', () => {
  const want = headerConstants(header);
  assert.ok(Object.keys(want).length >= 10);
  assert.equal(described.consts, want);
});

test('SPECS lists the package’s kernel specs', () => {
  const dispatch = JSON.parse(readFileSync(join(pkg, 'dispatch.json'), 'utf8'));
  const entries = dispatch.tables.flatMap((t: { entries: { spec: string }[] }) => t.entries);
  assert.equal(described.specs, [...new Set<string>(entries.map((e: { spec: string }) => e.spec))].sort());
});

test('through ctypes the library selects what the C harness selects, and errors carry C’s message', () => {
  const cases: [string, string, string, number, number, number, number][] = [];
  for (const [op, dtype, residual] of [['rmsnorm', 'bf16', 'none'], ['rmsnorm', 'fp32', 'same'], ['layernorm', 'bf16', 'none']])
    for (const hidden of [1024, 5000, 65536, 7])
      for (const rows of [1, 3000]) for (const align of [16, 4]) cases.push([op, dtype, residual, hidden, rows, hidden + (align === 4 ? 8 : 0), align]);
  const got = JSON.parse(python([join(ROOT, 'test/package-abi.py'), 'calls', ABI, library], JSON.stringify(cases)));
  // ctypes reports the variant and the lookup path.
  const want = selectAllC(cases.map(([op, dtype, residual, hidden, rows, stride, alignBytes]) => ({ op, dtype, residual, hidden, rows, stride, alignBytes }))).map((c) => [c.variant, c.path]);
  assert.equal(got.select, want);
  assert.ok(new Set(want.map((w) => w[1])).size === 3, 'exact, nearest and generic selections exercised');
  assert.equal(got.rows0, { status: 2, message: 'normgen: NORMGEN_ERROR_BAD_SHAPE: rows and hidden must be positive', runtime_error: true });
  assert.is(got.untuned.status, 3);
  assert.match(got.untuned.message, /not in the package/);
});

test.run();
