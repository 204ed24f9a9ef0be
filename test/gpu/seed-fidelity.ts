// How well a seeded re-tune (tune --seed) would have done, from two full tunes of the same
// card: OLD, tuned with earlier templates, seeds; NEW, a whole-space tune of later templates,
// stands in for what a seeded tune of them would measure. For each problem both finished and
// each kept count N: does the seeded set (OLD's N fastest, the baseline, variants OLD never
// tried) hold NEW's winner, how much of the space it times, and where it misses, how much
// slower the best of the set is (its finalists' full timings where NEW has them, else screenings).
// node dist/test/gpu/seed-fidelity.js OLD.jsonl[.gz] NEW.jsonl[.gz] [--keep 4,8,16] [--log FILE]
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { formatTable } from '../../cli/table.js';
import { baselineParams } from '../../generator/space.js';
import { comparableTimes } from '../../tuner/dispatch.js';
import { fwdParams, TuningDb, type DbResult } from '../../tuner/db.js';
import { DEFAULT_SEED_KEEP, groupByProblem, paramsKey, TuneSeed } from '../../tuner/seed.js';

const [oldPath, newPath] = process.argv.slice(2);
if (!oldPath || !newPath) {
  console.error('usage: seed-fidelity OLD.jsonl[.gz] NEW.jsonl[.gz] [--keep 4,8,16] [--log FILE]');
  process.exit(2);
}
const option = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const keeps = (option('--keep') ?? '4,8,12,16,24,32').split(',').map(Number);

const oldDb = TuningDb.read(oldPath);
const newDb = TuningDb.read(newPath);
const byProblem = groupByProblem(newDb.results);
const comparable = groupByProblem(comparableTimes(newDb.results));
const fastest = (rs: DbResult[]) => rs.reduce<DbResult | undefined>((a, b) => (!a || b.medianUs! < a.medianUs! ? b : a), undefined);

const rows: (string | number)[][] = [];
const misses: string[] = [];
for (const keep of keeps) {
  const seed = TuneSeed.fromDb(oldDb, keep, false);
  let problems = 0;
  let held = 0;
  let space = 0;
  let kept = 0;
  let worst = 1;
  const regrets: number[] = [];
  for (const [key, rs] of byProblem) {
    const finals = (comparable.get(key) ?? []).filter((r) => r.stage === 'final');
    const winner = fastest(finals);
    if (!winner) continue; // NEW did not finish it
    const variants = [...new Map(rs.map((r) => [r.variantId, { id: r.variantId, params: r.params }])).values()];
    const baseline = variants.find((v) => paramsKey(v.params) === paramsKey(baselineParams(winner.problem)))?.id ?? '';
    const choice = seed.choose(winner.problem, variants, baseline);
    if (!choice.seeded) continue; // OLD did not finish it: a seeded tune times the whole space
    problems++;
    space += variants.length;
    kept += choice.variants.length;
    const ids = new Set(choice.variants.map((v) => v.id));
    if (ids.has(winner.variantId)) {
      held++;
      continue;
    }
    // Missed: the best the set offers, by full timing where NEW re-timed it, else by screening against the winner's screening.
    const inSet = (r: DbResult) => ids.has(r.variantId);
    const finalBest = fastest(finals.filter(inSet));
    const screens = (comparable.get(key) ?? []).filter((r) => r.stage === 'screen');
    const winnerScreen = screens.find((r) => r.variantId === winner.variantId)?.medianUs;
    const screenBest = fastest(screens.filter(inSet));
    const regret = finalBest ? finalBest.medianUs! / winner.medianUs! : screenBest && winnerScreen ? screenBest.medianUs! / winnerScreen : Infinity;
    regrets.push(regret);
    worst = Math.max(worst, regret);
    if (keep === DEFAULT_SEED_KEEP) misses.push(`${key}: winner ${paramsKey(fwdParams(winner))}, best of the set ${regret.toFixed(3)}x its time (${finalBest ? 'full timings' : 'screenings'})`);
  }
  const over = (x: number) => regrets.filter((r) => r > x).length;
  rows.push([keep, problems, held, problems - held, over(1.01), over(1.02), worst.toFixed(3), (kept / Math.max(1, space)).toFixed(3)]);
}

const text = [
  `# Seeded re-tune, simulated: ${basename(oldPath)} seeding the templates of ${basename(newPath)}`,
  '',
  `- old: ${oldDb.header.device.name}, templates ${oldDb.sessions.at(-1)?.templateHash.slice(0, 12)}`,
  `- new: ${newDb.header.device.name}, templates ${newDb.sessions.at(-1)?.templateHash.slice(0, 12)}, ${newDb.results.length} measurements`,
  '',
  '```',
  formatTable(['keep', 'problems', 'winner kept', 'missed', 'missed by >1%', 'missed by >2%', 'worst', 'share of space timed'], rows),
  '```',
  '',
  ...(misses.length ? [`Misses at keep ${DEFAULT_SEED_KEEP}:`, '', ...misses.map((m) => `- ${m}`), ''] : []),
].join('\n');
const log = option('--log');
if (log) writeFileSync(log, text);
console.log(text);
