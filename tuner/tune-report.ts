// The performance log of a tune: date, card, command, copy bandwidth, and per problem
// the winner's time, GB/s, fraction of copy bandwidth and speedup over the baseline.

import { formatTable } from '../cli/table.js';
import { launchOf, type DbSession, type TuningDb } from './db.js';
import { PLAIN_TWIN_ROWS_BELOW } from '../generator/render-cuda.js';
import { AFFINE_ALIAS_BYTES, RELEASE_COMPARE_MAX_BYTES } from './measure.js';
import { WINNER_HEADER, winnerRow, winners, type Winner } from './select.js';

/** Problems this large must reach the roofline target. */
export const LARGE_PROBLEM_ELEMENTS = 16 * 2 ** 20;

/** The roofline target for large problems: this fraction of copy bandwidth. */
export const TARGET_FRACTION = 0.92;

/** The copy bandwidth each result is a fraction of: this run's (each GPU's with --gpus), and that of a resumed database's earlier runs. */
function copyLine(sessions: DbSession[]): string {
  const gbps = (s: DbSession) => {
    const byGpu = Object.entries(s.copyGbpsByGpu ?? {});
    return byGpu.length < 2 ? `${s.copyGbps.toFixed(0)} GB/s` : byGpu.map(([gpu, g]) => `GPU ${gpu} ${g.toFixed(0)} GB/s`).join(', ');
  };
  const latest = sessions[sessions.length - 1];
  if (!latest) return '-';
  const earlier = sessions.slice(0, -1).map(gbps);
  const several = earlier.length > 0 || Object.keys(latest.copyGbpsByGpu ?? {}).length > 1;
  return gbps(latest) + (earlier.length ? `; earlier runs of this database: ${earlier.join('; ')}` : '') + (several ? " (each result is a fraction of its own GPU's, in its own run)" : '');
}

/** How the timed kernels were launched in the database's runs (before the field existed: plainly). */
function launchText(sessions: DbSession[]): string {
  const mode = launchOf(sessions);
  if (mode === 'mixed') return 'back-to-back launches (with programmatic dependent launch in some runs of this database, plain in others)';
  if (mode === 'programmatic')
    return 'back-to-back launches with programmatic dependent launch (each kernel starts while the one before drains, as the package launches them)' + chainText(sessions);
  if (!sessions.every((s) => s.plainTwins)) return 'back-to-back plain launches';
  const compared = sessions.every((s) => s.plainCompared) ? '; finals timed the other one too and kept the faster, which the package then runs there' : '';
  return `back-to-back plain launches of each kernel's plain twin below ${PLAIN_TWIN_ROWS_BELOW} rows, of the kernel itself from there on (as the package launches plainly)${compared}`;
}

/** Programmatic runs: how long a final timing's chain of launches was (short graphs can hide a long chain's slowdown). */
function chainText(sessions: DbSession[]): string {
  const chains = sessions.filter((s) => s.launch === 'programmatic').map((s) => s.chainLaunches);
  const longest = Math.max(0, ...chains.map((c) => c ?? 0));
  if (!longest) return '';
  return chains.every((c) => c === longest)
    ? `; final timings in graphs of at least ${longest} launches`
    : `; final timings in graphs of at least ${longest} launches in some runs, of fewer in earlier ones`;
}

export function largeProblemSummary(ws: Winner[]): { count: number; atTarget: number; minFraction: number; worst?: Winner } {
  const large = ws.filter((w) => w.problem.rows * w.problem.hidden >= LARGE_PROBLEM_ELEMENTS);
  let worst: Winner | undefined;
  for (const w of large) if (!worst || (w.best.fractionOfCopy ?? 0) < (worst.best.fractionOfCopy ?? 0)) worst = w;
  const atTarget = large.filter((w) => (w.best.fractionOfCopy ?? 0) >= TARGET_FRACTION).length;
  return { count: large.length, atTarget, minFraction: worst?.best.fractionOfCopy ?? NaN, worst };
}

/**
 * Seconds the database's sessions with the latest session's templates took, each from its
 * start to its last recorded result: a tune resumed over several runs (each stopped by a
 * time limit, say) in all. Undefined when a result lacks a readable time (older databases).
 */
export function sessionsSeconds(db: TuningDb): { sessions: number; seconds: number } | undefined {
  const latest = db.sessions[db.sessions.length - 1];
  if (!latest) return undefined;
  const sessions = db.sessions.filter((s) => s.templateHash === latest.templateHash);
  const last = new Map<number, number>();
  for (const r of db.results) {
    const at = r.at === undefined ? NaN : Date.parse(r.at);
    if (Number.isNaN(at)) return undefined;  // an older database, or a damaged time
    last.set(r.session, Math.max(last.get(r.session) ?? 0, at));
  }
  let seconds = 0;
  for (const s of sessions) seconds += Math.max(0, ((last.get(s.session) ?? Date.parse(s.started)) - Date.parse(s.started)) / 1000);
  return { sessions: sessions.length, seconds };
}

