// `normgen tune --backend wgsl` on a real adapter (on CI: Mesa's lavapipe): every
// variant verified and timed, a wrong variant never wins, the database resumes after
// SIGKILL, and foreign or corrupt databases are refused.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { problemKey } from '../generator/problem.js';
import { wgslVariantId } from '../generator/render-wgsl.js';
import { ortBaselineParams } from '../generator/space-wgsl.js';
import { readDbText, TuningDb } from '../tuner/db.js';
import type { GridSpec } from '../tuner/grid.js';
import { WGSL_NAMING, winners } from '../tuner/select.js';
import { tuneWgsl, wgslVariantsOf, type WgslTuneOptions } from '../tuner/wgsl/tune.js';

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const tmp = (name: string) => join(mkdtempSync(join(tmpdir(), 'normgen-wgsl-tune-')), name);
const grid: GridSpec = { ops: ['rmsnorm', 'layernorm'], dtypes: ['fp32'], hiddens: [96], rows: [3], residual: 'same' };
const QUICK = { full: { samples: 3, sampleMs: 0.5 }, screen: { samples: 1, sampleMs: 0.2 } };
const options = (dbPath: string, extra: Partial<WgslTuneOptions> = {}): WgslTuneOptions => ({
  adapter: { backend: 'vulkan', flags: [] }, grid, search: { kind: 'exhaustive' }, dbPath, command: 'test', rotateBytes: 0, timing: QUICK, ...extra,
});

test('every variant verified and timed once per problem, keyed by the adapter; a re-run has nothing to do', async () => {
  const dbPath = tmp('db.jsonl');
  const out = await tuneWgsl(options(dbPath));
  out.db.close();
  const db = TuningDb.readCheckedWgsl(dbPath);
  assert.is(db.header.backend, 'wgsl');
  assert.is(db.header.arch, 'vulkan');
  assert.is(db.header.device.description, out.dawn.id.description);
  assert.ok(db.header.device.features.includes('subgroups'));
  assert.ok(db.sessions[0].copyGbps > 0);
  for (const p of out.problems) {
    const mine = db.results.filter((r) => r.problemKey === problemKey(p));
    const want = new Set(wgslVariantsOf(p, out.dawn).keys());
    assert.equal(new Set(mine.map((r) => r.variantId)), want);
    assert.is(mine.length, want.size, 'each once');
    assert.ok(mine.every((r) => r.status === 'OK' && r.stage === 'final' && r.medianUs! > 0 && r.errors!.y <= 1 && r.timer === 'timestamp-query'));
  }
  const ws = winners(db, WGSL_NAMING);
  assert.is(ws.length, 2);
  for (const w of ws) {
    assert.is(w.best.medianUs, Math.min(...db.results.filter((r) => r.problemKey === problemKey(w.problem)).map((r) => r.medianUs!)));
    assert.is(w.baseline?.variantId, wgslVariantId(w.problem, ortBaselineParams(w.problem)), 'the ORT-style baseline is measured');
  }
  const again = await tuneWgsl(options(dbPath));
  again.db.close();
  assert.is(TuningDb.readWgsl(dbPath).results.length, db.results.length);
  assert.is(TuningDb.readWgsl(dbPath).sessions.length, 2);
});

test('a wrong variant never wins, however fast: screening and finals keep it out', async () => {
  const dbPath = tmp('db.jsonl');
  const one: GridSpec = { ...grid, ops: ['rmsnorm'] };
  // Every vec4 variant returns before doing anything: the fastest shaders, all wrong.
  const out = await tuneWgsl(options(dbPath, {
    grid: one,
    search: { kind: 'screen', keep: 2 },
    mutate: (_p, params) => (params.vec === 4 ? (code) => code.replace('if (group * ROWS_PER_WG >= P.rows)', 'if (true)') : undefined),
  }));
  out.db.close();
  const db = TuningDb.readWgsl(dbPath);
  const wrong = db.results.filter((r) => r.params.vec === 4);
  assert.ok(wrong.length > 5);
  assert.ok(wrong.every((r) => r.status === 'INCORRECT' && r.medianUs === undefined && r.bad!.y > 0), 'poisoned outputs caught');
  const [w] = winners(db, WGSL_NAMING);
  assert.is.not(w.best.params.vec, 4);
  assert.ok(db.results.filter((r) => r.stage === 'final').every((r) => r.params.vec !== 4 || r.status !== 'OK'));
});

