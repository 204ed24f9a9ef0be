// --db arguments: files, or folders whose *.jsonl files are databases (merge's output).

import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../generator/problem.js';

export function expandDbPaths(given: string | string[] | undefined): string[] {
  const list = given === undefined ? [] : Array.isArray(given) ? given : [given];
  const out: string[] = [];
  for (const p of list) {
    let isDir = false;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      /* a missing file: reading it says so */
    }
    if (!isDir) {
      out.push(p);
      continue;
    }
    const files = readdirSync(p).filter((f) => f.endsWith('.jsonl')).sort();
    if (files.length === 0) throw new InputError(`${p} holds no tuning databases (*.jsonl)`);
    out.push(...files.map((f) => join(p, f)));
  }
  if (out.length === 0) throw new InputError('--db is required');
  return out;
}
