// GPU test: deliberately broken variants are caught and never stop a tune.
// Run on the GPU machine: node dist/test/gpu/faults.js [--arch sm90] [--log FILE]
// A wrong result must be INCORRECT, a write past the buffer INCORRECT (guard zone),
// an illegal address RUNTIME_ERROR (runner restarted), a hang TIMEOUT (runner killed),
// a syntax error COMPILE_ERROR; healthy variants of the same problems still win.
// A kernel that writes into one of its inputs is stood in for by the runner (one bit flipped
// after the kernel ran, corruptInput, or after it was timed, corruptInputWhileTimed: a
// template fault would change every variant id): INCORRECT through the inputs'
// fingerprints, and the next run of the problem is not blamed.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArch } from '../../generator/arch.js';
import { biasDType, problemKey, residualDType, weightDType } from '../../generator/problem.js';
import { GENERIC_PARAMS } from '../../generator/space.js';
import { FAULTS, makeVariant, type Fault } from '../../generator/variant.js';
import { CompilePool } from '../../tuner/compile-pool.js';
import { isDropped, isFailure, runRequest } from '../../tuner/measure.js';
import { buildRunner, Runner } from '../../tuner/runner.js';
import { winners } from '../../tuner/select.js';
import { SCREEN, tune } from '../../tuner/tune.js';

const EXPECTED: Record<Fault, string> = {
  'wrong-value': 'INCORRECT',
  'out-of-bounds': 'INCORRECT',
  'illegal-address': 'RUNTIME_ERROR',
  hang: 'TIMEOUT',
  'compile-error': 'COMPILE_ERROR',
};

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : d;
};

const arch = parseArch(arg('--arch', 'sm90'));
const log = arg('--log', 'test/gpu/faults.md');
const dbPath = join(mkdtempSync(join(tmpdir(), 'normgen-faults-')), 'db.jsonl');
const started = new Date().toISOString();
const outcome = await tune({
  arch,
  grid: { ops: ['rmsnorm', 'layernorm+residual'], dtypes: ['bf16'], hiddens: [4096], rows: [64], residual: 'same' },
  gpus: [0],
  jobs: 8,
  search: { kind: 'exhaustive' },
  dbPath,
  command: 'test/gpu/faults',
  timeoutSeconds: 5,
  extraVariants: (p) => FAULTS.map((f) => makeVariant(p, GENERIC_PARAMS, f)),
});

/** A database result's error or bad counts, fit for a table cell. */
const detail = (r: (typeof outcome.db.results)[number]) => (r.error ?? JSON.stringify(r.bad ?? {})).slice(0, 80).replace(/\|/g, '/');

const lines: string[] = [];
let failed = 0;
for (const r of outcome.db.results) {
  const v = outcome.db.results.length && FAULTS.find((f) => makeVariant(r.problem, GENERIC_PARAMS, f).id === r.variantId);
  if (!v) continue;
  const ok = r.status === EXPECTED[v];
  if (!ok) failed++;
  lines.push(`| ${problemKey(r.problem)} | ${v} | ${EXPECTED[v]} | ${r.status} | ${ok ? 'pass' : 'FAIL'} | ${detail(r)} |`);
}
const faultIds = new Set(outcome.problems.flatMap((p) => FAULTS.map((f) => makeVariant(p, GENERIC_PARAMS, f).id)));
for (const w of winners(outcome.db)) {
  if (faultIds.has(w.best.variantId)) {
    failed++;
    lines.push(`| ${problemKey(w.problem)} | winner | healthy | broken variant won | FAIL | |`);
  }
}
const healthy = outcome.db.results.filter((r) => !faultIds.has(r.variantId));
// Variants whose registers spill are dropped at compile time by design, not failures.
const healthyBad = healthy.filter(isFailure);
const healthySpills = healthy.filter(isDropped).length;
for (const r of healthyBad) {
  failed++;
  lines.push(`| ${problemKey(r.problem)} | none (${r.variantId}) | OK | ${r.status} | FAIL | ${detail(r)} |`);
}
const expectedCount = outcome.problems.length * FAULTS.length;
if (lines.length < expectedCount) failed++;
// Input writes, through the runner: each input of each problem corrupted once after a
// healthy kernel, then the same kernel again on a clean workspace.
const pool = new CompilePool(arch, 8);
const runner = new Runner(await buildRunner(), 0);
for (const p of outcome.problems) {
  const v = makeVariant(p, GENERIC_PARAMS);
  const build = (await pool.build({ spec: v.spec, variants: [v] })).get(v.id);
  if (build?.status !== 'OK' || !('cubin' in build)) throw new Error(`${problemKey(p)}: the generic variant did not compile`);
  const inputs = ['x', residualDType(p) && 'residual', weightDType(p) && 'weight', biasDType(p) && 'bias'].filter((n): n is string => !!n);
  const runs = [
    { fault: 'input-write', field: 'corruptInput', time: false },
    { fault: 'input-write while timed', field: 'corruptInputWhileTimed', time: true },
  ];
  for (const input of inputs) {
    for (const run of runs) {
      for (const [fault, corrupt, expected] of [[`${run.fault} (${input})`, true, 'INCORRECT'], ['next run', false, 'OK']] as const) {
        const req = { ...runRequest(p, v, build.cubin as string, { ...SCREEN, time: run.time }), ...(corrupt ? { [run.field]: input } : {}) };
        const r = await runner.request(req, 60_000);
        const caught = corrupt ? r.bad_inputs === 1 : r.bad_inputs === undefined;
        const ok = r.status === expected && caught;
        if (!ok) failed++;
        const info = r.bad_inputs ? `{"inputs":${r.bad_inputs},"first":${r.first_bad_inputs}}${r.error ? ` ${r.error}` : ''}` : (r.error ?? '{}');
        lines.push(`| ${problemKey(p)} | ${fault} | ${expected} | ${r.status} | ${ok ? 'pass' : 'FAIL'} | ${String(info).slice(0, 80).replace(/\|/g, '/')} |`);
      }
    }
  }
}
await runner.close();
await pool.close();

const report = [
  `# GPU fault handling: ${failed === 0 ? 'PASS' : 'FAIL'}`,
  '',
  `- date: ${started}`,
  `- card: ${outcome.device.name} (${outcome.device.arch})`,
  '- command: `node dist/test/gpu/faults.js`',
  `- runner restarts: ${outcome.restarts}; healthy variants: ${healthy.length}, of which failed: ${healthyBad.length}, dropped because their registers spill: ${healthySpills}`,
  '',
  '| problem | fault | expected | got | result | detail |',
  '|---|---|---|---|---|---|',
  ...lines,
  '',
].join('\n').replaceAll(process.cwd() + '/', ''); // compiler messages name files by absolute path
writeFileSync(log, report);
console.log(report);
console.log(`${lines.filter((l) => l.includes('| pass |')).length} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