const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, 'tune', '--backend', 'wgsl', ...args], { encoding: 'utf8' });
/** Dawn may print warnings on stderr first; normgen's own message is the last line. */
const lastLine = (s: string) => s.trim().split('\n').pop() ?? '';

test('the CLI resumes after SIGKILL: finished records are skipped, none is taken twice', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-wgsl-kill-'));
  const db = join(dir, 'db.jsonl');
  const args = [CLI, 'tune', '--backend', 'wgsl', '--adapter', 'vulkan', '--op', 'rmsnorm', '--dtype', 'fp32', '--hidden', '96,100', '--rows', '3', '--budget', 'screen:1', '--db', db];
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  const results = () => (existsSync(db) ? readFileSync(db, 'utf8').split('\n').filter((l) => l.includes('"kind":"result"')).length : 0);
  while (results() < 20) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGKILL');
  await new Promise((r) => child.on('exit', r));
  const before = results();
  appendFileSync(db, '{"kind":"result","session":1,"probl'); // a line cut off mid-write
  const second = spawnSync(process.execPath, [...args, '--report', join(dir, 'r.md')], { encoding: 'utf8' });
  assert.is(second.status, 0, second.stderr);
  assert.match(second.stderr, /\d+ already in the database/);
  const all = TuningDb.readCheckedWgsl(db);
  const keys = all.results.map((r) => `${r.problemKey}|${r.variantId}|${r.stage}`);
  assert.is(new Set(keys).size, keys.length, 'no record twice');
  assert.ok(all.results.length > before);
  assert.is(all.sessions.length, 2);
  assert.is(winners(all, WGSL_NAMING).length, 2);
  const report = readFileSync(join(dir, 'r.md'), 'utf8');
  assert.match(report, /# WGSL tuning results: llvmpipe/);
  assert.match(report, /rmsnorm\.fp32\.w-same\.h100\.r3\s+wg\d+\.v[124]\.tpr\d+/);
  assert.match(second.stdout, /problem\s+winner\s+us\s+GB\/s\s+% copy\s+vs baseline\s+variants/);
});

test('foreign, corrupt and mistaken databases and options: one clear error, exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-wgsl-bad-'));
  // The committed CUDA database's header and first session, as a plain (writable) file.
  const cuda = join(dir, 'cuda.jsonl');
  writeFileSync(cuda, readDbText(fileURLToPath(new URL('../../out/tuning/sm90-h200.jsonl.gz', import.meta.url))).split('\n').slice(0, 2).join('\n') + '\n');
  const small = ['--adapter', 'vulkan', '--op', 'rmsnorm', '--dtype', 'fp32', '--hidden', '96', '--rows', '3'];
  const corrupt = join(dir, 'corrupt.jsonl');
  writeFileSync(corrupt, readFileSync(cuda, 'utf8').split('\n').slice(0, 2).join('\n') + '\nnot json\n{"kind":"result"}\n');
  const other = join(dir, 'other.jsonl');
  const header = { kind: 'header', format: 1, backend: 'wgsl', arch: 'vulkan', device: { name: 'Some GPU (vulkan)', backend: 'vulkan', vendor: 'acme', architecture: 'x', device: 'y', description: 'Some GPU', limits: {}, features: [] } };
  writeFileSync(other, JSON.stringify(header) + '\n');
  const cases: [string[], RegExp][] = [
    [[...small, '--db', cuda], /was tuned on NVIDIA H200 \(sm90, cuda\), not on this llvmpipe/],
    [[...small, '--db', other], /was tuned on Some GPU \(vulkan\) \(vulkan, wgsl\)/],
    [[...small, '--db', corrupt], /corrupt at line 3/],
    [[...small, '--db', join(dir, 'x.jsonl'), '--cuda-db', other], /holds WGSL results .*reads CUDA tuning databases/],
    [['--dtype', 'bf16', '--db', join(dir, 'y.jsonl')], /WGSL has no bf16/],
    [['--arch', 'sm90'], /--arch is for --backend cuda/],
    [['--adapter', 'glide'], /unknown Dawn backend 'glide'/],
  ];
  for (const [args, message] of cases) {
    const r = cli(...args);
    assert.is(r.status, 2, `${args.join(' ')}: exit ${r.status} ${r.stderr}`);
    assert.match(lastLine(r.stderr), new RegExp(`^normgen: .*${message.source}`));
  }
  const wrongWay = spawnSync(process.execPath, [CLI, 'tune', '--arch', 'sm90', '--adapter', 'vulkan'], { encoding: 'utf8' });
  assert.match(lastLine(wrongWay.stderr), /--adapter is for --backend wgsl/);
});

test.run();
