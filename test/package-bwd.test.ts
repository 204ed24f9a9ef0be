// A package with a backward table (a made-up backward database beside the committed
// forward one): the backward kernels and launcher are emitted and compile with nvcc,
// the forward part is unchanged, and the C ABI's backward selection and argument checks
// work through the Python ctypes layer (no GPU: nothing is launched).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PYTHON_DIR } from '../generator/package.js';
import { backwardContext, type BwdPlan } from '../generator/package-bwd.js';
import { backwardSpec } from '../generator/problem.js';
import { bwdRingBytes, bwdSharedBytes, type BwdParams } from '../generator/space-bwd.js';
import { makeBwdVariant } from '../generator/variant-bwd.js';
import { CLI, COMMITTED, DB, mod as committedTs, pkg as committedPkg, ROOT } from './built-package.js';
import { fakeBwdDb } from './fake-bwd-db.js';
import { assertBackwardWinners, makePackage } from './test-package.js';

const dir = mkdtempSync(join(tmpdir(), 'normgen-bwd-pkg-'));
const bwdDb = join(dir, 'sm90-h200-bwd.jsonl');
fakeBwdDb(DB, bwdDb);
const pkg = join(dir, 'normgen-sm90-h200');
const build = (...dbs: string[]) => execFileSync(process.execPath, [CLI, 'build', ...dbs.flatMap((d) => ['--db', d]), '--out', pkg, '--name', 'normgen-sm90-h200'], { encoding: 'utf8' });

