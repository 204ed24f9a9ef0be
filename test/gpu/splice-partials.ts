// A change to the forward kernel partials put into a built package without a re-tune, for an
// A/B of the package against the committed one (`run.sh pkg-ab`). A template change changes
// every variant id, so `normgen build` refuses the committed databases until both cards are
// re-tuned; but a package holds the two partials a kernel change usually touches verbatim
// (src/normgen_common.cuh and src/normgen_kernels.cuh are three generated lines and then
// templates/cuda/partials/fwd_common.cuh.hbs and fwd_kernels.cuh.hbs), so the change can be
// spliced in. A re-tune would also move the plain twins' launch bounds, which follow their
// kernels' registers (render-cuda.ts twinMinBlocks): left as built, a kernel that needs more
// registers after the change has a twin capped below them, which spills. So every unit is
// compiled here with the changed partials (nvcc -Xptxas -v, no GPU), each twin whose kernel's
// registers the tune recorded gets the bound a re-tune would give, and the changed units are
// compiled again to report what spills. Prints its progress; writes the bounds it moved and the
// kernels that spill to OUT_DIR/SPLICE.md. With CHANGED_TEMPLATES_DIR = templates/ it must move
// no bound (a check of the rule against the committed package).
//   node dist/test/gpu/splice-partials.js PACKAGE_DIR CHANGED_TEMPLATES_DIR OUT_DIR
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArch } from '../../generator/arch.js';
import { twinMinBlocks, twinSymbol } from '../../generator/render-cuda.js';
import { filesUnder, TEMPLATE_ROOT } from '../../generator/templates.js';
import { compileCubin, spills, type KernelUsage } from '../../tuner/nvcc.js';

/** The package headers that hold a partial verbatim after their first HEADER_LINES lines. */
export const SPLICED = [
  { header: 'normgen_common.cuh', partial: 'cuda/partials/fwd_common.cuh.hbs' },
  { header: 'normgen_kernels.cuh', partial: 'cuda/partials/fwd_kernels.cuh.hbs' },
];
const HEADER_LINES = 3;

/** `header` (a package's) with `partial` (its committed text) replaced by `changed`; throws where the header is not the partial verbatim. */
export function spliceHeader(name: string, header: string, partial: string, changed: string): string {
  const lines = header.split('\n');
  const head = lines.slice(0, HEADER_LINES).join('\n') + '\n';
  if (lines.length <= HEADER_LINES || header !== head + partial) {
    throw new Error(`${name} is not its ${HEADER_LINES} generated lines and the committed partial: the package is from other templates, or the partial now holds template expressions; measure the change with a re-tune`);
  }
  return head + changed;
}

