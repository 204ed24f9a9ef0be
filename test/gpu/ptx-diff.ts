// Whether a template change changes the code nvcc generates: the PTX of every kernel that two
// trees of `normgen generate` output share (the same problem, the same variant description),
// compared with the names that embed the template hash or the file's name taken out. A change
// that leaves every kernel's PTX as it was (a tidy-up, a comment) cannot change a timing.
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

/** The PTX of one .entry as text comparable across template hashes and unit names. */
function normalized(entry: string, symbol: string): string {
  return entry
    .replaceAll(symbol, 'KERNEL')
    .replace(/\$L__BB\d+_/g, '$L_') // block labels carry the function's index in the unit
    .replace(/\d+_(INTERNAL|GLOBAL__N__)\w+?_cu_[0-9a-f]{8}/g, '$1') // static names carry the unit's file name and hash
    .replace(/\/\/ \.globl.*|\.visible\s*$/g, '')
    .trimEnd();
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
    starts.forEach((m, i) => entries.set(m[1], ptx.slice(m.index, starts[i + 1]?.index ?? ptx.length)));
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
try {
  for (const newManifest of manifestsUnder(newDir)) {
    const baseManifest = baseManifests.get(basename(newManifest));
    const problem = basename(newManifest, '.manifest.json');
    if (!baseManifest) {
      console.log(`${problem}: not in ${baseDir}`);
      continue;
    }
    const [before, after] = await Promise.all([kernelsOf(baseManifest, nvcc, scratch), kernelsOf(newManifest, nvcc, scratch)]);
    const both = [...after.keys()].filter((d) => before.has(d));
    const changed = both.filter((d) => before.get(d) !== after.get(d));
    const onlyNew = after.size - both.length;
    const onlyBase = before.size - both.length;
    shared += both.length;
    differ += changed.length;
    console.log(
      `${relative(newDir, dirname(newManifest)) || '.'} ${problem}: ${both.length} variants' kernels in both, ${changed.length} differ` +
        (changed.length ? ` (${changed.slice(0, 4).join(', ')}${changed.length > 4 ? ', ...' : ''})` : '') +
        (onlyNew || onlyBase ? `; ${onlyNew} only in the new, ${onlyBase} only in the base` : ''),
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
console.log(`${shared} variants' kernels in both trees, ${shared - differ} with the same PTX but for names, ${differ} differ (${nvccArch})`);
process.exitCode = differ ? 1 : 0;
