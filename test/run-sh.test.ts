// test/gpu/run.sh, the script the GPU machine runs: a detached tune restarted on a fresh machine
// (its first machine released between two calls) resumes only over the grid its database was
// started with. A call without that start's TUNE_GRID once tuned run.sh's reduced default grid
// over a database of the full grid and called it done.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REDUCED_GRID = '--dtype bf16,fp32 --hidden 1024,4096,8192,16384,65536,131072 --rows 32,2048,32768';

/** A scratch tree holding test/gpu/run.sh and the stem.sh it sources. */
function scratchTree() {
  const dir = mkdtempSync(join(tmpdir(), 'normgen-run-sh-'));
  for (const f of ['run.sh', 'stem.sh']) cpSync(join(ROOT, 'test/gpu', f), join(dir, 'test/gpu', f));
  return dir;
}

/** A tree with run.sh and a carried database whose tune was started over `dbGrid`; then `tune-wait` with TUNE_GRID=`callGrid`. */
function restart(dbGrid: string, callGrid: string | undefined) {
  const dir = scratchTree();
  mkdirSync(join(dir, '.device/db'), { recursive: true });
  const command = ['normgen tune --arch sm90 --budget screen:4', dbGrid, '--db /out/sm90-h200.jsonl --report /out/sm90-h200.md'].filter(Boolean).join(' ');
  const lines = [{ kind: 'header', format: 1, backend: 'cuda' }, { kind: 'session', session: 1, command }];
  writeFileSync(join(dir, '.device/db/sm90-h200.jsonl.gz'), gzipSync(lines.map((l) => JSON.stringify(l)).join('\n') + '\n'));
  const { TUNE_GRID: _, ...env } = process.env;
  const detached = join(dir, 'detached');
  const r = spawnSync('bash', ['test/gpu/run.sh', 'tune-wait'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...env, STEM: 'sm90-h200', OUT: join(dir, 'out'), DETACHED_DIR: detached, TUNE_WAIT: '0', ...(callGrid === undefined ? {} : { TUNE_GRID: callGrid }) },
  });
  return { status: r.status, out: r.stdout + r.stderr, started: existsSync(join(detached, 'run.log')) };
}

test('a database of the default grid is not resumed over the reduced one', () => {
  const r = restart('', undefined);
  assert.is(r.status, 1);
  assert.match(r.out, "started over 'the default grid', not this call's '--dtype bf16,fp32");
  assert.match(r.out, "call again with TUNE_GRID=' '");
  assert.not.ok(r.started, 'no tune started');
});

test('a database of a reduced grid is not resumed over another grid', () => {
  const r = restart('--dtype bf16 --hidden 1024 --rows 32', ' ');
  assert.is(r.status, 1);
  assert.match(r.out, "call again with TUNE_GRID='--dtype bf16 --hidden 1024 --rows 32'");
  assert.not.ok(r.started, 'no tune started');
});

test('the same grid restarts the tune from the carried database', () => {
  for (const [dbGrid, callGrid] of [['', ' '], [REDUCED_GRID, undefined], ['--dtype bf16  --rows 32', '--dtype bf16 --rows 32']] as const) {
    const r = restart(dbGrid, callGrid);
    assert.match(r.out, 'restarted from the database in .device/db', `${dbGrid || 'default'} grid`);
    assert.ok(r.started, 'the detached tune started');
  }
});

/** `run.sh pkg-ab` in a tree whose make, nvcc and python3 are stand-ins: python3 runs `python` (a shell command). */
function pkgAb(python: string, env: Record<string, string>) {
  const dir = scratchTree();
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const [name, body] of [['make', 'exit 0'], ['nvcc', 'exit 0'], ['python3', python]])
    writeFileSync(join(bin, name), `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
  for (const side of ['.device/base-pkg/out/normgen-sm90-h200', 'pkg']) mkdirSync(join(dir, side), { recursive: true });
  const r = spawnSync('bash', ['test/gpu/run.sh', 'pkg-ab'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, STEM: 'sm90-h200', PKG: join(dir, 'pkg'), OUT: join(dir, 'out'), ...env },
  });
  return r.stdout + r.stderr;
}

test('pkg-ab says which side ran past PKG_AB_SECONDS and stops there', () => {
  const out = pkgAb('sleep 5', { PKG_AB_SECONDS: '1' });
  assert.match(out, 'pkg-ab: the base side stopped after 1 s (PKG_AB_SECONDS)');
  assert.not.match(out, 'the new side');
  assert.match(out, 'pkg-ab rc=1 (base new)');
});

test('pkg-ab within its time reports success', () => {
  const out = pkgAb('exit 0', {});
  assert.not.match(out, 'stopped after');
  assert.match(out, 'pkg-ab rc=0 (base new)');
});

test.run();
