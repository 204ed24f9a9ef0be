// `normgen check`: re-time a tuning database's winners, and the best few challengers of
// each, on the GPU present, and say where the recorded choice no longer holds: a winner
// slower than recorded by more than the tolerance, failing now, or beaten by another
// variant by more than the tolerance.

import { parseArch } from '../generator/arch.js';
import { InputError, problemKey, specKey, type Problem } from '../generator/problem.js';
import { templateHash } from '../generator/templates.js';
import { makeVariant, type Variant } from '../generator/variant.js';
import { CompilePool, type VariantBuild } from './compile-pool.js';
import { fwdParams, launchOf, sameDevice, type DbResult, type LaunchMode, type TuningDb } from './db.js';
import { copyBandwidth, queryRunner, type DeviceId } from './device.js';
import { measure, type Measurement } from './measure.js';
import { buildRunner, Runner } from './runner.js';
import { finalOptions, hangTimeoutMs } from './tune.js';

export interface CheckOptions {
  /** The databases to choose from: the one tuned on this GPU's model is checked. */
  dbs: TuningDb[];
  /** Allowed slowdown of a winner, and margin another variant must beat it by (0.05 = 5%). */
  tolerance: number;
  /** Challengers re-timed per problem: the fastest recorded variants after the winner. */
  challengers: number;
  gpu: number;
  jobs: number;
  runnerExe?: string;
  timeoutSeconds?: number;
  onProgress?: (done: number, total: number, failures: number) => void;
}

export type Role = 'winner' | 'challenger';

export interface DriftRow {
  problem: Problem;
  role: Role;
  recorded: DbResult;
  now: Measurement;
  /** now / recorded - 1, when both have a time. */
  drift?: number;
}

export interface ProblemCheck {
  problem: Problem;
  rows: DriftRow[];
  /** Why the recorded winner no longer holds; empty when it does. */
  problems: string[];
}

export interface CheckOutcome {
  db: TuningDb;
  device: DeviceId;
  copyGbps: { recorded?: number; now: number };
  checks: ProblemCheck[];
  /** True when any winner drifted past the tolerance, fails, or was overtaken. */
  drifted: boolean;
}

/** Parse "5%" or "0.05"; a bare number >= 1 is ambiguous and refused. */
export function parseTolerance(text: string | number): number {
  const s = String(text).trim();
  const percent = s.endsWith('%');
  const n = Number(percent ? s.slice(0, -1) : s);
  const value = percent ? n / 100 : n;
  if (s === '' || !Number.isFinite(n) || value < 0 || value >= 1 || (!percent && n >= 1))
    throw new InputError(`--tolerance takes a fraction below 1 or a percentage, like 0.05 or 5%; got '${s}'`);
  return value;
}

/** The final-stage verified results of each problem, fastest first. */
function rankedFinals(db: TuningDb): Map<string, DbResult[]> {
  const by = new Map<string, DbResult[]>();
  for (const r of db.results) {
    if (r.stage !== 'final' || r.status !== 'OK' || typeof r.medianUs !== 'number') continue;
    by.set(r.problemKey, [...(by.get(r.problemKey) ?? []), r]);
  }
  for (const rs of by.values()) rs.sort((a, b) => a.medianUs! - b.medianUs!);
  return by;
}

/** The database of this GPU's model timed as the runner launches (a model may have one of each launch mode). */
function chooseDb(dbs: TuningDb[], device: DeviceId, launch: LaunchMode): TuningDb {
  const mine = dbs.filter((db) => db.header.arch === device.arch && sameDevice(db.header.device, device));
  const same = mine.find((db) => launchOf(db.sessions) === launch);
  if (same) return same;
  if (mine.length > 0)
    throw new InputError(`${mine.map((db) => db.path).join(', ')} ${mine.length > 1 ? 'were' : 'was'} not timed with ${launch} launches as this run launches: ${launch === 'plain' ? 'unset NORMGEN_PDL' : 'set NORMGEN_PDL=0'} or pass the other database`);
  const held = dbs.map((db) => `${db.path} (${db.header.device.name})`).join(', ');
  throw new InputError(`no database for this GPU (${device.name}, ${device.arch}): ${held}; check each database on its own GPU model`);
}

/** What went wrong for one problem, judged from its winner's and challengers' new timings. */
export function judge(rows: DriftRow[], tolerance: number): string[] {
  const winner = rows.find((r) => r.role === 'winner')!;
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  if (winner.now.status !== 'OK' || winner.now.medianUs === undefined) return [`winner ${winner.recorded.variantId} now ${winner.now.status}${winner.now.error ? `: ${winner.now.error}` : ''}`];
  const out: string[] = [];
  if (winner.drift! > tolerance) out.push(`winner ${winner.recorded.variantId} is ${pct(winner.drift!)} slower than recorded`);
  for (const c of rows)
    if (c.role === 'challenger' && c.now.status === 'OK' && c.now.medianUs! * (1 + tolerance) < winner.now.medianUs)
      out.push(`${c.recorded.variantId} now beats winner ${winner.recorded.variantId} by ${pct(winner.now.medianUs / c.now.medianUs! - 1)}`);
  return out;
}

