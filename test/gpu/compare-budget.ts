// Compares the winners of a --budget screen tune with an exhaustive tune of the same
// problems: screening must find winners within 3% of the exhaustive ones.
// node dist/test/gpu/compare-budget.js SCREEN.jsonl EXHAUSTIVE.jsonl [--log FILE]
import { writeFileSync } from 'node:fs';
import { formatTable } from '../../cli/table.js';
import { problemKey } from '../../generator/problem.js';
import { describeParams } from '../../generator/space.js';
import { fwdParams, TuningDb } from '../../tuner/db.js';
import { winners } from '../../tuner/select.js';

const [screenPath, exhaustivePath] = process.argv.slice(2);
const logAt = process.argv.indexOf('--log');
const screenDb = TuningDb.read(screenPath);
const exhaustiveDb = TuningDb.read(exhaustivePath);
const screen = new Map(winners(screenDb).map((w) => [problemKey(w.problem), w]));
const rows: (string | number)[][] = [];
let worst = 0;
for (const e of winners(exhaustiveDb)) {
  const s = screen.get(problemKey(e.problem));
  if (!s) continue;
  // The screen winner's time from the exhaustive run (same variant, same run), else its own.
  const again = exhaustiveDb.find(problemKey(e.problem), s.best.variantId, 'final');
  const screenUs = again?.status === 'OK' ? again.medianUs! : s.best.medianUs!;
  const gap = screenUs / e.best.medianUs! - 1;
  worst = Math.max(worst, gap);
  rows.push([problemKey(e.problem), describeParams(fwdParams(e.best)), Number(e.best.medianUs!.toFixed(2)), describeParams(fwdParams(s.best)), Number(screenUs.toFixed(2)), Number((100 * gap).toFixed(1))]);
}
const device = exhaustiveDb.header.device;
const gaps = rows.map((r) => Number(r[5])).sort((a, b) => a - b);
// A database resumed or extended over several runs: every command that wrote to it.
const commands = (db: TuningDb) => [...new Set(db.sessions.map((s) => s.command))].map((c) => `\`${c}\``).join('; then ') || '?';
const text = [
  `# --budget screen:4 against exhaustive: worst gap ${(100 * worst).toFixed(1)}% over ${rows.length} problems (${worst <= 0.03 ? 'within' : 'OUTSIDE'} 3%)`,
  '',
  `- measured: ${exhaustiveDb.sessions.at(-1)?.started ?? '?'} (exhaustive run); compared: ${new Date().toISOString()}`,
  `- card: ${device.name} (${device.arch}), driver ${device.driver}`,
  `- screen: ${commands(screenDb)}`,
  `- exhaustive: ${commands(exhaustiveDb)}`,
  `- gaps: median ${gaps[Math.floor(gaps.length / 2)] ?? 0}%, ${gaps.filter((g) => g > 1).length} of ${gaps.length} over 1%`,
  '- a screen winner is timed from the exhaustive run where it ran there (same variant, same run)',
  '',
  '```',
  formatTable(['problem', 'exhaustive winner', 'us', 'screen winner', 'us', 'gap %'], rows),
  '```',
  '',
].join('\n');
if (logAt > 0) writeFileSync(process.argv[logAt + 1], text);
console.log(text);
process.exitCode = rows.length > 0 && worst <= 0.03 ? 0 : 1;
