import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findNvcc } from '../tuner/nvcc.js';

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

test('bad input: one clear line on stderr, exit code 2', () => {
  const cases: [string[], RegExp][] = [
    [['list', '--hidden', '0'], /--hidden must be a positive integer/],
    [['list', '--hidden', '12.5'], /--hidden must be a positive integer/],
    [['list', '--hidden', '64', '--rows', '-3'], /--rows must be a positive integer/],
    [['list', '--hidden', '64', '--op', 'groupnorm'], /unknown op 'groupnorm'/],
    [['list', '--hidden', '64', '--dtype', 'fp8'], /unknown dtype 'fp8'/],
    [['list', '--hidden', '64', '--arch', 'sm70'], /unknown arch 'sm70'/],
    [['generate', '--hidden', '64', '--out', '/dev/null/sub'], /cannot write to output folder/],
    [['tune', '--hidden', '64'], /--arch is required/],
    [['tune', '--arch', 'sm90', '--budget', 'lots'], /--budget must be/],
    [['tune', '--arch', 'sm90', '--seed-keep', '8'], /--seed-keep applies to --seed/],
    [['tune', '--arch', 'sm90', '--seed', '/nonexistent/old.jsonl'], /tuning database \/nonexistent\/old.jsonl does not exist/],
    [['tune', '--backend', 'wgsl', '--seed', 'old.jsonl'], /--seed is for --backend cuda/],
    [['list', '--backend', 'wgsl', '--hidden', '64'], /WGSL has no bf16/],
    [['generate', '--direction', 'bwd', '--backend', 'wgsl', '--dtype', 'fp32', '--hidden', '64', '--out', '/tmp/x'], /--backend wgsl has no backward kernels/],
  ];
  for (const [args, message] of cases) {
    const r = run(...args);
    assert.is(r.status, 2, `${args.join(' ')}: exit ${r.status} ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.is(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
  }
});

test('list prints the space as a table', () => {
  const out = execFileSync(process.execPath, [CLI, 'list', '--hidden', '4096', '--rows', '64', '--op', 'layernorm', '--residual', 'fp32'], { encoding: 'utf8' });
  const m = /: (\d+) variants/.exec(out);
  assert.ok(m && Number(m[1]) > 10, out);
  assert.match(out, /variant\s+storage\s+threads\s+vec/);
  // Variants that differ only in flags (register cap, early affine, fixed hidden) are told apart.
  const described = out.split('\n').map((line) => /^[0-9a-f]{12}\s+(\S+)/.exec(line)?.[1]).filter((d) => d !== undefined);
  assert.ok(described.length > 10, out);
  assert.is(new Set(described).size, described.length, out);
  assert.ok(described.some((d) => d.endsWith('.h4096')), out);
});

test('generate writes compilable sources and a manifest with launch geometry', () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-gen-'));
  execFileSync(process.execPath, [CLI, 'generate', '--hidden', '1000', '--rows', '77', '--dtype', 'fp16', '--stats', '--out', dir], { encoding: 'utf8' });
  const files = readdirSync(dir);
  assert.ok(files.includes('normgen_params.h'));
  const manifestFile = files.find((f) => f.endsWith('.manifest.json'))!;
  const manifest = JSON.parse(readFileSync(join(dir, manifestFile), 'utf8'));
  const cu = readFileSync(join(dir, manifest.units[0].file), 'utf8');
  for (const [id, v] of Object.entries<any>(manifest.variants)) {
    assert.ok(cu.includes(v.symbol), id);
    assert.is(v.launch.block, v.params.threads);
    assert.ok(v.launch.grid >= Math.ceil(77 / (v.params.threads / v.params.threadsPerRow)) || v.launch.persistent);
  }
});

test('generate --direction bwd writes a backward unit that compiles on its own, and its manifest', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-gen-bwd-'));
  const args = ['--direction', 'bwd', '--hidden', '1000', '--rows', '3', '--dtype', 'fp16', '--residual', 'same'];
  const listed = execFileSync(process.execPath, [CLI, 'list', ...args, '--limit', '1000'], { encoding: 'utf8' });
  execFileSync(process.execPath, [CLI, 'generate', ...args, '--out', dir], { encoding: 'utf8' });
  const manifestFile = readdirSync(dir).find((f) => f.endsWith('.manifest.json'))!;
  assert.match(manifestFile, /^rmsnorm\.bwd\.fp16\.w-same\.res-same\.h1000\.r3\.sm90\./);
  const manifest = JSON.parse(readFileSync(join(dir, manifestFile), 'utf8'));
  const variants = Object.entries<any>(manifest.variants);
  assert.is(variants.length, Number(/: (\d+) variants/.exec(listed)?.[1]), listed);
  // Only the unit's own folder on the include path: it needs no file of templates/.
  const ptx = join(dir, 'unit.ptx');
  execFileSync(await findNvcc(), ['-arch=sm_90a', '-std=c++17', '-I', dir, '-ptx', '-o', ptx, join(dir, manifest.units[0].file)]);
  const entries = new Set([...readFileSync(ptx, 'utf8').matchAll(/\.entry (\w+)\(/g)].map((m) => m[1]));
  for (const [id, v] of variants) {
    assert.ok(listed.includes(id) && entries.has(v.symbol) && entries.has(v.reduceSymbol), id);
    assert.is(v.launch.block, v.params.threads);
    assert.is(v.launch.ctasPerSm, v.params.ctasPerSm);
  }
});

test('generate --backend wgsl writes one shader per variant and a manifest', () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-wgsl-'));
  const args = ['--backend', 'wgsl', '--hidden', '1000', '--rows', '100000', '--dtype', 'fp16', '--residual', 'same', '--stats'];
  const listed = execFileSync(process.execPath, [CLI, 'list', ...args], { encoding: 'utf8' });
  const n = Number(/: (\d+) variants/.exec(listed)?.[1]);
  assert.ok(n > 10, listed);
  execFileSync(process.execPath, [CLI, 'generate', ...args, '--out', dir], { encoding: 'utf8' });
  const manifest = JSON.parse(readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith('.wgsl.manifest.json'))!), 'utf8'));
  assert.is(manifest.variants.length, n);
  assert.is(readdirSync(dir).filter((f) => f.endsWith('.wgsl')).length, n);
  for (const v of manifest.variants) {
    const code = readFileSync(join(dir, v.file), 'utf8');
    assert.ok(code.startsWith('// normgen') && code.includes('enable f16;') && code.includes('residual_out'), v.file);
    const rowsPerGroup = v.params.workgroup / v.params.threadsPerRow;
    assert.ok(v.dispatch[0] <= 65535 && v.dispatch[0] * v.dispatch[1] * rowsPerGroup >= 100000, JSON.stringify(v));
  }
});

test.run();
