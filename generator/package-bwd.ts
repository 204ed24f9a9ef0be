// The backward part of a kernel package: from each device's backward tuning database,
// the specs (each with its generic variant), the variants (shared by the devices), every
// device's entries and the kernel files, plus what the launcher, header and Python
// templates need to know.

import type { DispatchTable } from '../tuner/dispatch.js';
import { InputError, residualDType, specKey, weightDType, type DType, type KernelSpec } from './problem.js';
import { bwdFixedSharedBytes, describeBwdParams, genericBwdParams, sumCount, type BwdParams } from './space-bwd.js';
import { makeBwdVariant, type BwdVariant } from './variant-bwd.js';

/** A device's backward table and where it came from. */
export interface BackwardTable {
  dbFile: string;
  tunedTemplateHash: string;
  table: DispatchTable<BwdParams>;
  /** The measured winners, as a text table, for the package README. */
  measured: string;
}

/** A forward table's device, as the backward plan needs it: which backward it has, if any. */
export interface BackwardOwner {
  device: string;
  computeCapability: number;
  backward?: BackwardTable;
}

/** The backward entries one forward table uses: its own, or (without its own) another table's. */
export interface BwdTableRange {
  /** The forward table whose backward database these entries came from. */
  source: number;
  firstEntry: number;
  entries: number;
  firstBucket: number;
  buckets: number;
}

export interface BwdPlan {
  specs: { key: string; spec: KernelSpec; generic: number }[];
  variants: BwdVariant[];
  /** Grouped by source table, then sorted by spec, hidden and rows. */
  entries: { table: number; spec: number; hidden: number; rows: number; variant: number }[];
  /** Every source table's tuned row counts, ascending, one after the other. */
  rowBuckets: number[];
  /** One per forward table, in its order. */
  tables: BwdTableRange[];
  files: { name: string; spec: KernelSpec; variants: BwdVariant[] }[];
}

/**
 * The backward table a forward table without one borrows, by the rule tables are picked for
 * a GPU: a table of the same compute capability, else the nearest older, else the first.
 */
export function backwardSource(owners: BackwardOwner[], table: number): number {
  if (owners[table].backward) return table;
  const have = owners.map((o, i) => ({ cc: o.computeCapability, i })).filter(({ i }) => owners[i].backward);
  const cc = owners[table].computeCapability;
  const same = have.find((h) => h.cc === cc);
  if (same) return same.i;
  const older = have.filter((h) => h.cc < cc).sort((a, b) => b.cc - a.cc)[0];
  return (older ?? have[0]).i;
}

/** Null when no table has a backward. Deterministic: specs by key, per spec the tables in order, then its generic variant. */
export function planBackward(owners: BackwardOwner[]): BwdPlan | null {
  const sources = owners.map((o, i) => ({ i, t: o.backward })).filter((s): s is { i: number; t: BackwardTable } => s.t !== undefined);
  if (sources.length === 0) return null;
  const specs = new Map<string, KernelSpec>();
  for (const { t } of sources) for (const e of t.table.entries) specs.set(e.spec, e.kernelSpec);
  const plan: BwdPlan = { specs: [], variants: [], entries: [], rowBuckets: [], tables: [], files: [] };
  const index = new Map<string, number>();
  const add = (v: BwdVariant) => {
    if (!index.has(v.id)) index.set(v.id, plan.variants.push(v) - 1);
    return index.get(v.id)!;
  };
  for (const key of [...specs.keys()].sort()) {
    const spec = specs.get(key)!;
    const mine: BwdVariant[] = [];
    for (const { i, t } of sources)
      for (const e of t.table.entries.filter((x) => x.spec === key)) {
        const v = makeBwdVariant(spec, e.params);
        if (v.id !== e.variantId) throw new InputError(`backward variant ${e.variantId} of ${key} no longer renders the same kernel: re-tune with these templates`);
        plan.entries.push({ table: i, spec: plan.specs.length, hidden: e.hidden, rows: e.rows, variant: add(v) });
        mine.push(v);
      }
    const generic = makeBwdVariant(spec, genericBwdParams(spec));
    plan.specs.push({ key, spec, generic: add(generic) });
    mine.push(generic);
    const unique = [...new Map(mine.map((v) => [v.id, v])).values()];
    plan.files.push({ name: `kernels_bwd_${String(plan.specs.length - 1).padStart(2, '0')}_${key}.cu`, spec, variants: unique });
  }
  plan.entries.sort((a, b) => a.table - b.table || a.spec - b.spec || a.hidden - b.hidden || a.rows - b.rows);
  const own = new Map<number, Omit<BwdTableRange, 'source'>>();
  for (const { i, t } of sources) {
    const firstEntry = plan.entries.findIndex((e) => e.table === i);
    own.set(i, { firstEntry, entries: plan.entries.filter((e) => e.table === i).length, firstBucket: plan.rowBuckets.length, buckets: t.table.rowBuckets.length });
    plan.rowBuckets.push(...t.table.rowBuckets);
  }
  plan.tables = owners.map((_, i) => {
    const source = backwardSource(owners, i);
    return { source, ...own.get(source)! };
  });
  return plan;
}

const DTYPE_ENUM: Record<DType, number> = { fp32: 0, fp16: 1, bf16: 2 };
const STORAGE_ENUM: Record<BwdParams['storage'], number> = { regs: 0, 'regs-smem': 1, loop: 2, global: 3 };

/** What the package templates render for the backward (null: the package has none). */
export function backwardContext(p: BwdPlan) {
  return {
    variants: p.variants.map((v) => ({
      symbol: v.symbol,
      storage: STORAGE_ENUM[v.params.storage],
      params: v.params,
      recompute: v.params.recompute ? 1 : 0,
      sums: sumCount(v.spec),
      fixedBytes: bwdFixedSharedBytes(v.spec, v.params),
      cluster: v.params.cluster ?? 1,
      description: describeBwdParams(v.params),
    })),
    // Kernels once each (variants differing in grid size share one).
    kernels: [...new Set(p.variants.map((v) => v.symbol))],
    specs: p.specs.map((s) => ({
      key: s.key,
      op: s.spec.op === 'rmsnorm' ? 0 : 1,
      dtype: DTYPE_ENUM[s.spec.dtype],
      weight: weightDType(s.spec) ? DTYPE_ENUM[weightDType(s.spec)!] : -1,
      bias: s.spec.features.bias ? 1 : 0,
      offset: s.spec.features.weightOffset ? 1 : 0,
      residual: residualDType(s.spec) ? DTYPE_ENUM[residualDType(s.spec)!] : -1,
      stats: s.spec.features.stats ? 1 : 0,
      generic: s.generic,
    })),
    entries: p.entries,
    rowBuckets: p.rowBuckets,
    tables: p.tables.map((t, i) => ({ ...t, own: t.source === i })),
    specKeys: p.specs.map((s) => specKey(s.spec)),
  };
}