test('a backward database adds backward kernels, a launcher and autograd; forward kernels are unchanged', () => {
  build(DB, bwdDb);
  const src = readdirSync(join(pkg, 'src'));
  assert.ok(src.some((f) => f.startsWith('kernels_bwd_00_layernorm.bwd.bf16')));
  assert.ok(src.includes('normgen_bwd_params.h'));
  // The helpers once: forward and backward share normgen_common.cuh; no kernel file repeats them.
  const holders = src.filter((f) => readFileSync(join(pkg, 'src', f), 'utf8').includes('struct RowReducer'));
  assert.equal(holders, ['normgen_common.cuh']);
  assert.match(readFileSync(join(pkg, 'src', 'normgen_bwd_kernels.cuh'), 'utf8'), /#include "normgen_common.cuh"/);
  for (const f of src.filter((f) => f.startsWith('kernels_bwd_')))
    assert.match(readFileSync(join(pkg, 'src', f), 'utf8'), /#include "normgen_bwd_kernels.cuh"/);
  for (const f of readdirSync(join(COMMITTED, 'src')).filter((f) => f.startsWith('kernels_') && !f.startsWith('kernels_bwd_')))
    assert.ok(readFileSync(join(pkg, 'src', f)).equals(readFileSync(join(COMMITTED, 'src', f))), `forward kernels changed: ${f}`);
  const header = readFileSync(join(pkg, 'include/normgen.h'), 'utf8');
  assert.match(header, /normgen_status normgen_backward\(const normgen_bwd_desc\* desc\);/);
  const init = readFileSync(join(pkg, PYTHON_DIR, '__init__.py'), 'utf8');
  assert.match(init, /register_autograd\(_rms_backward/);
  assert.match(readFileSync(join(pkg, 'dispatch.json'), 'utf8'), /"backward"/);
  const readme = readFileSync(join(pkg, 'README.md'), 'utf8');
  assert.match(readme, /- Gradients: `y` and the residual sum are differentiable/);
  assert.not.match(readme, /Forward only/);
});

test('without a backward database the package has no backward at all', () => {
  const fwdOnly = join(dir, 'fwd-only');
  execFileSync(process.execPath, [CLI, 'build', '--db', DB, '--out', fwdOnly], { encoding: 'utf8' });
  assert.not.ok(readdirSync(join(fwdOnly, 'src')).some((f) => f.includes('bwd')));
  assert.not.match(readFileSync(join(fwdOnly, 'include/normgen.h'), 'utf8'), /backward/);
  assert.not.match(readFileSync(join(fwdOnly, PYTHON_DIR, '__init__.py'), 'utf8'), /register_autograd/);
  assert.not.match(readFileSync(join(fwdOnly, 'dispatch.json'), 'utf8'), /"backward"/);
  assert.match(readFileSync(join(fwdOnly, 'README.md'), 'utf8'), /- Forward only: backward through the outputs raises/);
});

test('the backward package compiles with nvcc (make), one object per source file', () => {
  makePackage(pkg);
  const objects = readdirSync(join(pkg, 'src')).filter((f) => f.endsWith('.cu')).map((f) => f.replace(/\.cu$/, '.o'));
  assert.equal(readdirSync(join(pkg, 'build')).sort(), objects.sort());
  // make -q exits 0 only when every target is up to date: the rules name what they build.
  execFileSync('make', ['-q', '-C', pkg]);
});

test('ctypes: BwdDesc matches the C struct, selection and errors through the library', () => {
  const script = `
import ctypes, importlib.util, json, sys
spec = importlib.util.spec_from_file_location("abi", sys.argv[1]); abi = importlib.util.module_from_spec(spec); spec.loader.exec_module(abi)
lib = abi.load(sys.argv[2])
def desc(hidden, rows, align=0, **kw):
    d = abi.BwdDesc(op=abi.LAYERNORM, dtype=abi.BF16, weight_dtype=abi.BF16, has_bias=1, weight_offset=0, residual_dtype=abi.NONE,
                    x=0x100000 + align, dy=0x200000, weight=0x300000, dx=0x400000, dweight=0x500000, dbias=0x600000,
                    rows=rows, hidden=hidden, x_stride=hidden, dy_stride=hidden, dx_stride=hidden, eps=1e-5)
    for k, v in kw.items(): setattr(d, k, v)
    return d
out = {"size": ctypes.sizeof(abi.BwdDesc), "specs": [s[0] for s in abi.BWD_SPECS]}
path = ctypes.c_int(-1)
out["select"] = [[lib.normgen_select_backward(ctypes.byref(d), ctypes.byref(path)), path.value] for d in
                 [desc(4096, 32768), desc(4000, 32768), desc(4096, 32768, align=2), desc(7, 3), desc(1 << 20, 2)]]
errors = {}
for name, d in [("null-dy", desc(4096, 8, dy=None)), ("stride", desc(4096, 8, dx_stride=100)), ("rows", desc(4096, 0)),
                ("unsupported", desc(4096, 8, dtype=abi.FP16, weight_dtype=abi.FP16)), ("no-dbias", desc(4096, 8, dbias=None))]:
    try:
        abi.backward(d, lib); errors[name] = None
    except abi.NormgenError as e:
        errors[name] = str(e)
out["errors"] = errors
print(json.dumps(out))
`;
  const got = JSON.parse(execFileSync('python3', ['-B', '-c', script, join(pkg, PYTHON_DIR, 'abi.py'), join(pkg, 'libnormgen.so')], { encoding: 'utf8' }));
  assert.is(got.size, 6 * 4 + 10 * 8 + 8 + 6 * 8 + 4 + 4 + 8); // enums, pointers, size_t, int64s, float (+ padding), stream
  assert.equal(got.specs, ['layernorm.bwd.bf16.w-same.bias', 'layernorm.bwd.fp32.w-same.bias', 'rmsnorm.bwd.bf16.w-same', 'rmsnorm.bwd.fp32.w-same']);
  const [exact, nearest, misaligned, tiny, huge] = got.select;
  assert.is(exact[1], 0);
  assert.is(nearest[1], 1);
  assert.ok(misaligned[1] === 1 || misaligned[1] === 2, 'a misaligned x cannot use 16-byte vectors');
  assert.is.not(misaligned[0], exact[0]);
  assert.is(tiny[1], 2, 'hidden 7: no 16-byte variant divides the stride, the generic runs it');
  assert.is(huge[1], 2, 'a 1M-long row runs the generic variant');
  assert.match(got.errors['null-dy'], /NORMGEN_ERROR_NULL_POINTER: dy is null/);
  assert.match(got.errors['stride'], /NORMGEN_ERROR_BAD_SHAPE: a row stride is smaller than hidden/);
  assert.match(got.errors['rows'], /rows and hidden must be positive/);
  assert.match(got.errors['unsupported'], /NORMGEN_ERROR_UNSUPPORTED: this backward op/);
  assert.match(got.errors['no-dbias'], /dbias is null/);
});

test('the launcher gives a lean kernel its staged weight: shared memory as the tuner launched it', () => {
  const spec = backwardSpec({ op: 'layernorm', dtype: 'bf16', features: { weight: 'same', bias: true, weightOffset: false, residual: 'none', stats: false } });
  const lean: BwdParams = { storage: 'regs', threads: 512, vec: 8, threadsPerRow: 512, items: 4, ctasPerSm: 1, recompute: true, prefetch: false, stages: 2, lean: true, reread: true, stagedWeight: true };
  const plan: BwdPlan = { variants: [makeBwdVariant(spec, lean)], specs: [], entries: [], files: [], rowBuckets: [], tables: [] };
  const [v] = backwardContext(plan).variants;
  assert.is(v.fixedBytes, bwdSharedBytes(spec, lean, 16384)); // regs: no sums in shared memory, all of it fixed
  assert.ok(v.fixedBytes > bwdRingBytes(spec, lean));
  assert.match(readFileSync(join(ROOT, 'templates/package/normgen.cu.hbs'), 'utf8'), /return sums \+ v\.fixed_bytes;/);
});

test("the committed package's TypeScript selectBackward picks each tuned backward problem's winner", () => {
  assert.is(assertBackwardWinners(committedTs, JSON.parse(readFileSync(join(committedPkg, 'dispatch.json'), 'utf8'))).flat().length, 8);
});

test('a backward database without its forward one is refused with a sentence', () => {
  assert.throws(() => execFileSync(process.execPath, [CLI, 'build', '--db', bwdDb, '--out', join(dir, 'x')], { stdio: 'pipe' }), /forward/);
});

test.run();
