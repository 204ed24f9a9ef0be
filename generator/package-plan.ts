// What goes into a kernel package with one dispatch table per device: the kernel specs,
// the variants (numbered once, shared by the tables), the entries of every table, and
// the kernel files, each compiled only for the archs whose tables use its kernels.

import { sameProblem, type DispatchEntry, type DispatchTable } from '../tuner/dispatch.js';
import type { PlainLaunch, ReleasePoint } from '../tuner/measure.js';
import type { BackwardTable } from './package-bwd.js';
import type { Arch } from './arch.js';
import { InputError, specKey, type KernelSpec } from './problem.js';
import { GENERIC_PARAMS, type CudaParams } from './space.js';
import { makeVariant, type Variant } from './variant.js';

/** `NormgenFwdParams::release_at` of each release point (templates/cuda/normgen_params.h). */
const RELEASE_AT: Record<ReleasePoint | 'start', 0 | 1 | 2> = { start: 0, late: 1, exit: 2 };
/** `Entry::plain_launch` (templates/package/normgen.cu.hbs): 0 the twin below PLAIN_TWIN_ROWS_BELOW rows, else the kernel; 1 the twin; 2 the kernel. */
const PLAIN_LAUNCH_CODE: Record<PlainLaunch, 1 | 2> = { twin: 1, kernel: 2 };

/** One device's dispatch table and where it came from. */
export interface DeviceTable {
  /** The GPU model's name as CUDA reports it (cudaDeviceProp::name), e.g. "NVIDIA H200". */
  device: string;
  arch: Arch;
  dbFile: string;
  /** The template hash the database was tuned with: kernels must not have changed since. */
  tunedTemplateHash: string;
  /** When the database was tuned (its last session's start). */
  tunedOn: string;
  table: DispatchTable;
  /** The measured winners, as a text table, for the package README. */
  measured: string;
  /** The backward table of the same device (single-device packages only). */
  backward?: BackwardTable;
  /**
   * The same device's table tuned under plain launches (NORMGEN_PDL=0, plain twins timed):
   * where it has a tuned entry's problem, its winner runs there when the package launches plainly.
   */
  plain?: PlainTable;
}

/** A device's plain-launch table and where it came from. */
export interface PlainTable {
  dbFile: string;
  tunedTemplateHash: string;
  tunedOn: string;
  /** The winners plain launches run (plainLaunchEntries). */
  table: DispatchTable;
  /** Problems the plain tune covered, and the lead over the tuned winner each kept one had there (at least). */
  problems: number;
  margin: number;
  /**
   * Per tuned problem ("<spec> <hidden> <rows>"), which kernel of the variant plain launches run
   * there (the kept winner, else the tuned one) the plain tune timed faster, where it timed both.
   */
  launches: Map<string, PlainLaunch>;
}

export interface PlannedEntry {
  table: number;
  spec: number;
  hidden: number;
  rows: number;
  variant: number;
  /** The variant standing for other hidden sizes (the nearest path): `variant` unless that is compiled for this size only. */
  portable: number;
  /** Where `variant` releases the next grid on this problem (DispatchEntry.release): 1 after its wait, 2 at its exit, else 0 at its start. */
  releaseAt: 0 | 1 | 2;
  /** The variant a plain launch runs on this problem: the plain-launch table's winner, else `variant`. */
  plain: number;
  /** Which of `plain`'s kernels a plain launch runs here (PLAIN_LAUNCH_CODE): as the plain tune timed it faster, else 0, by the rows. */
  plainLaunch: 0 | 1 | 2;
}

export interface KernelFile {
  name: string;
  spec: KernelSpec;
  variants: Variant[];
  /** The archs to compile for, ascending; also names the build group. */
  archs: Arch[];
}

export interface Plan {
  specs: { key: string; spec: KernelSpec; generic: number }[];
  variants: Variant[];
  /** Sorted by table, then spec, hidden and rows. */
  entries: PlannedEntry[];
  files: KernelFile[];
  /** Per variant id, the most registers a thread of it took in any table's tune (where recorded). */
  tunedRegisters: Map<string, number>;
  /** Every table's arch, ascending, once. */
  archs: Arch[];
}

const byCc = (a: Arch, b: Arch) => a.cc - b.cc;
export const archSetName = (archs: Arch[]) => archs.map((a) => a.name).join('+');

/**
 * Number the specs and variants and place every kernel in a file. Deterministic: specs
 * by key, then per spec the tables' entries in table order, then the spec's generic
 * variant (which every arch gets). With one table this is the single-device layout.
 */
