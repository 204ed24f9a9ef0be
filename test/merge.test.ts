// normgen merge: per-device output, the rules that pick one record per key, refusal of
// mixed templates and of corrupt input.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeProblem, problemKey, type KernelSpec } from '../generator/problem.js';
import { baselineParams, GENERIC_PARAMS } from '../generator/space.js';
import { makeVariant } from '../generator/variant.js';
import { TuningDb, type DbSession } from '../tuner/db.js';
import type { DeviceId } from '../tuner/device.js';
import { compareVersions } from '../tuner/merge.js';
import { winners } from '../tuner/select.js';

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const COMMITTED = fileURLToPath(new URL('../../out/tuning/sm90-h200.jsonl.gz', import.meta.url));
const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
const dir = () => mkdtempSync(join(tmpdir(), 'normgen-merge-'));

const h200: DeviceId = { name: 'NVIDIA H200', arch: 'sm90', computeCapability: '9.0', sms: 132, memoryBytes: 150e9, l2Bytes: 62914560, driver: '580.1', driverCuda: 13000, cudaRuntime: 13000, uuid: 'a' };
const h100: DeviceId = { ...h200, name: 'NVIDIA H100 80GB HBM3', memoryBytes: 85e9, uuid: 'b' };
const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
const problem = makeProblem(spec, 4096, 64);
const base = makeVariant(problem, baselineParams(problem));
const gen = makeVariant(problem, GENERIC_PARAMS);

interface Rec {
  variant: typeof base;
  us: number;
  samples: number;
  stage?: 'screen' | 'final';
  problem?: typeof problem;
}

/** A database with one session and the given records. */
function makeDb(device: DeviceId, session: Partial<DbSession>, records: Rec[], path = join(dir(), 'db.jsonl')): string {
  const db = TuningDb.open(path, { backend: 'cuda', arch: device.arch, device });
  const s = db.startSession({ started: '2026-11-01T00:00:00Z', command: 'test', normgen: '0.1.0', templateHash: 'h1', nvcc: '13', copyGbps: 4000, ...session });
  for (const r of records) {
    const p = r.problem ?? problem;
    db.record({ session: s.session, problemKey: problemKey(p), problem: p, variantId: r.variant.id, params: r.variant.params, stage: r.stage ?? 'final', status: 'OK', medianUs: r.us, samples: r.samples });
  }
  db.close();
  return path;
}

const find = (path: string, v: typeof base) => TuningDb.read(path).results.find((r) => r.variantId === v.id)!;

test('versions compare by number, a release after its pre-release', () => {
  assert.ok(compareVersions('0.10.0', '0.9.9') > 0);
  assert.ok(compareVersions('1.0.0', '1.0.0-rc.1') > 0);
  assert.is(compareVersions('0.1.0', '0.1.0'), 0);
  assert.ok(compareVersions('0.1.0', '0.2.0') < 0);
});

test('merging a database with itself reproduces it byte for byte (the committed one once in current field names)', () => {
  // The committed database writes release points as the flags of before 2026-12-04: merged, its
  // results are the same records in this normgen's field names, and that file merges to itself.
  const once = join(dir(), 'once.jsonl');
  const again = join(dir(), 'again.jsonl');
  let r = cli('merge', COMMITTED, COMMITTED, '--out', once);
  assert.is(r.status, 0, r.stderr);
  assert.equal(TuningDb.read(once).results, TuningDb.read(COMMITTED).results);
  r = cli('merge', once, once, '--out', again);
  assert.is(r.status, 0, r.stderr);
  assert.is(readFileSync(again, 'utf8'), readFileSync(once, 'utf8'));
});

