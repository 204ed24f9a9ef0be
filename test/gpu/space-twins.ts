// In one tune, the unstaged ring twins (generator/space.ts, unstagedTwinOffered) against every
// other variant of the same problem: per problem the best screening and the best final timing
// of each side, so a twin's gain is measured on one GPU in one run, not across tunes.
// node dist/test/gpu/space-twins.js DB.jsonl[.gz] [--log FILE]
import { writeFileSync } from 'node:fs';
import { formatTable } from '../../cli/table.js';
import { parseArch } from '../../generator/arch.js';
import { describeParams, isUnstagedTwin } from '../../generator/space.js';
import { fwdParams, TuningDb, type DbResult } from '../../tuner/db.js';
import { fastestPerProblem } from '../../tuner/dispatch.js';

const [path] = process.argv.slice(2);
if (!path) {
  console.error('usage: space-twins DB.jsonl[.gz] [--log FILE]');
  process.exit(2);
}
const logAt = process.argv.indexOf('--log');
const db = TuningDb.read(path);
const arch = parseArch(db.header.arch);

// Per problem, the fastest of each side at each stage ('twins.screen', 'others.final', ...).
const best = fastestPerProblem(db.results, (r) => `${isUnstagedTwin(r.problem, fwdParams(r), arch) ? 'twins' : 'others'}.${r.stage}`);
const ratio = (a?: DbResult, b?: DbResult) => (a && b ? Number((a.medianUs! / b.medianUs!).toFixed(3)) : '-');
const pct = (r?: DbResult) => (r ? (100 * r.fractionOfCopy!).toFixed(1) : '-');
const rows: (string | number)[][] = [];
let twinProblems = 0;
let twinsAhead = 0;
for (const [key, b] of [...best].sort(([x], [y]) => x.localeCompare(y))) {
  const [twinScreen, twinFinal, otherScreen, otherFinal] = ['twins.screen', 'twins.final', 'others.screen', 'others.final'].map((g) => b.get(g));
  if (!twinScreen) continue;
  twinProblems++;
  if (twinFinal && otherFinal && twinFinal.medianUs < otherFinal.medianUs) twinsAhead++;
  rows.push([key, ratio(otherScreen, twinScreen), pct(otherFinal), pct(twinFinal), ratio(otherFinal, twinFinal), describeParams(fwdParams(twinScreen))]);
}
const header = ['problem', 'screen others/twin', 'others % copy', 'twin % copy', 'final others/twin', 'best twin screened'];
const text =
  `# Unstaged ring twins in ${path}: ${twinProblems} problems offer them, a twin's final the fastest on ${twinsAhead}\n\n` +
  `- ${db.header.device.name}, ${db.sessions.map((s) => `\`${s.command}\``).join(', ')}\n` +
  '- ratios over 1: the twin faster; % of copy bandwidth as measured in the run; `-`: no twin reached the finals\n\n' +
  '```\n' + formatTable(header, rows) + '\n```\n';
if (logAt > 0) writeFileSync(process.argv[logAt + 1], text);
console.log(logAt > 0 ? text.split('\n')[0] : text);
