// normgen build: a kernel package with one dispatch table per GPU model, from tuning databases.

import { basename } from 'node:path';
import type { Argv } from 'yargs';
import { parseArch } from '../../generator/arch.js';
import { emitPackage, type DeviceTable } from '../../generator/package.js';
import type { BackwardTable } from '../../generator/package-bwd.js';
import type { WgslDeviceTable } from '../../generator/package-wgsl.js';
import { adapterName } from '../../tuner/wgsl/adapter.js';
import { InputError, isBackward } from '../../generator/problem.js';
import { deviceKey, TuningDb } from '../../tuner/db.js';
import { buildDispatchTable, DEFAULT_LARGE_TOLERANCE, type DispatchOptions } from '../../tuner/dispatch.js';
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
    .option('large-tolerance', { type: 'number', default: DEFAULT_LARGE_TOLERANCE, describe: 'regret allowed on problems of >= 16M elements (at most --tolerance)' });

/** A database of backward results (tune --direction bwd). */
const isBackwardDb = (db: TuningDb) => db.results.some((r) => isBackward(r.problem));

function backwardTable(path: string, options: DispatchOptions): BackwardTable {
  const db = TuningDb.readChecked(path);
  const session = db.sessions[db.sessions.length - 1];
  if (!session) throw new InputError(`${path} has no tuning session`);
  const table = buildDispatchTable(db, options, 'bwd');
  if (table.entries.length === 0) throw new InputError(`${path} has no verified backward measurements to build from`);
  return { dbFile: basename(path), tunedTemplateHash: session.templateHash, table, measured: formatTable(WINNER_HEADER, winners(db).map(winnerRow)) };
}

function deviceTable(path: string, options: DispatchOptions): DeviceTable {
  const db = TuningDb.readChecked(path);
  const session = db.sessions[db.sessions.length - 1];
  if (!session) throw new InputError(`${path} has no tuning session`);
  const table = buildDispatchTable(db, options);
  if (table.entries.length === 0) throw new InputError(`${path} has no verified measurements to build from`);
  const measured = formatTable(WINNER_HEADER, winners(db).map(winnerRow));
  return { device: db.header.device.name, arch: parseArch(db.header.arch), dbFile: basename(path), tunedTemplateHash: session.templateHash, tunedOn: session.started.slice(0, 10), table, measured };
}

function wgslTable(path: string, options: DispatchOptions): WgslDeviceTable {
  const db = TuningDb.readCheckedWgsl(path);
  const session = db.sessions[db.sessions.length - 1];
  if (!session) throw new InputError(`${path} has no tuning session`);
  const table = buildDispatchTable(db, options);
  if (table.entries.length === 0) throw new InputError(`${path} has no verified measurements to build from`);
  const measured = formatTable(WINNER_HEADER, winners(db, WGSL_NAMING).map((w) => namedWinnerRow(w, WGSL_NAMING.describe)));
  return { adapter: db.header.device, dbFile: basename(path), tunedTemplateHash: session.templateHash, tunedOn: session.started.slice(0, 10), table, measured };
}

export function handler(args: { db: string[]; out: string; name?: string; tolerance: number; largeTolerance: number }): void {
  for (const [flag, v] of [['--tolerance', args.tolerance], ['--large-tolerance', args.largeTolerance]] as const)
    if (!(v >= 0 && v < 1)) throw new InputError(`${flag} must be in [0, 1), got ${v}`);
  const dispatch: DispatchOptions = { tolerance: args.tolerance, largeTolerance: args.largeTolerance };
  const all = expandDbPaths(args.db);
  const backend = new Map(all.map((p) => [p, TuningDb.backendOf(p)]));
  const wgslPaths = all.filter((p) => backend.get(p) === 'wgsl');
  if (!all.some((p) => backend.get(p) === 'cuda')) throw new InputError('--db names no CUDA tuning database: a package needs at least one (WGSL tables come with it)');
  const backward = new Map<string, string>(); // device key -> backward database
  const paths: string[] = [];
  const seen = new Map<string, string>();
  for (const p of all) {
    if (backend.get(p) === 'wgsl') {
      const h = TuningDb.readWgsl(p).header;
      const key = `${h.arch}|${deviceKey(h.device)}`;
      if (seen.has(key)) throw new InputError(`${seen.get(key)} and ${p} both hold ${h.device.name}: merge them first (normgen merge)`);
      seen.set(key, p);
      continue;
    }
    const db = TuningDb.read(p);
    const h = db.header;
    const key = `${h.arch}|${deviceKey(h.device)}`;
    const bwd = isBackwardDb(db);
    const mine = bwd ? backward : seen;
    if (mine.has(key)) throw new InputError(`${mine.get(key)} and ${p} both hold ${bwd ? 'backward results of ' : ''}${h.device.name}: merge them first (normgen merge)`);
    mine.set(key, p);
    if (!bwd) paths.push(p);
  }
  for (const [key, p] of backward) if (!seen.has(key)) throw new InputError(`${p} holds backward results of a GPU no forward --db was tuned on: pass that GPU's forward database too`);
  const tables = paths.map((p) => {
    const t = deviceTable(p, dispatch);
    const h = TuningDb.read(p).header;
    const b = backward.get(`${h.arch}|${deviceKey(h.device)}`);
    return b ? { ...t, backward: backwardTable(b, dispatch) } : t;
  });
  const wgsl = wgslPaths.map((p) => wgslTable(p, dispatch));
  const name = args.name ?? args.out.replace(/\/+$/, '').split('/').pop()!;
  const out = emitPackage({ name, tables, wgsl }, args.out);
  const problems = tables.reduce((n, t) => n + t.table.entries.length, 0);
  const regret = Math.max(...tables.map((t) => t.table.maxRegret));
  const devices = tables.length > 1 ? ` for ${tables.length} devices (${tables.map((t) => t.device).join(', ')})` : '';
  const webgpu = wgsl.length ? `; WebGPU: ${wgsl.reduce((n, t) => n + t.table.entries.length, 0)} tuned problems on ${wgsl.map((t) => adapterName(t.adapter, t.adapter.backend)).join(', ')}` : '';
  console.log(`${args.out}: ${problems} tuned problems${devices}, ${out.variants} forward kernels (${out.tuned} tuned, ${out.portable} portable for untuned sizes, generic)${out.backward ? ` and ${out.backward} backward` : ''}, regret <= ${(100 * regret).toFixed(2)}%${webgpu}`);
}