test('two devices: one file per device in the folder, each a database the tools open', () => {
  const a = makeDb(h200, {}, [{ variant: base, us: 10, samples: 15 }]);
  const b = makeDb(h100, {}, [{ variant: base, us: 12, samples: 15 }]);
  const c = makeDb(h200, { started: '2026-11-02T00:00:00Z' }, [{ variant: gen, us: 8, samples: 15 }]);
  const out = join(dir(), 'fleet');
  const r = cli('merge', a, b, c, '--out', out);
  assert.is(r.status, 0, r.stderr);
  assert.equal(readdirSync(out).sort(), ['sm90-h100-80gb-hbm3.jsonl', 'sm90-h200.jsonl']);
  const merged = TuningDb.read(join(out, 'sm90-h200.jsonl'));
  assert.is(merged.header.device.name, 'NVIDIA H200');
  assert.is(merged.results.length, 2);
  assert.equal(merged.sessions.map((s) => s.session), [1, 2]);
  // c's session 1 became session 2: its result follows it.
  assert.is(merged.results.find((x) => x.variantId === gen.id)!.session, 2);
  assert.is(winners(merged)[0].best.variantId, gen.id);
  // tune can resume into a merged file: open() accepts it for the same device.
  TuningDb.open(join(out, 'sm90-h200.jsonl'), { backend: 'cuda', arch: 'sm90', device: { ...h200, uuid: 'another card' } }).close();
  assert.is(TuningDb.read(join(out, 'sm90-h100-80gb-hbm3.jsonl')).results[0].medianUs, 12);
  // A merged folder merges again, with new databases: the fleet's history grows.
  const later = makeDb(h100, { started: '2026-11-09T00:00:00Z', normgen: '0.2.0' }, [{ variant: base, us: 11, samples: 15 }]);
  const again = join(dir(), 'fleet');
  assert.is(cli('merge', out, later, '--out', again).status, 0);
  assert.equal(readdirSync(again).sort(), readdirSync(out).sort());
  assert.is(TuningDb.read(join(again, 'sm90-h100-80gb-hbm3.jsonl')).results[0].medianUs, 11);
  assert.is(TuningDb.read(join(again, 'sm90-h100-80gb-hbm3.jsonl')).sessions.length, 2);
  const single = cli('merge', a, b, '--out', join(dir(), 'one.jsonl'));
  assert.is(single.status, 2);
  assert.match(single.stderr, /^normgen: the inputs hold 2 devices .* pass a folder as --out\n$/);
});

test('same key: the newer normgen wins, even with fewer samples', () => {
  const older = makeDb(h200, { normgen: '0.1.0', started: '2026-11-03T00:00:00Z' }, [{ variant: base, us: 10, samples: 15 }]);
  const newer = makeDb(h200, { normgen: '0.2.0', started: '2026-11-01T00:00:00Z' }, [{ variant: base, us: 11, samples: 3 }]);
  for (const order of [[older, newer], [newer, older]]) {
    const out = join(dir(), 'm.jsonl');
    assert.is(cli('merge', ...order, '--out', out).status, 0);
    assert.is(find(out, base).medianUs, 11);
    assert.is(TuningDb.read(out).results.length, 1);
  }
});

test('same key and version: more samples win, then the later session', () => {
  const many = makeDb(h200, { started: '2026-11-01T00:00:00Z' }, [{ variant: base, us: 10, samples: 15 }]);
  const few = makeDb(h200, { started: '2026-11-02T00:00:00Z' }, [{ variant: base, us: 9, samples: 3 }]);
  const later = makeDb(h200, { started: '2026-11-05T00:00:00Z' }, [{ variant: base, us: 12, samples: 15 }]);
  for (const order of [[many, few], [few, many]]) {
    const out = join(dir(), 'm.jsonl');
    assert.is(cli('merge', ...order, '--out', out).status, 0);
    assert.is(find(out, base).medianUs, 10);
  }
  const out = join(dir(), 'm.jsonl');
  assert.is(cli('merge', later, many, '--out', out).status, 0);
  assert.is(find(out, base).medianUs, 12);
  // Stages are separate keys: a screening record does not displace a final one.
  const screened = makeDb(h200, { started: '2026-11-06T00:00:00Z' }, [{ variant: base, us: 7, samples: 3, stage: 'screen' }]);
  assert.is(cli('merge', many, screened, '--out', out).status, 0);
  assert.equal(TuningDb.read(out).results.map((r) => [r.stage, r.medianUs]), [['final', 10], ['screen', 7]]);
});

