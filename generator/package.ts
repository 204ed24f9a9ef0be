// `normgen build`: a kernel package from a tuning database: C ABI header, the winning
// kernels plus a generic one per spec, the dispatch table as C data, a Makefile, a
// TypeScript index (emitted with ts-morph) with the same table and select(), and a
// PyTorch binding (ctypes + torch.library custom ops).

import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IndentationText, Project, QuoteKind, VariableDeclarationKind } from 'ts-morph';
import type { DispatchTable } from '../tuner/dispatch.js';
import type { Arch } from './arch.js';
import { writeFileAtomic, prepareOutputDir } from './files.js';
import { residualDType, specKey, weightDType, type DType, type KernelSpec } from './problem.js';
import { renderCudaUnit } from './render-cuda.js';
import { describeParams, GENERIC_PARAMS, ringSharedBytes, stageBytes, STORAGES } from './space.js';
import { render, TEMPLATE_ROOT, templateHash } from './templates.js';
import { makeVariant, type Variant } from './variant.js';
import { VERSION } from './version.js';

export interface PackageSource {
  name: string;
  arch: Arch;
  device: string;
  dbFiles: string[];
  /** The template hash the database was tuned with: kernels must not have changed since. */
  tunedTemplateHash: string;
  /** When the database was tuned (its last session's start). */
  tunedOn: string;
  table: DispatchTable;
  /** The measured winners, as a text table, for the package README. */
  measured: string;
}

/** The Python package folder inside a kernel package (import name normgen_torch). */
export const PYTHON_DIR = 'python/normgen_torch';

const DTYPE_ENUM: Record<DType, number> = { fp32: 0, fp16: 1, bf16: 2 };
const dtypeEnum = (d: DType | null) => (d ? DTYPE_ENUM[d] : -1);

interface Plan {
  specs: { key: string; spec: KernelSpec; generic: number }[];
  variants: Variant[];
  entries: { spec: number; hidden: number; rows: number; variant: number }[];
}

/** Number the specs and variants; every spec gets its generic variant. Deterministic order. */
function plan(table: DispatchTable): Plan {
  const specs = new Map<string, KernelSpec>();
  for (const e of table.entries) specs.set(e.spec, e.kernelSpec);
  const keys = [...specs.keys()].sort();
  const variants: Variant[] = [];
  const index = new Map<string, number>();
  const add = (v: Variant) => {
    if (!index.has(v.id)) index.set(v.id, variants.push(v) - 1);
    return index.get(v.id)!;
  };
  const out: Plan = { specs: [], variants, entries: [] };
  for (const key of keys) {
    const spec = specs.get(key)!;
    for (const e of table.entries.filter((x) => x.spec === key)) {
      const v = makeVariant(spec, e.params);
      if (v.id !== e.variantId) throw new Error(`variant ${e.variantId} of ${key} no longer renders the same kernel: re-tune with these templates`);
      out.entries.push({ spec: out.specs.length, hidden: e.hidden, rows: e.rows, variant: add(v) });
    }
    out.specs.push({ key, spec, generic: add(makeVariant(spec, GENERIC_PARAMS)) });
  }
  return out;
}

function emitTypeScript(p: Plan, table: DispatchTable, src: PackageSource): string {
  const project = new Project({ useInMemoryFileSystem: true, manipulationSettings: { indentationText: IndentationText.TwoSpaces, quoteKind: QuoteKind.Single } });
  const file = project.createSourceFile('index.ts');
  file.addStatements(`// normgen kernel package ${src.name}: the dispatch table tuned on ${src.device} (${src.arch.name}). Generated; do not edit.`);
  file.addTypeAlias({ isExported: true, name: 'DType', type: "'fp32' | 'fp16' | 'bf16'" });
  file.addInterface({
    isExported: true,
    name: 'Problem',
    properties: [
      { name: 'op', type: "'rmsnorm' | 'layernorm'" },
      { name: 'dtype', type: 'DType' },
      { name: 'weight', type: "'none' | 'fp32' | 'same'", hasQuestionToken: true },
      { name: 'weightOffset', type: 'boolean', hasQuestionToken: true },
      { name: 'bias', type: 'boolean', hasQuestionToken: true },
      { name: 'residual', type: "'none' | 'same' | 'fp32'", hasQuestionToken: true },
      { name: 'stats', type: 'boolean', hasQuestionToken: true },
      { name: 'hidden', type: 'number' },
      { name: 'rows', type: 'number' },
      { name: 'stride', type: 'number', hasQuestionToken: true, docs: ['Row stride in elements (default: hidden).'] },
      { name: 'alignmentElems', type: 'number', hasQuestionToken: true, docs: ['Largest power of two, in elements, dividing every pointer (default 16).'] },
    ],
  });
  file.addInterface({
    isExported: true,
    name: 'Variant',
    properties: [
      { name: 'symbol', type: 'string' },
      { name: 'storage', type: STORAGES.map((s) => `'${s}'`).join(' | ') },
      ...['threads', 'vec', 'threadsPerRow', 'items', 'cluster', 'stages'].map((name) => ({ name, type: 'number' })),
    ],
  });
  const json = (v: unknown) => JSON.stringify(v);
  file.addVariableStatement({
    isExported: true,
    declarationKind: VariableDeclarationKind.Const,
    declarations: [{ name: 'VARIANTS', type: 'readonly Variant[]', initializer: `[\n${p.variants.map((v) => `  ${json({ symbol: v.symbol, ...v.params })},`).join('\n')}\n]` }],
  });
  file.addVariableStatement({
    isExported: true,
    declarationKind: VariableDeclarationKind.Const,
    declarations: [{ name: 'SPECS', type: 'readonly { key: string; generic: number }[]', initializer: `[\n${p.specs.map((s) => `  ${json({ key: s.key, generic: s.generic })},`).join('\n')}\n]` }],
  });
  file.addVariableStatement({
    isExported: true,
    declarationKind: VariableDeclarationKind.Const,
    declarations: [{
      name: 'ENTRIES',
      type: 'readonly { spec: string; hidden: number; rows: number; variant: number }[]',
      initializer: `[\n${p.entries.map((e) => `  ${json({ spec: p.specs[e.spec].key, hidden: e.hidden, rows: e.rows, variant: e.variant })},`).join('\n')}\n]`,
    }],
  });
  file.addVariableStatement({
    isExported: true,
    declarationKind: VariableDeclarationKind.Const,
    declarations: [{ name: 'ROW_BUCKETS', type: 'readonly number[]', initializer: json(table.rowBuckets) }],
  });
  file.addStatements(readFileSync(join(TEMPLATE_ROOT, 'package', 'select.ts.hbs'), 'utf8'));
  file.formatText({ indentSize: 2 });
  return file.getFullText();
}

