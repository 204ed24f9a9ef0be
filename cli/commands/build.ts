// normgen build: a kernel package with one dispatch table per GPU model, from tuning databases.

import { basename } from 'node:path';
import type { Argv } from 'yargs';
import { parseArch } from '../../generator/arch.js';
import { emitPackage, type DeviceTable } from '../../generator/package.js';
import type { PlainTable } from '../../generator/package-plan.js';
import type { BackwardTable } from '../../generator/package-bwd.js';
import type { WgslDeviceTable } from '../../generator/package-wgsl.js';
import { adapterName } from '../../tuner/wgsl/adapter.js';
import { InputError, isBackward } from '../../generator/problem.js';
import type { WgslParams } from '../../generator/space-wgsl.js';
import { deviceKey, launchOf, TuningDb, type WgslDbHeader } from '../../tuner/db.js';
import { buildDispatchTable, DEFAULT_LARGE_TOLERANCE, DEFAULT_PLAIN_MARGIN, plainLaunchEntries, plainLaunchKinds, sameProblem, type DispatchOptions } from '../../tuner/dispatch.js';
import { namedWinnerRow, WGSL_NAMING, WINNER_HEADER, winnerRow, winners } from '../../tuner/select.js';
import { expandDbPaths } from '../db-paths.js';
import { formatTable } from '../table.js';

export const command = 'build';
export const describe = 'emit a kernel package (C ABI, CUDA sources, a dispatch table per GPU model, TypeScript select, WebGPU kernels) from tuning databases';
export const builder = (y: Argv) =>
  y
    .option('db', { type: 'string', array: true, demandOption: true, describe: 'tuning database; repeat it (or name a folder from normgen merge) for one table per GPU model; a backward database (tune --direction bwd) adds the backward to its GPU\'s table; WGSL databases (tune --backend wgsl) add WebGPU tables' })
    .option('out', { type: 'string', demandOption: true, describe: 'package folder, e.g. out/normgen-sm90' })
    .option('name', { type: 'string', describe: 'package name (default: the folder name)' })
    .option('tolerance', { type: 'number', default: 0.02, describe: 'regret allowed per problem to keep the table small' })
    .option('large-tolerance', { type: 'number', default: DEFAULT_LARGE_TOLERANCE, describe: 'regret allowed on problems of >= 16M elements (at most --tolerance)' })
    .option('plain-margin', { type: 'number', default: DEFAULT_PLAIN_MARGIN, describe: "a GPU's database timed under plain launches (tune with NORMGEN_PDL=0): where its winner beat the tuned winner by more than this, plain launches run it" });

type WgslDb = TuningDb<WgslParams, WgslDbHeader>;

/** A database of backward results (tune --direction bwd). */
const isBackwardDb = (db: TuningDb) => db.results.some((r) => isBackward(r.problem));

function backwardTable(db: TuningDb, options: DispatchOptions): BackwardTable {
  const path = db.path;
  const session = db.sessions[db.sessions.length - 1];
  if (!session) throw new InputError(`${path} has no tuning session`);
  const table = buildDispatchTable(db, options, 'bwd');
  if (table.entries.length === 0) throw new InputError(`${path} has no verified backward measurements to build from`);
  return { dbFile: basename(path), tunedTemplateHash: session.templateHash, table, measured: formatTable(WINNER_HEADER, winners(db).map(winnerRow)) };
}

function deviceTable(db: TuningDb, options: DispatchOptions): DeviceTable {
  const path = db.path;
  const session = db.sessions[db.sessions.length - 1];
  if (!session) throw new InputError(`${path} has no tuning session`);
  const table = buildDispatchTable(db, options);
  if (table.entries.length === 0) throw new InputError(`${path} has no verified measurements to build from`);
  const measured = formatTable(WINNER_HEADER, winners(db).map(winnerRow));
  return { device: db.header.device.name, arch: parseArch(db.header.arch), dbFile: basename(path), tunedTemplateHash: session.templateHash, tunedOn: session.started.slice(0, 10), table, measured };
}

/**
 * A database timed only under plain launches on an arch with programmatic launch (tune with
 * NORMGEN_PDL=0): where its GPU also has a programmatically timed one, it is that GPU's
 * plain-launch table; alone, it is the GPU's table.
 */
const isPlainLaunchDb = (db: TuningDb) => launchOf(db.sessions) === 'plain' && parseArch(db.header.arch).cc >= 90;

/** A GPU's plain-launch table: the entries of `db` whose winners beat `tuned`'s there by more than `margin`. */
function plainTable(db: TuningDb, options: DispatchOptions, tuned: DeviceTable, margin: number): PlainTable {
  const { dbFile, tunedTemplateHash, tunedOn, table } = deviceTable(db, options);
  const entries = plainLaunchEntries(db, table, tuned.table, margin);
  console.log(`${dbFile}: plain launches run ${entries.length} of its ${table.entries.length} winners, where each beat ${tuned.dbFile}'s winner there by more than ${(100 * margin).toFixed(1)}%`);
  const kept = { ...table, entries, variants: new Set(entries.map((e) => e.variantId)).size, maxRegret: Math.max(0, ...entries.map((e) => e.regret)) };
  // Which kernel of what plain launches run on each tuned problem: the kept winner, else the tuned one.
  const runs = tuned.table.entries.map((e) => entries.find((x) => sameProblem(x, e)) ?? e);
  const launches = plainLaunchKinds(db, runs);
  if (launches.size) console.log(`${dbFile}: on ${launches.size} of ${runs.length} tuned problems plain launches run the kernel or twin that timed faster there (the kernel itself on ${[...launches.values()].filter((l) => l === 'kernel').length})`);
  return { dbFile, tunedTemplateHash, tunedOn, table: kept, problems: table.entries.length, margin, launches };
}