/** Launch bounds of every kernel and twin of a unit, by symbol. */
const BOUNDS = /__launch_bounds__\((\d+), (\d+)\)\n(\w+)\(/g;

export interface MovedBound {
  symbol: string;
  threads: number;
  registers: number;
  from: number;
  to: number;
}

/**
 * A unit with each plain twin's bound set as `normgen build` would set it from its kernel's
 * `registers` (here: as compiled with the changed partials), for the variants whose registers
 * the tune recorded (`tuned`, by variant id: the others keep their kernel's bound).
 */
export function reboundTwins(unit: string, registers: ReadonlyMap<string, number>, tuned: ReadonlySet<string>): { unit: string; moved: MovedBound[] } {
  const kernels = new Map<string, number>();
  for (const m of unit.matchAll(BOUNDS)) kernels.set(m[3], Number(m[2]));
  const moved: MovedBound[] = [];
  const text = unit.replace(BOUNDS, (all, threads: string, blocks: string, symbol: string) => {
    const kernel = symbol.replace(/_plain$/, '');
    if (twinSymbol(kernel) !== symbol || !tuned.has(kernel.slice(kernel.lastIndexOf('_') + 1))) return all;
    const used = registers.get(kernel);
    const kernelBlocks = kernels.get(kernel);
    if (used === undefined || kernelBlocks === undefined) throw new Error(`${symbol}: no registers or launch bounds for its kernel ${kernel}`);
    const to = twinMinBlocks(Number(threads), kernelBlocks, used);
    if (to === Number(blocks)) return all;
    moved.push({ symbol, threads: Number(threads), registers: used, from: Number(blocks), to });
    return all.replace(`(${threads}, ${blocks})`, `(${threads}, ${to})`);
  });
  return { unit: text, moved };
}

interface DispatchTable {
  arch: string;
  entries: TableEntry[];
  plain?: { entries: TableEntry[] };
}
interface TableEntry {
  variantId: string;
  registers?: number;
  portable?: { variantId: string; registers?: number };
}

/** Variant ids whose registers a package's tables recorded (the twins normgen build bounds by registers). */
export function tunedVariants(tables: DispatchTable[]): Set<string> {
  const ids = new Set<string>();
  for (const t of tables) {
    for (const e of [...t.entries, ...(t.plain?.entries ?? [])]) {
      if (e.registers !== undefined) ids.add(e.variantId);
      if (e.portable?.registers !== undefined) ids.add(e.portable.variantId);
    }
  }
  return ids;
}

/** Template files (relative paths) that differ between two template trees. */
function changedTemplates(base: string, changed: string): string[] {
  const names = new Set([base, changed].flatMap((root) => filesUnder(root).map((f) => relative(root, f))));
  return [...names].sort().filter((n) => {
    const [a, b] = [join(base, n), join(changed, n)];
    return !existsSync(a) || !existsSync(b) || !readFileSync(a).equals(readFileSync(b));
  });
}

/** ptxas's report of every kernel of the given units, compiled one a core at a time. */
async function compileUnits(srcDir: string, units: string[], nvccArch: string): Promise<Map<string, KernelUsage>> {
  const scratch = mkdtempSync(join(tmpdir(), 'splice-'));
  const usage = new Map<string, KernelUsage>();
  const queue = [...units];
  const worker = async () => {
    for (let unit = queue.shift(); unit; unit = queue.shift()) {
      // No template include folders: a package unit includes its headers from its own folder.
      const r = await compileCubin(join(srcDir, unit), join(scratch, `${unit}.cubin`), nvccArch, []);
      if (!r.ok) {
        queue.length = 0;  // the other workers stop after their current unit
        throw new Error(`${unit} does not compile with the changed partials:\n${r.log}`);
      }
      for (const [k, u] of r.usage) usage.set(k, u);
      console.log(`  ${unit}: ${r.seconds.toFixed(0)} s`);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(units.length, availableParallelism()) }, worker));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return usage;
}

async function main(packageDir: string, changedDir: string, outDir: string) {
  const changed = changedTemplates(TEMPLATE_ROOT, changedDir);
  const unsplicable = changed.filter((n) => !SPLICED.some((s) => s.partial === n));
  if (unsplicable.length) throw new Error(`only ${SPLICED.map((s) => s.partial).join(' and ')} can be spliced into a package; the change also touches ${unsplicable.join(', ')}`);
  if (existsSync(outDir) && readdirSync(outDir).length) throw new Error(`${outDir} exists and is not empty`);
  const tables = (JSON.parse(readFileSync(join(packageDir, 'dispatch.json'), 'utf8')) as { tables: DispatchTable[] }).tables;
  const archs = [...new Set(tables.map((t) => t.arch))];
  if (archs.length !== 1) throw new Error(`a package of one arch is needed (this one has ${archs.join(', ')})`);

  cpSync(packageDir, outDir, { recursive: true, filter: (f) => !['build', 'libnormgen.so'].includes(basename(f)) });
  try {
    await spliceInto(packageDir, changedDir, outDir, changed, tables, parseArch(archs[0]).nvccArch);
  } catch (e) {
    rmSync(outDir, { recursive: true, force: true });  // no half-spliced package left behind
    throw e;
  }
}

