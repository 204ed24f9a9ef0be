// normgen report: a static HTML page with SVG charts of a tuning database.

import { dirname } from 'node:path';
import type { Argv } from 'yargs';
import { prepareOutputDir, writeFileAtomic } from '../../generator/files.js';
import { TuningDb } from '../../tuner/db.js';
import { reportHtml } from '../../tuner/report-html.js';

export const command = 'report';
export const describe = 'write an HTML page of charts (bandwidth, fraction of copy, winners, failures) from a tuning database';
export const builder = (y: Argv) =>
  y
    .option('db', { type: 'string', demandOption: true, describe: 'tuning database' })
    .option('out', { type: 'string', demandOption: true, describe: 'the HTML file to write' });

export function handler(args: { db: string; out: string }): void {
  const html = reportHtml(TuningDb.read(args.db));
  prepareOutputDir(dirname(args.out));
  writeFileAtomic(args.out, html);
  console.log(`wrote ${args.out}`);
}
