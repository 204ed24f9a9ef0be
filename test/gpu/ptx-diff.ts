// Whether a template change changes the code nvcc generates: the PTX of every kernel that two
// trees of `normgen generate` output share (the same problem, the same variant description),
// compared with the names that embed the template hash or the file's name taken out. A change
// that leaves every kernel's PTX as it was (a tidy-up, a comment) cannot change a timing.
// nvcc 13.0 is not deterministic for every kernel (two compiles of one unit gave clustered fp32
// register kernels different instructions in their tail), so the base is compiled twice and a
// kernel whose two compiles differ is reported apart, as unstable, not as changed.
// Runs anywhere nvcc does (no GPU). Each tree holds generate's output folders, one a problem
// (forward or `--direction bwd`):
//   node dist/test/gpu/ptx-diff.js BASE_DIR NEW_DIR [--arch sm_90a]
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { execa } from 'execa';
import { findNvcc } from '../../tuner/nvcc.js';

const args = process.argv.slice(2);
const archAt = args.indexOf('--arch');
const nvccArch = archAt >= 0 ? args.splice(archAt, 2)[1] : 'sm_90a';
const [baseDir, newDir] = args;
if (!baseDir || !newDir) {
  console.error('usage: ptx-diff BASE_DIR NEW_DIR [--arch sm_90a]');
  process.exit(2);
}

interface Manifest {
  units: { file: string }[];
  /** Backward variants also name their column reduction's kernel. */
  variants: Record<string, { symbol: string; description: string; reduceSymbol?: string }>;
}

const manifestsUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? manifestsUnder(path) : name.endsWith('.manifest.json') ? [path] : [];
  });

/**
 * The PTX of one .entry as text comparable across template hashes and unit names. C++
 * names (shared arrays of templated helpers) and virtual registers are numbered in order of
 * appearance: the names carry the helpers' template arguments, which a new defaulted
 * parameter changes, and NVVM numbers registers differently when other kernels of the unit
 * change.
 */
function normalized(entry: string, symbol: string): string {
  const renamed = new Map<string, string>();
  const counts = new Map<string, number>();
  const ordinal = (name: string, kind: string) => {
    if (!renamed.has(name)) {
      const n = counts.get(kind) ?? 0;
      counts.set(kind, n + 1);
      renamed.set(name, `${kind}#${n}`);
    }
    return renamed.get(name)!;
  };
  return entry
    .replaceAll(symbol, 'KERNEL')
    .replace(/\b_Z[\w$]+/g, (name) => ordinal(name, '_Z'))
    .replace(/%([a-z]+)\d+\b/g, (name, kind: string) => ordinal(name, `%${kind}`))
    .replace(/\$L__BB\d+_/g, '$L_') // block labels carry the function's index in the unit
    .replace(/\d+_(INTERNAL|GLOBAL__N__)\w+?_cu_[0-9a-f]{8}/g, '$1') // static names carry the unit's file name and hash
    .replace(/\/\/ \.globl.*|\.visible\s*$/g, '')
    // A static shared array used by one kernel only is declared inside it ("demoted"), else before it.
    .replace(/^\s*(\/\/ demoted variable|\.shared .*;)$/gm, '')
    .replace(/\n\s*\n/g, '\n')
    .trimEnd();
}

/** Just past the brace that closes the body of the entry starting at `from` (inline asm nests braces). */
function bodyEnd(ptx: string, from: number): number {
  let depth = 0;
  for (let i = ptx.indexOf('{', from); i < ptx.length; i++) {
    if (ptx[i] === '{') depth++;
    else if (ptx[i] === '}' && --depth === 0) return i + 1;
  }
  return ptx.length;
}

let compiles = 0;

/** Variant description -> normalized PTX of its kernel, for one generate output. */
async function kernelsOf(manifestPath: string, nvcc: string, scratch: string): Promise<Map<string, string>> {
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest;
  const dir = dirname(manifestPath);
  const entries = new Map<string, string>();
  for (const unit of manifest.units) {
    const ptxPath = join(scratch, `${compiles++}.ptx`);
    await execa(nvcc, [`-arch=${nvccArch}`, '-O3', '-std=c++17', '-I', dir, '-ptx', '-o', ptxPath, join(dir, unit.file)]);
    const ptx = readFileSync(ptxPath, 'utf8');
    const starts = [...ptx.matchAll(/\.entry (\w+)\(/g)];
    // Up to the body's closing brace: the declarations between two entries belong to the next.
    for (const m of starts) entries.set(m[1], ptx.slice(m.index, bodyEnd(ptx, m.index!)));
  }
  const kernels = new Map<string, string>();
  for (const v of Object.values(manifest.variants)) {
    for (const [symbol, name] of [[v.symbol, v.description], [v.reduceSymbol, `${v.description} (reduction)`]]) {
      const entry = symbol && entries.get(symbol);
      if (entry) kernels.set(name!, normalized(entry, symbol));
    }
  }
  return kernels;
}

const nvcc = await findNvcc();
const scratch = mkdtempSync(join(tmpdir(), 'ptx-diff-'));
const baseManifests = new Map(manifestsUnder(baseDir).map((p) => [basename(p), p]));
let shared = 0;
let differ = 0;
let unstable = 0;
try {
  for (const newManifest of manifestsUnder(newDir)) {
    const baseManifest = baseManifests.get(basename(newManifest));
    const problem = basename(newManifest, '.manifest.json');
    if (!baseManifest) {
      console.log(`${problem}: not in ${baseDir}`);
      continue;
    }
    const [before, again, after] = await Promise.all([baseManifest, baseManifest, newManifest].map((m) => kernelsOf(m, nvcc, scratch)));
    const both = [...after.keys()].filter((d) => before.has(d));
    const varied = both.filter((d) => before.get(d) !== again.get(d));
    const changed = both.filter((d) => before.get(d) !== after.get(d) && !varied.includes(d));
    const onlyNew = after.size - both.length;
    const onlyBase = before.size - both.length;
    shared += both.length;
    differ += changed.length;
    unstable += varied.length;
    const some = (names: string[]) => `${names.slice(0, 4).join(', ')}${names.length > 4 ? ', ...' : ''}`;
    console.log(
      `${relative(newDir, dirname(newManifest)) || '.'} ${problem}: ${both.length} variants' kernels in both, ${changed.length} differ` +
        (changed.length ? ` (${some(changed)})` : '') +
        (varied.length ? `, ${varied.length} unstable (${some(varied)})` : '') +
        (onlyNew || onlyBase ? `; ${onlyNew} only in the new, ${onlyBase} only in the base` : ''),
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
console.log(
  `${shared} variants' kernels in both trees, ${shared - differ - unstable} with the same PTX but for names, ${differ} differ` +
    (unstable ? `, ${unstable} unstable (nvcc's PTX of the base varied between two compiles: not compared)` : '') +
    ` (${nvccArch})`,
);
process.exitCode = differ ? 1 : 0;
