// GPU test: deliberately broken variants are caught and never stop a tune.
// Run on the GPU machine: node dist/test/gpu/faults.js [--arch sm90] [--log FILE]
// A wrong result must be INCORRECT, a write past the buffer INCORRECT (guard zone),
// an illegal address RUNTIME_ERROR (runner restarted), a hang TIMEOUT (runner killed),
// a syntax error COMPILE_ERROR; healthy variants of the same problems still win.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArch } from '../../generator/arch.js';
import { problemKey } from '../../generator/problem.js';
import { GENERIC_PARAMS } from '../../generator/space.js';
import { FAULTS, makeVariant, type Fault } from '../../generator/variant.js';
import { winners } from '../../tuner/select.js';
import { tune } from '../../tuner/tune.js';

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

const lines: string[] = [];
let failed = 0;
for (const r of outcome.db.results) {
  const v = outcome.db.results.length && FAULTS.find((f) => makeVariant(r.problem, GENERIC_PARAMS, f).id === r.variantId);
  if (!v) continue;
  const ok = r.status === EXPECTED[v];
  if (!ok) failed++;
  lines.push(`| ${problemKey(r.problem)} | ${v} | ${EXPECTED[v]} | ${r.status} | ${ok ? 'pass' : 'FAIL'} | ${(r.error ?? JSON.stringify(r.bad ?? {})).slice(0, 80).replace(/\|/g, '/')} |`);
}
const faultIds = new Set(outcome.problems.flatMap((p) => FAULTS.map((f) => makeVariant(p, GENERIC_PARAMS, f).id)));
for (const w of winners(outcome.db)) {
  if (faultIds.has(w.best.variantId)) {
    failed++;
    lines.push(`| ${problemKey(w.problem)} | winner | healthy | broken variant won | FAIL | |`);
  }
}
const healthy = outcome.db.results.filter((r) => !faultIds.has(r.variantId));
const healthyBad = healthy.filter((r) => r.status !== 'OK');
if (healthyBad.length) failed += healthyBad.length;
const expectedCount = outcome.problems.length * FAULTS.length;
if (lines.length < expectedCount) failed++;
const report = [
  `# GPU fault handling: ${failed === 0 ? 'PASS' : 'FAIL'}`,
  '',
  `- date: ${started}`,
  `- card: ${outcome.device.name} (${outcome.device.arch})`,
  '- command: `node dist/test/gpu/faults.js`',
  `- runner restarts: ${outcome.restarts}; healthy variants measured: ${healthy.length}, of which failed: ${healthyBad.length}`,
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
