// `normgen build`: a kernel package from one or more tuning databases (one per GPU
// model): C ABI header, the winning kernels plus a generic one per spec, one dispatch
// table per device as C data, a Makefile and a CMake project, a TypeScript index
// (emitted with ts-morph) with the same tables and select(), and a PyTorch binding
// (ctypes + torch.library custom ops).

import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic, prepareOutputDir } from './files.js';
import { archSetName, cmakeArchitectures, gencodeFlags, planPackage, type DeviceTable, type Plan, type PlainTable } from './package-plan.js';
import type { Arch } from './arch.js';
import { emitTypeScript } from './package-ts.js';
import { emitWebGpu, planWgsl, type WgslDeviceTable } from './package-wgsl.js';
import { adapterName } from '../tuner/wgsl/adapter.js';
import { InputError, residualDType, weightDType, type DType } from './problem.js';
import { PLAIN_TWIN_ROWS_BELOW, renderPackageUnit } from './render-cuda.js';
import { shareKernelHelpers } from './package-helpers.js';
import { describeParams, maxDynamicSharedBytes, ringSharedBytes, stageBytes, STORAGES } from './space.js';
import { render, TEMPLATE_ROOT, templateHash } from './templates.js';
import { backwardContext, planBackward } from './package-bwd.js';
import { renderCudaBwdUnit } from './render-cuda-bwd.js';
import { bwdTemplateHash } from './variant-bwd.js';
import { VERSION } from './version.js';
import type { DispatchTable } from '../tuner/dispatch.js';

export type { DeviceTable } from './package-plan.js';

export interface PackageSource {
  name: string;
  /** One per GPU model, in the order the package falls back to ("the first"). */
  tables: DeviceTable[];
  /** WGSL dispatch tables, one per adapter: they add ts/webgpu.ts. */
  wgsl?: WgslDeviceTable[];
}

/** The Python package folder inside a kernel package (import name normgen_torch). */
export const PYTHON_DIR = 'python/normgen_torch';

const DTYPE_ENUM: Record<DType, number> = { fp32: 0, fp16: 1, bf16: 2 };
const dtypeEnum = (d: DType | null) => (d ? DTYPE_ENUM[d] : -1);