export function emitPackage(src: PackageSource, out: string): { files: string[]; variants: number } {
  if (src.tunedTemplateHash !== templateHash('cuda'))
    throw new Error(`the database was tuned with templates ${src.tunedTemplateHash.slice(0, 12)}, these are ${templateHash('cuda').slice(0, 12)}: re-tune before building`);
  const p = plan(src.table);
  const files: [string, string][] = [];
  const context = { name: src.name, version: VERSION, device: src.device, arch: src.arch.name, dbFiles: src.dbFiles.join(', ') };
  files.push(['include/normgen.h', render('package', 'normgen.h.hbs', context)]);
  for (const [i, s] of p.specs.entries()) {
    const mine = p.variants.filter((v) => specKey(v.spec) === s.key);
    files.push([`src/kernels_${String(i).padStart(2, '0')}_${s.key}.cu`, renderCudaUnit(s.spec, mine)]);
  }
  // Each spec as the C ABI's enums see it: the launcher's table and the Python binding share it.
  const specs = p.specs.map((s) => ({
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
  files.push(['src/normgen.cu', render('package', 'normgen.cu.hbs', {
    ...context,
    variants: p.variants.map((v) => ({ symbol: v.symbol, params: v.params, storageIndex: STORAGES.indexOf(v.params.storage), stageBytes: stageBytes(v.spec), ringBytes: v.params.storage === 'ring' ? ringSharedBytes(v.spec, v.params) : 0, description: describeParams(v.params) })),
    specs,
    entries: p.entries,
    rowBuckets: src.table.rowBuckets,
  })]);
  // Machine code for the tuned arch (sm_90a keeps Hopper-only features), PTX of the
  // portable arch (compute_90) for newer GPUs to JIT.
  const cc = src.arch.nvccArch.replace(/^sm_/, '');
  const portable = cc.replace(/a$/, '');
  files.push(['Makefile', render('package', 'Makefile.hbs', { ptxArch: true, archFlags: `-gencode arch=compute_${cc},code=sm_${cc} -gencode arch=compute_${portable},code=compute_${portable}` })]);
  files.push(['CMakeLists.txt', render('package', 'CMakeLists.txt.hbs', { name: src.name, cmakeName: src.name.replace(/[^A-Za-z0-9_]/g, '_'), cudaArchitectures: `${cc}-real;${portable}-virtual` })]);
  files.push(['ts/index.ts', emitTypeScript(p, src.table, src)]);
  // The PyTorch binding: a torch-free ctypes layer and the torch.library ops on top.
  files.push([`${PYTHON_DIR}/abi.py`, render('package', 'abi.py.hbs', { ...context, specs })]);
  files.push([`${PYTHON_DIR}/__init__.py`, render('package', 'torch_init.py.hbs', context)]);
  files.push(['README.md', render('package', 'README.md.hbs', {
    ...context,
    tunedOn: src.tunedOn,
    variantCount: p.variants.length,
    tunedCount: src.table.variants,
    problemCount: src.table.entries.length,
    tolerancePct: (100 * src.table.tolerance).toFixed(1),
    regretPct: (100 * src.table.maxRegret).toFixed(2),
    specs: p.specs.map((s) => s.key),
    measured: src.measured,
  })]);
  files.push(['dispatch.json', JSON.stringify({ name: src.name, device: src.device, arch: src.arch.name, tolerance: src.table.tolerance, maxRegret: src.table.maxRegret, entries: src.table.entries.map(({ kernelSpec, ...e }) => e) }, null, 1) + '\n']);

  prepareOutputDir(out);
  for (const d of ['include', 'src', 'ts', PYTHON_DIR]) mkdirSync(join(out, d), { recursive: true });
  for (const [name, text] of files) writeFileAtomic(join(out, name), text);
  copyFileSync(join(TEMPLATE_ROOT, 'cuda', 'normgen_params.h'), join(out, 'src', 'normgen_params.h'));
  return { files: [...files.map(([n]) => n), 'src/normgen_params.h'], variants: p.variants.length };
}