test('--replace-problems: a problem re-tuned in a later input keeps only the re-tune, others stay', () => {
  const other = makeProblem(spec, 8192, 64);
  const otherBase = makeVariant(other, baselineParams(other));
  // The full tune: gen won problem at 9 us, timed a way the re-tune no longer trusts.
  const full = makeDb(h200, { started: '2026-11-01T00:00:00Z' }, [
    { variant: base, us: 10, samples: 15 },
    { variant: gen, us: 9, samples: 15 },
    { variant: otherBase, us: 20, samples: 15, problem: other },
  ]);
  // The re-tune of problem re-timed base only (fewer samples: longer graphs).
  const retune = makeDb(h200, { started: '2026-11-02T00:00:00Z' }, [{ variant: base, us: 10.5, samples: 7 }]);
  const plain = join(dir(), 'plain.jsonl');
  assert.is(cli('merge', full, retune, '--out', plain).status, 0);
  const kept = winners(TuningDb.read(plain));
  assert.is(kept.find((w) => w.best.problemKey === problemKey(problem))!.best.variantId, gen.id, 'without the option the old winner stays');
  const out = join(dir(), 'replaced.jsonl');
  const r = cli('merge', full, retune, '--out', out, '--replace-problems');
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /2 results of re-tuned problems dropped/);
  const merged = TuningDb.read(out);
  assert.equal(merged.results.map((x) => [x.problemKey, x.variantId, x.medianUs]), [
    [problemKey(other), otherBase.id, 20],
    [problemKey(problem), base.id, 10.5],
  ]);
  assert.is(merged.sessions.length, 2);
  // The last input decides, not the session date: the re-tune named first is replaced.
  assert.is(cli('merge', retune, full, '--out', out, '--replace-problems').status, 0);
  assert.is(find(out, gen).medianUs, 9);
});

test('one device tuned with different templates: refused, unless --force keeps both', () => {
  const a = makeDb(h200, { templateHash: 'aaaaaaaaaaaaaaaa' }, [{ variant: base, us: 10, samples: 15 }]);
  const b = makeDb(h200, { templateHash: 'bbbbbbbbbbbbbbbb', normgen: '0.2.0' }, [{ variant: gen, us: 9, samples: 15 }]);
  const out = join(dir(), 'm.jsonl');
  const r = cli('merge', a, b, '--out', out);
  assert.is(r.status, 2);
  assert.match(r.stderr, /^normgen: cannot merge NVIDIA H200 databases tuned with different kernel templates: .*aaaaaaaaaaaa.*bbbbbbbbbbbb.*--force/);
  assert.is(r.stderr.trim().split('\n').length, 1);
  assert.not.ok(existsSync(out), 'nothing written');
  const forced = cli('merge', a, b, '--out', out, '--force');
  assert.is(forced.status, 0, forced.stderr);
  assert.match(forced.stdout, /mixes 2 template versions/);
  assert.is(TuningDb.read(out).results.length, 2);
  // Different devices with different templates are no conflict: each keeps its own file.
  const c = makeDb(h100, { templateHash: 'cccccccccccccccc' }, [{ variant: base, us: 10, samples: 15 }]);
  assert.is(cli('merge', a, c, '--out', join(dir(), 'fleet')).status, 0);
});

test('corrupt input is refused with the file and the reason; nothing is written', () => {
  const good = makeDb(h200, {}, [{ variant: base, us: 10, samples: 15 }, { variant: gen, us: 9, samples: 15 }]);
  const lines = readFileSync(good, 'utf8').split('\n');
  const bad = (text: string) => {
    const p = join(dir(), 'bad.jsonl');
    writeFileSync(p, text);
    return p;
  };
  const cases: [string, RegExp][] = [
    [bad([lines[0], lines[1], 'garbage', lines[3], ''].join('\n')), /bad\.jsonl is corrupt at line 3: not a JSON record/],
    [bad([lines[1], lines[2], ''].join('\n')), /bad\.jsonl is not a normgen tuning database \(no header line\)/],
    [bad([lines[0], lines[2], ''].join('\n')), /bad\.jsonl is corrupt: result 1 \(.*\) names session 1, which the file does not hold/],
    [bad([lines[0], lines[1], lines[2].replace('"stage":"final"', '"stage":"warm"'), ''].join('\n')), /result 1 has stage "warm"/],
    [bad([lines[0], lines[1], lines[2].replace(/"medianUs":[0-9.]+,/, ''), ''].join('\n')), /result 1 \(.*\) is OK but has no positive time/],
    [bad([lines[0].replace(/"device":\{[^}]*\}/, '"device":{}'), lines[1], ''].join('\n')), /header has no complete device identity/],
    [join(dir(), 'missing.jsonl'), /tuning database .*missing\.jsonl does not exist/],
  ];
  for (const [path, message] of cases) {
    const out = join(dir(), 'm.jsonl');
    const r = cli('merge', good, path, '--out', out);
    assert.is(r.status, 2, `${message}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.is(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.not.ok(existsSync(out), 'nothing written');
  }
  // A last line cut off by a killed tune is dropped (as every reader does), not fatal.
  const out = join(dir(), 'm.jsonl');
  const cut = bad(lines.slice(0, 4).join('\n') + '\n' + lines[2].slice(0, 40));
  assert.is(cli('merge', cut, '--out', out).status, 0);
  assert.is(TuningDb.read(out).results.length, 2);
});

test.run();
