// normgen's on-disk cache (cubins, the built runner): $NORMGEN_CACHE or .normgen-cache/
// under the current directory.

import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export function cacheDir(...sub: string[]): string {
  const dir = join(resolve(process.env.NORMGEN_CACHE ?? '.normgen-cache'), ...sub);
  mkdirSync(dir, { recursive: true });
  return dir;
}
