import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TEMPLATE_ROOT } from './templates.js';

/** normgen's version, from package.json beside templates/. */
export const VERSION: string = JSON.parse(readFileSync(join(TEMPLATE_ROOT, '..', 'package.json'), 'utf8')).version;