export function planPackage(tables: DeviceTable[]): Plan {
  const specs = new Map<string, KernelSpec>();
  for (const t of tables) for (const e of t.table.entries) specs.set(e.spec, e.kernelSpec);
  const archs = [...new Map(tables.map((t) => [t.arch.name, t.arch])).values()].sort(byCc);
  const variants: Variant[] = [];
  const index = new Map<string, number>();
  const archsOf = new Map<number, Map<string, Arch>>();
  const add = (v: Variant, for_: Arch[]) => {
    if (!index.has(v.id)) index.set(v.id, variants.push(v) - 1);
    const i = index.get(v.id)!;
    const set = archsOf.get(i) ?? new Map<string, Arch>();
    for (const a of for_) set.set(a.name, a);
    archsOf.set(i, set);
    return i;
  };
  const plan: Plan = { specs: [], variants, entries: [], files: [], tunedRegisters: new Map(), archs };
  for (const key of [...specs.keys()].sort()) {
    const spec = specs.get(key)!;
    tables.forEach((t, table) => {
      for (const e of t.table.entries.filter((x) => x.spec === key)) {
        const rendered = (id: string, params: CudaParams, registers: number | undefined) => {
          const v = makeVariant(spec, params);
          if (v.id !== id) throw new InputError(`variant ${id} of ${key} no longer renders the same kernel: re-tune with these templates`);
          if (registers !== undefined) plan.tunedRegisters.set(id, Math.max(registers, plan.tunedRegisters.get(id) ?? 0));
          return add(v, [t.arch]);
        };
        const variant = rendered(e.variantId, e.params, e.registers);
        const portable = e.portable ? rendered(e.portable.variantId, e.portable.params, e.portable.registers) : variant;
        const p = plainEntry(t, e);
        const plain = p ? rendered(p.variantId, p.params, p.registers) : variant;
        // A table tuned under plain launches only (before sm90) knows its own winners' faster kernel.
        const launch = t.plain ? t.plain.launches.get(`${e.spec} ${e.hidden} ${e.rows}`) : e.plainLaunch;
        const plainLaunch = launch ? PLAIN_LAUNCH_CODE[launch] : 0;
        plan.entries.push({ table, spec: plan.specs.length, hidden: e.hidden, rows: e.rows, variant, portable, releaseAt: RELEASE_AT[e.release ?? 'start'], plain, plainLaunch });
      }
    });
    plan.specs.push({ key, spec, generic: add(makeVariant(spec, GENERIC_PARAMS), archs) });
  }
  plan.entries.sort((a, b) => a.table - b.table || a.spec - b.spec || a.hidden - b.hidden || a.rows - b.rows);

  // Files: per spec, its variants grouped by the archs that need them.
  const all = archSetName(archs);
  plan.specs.forEach((s, i) => {
    const groups = new Map<string, { archs: Arch[]; variants: Variant[] }>();
    variants.forEach((v, vi) => {
      if (specKey(v.spec) !== s.key) return;
      const set = [...archsOf.get(vi)!.values()].sort(byCc);
      const g = groups.get(archSetName(set)) ?? { archs: set, variants: [] };
      g.variants.push(v);
      groups.set(archSetName(set), g);
    });
    const names = [...groups.keys()].sort((a, b) => Number(b === all) - Number(a === all) || a.localeCompare(b));
    for (const name of names) {
      const g = groups.get(name)!;
      const suffix = name === all ? '' : `.${name}`;
      plan.files.push({ name: `kernels_${String(i).padStart(2, '0')}_${s.key}${suffix}.cu`, spec: s.spec, variants: g.variants, archs: g.archs });
    }
  });
  return plan;
}

/** The plain-launch table's entry for a tuned entry's problem (same spec, hidden size and rows), if it has one. */
export function plainEntry(t: DeviceTable, e: DispatchEntry): DispatchEntry | undefined {
  return t.plain?.table.entries.find((x) => sameProblem(x, e));
}

/** nvcc flags: machine code for each arch (sm90 as sm_90a), PTX of the oldest for newer GPUs to JIT. */
export function gencodeFlags(archs: Arch[]): string {
  const cc = (a: Arch) => a.nvccArch.replace(/^sm_/, '');
  const portable = cc(archs[0]).replace(/a$/, '');
  return [...archs.map((a) => `-gencode arch=compute_${cc(a)},code=sm_${cc(a)}`), `-gencode arch=compute_${portable},code=compute_${portable}`].join(' ');
}

/** The same for CMake's CUDA_ARCHITECTURES. */
export function cmakeArchitectures(archs: Arch[]): string {
  const cc = (a: Arch) => a.nvccArch.replace(/^sm_/, '');
  return [...archs.map((a) => `${cc(a)}-real`), `${cc(archs[0]).replace(/a$/, '')}-virtual`].join(';');
}
