// Merging tuning databases, kept per device: the databases of one GPU model (from
// several machines, runs or CI jobs) become one, every other device gets its own.
//
// For the same device and the same (problem, variant, stage), one record is kept:
//   1. the one measured by the newer normgen (and so the newer templates: a variant id
//      hashes the template text, so one id never spans two template versions),
//   2. then the one with more timing samples (a full timing beats a screening one),
//   3. then the one from the later session (the input order breaks any remaining tie).
// Databases of one device tuned with different templates time different kernels, so
// mixing them is refused unless forced.
//
// With replaceProblems, a problem held by a later input keeps only that input's records: a
// re-tune of some problems (timed another way, say) replaces their earlier measurements
// whole, where the rules above would keep an earlier winner that the re-tune did not re-time.

import { basename } from 'node:path';
import { DbError, deviceKey, type DbHeader, type DbResult, type DbSession, type TuningDb } from './db.js';

export interface MergeOptions {
  /** Merge databases of one device tuned with different kernel templates. */
  force?: boolean;
  /** A problem held by a later input keeps only the last such input's records. */
  replaceProblems?: boolean;
}

export interface MergedDb {
  header: DbHeader;
  sessions: DbSession[];
  results: DbResult[];
  /** The input files that held this device. */
  inputs: string[];
  /** Records that lost to another record of the same key. */
  replaced: number;
  /** Records dropped because a later input re-tuned their problem (replaceProblems). */
  superseded: number;
  /** Template hashes present (more than one only with force). */
  templateHashes: string[];
}

/** Compare two normgen versions (major.minor.patch[-pre]); > 0 when a is newer. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core, pre] = v.split('-', 2);
    return { nums: core.split('.').map((x) => Number.parseInt(x, 10) || 0), pre };
  };
  const [x, y] = [parse(a), parse(b)];
  for (let i = 0; i < Math.max(x.nums.length, y.nums.length); i++) {
    const d = (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
    if (d !== 0) return d;
  }
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1; // a release is newer than its pre-releases
  if (y.pre === undefined) return -1;
  return x.pre < y.pre ? -1 : 1;
}

/** A short file-name stem for a device: sm90-h200, sm90-h100-80gb-hbm3. */
export function deviceSlug(h: DbHeader): string {
  const name = h.device.name.toLowerCase().replace(/^nvidia\s+/, '').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return `${h.arch}-${name || 'gpu'}`;
}

interface Candidate {
  result: DbResult;
  session: DbSession;
  order: number;
}

/** > 0 when a should be kept over b. */
function better(a: Candidate, b: Candidate): number {
  return (
    compareVersions(a.session.normgen, b.session.normgen) ||
    (a.result.samples ?? 0) - (b.result.samples ?? 0) ||
    a.session.started.localeCompare(b.session.started) ||
    b.order - a.order
  );
}

const sessionIdentity = (s: DbSession) => JSON.stringify([s.started, s.command, s.normgen, s.templateHash, s.nvcc, s.copyGbps]);

/** Per problem, the index of the last input that holds it. */
function lastInputOf(dbs: TuningDb[]): Map<string, number> {
  const last = new Map<string, number>();
  dbs.forEach((db, i) => db.results.forEach((r) => last.set(r.problemKey, i)));
  return last;
}

function mergeDevice(dbs: TuningDb[], { force = false, replaceProblems = false }: MergeOptions): MergedDb {
  // Sessions: the same session read from two files (a copy merged again) counts once.
  const unique = new Map<string, DbSession>();
  const sessionOf = new Map<TuningDb, Map<number, DbSession>>();
  for (const db of dbs) {
    const mine = new Map<number, DbSession>();
    for (const s of db.sessions) {
      const id = sessionIdentity(s);
      if (!unique.has(id)) unique.set(id, s);
      mine.set(s.session, unique.get(id)!);
    }
    sessionOf.set(db, mine);
  }
  const hashes = new Map<string, { files: Set<string>; normgen: Set<string> }>();
  for (const db of dbs)
    for (const s of db.sessions) {
      const h = hashes.get(s.templateHash) ?? { files: new Set(), normgen: new Set() };
      h.files.add(basename(db.path));
      h.normgen.add(s.normgen);
      hashes.set(s.templateHash, h);
    }
  if (hashes.size > 1 && !force) {
    const list = [...hashes].map(([hash, h]) => `${[...h.files].join(', ')} with templates ${hash.slice(0, 12)} (normgen ${[...h.normgen].join(', ')})`);
    throw new DbError(`cannot merge ${dbs[0].header.device.name} databases tuned with different kernel templates: ${list.join('; ')}; their timings are of different kernels (re-tune, or pass --force to keep both)`);
  }

  const sessions = [...unique.values()].sort((a, b) => a.started.localeCompare(b.started) || a.session - b.session);
  const number = new Map(sessions.map((s, i) => [s, i + 1]));
  const kept = new Map<string, Candidate>();
  let order = 0;
  let replaced = 0;
  let superseded = 0;
  const lastInput = replaceProblems ? lastInputOf(dbs) : undefined;
  for (const [i, db] of dbs.entries())
    for (const result of db.results) {
      if (lastInput && lastInput.get(result.problemKey) !== i) {
        superseded++;
        continue;
      }
      const c: Candidate = { result, session: sessionOf.get(db)!.get(result.session)!, order: order++ };
      const key = `${result.problemKey}|${result.variantId}|${result.stage}`;
      const old = kept.get(key);
      if (old) replaced++;
      if (!old || better(c, old) > 0) kept.set(key, c);
    }
  const results = [...kept.values()]
    .sort((a, b) => number.get(a.session)! - number.get(b.session)! || a.order - b.order)
    .map((c) => ({ ...c.result, session: number.get(c.session)! }));
  // The header of the newest session's file: its driver and card are the latest seen.
  const newest = sessions[sessions.length - 1];
  const headerDb = dbs.find((db) => newest && db.sessions.some((s) => sessionIdentity(s) === sessionIdentity(newest))) ?? dbs[0];
  return {
    header: headerDb.header,
    sessions: sessions.map((s) => ({ ...s, session: number.get(s)! })),
    results,
    inputs: dbs.map((db) => db.path),
    replaced,
    superseded,
    templateHashes: [...hashes.keys()],
  };
}

/** Merge databases: one merged database per device, in the order devices first appear. */
export function mergeDatabases(dbs: TuningDb[], options: MergeOptions = {}): MergedDb[] {
  const byDevice = new Map<string, TuningDb[]>();
  for (const db of dbs) {
    if (db.header.backend !== 'cuda') throw new DbError(`${db.path} is for backend ${db.header.backend}; merge knows cuda`);
    const key = `${db.header.arch}|${deviceKey(db.header.device)}`;
    byDevice.set(key, [...(byDevice.get(key) ?? []), db]);
  }
  return [...byDevice.values()].map((group) => mergeDevice(group, options));
}