/** The copied package in `outDir` with the changed partials, its twins re-bounded, and SPLICE.md. */
async function spliceInto(packageDir: string, changedDir: string, outDir: string, changed: string[], tables: DispatchTable[], nvccArch: string) {
  const src = join(outDir, 'src');
  for (const s of SPLICED) {
    const header = readFileSync(join(src, s.header), 'utf8');
    writeFileSync(join(src, s.header), spliceHeader(s.header, header, readFileSync(join(TEMPLATE_ROOT, s.partial), 'utf8'), readFileSync(join(changedDir, s.partial), 'utf8')));
  }
  const units = readdirSync(src).filter((f) => /^kernels_.*\.cu$/.test(f)).sort();
  console.log(`splice-partials: ${changed.length ? changed.join(', ') : 'no partial'} changed; compiling ${units.length} units for ${nvccArch}`);
  const usage = await compileUnits(src, units, nvccArch);

  const tuned = tunedVariants(tables);
  const registers = new Map([...usage].map(([k, u]) => [k, u.registers]));
  const moved: MovedBound[] = [];
  const rewritten: string[] = [];
  for (const unit of units) {
    const r = reboundTwins(readFileSync(join(src, unit), 'utf8'), registers, tuned);
    if (!r.moved.length) continue;
    writeFileSync(join(src, unit), r.unit);
    moved.push(...r.moved);
    rewritten.push(unit);
  }
  if (rewritten.length) {
    console.log(`splice-partials: ${moved.length} twin bounds moved; compiling their ${rewritten.length} units again`);
    for (const [k, u] of await compileUnits(src, rewritten, nvccArch)) usage.set(k, u);
  }
  const spilling = [...usage].filter(([, u]) => spills(u)).sort(([a], [b]) => a.localeCompare(b));

  const report = [
    `# ${basename(outDir)}: ${basename(packageDir)} with ${changed.length ? changed.join(' and ') : 'its own partials'} spliced in`,
    '',
    `Built by test/gpu/splice-partials.ts (${nvccArch}, nvcc -Xptxas -v): ${usage.size} kernels in ${units.length} units.`,
    '',
    `## Plain twins' launch bounds moved to what a re-tune would give (${moved.length})`,
    '',
    ...(moved.length ? ['| twin | threads | kernel registers | CTAs an SM |', '|---|---|---|---|', ...moved.map((m) => `| ${m.symbol} | ${m.threads} | ${m.registers} | ${m.from} -> ${m.to} |`)] : ['None.']),
    '',
    `## Kernels that spill (${spilling.length})`,
    '',
    ...(spilling.length ? ['| kernel | registers | spill stores (bytes) |', '|---|---|---|', ...spilling.map(([k, u]) => `| ${k} | ${u.registers} | ${u.spillStores} |`)] : ['None.']),
    '',
  ].join('\n');
  writeFileSync(join(outDir, 'SPLICE.md'), report);
  console.log(`splice-partials: ${moved.length} twin bounds moved, ${spilling.length} kernels spill; see ${join(outDir, 'SPLICE.md')}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [packageDir, changedDir, outDir] = process.argv.slice(2);
  if (!packageDir || !changedDir || !outDir) {
    console.error('usage: splice-partials PACKAGE_DIR CHANGED_TEMPLATES_DIR OUT_DIR');
    process.exit(2);
  }
  for (const [dir, needs] of [[packageDir, 'dispatch.json'], [changedDir, 'cuda/partials']]) {
    if (!statSync(join(dir, needs), { throwIfNoEntry: false })) {
      console.error(`splice-partials: ${dir} has no ${needs}: is it a built package and a templates/ folder, in that order?`);
      process.exit(2);
    }
  }
  main(packageDir, changedDir, outDir).catch((e: Error) => {
    console.error(`splice-partials: ${e.message}`);
    process.exit(1);
  });
}