/** A C string literal of a device name (printable ASCII, as CUDA reports names). */
function cString(s: string): string {
  if (!/^[\x20-\x7e]*$/.test(s)) throw new Error(`device name ${JSON.stringify(s)} is not printable ASCII`);
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Each spec as the C ABI's enums see it: the launcher's table and the Python binding share it. */
function abiSpecs(p: Plan) {
  return p.specs.map((s) => ({
    key: s.key,
    op: s.spec.op === 'rmsnorm' ? 0 : 1,
    dtype: DTYPE_ENUM[s.spec.dtype],
    weight: dtypeEnum(weightDType(s.spec)),
    bias: s.spec.features.bias ? 1 : 0,
    offset: s.spec.features.weightOffset ? 1 : 0,
    residual: dtypeEnum(residualDType(s.spec)),
    stats: s.spec.features.stats ? 1 : 0,
    generic: s.generic,
  }));
}

function launcher(p: Plan, src: PackageSource, context: object): string {
  let firstEntry = 0;
  let firstBucket = 0;
  const tables = src.tables.map((t, i) => {
    const entries = p.entries.filter((e) => e.table === i);
    const out = { device: t.device, deviceLiteral: cString(t.device), computeCapability: t.arch.cc, maxSharedBytes: maxDynamicSharedBytes(t.arch), firstEntry, entryCount: entries.length, firstBucket, bucketCount: t.table.rowBuckets.length, entries };
    firstEntry += entries.length;
    firstBucket += t.table.rowBuckets.length;
    return out;
  });
  return render('package', 'normgen.cu.hbs', {
    ...context,
    storages: STORAGES.map((s) => s.toUpperCase()),
    variants: p.variants.map((v) => ({
      symbol: v.symbol,
      params: v.params,
      storageIndex: STORAGES.indexOf(v.params.storage),
      stageBytes: stageBytes(v.spec),
      ringBytes: v.params.storage === 'ring' ? ringSharedBytes(v.spec, v.params) : 0,
      description: describeParams(v.params),
    })),
    specs: abiSpecs(p),
    tables,
    rowBuckets: src.tables.flatMap((t) => t.table.rowBuckets),
  });
}

/**
 * Build files. Each kernel file is compiled for the archs whose tables use its kernels (a
 * cluster kernel tuned on sm90 cannot compile for sm80), every other source (launcher,
 * backward kernels) for all of them; one arch: everything alike. `sources`: the .cu files.
 */
function buildFiles(p: Plan, src: PackageSource, sources: string[]): [string, string][] {
  const cmakeName = src.name.replace(/[^A-Za-z0-9_]/g, '_');
  const id = (archs: Arch[]) => archSetName(archs).replace(/\+/g, '_');
  const archsOf = (file: string) => p.files.find((f) => f.name === file)?.archs ?? p.archs;
  const sets = new Map(sources.map((file) => [id(archsOf(file)), archsOf(file)]));
  const groups = [...sets].map(([name, archs]) => ({
    id: name,
    archFlags: gencodeFlags(archs),
    cudaArchitectures: cmakeArchitectures(archs),
    stems: sources.filter((file) => id(archsOf(file)) === name).map((file) => file.replace(/\.cu$/, '')),
    // CMake's object libraries: the kernel files (the launcher is the library's own source).
    files: p.files.filter((f) => id(f.archs) === name).map((f) => f.name),
  }));
  const multiArch = p.archs.length > 1;
  // One arch: CMake globs every source into the library; several: an object library per arch set.
  const cmake = { groups: multiArch && groups.filter((g) => g.files.length > 0), name: src.name, cmakeName, cudaArchitectures: cmakeArchitectures(p.archs) };
  return [
    ['Makefile', render('package', 'Makefile.hbs', { multiArch, groups })],
    ['CMakeLists.txt', render('package', 'CMakeLists.txt.hbs', cmake)],
  ];
}

/** The measured backward winners for the README: the one table's, or each device's that has one, headed by its device. */
function measuredBackward(tables: DeviceTable[], single: boolean): string {
  if (single) return tables[0].backward?.measured ?? '';
  return tables.flatMap((t) => (t.backward ? [`${t.device} (${t.arch.name}):\n${t.backward.measured}`] : [])).join('\n\n');
}

/** Per device with a plain-launch table: where it came from and on how many tuned problems a plain launch runs another kernel. */
function plainTableNotes(p: Plan, tables: DeviceTable[]) {
  return tables.flatMap((t, i) =>
    t.plain
      ? [{
          device: t.device, db: t.plain.dbFile, tunedOn: t.plain.tunedOn, problems: t.plain.problems, marginPct: (100 * t.plain.margin).toFixed(0),
          others: p.entries.filter((e) => e.table === i && e.plain !== e.variant).length,
          launches: t.plain.launches.size, kernels: [...t.plain.launches.values()].filter((l) => l === 'kernel').length,
        }]
      : [],
  );
}

/** A dispatch table as dispatch.json holds it: its tolerances, regret and entries. */
/** Per tuned problem, which kernel plain launches run where the plain tune timed both (absent: by the rows). */
const plainLaunchesJson = (t: PlainTable) => (t.launches.size ? { launches: Object.fromEntries(t.launches) } : {});

function tableJson(table: DispatchTable<object>) {
  return { tolerance: table.tolerance, largeTolerance: table.largeTolerance, maxRegret: table.maxRegret, entries: table.entries.map(({ kernelSpec, ...e }) => e) };
}

export function emitPackage(src: PackageSource, out: string): { files: string[]; variants: number; tuned: number; portable: number; backward: number } {
  for (const t of src.tables.flatMap((x) => [x, ...(x.plain ? [x.plain] : [])]))
    if (t.tunedTemplateHash !== templateHash('cuda'))
      throw new InputError(`${t.dbFile} was tuned with templates ${t.tunedTemplateHash.slice(0, 12)}, these are ${templateHash('cuda').slice(0, 12)}: re-tune before building`);
  const p = planPackage(src.tables);
  const single = src.tables.length === 1;
  for (const b of src.tables.flatMap((t) => (t.backward ? [t.backward] : [])))
    if (b.tunedTemplateHash !== bwdTemplateHash())
      throw new InputError(`${b.dbFile} was tuned with backward templates ${b.tunedTemplateHash.slice(0, 12)}, these are ${bwdTemplateHash().slice(0, 12)}: re-tune before building`);
  const bwd = planBackward(src.tables.map((t) => ({ device: t.device, computeCapability: t.arch.cc, backward: t.backward })));
  const archNames = [...new Set(src.tables.map((t) => t.arch.name))].join(', ');
  const context = {
    name: src.name,
    version: VERSION,
    device: src.tables.map((t) => t.device).join(', '),
    arch: archNames,
    dbFiles: src.tables.map((t) => [t.dbFile, ...(t.plain ? [t.plain.dbFile] : []), ...(t.backward ? [t.backward.dbFile] : [])].join(', ')).join(', '),
    backward: bwd ? backwardContext(bwd) : false,
    plainTwinRowsBelow: PLAIN_TWIN_ROWS_BELOW,
  };
  const files: [string, string][] = [];
  files.push(['include/normgen.h', render('package', 'normgen.h.hbs', context)]);
  const shared = shareKernelHelpers(
    p.files.map((f) => [`src/${f.name}`, renderPackageUnit(f.spec, f.variants, p.tunedRegisters)]),
    (bwd?.files ?? []).map((f) => [`src/${f.name}`, renderCudaBwdUnit(f.spec, f.variants)]),
  );
  files.push(...shared.headers.map(([name, text]): [string, string] => [`src/${name}`, text]), ...shared.units);
  files.push(['src/normgen.cu', launcher(p, src, context)]);
  const sources = files.map(([name]) => /^src\/([^/]+\.cu)$/.exec(name)?.[1]).filter((f): f is string => f !== undefined);
  files.push(...buildFiles(p, src, sources));
  files.push(['ts/index.ts', emitTypeScript(p, src.tables, src.name, bwd)]);
  const wgslTables = src.wgsl ?? [];
  const wgsl = wgslTables.length ? planWgsl(wgslTables) : undefined;
  if (wgsl) files.push(['ts/webgpu.ts', emitWebGpu(wgsl, wgslTables, src.name)]);
  // The PyTorch binding: a torch-free ctypes layer and the torch.library ops on top.
  files.push([`${PYTHON_DIR}/abi.py`, render('package', 'abi.py.hbs', { ...context, specs: abiSpecs(p) })]);
  files.push([`${PYTHON_DIR}/__init__.py`, render('package', 'torch_init.py.hbs', context)]);
  const tunedSet = new Set(p.entries.flatMap((e) => [e.variant, e.plain]));
  const tuned = tunedSet.size;
  const portable = new Set(p.entries.map((e) => e.portable).filter((v) => !tunedSet.has(v))).size;
  files.push(['README.md', render('package', 'README.md.hbs', {
    ...context,
    tunedOn: src.tables.map((t) => t.tunedOn).sort().pop(),
    variantCount: p.variants.length,
    tunedCount: tuned,
    portableCount: portable,
    nonPortableClusters: p.variants.filter((v) => v.params.cluster > 8).length,
    problemCount: p.entries.length,
    tolerancePct: (100 * Math.max(...src.tables.map((t) => t.table.tolerance))).toFixed(1),
    largeTolerancePct: (100 * Math.max(...src.tables.map((t) => t.table.largeTolerance))).toFixed(1),
    regretPct: (100 * Math.max(...src.tables.map((t) => t.table.maxRegret))).toFixed(2),
    specs: p.specs.map((s) => s.key),
    multiDevice: !single,
    tables: src.tables.map((t) => ({ device: t.device, arch: t.arch.name, db: t.dbFile })),
    plainTables: plainTableNotes(p, src.tables),
    measured: single ? src.tables[0].measured : src.tables.map((t) => `${t.device} (${t.arch.name}):\n${t.measured}`).join('\n\n'),
    wgsl: wgsl && {
      specs: wgsl.specs.map((s) => s.key),
      multi: wgslTables.length > 1,
      tables: wgslTables.map((t) => ({ adapter: adapterName(t.adapter, t.adapter.backend), backend: t.adapter.backend, db: t.dbFile, tunedOn: t.tunedOn, measured: t.measured })),
    },
    measuredBackward: measuredBackward(src.tables, single),
  })]);
  const dispatch = {
    name: src.name,
    tables: src.tables.map((t) => ({
      device: t.device,
      arch: t.arch.name,
      computeCapability: t.arch.cc,
      db: t.dbFile,
      ...tableJson(t.table),
      ...(t.plain ? { plain: { db: t.plain.dbFile, ...tableJson(t.plain.table), ...plainLaunchesJson(t.plain) } } : {}),
      ...(t.backward ? { backward: { db: t.backward.dbFile, ...tableJson(t.backward.table) } } : {}),
    })),
    ...(wgslTables.length
      ? {
          wgsl: wgslTables.map((t) => ({
            adapter: t.adapter,
            db: t.dbFile,
            ...tableJson(t.table),
          })),
        }
      : {}),
  };
  files.push(['dispatch.json', JSON.stringify(dispatch, null, 1) + '\n']);

  prepareOutputDir(out);
  for (const d of ['include', 'src', 'ts', PYTHON_DIR]) mkdirSync(join(out, d), { recursive: true });
  for (const [name, text] of files) writeFileAtomic(join(out, name), text);
  copyFileSync(join(TEMPLATE_ROOT, 'cuda', 'normgen_params.h'), join(out, 'src', 'normgen_params.h'));
  const headers = ['src/normgen_params.h'];
  if (bwd) {
    copyFileSync(join(TEMPLATE_ROOT, 'cuda-bwd', 'normgen_bwd_params.h'), join(out, 'src', 'normgen_bwd_params.h'));
    headers.push('src/normgen_bwd_params.h');
  }
  // Kernel files (and the backward header) of an earlier build into the same folder that this one no longer has.
  const written = new Set([...files.map(([n]) => n), ...headers]);
  for (const f of readdirSync(join(out, 'src')))
    if ((/^kernels_.*\.cu$/.test(f) || f === 'normgen_bwd_params.h') && !written.has(`src/${f}`)) rmSync(join(out, 'src', f));
  return { files: [...files.map(([n]) => n), ...headers], variants: p.variants.length, tuned, portable, backward: bwd?.variants.length ?? 0 };
}
