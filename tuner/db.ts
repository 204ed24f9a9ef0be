// The tuning database: JSON lines, appended and flushed one record at a time, so a
// SIGKILL at any moment loses at most the measurement in flight and a re-run resumes.
//
//   line 1:  {"kind":"header", "format":1, "device":{...}, "arch":"sm90", "backend":"cuda"}
//            (WGSL: "backend":"wgsl", "arch": the Dawn backend, "device": the adapter's identity)
//   then:    {"kind":"session", ...}   one per tune run: copy bandwidth, command, versions
//            {"kind":"result", ...}    one per (problem, variant, stage)

import { closeSync, existsSync, fsyncSync, openSync, readFileSync, statSync, truncateSync, writeSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { writeFileAtomic } from '../generator/files.js';
import { InputError, isBackward, type Problem } from '../generator/problem.js';
import { REGISTER_CAPS, type CudaParams } from '../generator/space.js';
import type { WgslParams } from '../generator/space-wgsl.js';
import type { AnyParams } from './direction.js';
import type { DeviceId } from './device.js';
import { PLAIN_LAUNCHES, RELEASE_POINTS, type Measurement } from './measure.js';
import type { AdapterId } from './wgsl/adapter.js';

export const DB_FORMAT = 1;

export type Backend = 'cuda' | 'wgsl';

export interface DbHeader {
  kind: 'header';
  format: number;
  backend: 'cuda';
  arch: string;
  device: DeviceId;
}

/** A WGSL database: `arch` is the Dawn backend (vulkan, opengles, ...), `device` the adapter. */
export interface WgslDbHeader {
  kind: 'header';
  format: number;
  backend: 'wgsl';
  arch: string;
  device: AdapterId;
}

export type AnyDbHeader = DbHeader | WgslDbHeader;

export interface DbSession {
  kind: 'session';
  session: number;
  started: string;
  command: string;
  normgen: string;
  templateHash: string;
  /** The compiler (CUDA) or the Dawn package version (WGSL: `webgpu x.y.z`). */
  nvcc?: string;
  dawn?: string;
  /** The copy bandwidth of the first GPU (with --gpus: each GPU's in copyGbpsByGpu, by device index). */
  copyGbps: number;
  copyGbpsByGpu?: Record<string, number>;
  /** CUDA: how timed kernels were launched (programmatic: each may start while the one before drains). */
  launch?: LaunchMode;
  /** Plain forward runs: each kernel's plain twin was timed, as a package launches plainly (absent before they existed). */
  plainTwins?: boolean;
  /** Plain forward runs: finals timed each variant's twin and kernel both (plainLaunch; absent before 2026-12-07). */
  plainCompared?: boolean;
  /** Programmatic runs: the fewest launches in a final timing's graph (a chain's steady state; absent before it existed). */
  chainLaunches?: number;
  /** A seeded re-tune (tune --seed): the earlier database, variants kept per problem, problems it seeded. */
  seed?: { db: string; keep: number; problems: number };
}

/** screen: a short timing used by --budget to pick candidates; final: the full one. */
export type Stage = 'screen' | 'final';

export interface DbResult<P extends object = AnyParams> extends Measurement {
  kind: 'result';
  session: number;
  problemKey: string;
  problem: Problem;
  variantId: string;
  /** CUDA: forward (CudaParams) or backward (BwdParams) parameters, by the problem's direction; WGSL: WgslParams. */
  params: P;
  stage: Stage;
  /** Registers per thread from ptxas, when it compiled. */
  registers?: number;
  /** The CUDA device index that measured it (with --gpus). */
  gpu?: number;
  /** WGSL: how it was timed and dispatches per timed batch. */
  timer?: string;
  dispatchesPerSample?: number;
  /** When it was recorded (ISO 8601; absent in older databases): with the sessions' starts, how long a tune took. */
  at?: string;
}

export type DbLine = DbHeader | DbSession | DbResult;
/** Any line of any backend's database. */
export type AnyDbLine = AnyDbHeader | DbSession | DbResult<object>;
export type WgslDbResult = DbResult<WgslParams>;

/** How kernels are launched, and were timed: programmatic dependent launch, or plain launches. */
export type LaunchMode = 'programmatic' | 'plain';

/** How a session's kernels were timed (before the field existed: plainly). */
export const sessionLaunch = (s: DbSession): LaunchMode => s.launch ?? 'plain';

/** How a database's kernels were timed: every session's launch mode, or mixed. */
export function launchOf(sessions: readonly DbSession[]): LaunchMode | 'mixed' {
  const modes = new Set(sessions.map(sessionLaunch));
  return modes.size > 1 ? 'mixed' : modes.has('programmatic') ? 'programmatic' : 'plain';
}

/** A forward result's parameters; tools that know only forward kernels read them through this. */
export function fwdParams(r: DbResult): CudaParams {
  if (isBackward(r.problem)) throw new DbError(`${r.problemKey} is a backward result: this tool reads forward results only`);
  return r.params as CudaParams;
}

/**
 * A result as this normgen names its fields: databases before the 1536-thread register cap
 * wrote the 1024 one as `true`, and those before 2026-12-04 the release point as two flags.
 */
function upgradeResult(r: DbResult<object>): DbResult<object> {
  const params = r.params as { registerCap?: unknown } | undefined;
  const upgraded = params?.registerCap === true ? { ...r, params: { ...params, registerCap: 1024 } } : r;
  const { releaseLate, releaseAtExit, ...rest } = upgraded as DbResult<object> & { releaseLate?: unknown; releaseAtExit?: unknown };
  if (releaseLate === undefined && releaseAtExit === undefined) return upgraded;
  return releaseAtExit === true ? { ...rest, release: 'exit' } : releaseLate === true ? { ...rest, release: 'late' } : rest;
}

/** A register cap the launch bounds can take: one this normgen knows, a whole number of the CTA's threads. */
const registerCapFits = (cap: unknown, threads: unknown) =>
  (REGISTER_CAPS as readonly unknown[]).includes(cap) && typeof threads === 'number' && threads > 0 && (cap as number) % threads === 0;

export class DbError extends InputError {
  override name = 'DbError';
}

/** Same GPU model and arch: the records transfer (another card of the same model is fine). */
export function sameDevice(a: DeviceId | AdapterId, b: DeviceId | AdapterId): boolean {
  return deviceKey(a) === deviceKey(b);
}

/**
 * The identity databases are kept by. CUDA: model name, arch, SM count and memory size.
 * WGSL: the adapter's vendor, architecture, device, description and Dawn backend.
 */
export function deviceKey(d: DeviceId | AdapterId): string {
  if ('vendor' in d) return ['wgsl', d.vendor, d.architecture, d.device, d.description, d.backend].join('|');
  return [d.name, d.arch, d.sms, d.memoryBytes].join('|');
}

const BACKEND_NAME: Record<Backend, string> = { cuda: 'CUDA', wgsl: 'WGSL' };

/** Write a whole database at once (merge output), laid out as tune writes it: each session, then its results. */
export function writeDb(path: string, header: DbHeader, sessions: DbSession[], results: DbResult[]): void {
  const lines: DbLine[] = [header];
  for (const s of sessions) {
    lines.push(s);
    // One by one: a session's results can outnumber what a spread call takes as arguments.
    for (const r of results) if (r.session === s.session) lines.push(r);
  }
  writeFileAtomic(path, lines.map((l) => JSON.stringify(l) + '\n').join(''));
}

export class TuningDb<P extends object = AnyParams, H extends AnyDbHeader = DbHeader> {
  readonly sessions: DbSession[] = [];
  readonly results: DbResult<P>[] = [];
  private fd: number | undefined;

  private constructor(readonly path: string, readonly header: H) {}

  /**
   * Open (or create) a database for this device. A file from another device or arch,
   * or one damaged anywhere but its last line, is refused with a clear error; a last
   * line cut off by a crash is dropped.
   */
  /**
   * Open a database to tune into, creating it if absent. `templates`: the hash of the
   * kernel templates about to be tuned; a database whose last session tuned others is
   * refused (its variants are other kernels: nothing would resume, and its old results
   * would compete with the new ones).
   */
  static open<P extends object = AnyParams, H extends AnyDbHeader = DbHeader>(path: string, header: Omit<H, 'kind' | 'format'>, templates?: string): TuningDb<P, H> {
    const full = { kind: 'header', format: DB_FORMAT, ...header } as H;
    if (isCompressed(path)) throw new DbError(`${path} is compressed, so read-only: gunzip it to tune into it`);
    if (!existsSync(path)) {
      const db = new TuningDb<P, H>(path, full);
      db.append(full);
      return db;
    }
    const { lines, validBytes, damagedTail } = TuningDb.parse(path);
    const first = lines[0];
    if (!first || first.kind !== 'header') throw new DbError(`${path} is not a normgen tuning database (no header line)`);
    if (first.format !== DB_FORMAT) throw new DbError(`${path} has format ${first.format}; this normgen reads format ${DB_FORMAT}`);
    if (first.backend !== header.backend || first.arch !== header.arch || !sameDevice(first.device, header.device)) {
      throw new DbError(
        `${path} was tuned on ${first.device.name} (${first.arch}, ${first.backend}), not on this ${header.device.name} (${header.arch}, ${header.backend}): pass another --db`,
      );
    }
    const last = lines.filter((l): l is DbSession => l.kind === 'session').pop();
    if (templates !== undefined && last && last.templateHash !== templates) {
      throw new DbError(
        `${path} holds results of other kernel templates (${last.templateHash.slice(0, 12)}, normgen ${last.normgen}; these are ${templates.slice(0, 12)}): ` +
          'their variants are other kernels, so nothing there resumes. Pass a new --db (this one is left as it is)',
      );
    }
    if (damagedTail) truncateSync(path, validBytes); // an interrupted write; the rest is intact
    return TuningDb.fill(new TuningDb<P, H>(path, first as H), lines);
  }

  private static fill<P extends object, H extends AnyDbHeader>(db: TuningDb<P, H>, lines: AnyDbLine[]): TuningDb<P, H> {
    for (const l of lines.slice(1)) {
      if (l.kind === 'session') db.sessions.push(l);
      else if (l.kind === 'result') db.results.push(upgradeResult(l) as DbResult<P>);
    }
    return db;
  }

  /** The backend a database file holds (cuda for files from before WGSL tuning). */
  static backendOf(path: string): Backend {
    return TuningDb.load(path).header.backend;
  }

  /** Read a CUDA database (for build/report/check/merge): the same checks, nothing written. */
  static read(path: string): TuningDb {
    return TuningDb.expect(TuningDb.load(path), 'cuda') as TuningDb;
  }

  /** Read a WGSL database (`tune --backend wgsl` writes them). */
  static readWgsl(path: string): TuningDb<WgslParams, WgslDbHeader> {
    return TuningDb.expect(TuningDb.load(path), 'wgsl') as TuningDb<WgslParams, WgslDbHeader>;
  }

  private static expect(db: TuningDb<object, AnyDbHeader>, backend: Backend): TuningDb<object, AnyDbHeader> {
    const got = db.header.backend;
    if (got !== backend)
      throw new DbError(`${db.path} holds ${BACKEND_NAME[got] ?? got} results (${db.header.device?.name}); this reads ${BACKEND_NAME[backend]} tuning databases`);
    return db;
  }

  private static load(path: string): TuningDb<object, AnyDbHeader> {
    if (!existsSync(path)) throw new DbError(`tuning database ${path} does not exist`);
    if (statSync(path).isDirectory()) throw new DbError(`${path} is a folder, not a tuning database`);
    const { lines, damagedTail } = TuningDb.parse(path);
    const first = lines[0];
    if (!first || first.kind !== 'header') throw new DbError(`${path} is not a normgen tuning database (no header line)`);
    if (first.backend !== 'cuda' && first.backend !== 'wgsl') throw new DbError(`${path} is corrupt: its header names backend ${JSON.stringify((first as { backend?: unknown }).backend)}`);
    if (damagedTail) process.emitWarning(`${path}: ignoring a last line cut off by an interrupted write`);
    return TuningDb.fill(new TuningDb<object, AnyDbHeader>(path, first), lines);
  }

  /**
   * Read a database and check that every record has the fields the tools rely on and
   * that every result names a session the file holds (merge, check and build trust them).
   */
  static readChecked(path: string): TuningDb {
    const db = TuningDb.read(path);
    const d = db.header.device as Partial<DeviceId> | undefined;
    if (typeof db.header.arch !== 'string' || !d || typeof d.name !== 'string' || typeof d.arch !== 'string' || typeof d.sms !== 'number' || typeof d.memoryBytes !== 'number')
      throw new DbError(`${path} is corrupt: its header has no complete device identity (name, arch, sms, memoryBytes)`);
    return TuningDb.checkRecords(db);
  }

  /** readChecked for a WGSL database: the adapter's identity instead of a CUDA device's. */
  static readCheckedWgsl(path: string): TuningDb<WgslParams, WgslDbHeader> {
    const db = TuningDb.readWgsl(path);
    const d = db.header.device as Partial<AdapterId> | undefined;
    const strings = ['name', 'vendor', 'architecture', 'device', 'description', 'backend'] as const;
    if (typeof db.header.arch !== 'string' || !d || strings.some((k) => typeof d[k] !== 'string') || !d.limits || !Array.isArray(d.features))
      throw new DbError(`${path} is corrupt: its header has no complete adapter identity (${strings.join(', ')}, limits, features)`);
    return TuningDb.checkRecords(db);
  }

  private static checkRecords<P extends object, H extends AnyDbHeader>(db: TuningDb<P, H>): TuningDb<P, H> {
    const { header, path } = db;
    if (header.format !== DB_FORMAT) throw new DbError(`${path} has format ${header.format}; this normgen reads format ${DB_FORMAT}`);
    const sessions = new Set<number>();
    for (const s of db.sessions) {
      if (typeof s.session !== 'number' || typeof s.started !== 'string' || typeof s.normgen !== 'string' || typeof s.templateHash !== 'string')
        throw new DbError(`${path} is corrupt: session ${JSON.stringify(s.session)} lacks its number, start time, normgen version or template hash`);
      sessions.add(s.session);
    }
    db.results.forEach((r, i) => {
      const what = `${path} is corrupt: result ${i + 1}`;
      if (typeof r.problemKey !== 'string' || typeof r.variantId !== 'string' || typeof r.status !== 'string' || !r.problem || !r.params)
        throw new DbError(`${what} lacks its problem, variant, parameters or status`);
      if (r.stage !== 'screen' && r.stage !== 'final') throw new DbError(`${what} has stage ${JSON.stringify(r.stage)} (expected screen or final)`);
      if (!sessions.has(r.session)) throw new DbError(`${what} (${r.problemKey}) names session ${r.session}, which the file does not hold`);
      if (r.status === 'OK' && !(typeof r.medianUs === 'number' && r.medianUs > 0)) throw new DbError(`${what} (${r.problemKey}) is OK but has no positive time`);
      const { registerCap, threads } = r.params as { registerCap?: unknown; threads?: unknown };
      if (registerCap !== undefined && !registerCapFits(registerCap, threads))
        throw new DbError(
          `${what} (${r.problemKey}) has registerCap ${JSON.stringify(registerCap)} for CTAs of ${JSON.stringify(threads)} threads: ` +
            `this normgen caps at ${REGISTER_CAPS.join(' or ')} threads an SM, a multiple of the CTA's`,
        );
      if (r.release !== undefined && !(RELEASE_POINTS as readonly unknown[]).includes(r.release))
        throw new DbError(`${what} (${r.problemKey}) has release ${JSON.stringify(r.release)} (expected ${RELEASE_POINTS.join(' or ')}, or none: at the start)`);
      if (r.plainLaunch !== undefined && !PLAIN_LAUNCHES.includes(r.plainLaunch))
        throw new DbError(`${what} (${r.problemKey}) has plainLaunch ${JSON.stringify(r.plainLaunch)} (expected ${PLAIN_LAUNCHES.join(' or ')}, or none)`);
    });
    return db;
  }

  private static parse(path: string): { lines: AnyDbLine[]; validBytes: number; damagedTail: boolean } {
    const text = readDbText(path);
    const raw = text.split('\n');
    const lines: AnyDbLine[] = [];
    let offset = 0;
    for (let i = 0; i < raw.length; i++) {
      const line = raw[i];
      const isLast = i === raw.length - 1 || (i === raw.length - 2 && raw[raw.length - 1] === '');
      if (line === '') {
        offset += 1;
        continue;
      }
      let parsed: AnyDbLine;
      try {
        parsed = JSON.parse(line);
        if (!parsed || typeof parsed !== 'object' || !('kind' in parsed)) throw new Error('not a record');
        if (lines.length === 0 && parsed.kind !== 'header') throw new Error('no header');
      } catch {
        if (lines.length === 0) throw new DbError(`${path} is not a normgen tuning database (no header line)`);
        // Only the final line may be incomplete (appends are whole lines otherwise).
        if (isLast && !text.endsWith('\n')) return { lines, validBytes: offset, damagedTail: true };
        throw new DbError(`${path} is corrupt at line ${i + 1}: not a JSON record (fix or remove the file)`);
      }
      lines.push(parsed);
      offset += Buffer.byteLength(line) + 1;
    }
    return { lines, validBytes: offset, damagedTail: false };
  }

  private append(line: AnyDbLine): void {
    this.fd ??= openSync(this.path, 'a');
    writeSync(this.fd, JSON.stringify(line) + '\n');
    fsyncSync(this.fd);
  }

  startSession(s: Omit<DbSession, 'kind' | 'session'>): DbSession {
    const session: DbSession = { kind: 'session', session: this.sessions.length + 1, ...s };
    this.sessions.push(session);
    this.append(session);
    return session;
  }

  record(r: Omit<DbResult<P>, 'kind'>): DbResult<P> {
    const full = { kind: 'result', at: new Date().toISOString(), ...r } as DbResult<P>;
    this.results.push(full);
    this.index?.set(`${full.problemKey}|${full.variantId}|${full.stage}`, full);
    this.append(full);
    return full;
  }

  /** The result of (problem, variant, stage), if measured already. */
  find(problemKey: string, variantId: string, stage: Stage): DbResult<P> | undefined {
    this.index ??= new Map(this.results.map((r) => [`${r.problemKey}|${r.variantId}|${r.stage}`, r]));
    return this.index.get(`${problemKey}|${variantId}|${stage}`);
  }
  private index?: Map<string, DbResult<P>>;

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Databases may be committed gzipped (`.jsonl.gz`): every reader takes them. */
const isCompressed = (path: string) => path.endsWith('.gz');

export function readDbText(path: string): string {
  if (!isCompressed(path)) return readFileSync(path, 'utf8');
  try {
    return gunzipSync(readFileSync(path)).toString('utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw e;
    throw new DbError(`${path} is corrupt: not a complete gzip file (${(e as Error).message})`);
  }
}