interface Pick {
  role: Role;
  recorded: DbResult;
  variant: Variant;
}

/** Per problem the winner and the next `challengers` fastest, with their variants rendered now. */
function planChecks(db: TuningDb, challengers: number): { problem: Problem; picks: Pick[] }[] {
  const tuned = db.sessions[db.sessions.length - 1]?.templateHash;
  if (tuned !== templateHash('cuda'))
    throw new InputError(`${db.path} was tuned with templates ${String(tuned).slice(0, 12)}, these are ${templateHash('cuda').slice(0, 12)}: its kernels cannot be re-timed; re-tune instead`);
  const plan = [...rankedFinals(db).values()].map((rs) => {
    const problem = rs[0].problem;
    const picks = rs.slice(0, 1 + challengers).map((recorded, i): Pick => {
      const variant = makeVariant(problem, fwdParams(recorded));
      if (variant.id !== recorded.variantId) throw new InputError(`${db.path}: variant ${recorded.variantId} of ${recorded.problemKey} no longer renders the same kernel: re-tune`);
      return { role: i === 0 ? 'winner' : 'challenger', recorded, variant };
    });
    return { problem, picks };
  });
  return plan.sort((a, b) => problemKey(a.problem).localeCompare(problemKey(b.problem), 'en', { numeric: true }));
}

/** Compile every picked variant: one unit per kernel spec and hidden size, as tune does. */
async function compileAll(db: TuningDb, plan: { problem: Problem; picks: Pick[] }[], jobs: number, twins: boolean): Promise<Map<string, VariantBuild>> {
  const units = new Map<string, Map<string, Variant>>();
  for (const { problem, picks } of plan) {
    const key = `${specKey(problem)}.h${problem.hidden}`;
    const unit = units.get(key) ?? new Map<string, Variant>();
    for (const p of picks) unit.set(p.variant.id, p.variant);
    units.set(key, unit);
  }
  const pool = new CompilePool(parseArch(db.header.arch), jobs);
  const builds = new Map<string, VariantBuild>();
  try {
    await Promise.all(
      [...units.values()].map(async (unit) => {
        const variants = [...unit.values()];
        for (const [id, b] of await pool.build({ spec: variants[0].spec, variants, twins })) builds.set(id, b);
      }),
    );
  } finally {
    await pool.close();
  }
  return builds;
}

export async function checkDrift(o: CheckOptions): Promise<CheckOutcome> {
  const runner = new Runner(o.runnerExe ?? (await buildRunner()), o.gpu);
  try {
    const { device, launch } = await queryRunner(runner);
    const db = chooseDb(o.dbs, device, launch);
    // Re-time what the tune timed: the plain twins where it did.
    const twins = db.sessions.some((s) => s.plainTwins === true);
    const comparePlain = db.sessions.some((s) => s.plainCompared === true);
    const plan = planChecks(db, o.challengers);
    const builds = await compileAll(db, plan, o.jobs, twins);
    const copyNow = await copyBandwidth(runner);
    const total = plan.reduce((n, p) => n + p.picks.length, 0);
    let done = 0;
    let failures = 0;
    const checks: ProblemCheck[] = [];
    for (const { problem, picks } of plan) {
      const rows: DriftRow[] = [];
      for (const { role, recorded, variant } of picks) {
        const b = builds.get(variant.id)!;
        const now: Measurement =
          b.status === 'OK'
            ? await measure(runner, problem, variant, b.cubin, { ...finalOptions(problem), timeoutMs: hangTimeoutMs(problem, o.timeoutSeconds), plainTwin: twins, comparePlain }, copyNow)
            : { status: b.status, ...(b.status === 'COMPILE_ERROR' ? { error: b.log.split('\n').find((l) => l.includes('error')) ?? 'compile error' } : {}) };
        const drift = now.status === 'OK' && now.medianUs !== undefined ? now.medianUs / recorded.medianUs! - 1 : undefined;
        rows.push({ problem, role, recorded, now, drift });
        if (now.status !== 'OK') failures++;
        o.onProgress?.(++done, total, failures);
      }
      checks.push({ problem, rows, problems: judge(rows, o.tolerance) });
    }
    const recordedCopy = db.sessions[db.sessions.length - 1]?.copyGbps;
    return { db, device, copyGbps: { recorded: recordedCopy, now: copyNow }, checks, drifted: checks.some((c) => c.problems.length > 0) };
  } finally {
    await runner.close();
  }
}
