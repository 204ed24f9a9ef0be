// normgen check with the stand-in runner: unchanged timings pass (exit 0); a planted
// regression, a failing winner or an overtaking challenger fail it (exit 1).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArch } from '../generator/arch.js';
import { parseTolerance } from '../tuner/check.js';
import { TuningDb, type DbResult } from '../tuner/db.js';
import { tune } from '../tuner/tune.js';

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const FAKE = fileURLToPath(new URL('./fake-runner.js', import.meta.url));
const COMMITTED = fileURLToPath(new URL('../../out/tuning/sm90-h200.jsonl.gz', import.meta.url));

const dbPath = join(mkdtempSync(join(tmpdir(), 'normgen-check-')), 'fake.jsonl');
const tuned = await tune({
  arch: parseArch('sm90'),
  grid: { ops: ['rmsnorm'], dtypes: ['bf16'], hiddens: [1024], rows: [8, 512], residual: 'same' },
  gpus: [0], jobs: 2, search: { kind: 'exhaustive' }, dbPath, command: 'test', runnerExe: FAKE, timeoutSeconds: 1,
});
tuned.db.close();

/** Per problem: the recorded finals, fastest first. */
const ranked = new Map<string, DbResult[]>();
for (const r of TuningDb.read(dbPath).results.filter((r) => r.status === 'OK').sort((a, b) => a.medianUs! - b.medianUs!))
  ranked.set(r.problemKey, [...(ranked.get(r.problemKey) ?? []), r]);
const [first, second] = [...ranked.values()];
const symbol = (r: DbResult) => `normgen_rmsnorm_fwd_${r.variantId}`;

const check = (env: Record<string, string>, ...args: string[]) =>
  spawnSync(process.execPath, [CLI, 'check', '--db', dbPath, '--jobs', '2', ...args], { encoding: 'utf8', env: { ...process.env, NORMGEN_RUNNER: FAKE, ...env } });

test('unchanged timings: every winner holds, exit 0, a drift table', () => {
  const r = check({});
  assert.is(r.status, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /problem\s+role\s+variant\s+recorded us\s+now us\s+drift/);
  assert.is((r.stdout.match(/ winner /g) ?? []).length, 2, 'one winner row per problem');
  assert.is((r.stdout.match(/ challenger /g) ?? []).length, 4, 'two challengers per problem');
  assert.match(r.stdout, /\+0\.0%/);
  assert.match(r.stdout, /2 problems, 0 no longer hold within 5\.0%/);
  assert.not.match(r.stdout, /DRIFT/);
});

test('a planted regression of a winner beyond the tolerance: exit 1, naming it', () => {
  const r = check({ FAKE_SCALE: `${symbol(first[0])}:1.2` });
  assert.is(r.status, 1, r.stderr + r.stdout);
  assert.match(r.stdout, new RegExp(`DRIFT ${first[0].problemKey}: winner ${first[0].variantId} is 20\\.0% slower than recorded`));
  assert.match(r.stdout, /2 problems, 1 no longer hold/);
});

test('a slowdown within the tolerance passes; a tighter tolerance catches it', () => {
  const env = { FAKE_SCALE: `${symbol(second[0])}:1.03` };
  assert.is(check(env).status, 0);
  const tight = check(env, '--tolerance', '2%');
  assert.is(tight.status, 1);
  assert.match(tight.stdout, /is 3\.0% slower than recorded/);
});

test('a challenger that now beats the winner by more than the tolerance: exit 1', () => {
  const r = check({ FAKE_SCALE: `${symbol(first[1])}:0.5` });
  assert.is(r.status, 1, r.stderr + r.stdout);
  assert.match(r.stdout, new RegExp(`DRIFT ${first[0].problemKey}: ${first[1].variantId} now beats winner ${first[0].variantId} by`));
  // --challengers 0 times winners only, so it cannot see that.
  assert.is(check({ FAKE_SCALE: `${symbol(first[1])}:0.5` }, '--challengers', '0').status, 0);
});

test('a winner that now computes wrong results: exit 1', () => {
  const r = check({ FAKE_WRONG: symbol(second[0]) });
  assert.is(r.status, 1);
  assert.match(r.stdout, new RegExp(`DRIFT ${second[0].problemKey}: winner ${second[0].variantId} now INCORRECT`));
});

test('bad input: one line, exit 2 (another GPU model, bad tolerance)', () => {
  const other = spawnSync(process.execPath, [CLI, 'check', '--db', COMMITTED], { encoding: 'utf8', env: { ...process.env, NORMGEN_RUNNER: FAKE } });
  assert.is(other.status, 2);
  assert.match(other.stderr, /^normgen: no database for this GPU \(Fake GPU, sm90\): .*sm90-h200\.jsonl\.gz \(NVIDIA H200\)/);
  for (const t of ['5', '-1%', 'lots', '100%']) {
    const r = check({}, `--tolerance=${t}`);
    assert.is(r.status, 2, t);
    assert.match(r.stderr, /^normgen: --tolerance takes a fraction below 1 or a percentage/);
  }
  assert.is(parseTolerance('5%'), 0.05);
  assert.is(parseTolerance('0.1'), 0.1);
});

test.run();
