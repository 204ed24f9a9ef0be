// Loading Handlebars templates from templates/, with their partials and helpers, and
// the hash of their text that goes into every variant id.

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import Handlebars from 'handlebars';

/**
 * templates/ at the project root: above this module (sources or dist/), else above
 * the working directory (dist/ may be a link into an unpacked bundle).
 */
export const TEMPLATE_ROOT = findUp([dirname(fileURLToPath(import.meta.url)), process.cwd()], 'templates');

function findUp(starts: string[], name: string): string {
  for (const start of starts) {
    for (let dir = start; ; dir = dirname(dir)) {
      try {
        if (statSync(join(dir, name, 'cuda')).isDirectory()) return join(dir, name);
      } catch {
        /* keep looking */
      }
      if (dirname(dir) === dir) break;
    }
  }
  throw new Error(`normgen: cannot find the ${name}/ folder above ${starts.join(' or ')}`);
}

/** Every file under `dir`, sorted. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

const hashes = new Map<string, string>();

/** sha256 over the names and text of every file of a template family (e.g. 'cuda'). */
export function templateHash(family: string): string {
  let h = hashes.get(family);
  if (!h) {
    const root = join(TEMPLATE_ROOT, family);
    const sha = createHash('sha256');
    for (const f of filesUnder(root)) sha.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
    h = sha.digest('hex');
    hashes.set(family, h);
  }
  return h;
}

const compiled = new Map<string, HandlebarsTemplateDelegate>();

/** Families whose templates also use another family's partials (backward and the plain twins reuse the forward's). */
const SHARED_PARTIALS: Record<string, string[]> = { 'cuda-bwd': ['cuda'], package: ['cuda'] };

/** A Handlebars instance per family: partials are the family's partials/ folder (and those it shares). */
function environment(family: string): typeof Handlebars {
  const hb = Handlebars.create();
  hb.registerHelper('bool', (v: unknown) => (v ? 'true' : 'false'));
  hb.registerHelper('eq', (a: unknown, b: unknown) => a === b);
  for (const from of [...(SHARED_PARTIALS[family] ?? []), family]) {
    const partials = join(TEMPLATE_ROOT, from, 'partials');
    let names: string[] = [];
    try {
      names = readdirSync(partials);
    } catch {
      /* a family without partials */
    }
    for (const name of names) {
      hb.registerPartial(name.replace(/\..*$/, ''), readFileSync(join(partials, name), 'utf8'));
    }
  }
  return hb;
}

/** Render templates/<family>/<name> with the given context. */
export function render(family: string, name: string, context: object): string {
  const key = `${family}/${name}`;
  let template = compiled.get(key);
  if (!template) {
    const text = readFileSync(join(TEMPLATE_ROOT, family, name), 'utf8');
    template = environment(family).compile(text, { noEscape: true, strict: true });
    compiled.set(key, template);
  }
  return template(context);
}