export function tuneReport(db: TuningDb, seconds: number, restarts: number): string {
  const ws = winners(db);
  const session = db.sessions[db.sessions.length - 1];
  const d = db.header.device;
  const large = largeProblemSummary(ws);
  const statuses = new Map<string, number>();
  for (const r of db.results) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  const out = [
    `# Tuning results: ${d.name} (${db.header.arch})`,
    '',
    `- date: ${session?.started ?? 'unknown'}`,
    `- card: ${d.name}, compute capability ${d.computeCapability}, ${d.sms} SMs, ${(d.memoryBytes / 2 ** 30).toFixed(0)} GiB, L2 ${(d.l2Bytes / 2 ** 20).toFixed(0)} MiB, driver ${d.driver}, CUDA runtime ${d.cudaRuntime}`,
    `- command: \`${session?.command ?? ''}\``,
    `- normgen ${session?.normgen}, templates ${session?.templateHash.slice(0, 12)}, nvcc ${session?.nvcc}`,
    `- device-to-device copy bandwidth (same process, cudaMemcpy of 1 GiB, read + write): ${copyLine(db.sessions)}`,
    `- this run: ${seconds.toFixed(0)} s; runner restarts after faults or hangs: ${restarts}`,
    ...resumedLine(db),
    ...seedLine(db),
    `- measurements in the database: ${db.results.length} (${[...statuses].map(([s, n]) => `${s} ${n}`).join(', ')})`,
    `- problems with rows x hidden >= 16M elements: ${large.count}, of which at >= ${100 * TARGET_FRACTION}% of copy bandwidth: ${large.atTarget}; lowest: ${(100 * large.minFraction).toFixed(1)}%${large.worst ? ` (${winnerRow(large.worst)[0]})` : ''}`,
    '',
    `Times are medians of 5-15 samples, each a CUDA graph of ${launchText(db.sessions)}`,
    'over rotating input copies (cold L2); every timed variant was verified on the same problem.',
    ...aliasedLine(db),
    ...releaseLine(db),
    ...plainLaunchLine(db),
    '',
    '```',
    formatTable(WINNER_HEADER, ws.map(winnerRow)),
    '```',
    '',
  ];
  return out.join('\n');
}

/** A seeded re-tune: which problems were timed on only part of the space. */
function seedLine(db: TuningDb): string[] {
  const seeded = db.sessions.filter((s) => s.seed && s.templateHash === db.sessions[db.sessions.length - 1].templateHash);
  return seeded.map(
    ({ seed }) =>
      `- seeded re-tune (a run with \`--seed ${seed!.db}\`): in ${seed!.problems} problems that tune finished, only its ${seed!.keep} fastest variants, ` +
      'the baseline and variants it never tried were to be timed (what earlier runs measured stays); in the others, the whole space',
  );
}

/** With more than one session of these templates: their time in all (a resumed tune). */
function resumedLine(db: TuningDb): string[] {
  const t = sessionsSeconds(db);
  if (!t || t.sessions < 2) return [];
  return [`- all ${t.sessions} runs of these templates in this database (a tune resumed): ${t.seconds.toFixed(0)} s, each from its start to its last result`];
}

/** How many final timings took two placements of weight and bias (reload kernels without a residual), and how many the aliased one slowed. */
function aliasedLine(db: TuningDb): string[] {
  const both = db.results.filter((r) => r.usualUs !== undefined && r.aliasedUs !== undefined);
  if (both.length === 0) return [];
  const slowed = both.filter((r) => r.aliasedUs! > 1.02 * r.usualUs!).length;
  return [
    `Kernels that re-read rows from L1 (reload, no residual) were timed in their finals twice, weight and bias as allocated and aliased ` +
      `(${AFFINE_ALIAS_BYTES / 1024} KiB apart, in L1 sets of x's rows), and keep the slower time: ${both.length} timing${both.length === 1 ? '' : 's'}, ${slowed} of them over 2% slower aliased.`,
  ];
}

/** Under plain launches: how many finals timed the twin and the kernel itself both, and how often and by how much each won. */
function plainLaunchLine(db: TuningDb): string[] {
  const both = db.results.filter((r) => r.twinUs !== undefined && r.kernelUs !== undefined);
  if (both.length === 0) return [];
  const kernel = both.filter((r) => r.plainLaunch === 'kernel').length;
  const clearly = (a: 'twinUs' | 'kernelUs', b: 'twinUs' | 'kernelUs') => both.filter((r) => r[a]! < 0.98 * r[b]!).length;
  return [
    `Finals launched plainly were timed as the kernel's plain twin and as the kernel itself, and keep the faster: ${both.length} timing${both.length === 1 ? '' : 's'}, ` +
      `the twin faster in ${both.length - kernel} (${clearly('twinUs', 'kernelUs')} by over 2%), the kernel itself in ${kernel} (${clearly('kernelUs', 'twinUs')} by over 2%).`,
  ];
}

/** How many final timings compared release points (finalOptions), and how often and by how much each later point won. */
function releaseLine(db: TuningDb): string[] {
  const plural = (n: number) => `${n} timing${n === 1 ? '' : 's'}`;
  const lines: string[] = [];
  const both = db.results.filter((r) => r.releaseStartUs !== undefined && r.releaseLateUs !== undefined);
  if (both.length) {
    const late = both.filter((r) => r.release === 'late').length;
    const clearly = both.filter((r) => r.releaseLateUs! < 0.98 * r.releaseStartUs!).length;
    const startClearly = both.filter((r) => r.releaseStartUs! < 0.98 * r.releaseLateUs!).length;
    lines.push(
      `Finals of problems moving up to ${RELEASE_COMPARE_MAX_BYTES / 1e6} MB were timed twice, the next grid released at the kernel's start and after its wait, and keep the faster: ` +
        `${plural(both.length)}, ${late} faster released after the wait (${clearly} by over 2%; ${startClearly} over 2% faster released at the start).`,
    );
  }
  const exits = db.results.filter((r) => r.releaseStartUs !== undefined && r.releaseExitUs !== undefined);
  if (exits.length) {
    const fastest = exits.filter((r) => r.release === 'exit').length;
    const clearly = exits.filter((r) => r.release === 'exit' && r.releaseExitUs! < 0.98 * r.releaseStartUs!).length;
    lines.push(
      `Finals of persistent kernels in clusters were also timed releasing the next grid only at their exit: ${plural(exits.length)}, ` +
        `${fastest} fastest so (${clearly} by over 2% against the start).`,
    );
  }
  return lines;
}
