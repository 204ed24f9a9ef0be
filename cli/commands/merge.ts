// normgen merge: tuning databases from several runs or machines, kept per device.

import { basename, dirname, join } from 'node:path';
import type { Argv } from 'yargs';
import { prepareOutputDir } from '../../generator/files.js';
import { InputError } from '../../generator/problem.js';
import { TuningDb, writeDb } from '../../tuner/db.js';
import { deviceSlug, mergeDatabases, type MergedDb } from '../../tuner/merge.js';
import { expandDbPaths } from '../db-paths.js';

export const command = 'merge <dbs..>';
export const describe = 'merge tuning databases per device: newer normgen wins, then more samples; one file per device';
export const builder = (y: Argv) =>
  y
    .positional('dbs', { type: 'string', array: true, describe: 'tuning databases (JSON lines), or folders of them, to merge' })
    .option('out', {
      type: 'string',
      demandOption: true,
      describe: 'a .jsonl file (all inputs from one device) or a folder that gets one <arch>-<device>.jsonl per device',
    })
    .option('force', { type: 'boolean', default: false, describe: 'merge databases of one device tuned with different kernel templates' })
    .option('replace-problems', {
      type: 'boolean',
      default: false,
      describe: 'a problem held by a later input keeps only that input\'s results (a re-tune of some problems replaces their earlier measurements)',
    });

export function handler(args: { dbs: string[]; out: string; force: boolean; replaceProblems: boolean }): void {
  if (args.dbs.length === 0) throw new InputError('name the tuning databases to merge');
  const merged = mergeDatabases(expandDbPaths(args.dbs).map((p) => TuningDb.readChecked(p)), { force: args.force, replaceProblems: args.replaceProblems });
  const outputs = outputPaths(args.out, merged);
  for (const [m, path] of outputs) {
    writeDb(path, m.header, m.sessions, m.results);
    const mixed = m.templateHashes.length > 1 ? `; mixes ${m.templateHashes.length} template versions (--force)` : '';
    console.log(`${path}: ${m.header.device.name} (${m.header.arch}) from ${m.inputs.map((p) => basename(p)).join(', ')}: ${m.sessions.length} sessions, ${m.results.length} results, ${m.replaced} duplicates resolved${m.superseded ? `, ${m.superseded} results of re-tuned problems dropped` : ''}${mixed}`);
  }
}

/** One file per device: --out itself when it names a .jsonl file, else <out>/<arch>-<device>.jsonl. */
function outputPaths(out: string, merged: MergedDb[]): [MergedDb, string][] {
  if (out.endsWith('.jsonl')) {
    if (merged.length > 1)
      throw new InputError(`the inputs hold ${merged.length} devices (${merged.map((m) => m.header.device.name).join(', ')}) and a database holds one: pass a folder as --out`);
    prepareOutputDir(dirname(out));
    return [[merged[0], out]];
  }
  prepareOutputDir(out);
  const names = new Set<string>();
  return merged.map((m) => {
    let name = deviceSlug(m.header);
    if (names.has(name)) name += `-${m.header.device.sms}sm-${Math.round(m.header.device.memoryBytes / 2 ** 30)}gib`;
    names.add(name);
    return [m, join(out, `${name}.jsonl`)];
  });
}
