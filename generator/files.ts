// Writing output files without leaving half-written ones behind.

import { accessSync, constants, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { InputError } from './problem.js';

/** Make sure `dir` exists and is writable, or say clearly why not. */
export function prepareOutputDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (e) {
    throw new InputError(`cannot write to output folder '${dir}': ${(e as NodeJS.ErrnoException).code ?? e}`);
  }
}

/** Write a file whole or not at all (temp file, then rename). */
export function writeFileAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}
