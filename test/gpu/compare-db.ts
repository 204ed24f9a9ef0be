// Compares two tunes of the same problems, e.g. the committed database and a quick tune of
// a template change: per problem the winner's % of copy in each, and the best variant of
// each storage, so a change that helps one kind of kernel and hurts another shows. Then the
// variants both tuned (the same parameters; ids differ across templates), per storage: how
// their screening times moved, which tells a change from run-to-run noise.
// node dist/test/gpu/compare-db.js BASE.jsonl[.gz] NEW.jsonl[.gz] [--log FILE]
import { writeFileSync } from 'node:fs';
import { formatTable } from '../../cli/table.js';
import { describeParams, STORAGES } from '../../generator/space.js';
import { fwdParams, TuningDb, type DbResult } from '../../tuner/db.js';
import { comparableTimes, fastestPerProblem } from '../../tuner/dispatch.js';

const [basePath, newPath] = process.argv.slice(2);
if (!basePath || !newPath) {
  console.error('usage: compare-db BASE.jsonl[.gz] NEW.jsonl[.gz] [--log FILE]');
  process.exit(2);
}
const logAt = process.argv.indexOf('--log');

/** Per problem, per storage: the fastest comparable result (a problem's winner is the fastest of them). */
const bestByStorage = (db: TuningDb) => fastestPerProblem(db.results, (r) => fwdParams(r).storage);
const winner = (m: Map<string, DbResult>) => [...m.values()].reduce((a, b) => (b.medianUs! < a.medianUs! ? b : a));
const pct = (r: DbResult | undefined) => (r?.fractionOfCopy === undefined ? '-' : (100 * r.fractionOfCopy).toFixed(1));

function readOrExit(path: string): TuningDb {
  try {
    return TuningDb.read(path);
  } catch (e) {
    console.error(`compare-db: ${(e as Error).message}`);
    process.exit(2);
  }
}
const baseDb = readOrExit(basePath);
const newDb = readOrExit(newPath);
const base = bestByStorage(baseDb);
const rows: (string | number)[][] = [];
let faster = 0;
for (const [key, now] of [...bestByStorage(newDb)].sort(([a], [b]) => a.localeCompare(b))) {
  const before = base.get(key);
  if (!before) continue;
  const [b, n] = [winner(before), winner(now)];
  if (n.medianUs! < b.medianUs!) faster++;
  const perStorage = STORAGES.map((s) => `${pct(before.get(s))}>${pct(now.get(s))}`);
  rows.push([key, pct(b), pct(n), Number((b.medianUs! / n.medianUs!).toFixed(3)), describeParams(fwdParams(n)), ...perStorage]);
}
/** Per storage (`.cl`: clusters): new over base screening time of each variant screened in both. */
function matchedRatios(baseResults: DbResult[], newResults: DbResult[]): Map<string, number[]> {
  const screened = (rs: DbResult[]) => comparableTimes(rs).filter((r) => r.stage === 'screen');
  const key = (r: DbResult) => `${r.problemKey} ${describeParams(fwdParams(r))}`;
  const before = new Map(screened(baseResults).map((r) => [key(r), r.medianUs] as const));
  const out = new Map<string, number[]>();
  for (const r of screened(newResults)) {
    const b = before.get(key(r));
    if (b === undefined) continue;
    const p = fwdParams(r);
    const group = `${p.storage}${p.cluster > 1 ? '.cl' : ''}`;
    out.set(group, [...(out.get(group) ?? []), r.medianUs / b]);
  }
  return out;
}
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(3);
const matched = [...matchedRatios(baseDb.results, newDb.results)].sort(([a], [b]) => a.localeCompare(b)).map(([group, ratios]) => {
  const sorted = [...ratios].sort((a, b) => a - b);
  return [group, sorted.length, quantile(sorted, 0.1), quantile(sorted, 0.5), quantile(sorted, 0.9)];
});

const text = [
  `# ${newPath} against ${basePath}: ${rows.length} common problems, the new winner faster on ${faster}`,
  '',
  `- base: ${baseDb.header.device.name}, templates ${baseDb.sessions.at(-1)?.templateHash.slice(0, 12) ?? '?'}, \`${baseDb.sessions.at(-1)?.command ?? '?'}\``,
  `- new: ${newDb.header.device.name}, templates ${newDb.sessions.at(-1)?.templateHash.slice(0, 12) ?? '?'}, \`${newDb.sessions.at(-1)?.command ?? '?'}\``,
  '- % of copy bandwidth as measured in each run; per storage: best of that storage, base > new',
  '',
  '```',
  formatTable(['problem', 'base %', 'new %', 'speedup', 'new winner', ...STORAGES], rows),
  '```',
  '',
  'Variants screened in both, new time over base (times compare only within one GPU):',
  '',
  '```',
  formatTable(['storage', 'variants', 'p10', 'median', 'p90'], matched),
  '```',
  '',
].join('\n');
if (logAt > 0) writeFileSync(process.argv[logAt + 1], text);
console.log(text);
process.exitCode = rows.length > 0 ? 0 : 1;
