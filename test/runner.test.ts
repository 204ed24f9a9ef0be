// The runner client against a runner that exits at once, as the native one does on a
// machine without a usable GPU: every request is answered RUNTIME_ERROR, nothing crashes.
// And the native runner itself: it builds with nvcc, and where there is no driver (as on
// CI) it says so, and `tune` stops with that reason, writing nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRunner, Runner } from '../tuner/runner.js';
import { CLI } from './paths.js';

test('a runner that exits before reading its request: RUNTIME_ERROR, not an EPIPE crash', async () => {
  const runner = new Runner('/bin/true', 0); // exits at once without reading stdin: the request's write breaks the pipe
  for (let i = 0; i < 20; i++) {
    const reply = await runner.request({ cmd: 'info' }, 5000);
    assert.is(reply.status, 'RUNTIME_ERROR');
    assert.match(reply.error ?? '', /runner exited/);
  }
  assert.is(runner.restarts, 19);
});

test('the native runner builds; without a driver it names the reason and tune stops, writing nothing', async () => {
  const exe = await buildRunner();
  const reply = spawnSync(exe, { input: '{"cmd":"info"}\n', encoding: 'utf8' });
  const answer = JSON.parse(reply.stdout.trim().split('\n')[0]);
  if (existsSync('/dev/nvidiactl')) {
    assert.is(answer.status, 'OK', 'a machine with a driver: the runner describes its GPU');
    return;
  }
  assert.is(answer.status, 'RUNTIME_ERROR');
  assert.match(answer.error, /no NVIDIA driver found/);
  const db = join(mkdtempSync(join(tmpdir(), 'normgen-nodriver-')), 'db.jsonl');
  const tune = spawnSync(process.execPath, [CLI, 'tune', '--arch', 'sm90', '--op', 'rmsnorm', '--dtype', 'bf16', '--hidden', '1024', '--rows', '8', '--db', db], {
    encoding: 'utf8',
    env: { ...process.env, NORMGEN_RUNNER: exe },
  });
  assert.is(tune.status, 2, tune.stderr);
  assert.match(tune.stderr, /normgen: no usable GPU 0 \(the bench runner says: no NVIDIA driver found/);
  assert.not.ok(existsSync(db), 'no database started');
});

test.run();