function wgslTable(db: WgslDb, options: DispatchOptions): WgslDeviceTable {
  const path = db.path;
  const session = db.sessions[db.sessions.length - 1];
  if (!session) throw new InputError(`${path} has no tuning session`);
  const table = buildDispatchTable(db, options);
  if (table.entries.length === 0) throw new InputError(`${path} has no verified measurements to build from`);
  const measured = formatTable(WINNER_HEADER, winners(db, WGSL_NAMING).map((w) => namedWinnerRow(w, WGSL_NAMING.describe)));
  return { adapter: db.header.device, dbFile: basename(path), tunedTemplateHash: session.templateHash, tunedOn: session.started.slice(0, 10), table, measured };
}

export function handler(args: { db: string[]; out: string; name?: string; tolerance: number; largeTolerance: number; plainMargin: number }): void {
  for (const [flag, v] of [['--tolerance', args.tolerance], ['--large-tolerance', args.largeTolerance], ['--plain-margin', args.plainMargin]] as const)
    if (!(v >= 0 && v < 1)) throw new InputError(`${flag} must be in [0, 1), got ${v}`);
  const dispatch: DispatchOptions = { tolerance: args.tolerance, largeTolerance: args.largeTolerance };
  const all = expandDbPaths(args.db);
  const backend = new Map(all.map((p) => [p, TuningDb.backendOf(p)]));
  const wgslPaths = all.filter((p) => backend.get(p) === 'wgsl');
  if (!all.some((p) => backend.get(p) === 'cuda')) throw new InputError('--db names no CUDA tuning database: a package needs at least one (WGSL tables come with it)');
  const backward = new Map<string, string>(); // device key -> backward database
  const plain = new Map<string, string>(); // device key -> plain-launch database
  const paths: string[] = [];
  const seen = new Map<string, string>();
  // Each database is read (and checked) once; a CUDA one keeps its device key.
  const cudaDbs = new Map<string, { db: TuningDb; key: string }>();
  const wgslDbs = new Map<string, WgslDb>();
  for (const p of all) {
    if (backend.get(p) === 'wgsl') {
      const db = TuningDb.readCheckedWgsl(p);
      wgslDbs.set(p, db);
      const h = db.header;
      const key = `${h.arch}|${deviceKey(h.device)}`;
      if (seen.has(key)) throw new InputError(`${seen.get(key)} and ${p} both hold ${h.device.name}: merge them first (normgen merge)`);
      seen.set(key, p);
      continue;
    }
    const db = TuningDb.readChecked(p);
    const h = db.header;
    const key = `${h.arch}|${deviceKey(h.device)}`;
    cudaDbs.set(p, { db, key });
    const bwd = isBackwardDb(db);
    const mine = bwd ? backward : isPlainLaunchDb(db) ? plain : seen;
    const what = bwd ? 'backward results of ' : mine === plain ? 'plain-launch times of ' : '';
    if (mine.has(key)) throw new InputError(`${mine.get(key)} and ${p} both hold ${what}${h.device.name}: merge them first (normgen merge)`);
    mine.set(key, p);
  }
  // A plain-launch database alone for its GPU is that GPU's table.
  for (const [key, p] of plain)
    if (!seen.has(key)) {
      seen.set(key, p);
      plain.delete(key);
    }
  const forward = new Set(seen.values());
  paths.push(...all.filter((p) => backend.get(p) === 'cuda' && forward.has(p))); // in the order given: the first table is the fallback
  for (const [key, p] of backward) if (!seen.has(key)) throw new InputError(`${p} holds backward results of a GPU no forward --db was tuned on: pass that GPU's forward database too`);
  const tables = paths.map((p): DeviceTable => {
    const { db, key } = cudaDbs.get(p)!;
    const t = deviceTable(db, dispatch);
    const b = backward.get(key);
    const pl = plain.get(key);
    return {
      ...t,
      ...(b ? { backward: backwardTable(cudaDbs.get(b)!.db, dispatch) } : {}),
      ...(pl ? { plain: plainTable(cudaDbs.get(pl)!.db, dispatch, t, args.plainMargin) } : {}),
    };
  });
  const wgsl = wgslPaths.map((p) => wgslTable(wgslDbs.get(p)!, dispatch));
  const name = args.name ?? args.out.replace(/\/+$/, '').split('/').pop()!;
  const out = emitPackage({ name, tables, wgsl }, args.out);
  const problems = tables.reduce((n, t) => n + t.table.entries.length, 0);
  const regret = Math.max(...tables.map((t) => t.table.maxRegret));
  const devices = tables.length > 1 ? ` for ${tables.length} devices (${tables.map((t) => t.device).join(', ')})` : '';
  const webgpu = wgsl.length ? `; WebGPU: ${wgsl.reduce((n, t) => n + t.table.entries.length, 0)} tuned problems on ${wgsl.map((t) => adapterName(t.adapter, t.adapter.backend)).join(', ')}` : '';
  console.log(`${args.out}: ${problems} tuned problems${devices}, ${out.variants} forward kernels (${out.tuned} tuned, ${out.portable} portable for untuned sizes, generic)${out.backward ? ` and ${out.backward} backward` : ''}, regret <= ${(100 * regret).toFixed(2)}%${webgpu}`);
}
