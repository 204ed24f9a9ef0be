// The WebGPU side of a kernel package: the WGSL dispatch tables (one per adapter, keyed
// by its identity), the shader of every variant they use plus a default per kernel spec,
// and createRmsNorm / createLayerNorm (templates/package/webgpu.ts.hbs), as ts/webgpu.ts.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DispatchTable } from '../tuner/dispatch.js';
import { adapterName, type AdapterId } from '../tuner/wgsl/adapter.js';
import { InputError, specKey, type KernelSpec } from './problem.js';
import { renderWgsl, wgslVariantId } from './render-wgsl.js';
import { type WgslParams } from './space-wgsl.js';
import { tsFile } from './ts-file.js';
import { TEMPLATE_ROOT, templateHash } from './templates.js';

/** One adapter's WGSL dispatch table and where it came from. */
export interface WgslDeviceTable {
  adapter: AdapterId;
  dbFile: string;
  tunedTemplateHash: string;
  tunedOn: string;
  table: DispatchTable<WgslParams>;
  /** The measured winners, as a text table, for the package README. */
  measured: string;
}

interface WgslVariantOut {
  spec: string;
  id: string;
  params: WgslParams;
  shader: string;
}

export interface WgslPlan {
  specs: { key: string; spec: KernelSpec; defaults: number[] }[];
  variants: WgslVariantOut[];
  entries: { table: number; spec: string; hidden: number; rows: number; variant: number }[];
}

/** The package's default for an adapter nobody tuned: one workgroup of 64 per row, at each vector width (the widest the stride allows is used). */
const defaultParams = (vec: number): WgslParams => ({ workgroup: 64, vec, threadsPerRow: 64, reduce: 'workgroup' });

/**
 * Number the WGSL variants deterministically (specs by key; per spec the tables'
 * entries in table order, then the defaults) after checking that every tuned variant
 * still renders the shader that was verified (same templates, same id).
 */
export function planWgsl(tables: WgslDeviceTable[]): WgslPlan {
  for (const t of tables)
    if (t.tunedTemplateHash !== templateHash('wgsl'))
      throw new InputError(`${t.dbFile} was tuned with WGSL templates ${t.tunedTemplateHash.slice(0, 12)}, these are ${templateHash('wgsl').slice(0, 12)}: re-tune before building`);
  const specs = new Map<string, KernelSpec>();
  for (const t of tables) for (const e of t.table.entries) specs.set(e.spec, e.kernelSpec);
  const plan: WgslPlan = { specs: [], variants: [], entries: [] };
  const index = new Map<string, number>();
  const add = (spec: KernelSpec, params: WgslParams) => {
    const id = wgslVariantId(spec, params);
    if (!index.has(id)) index.set(id, plan.variants.push({ spec: specKey(spec), id, params, shader: renderWgsl(spec, params) }) - 1);
    return index.get(id)!;
  };
  for (const key of [...specs.keys()].sort()) {
    const spec = specs.get(key)!;
    tables.forEach((t, table) => {
      for (const e of t.table.entries.filter((x) => x.spec === key)) {
        if (wgslVariantId(spec, e.params) !== e.variantId) throw new InputError(`WGSL variant ${e.variantId} of ${key} no longer renders the verified shader: re-tune with these templates`);
        plan.entries.push({ table, spec: key, hidden: e.hidden, rows: e.rows, variant: add(spec, e.params) });
      }
    });
    plan.specs.push({ key, spec, defaults: [4, 2, 1].map((vec) => add(spec, defaultParams(vec))) });
  }
  plan.entries.sort((a, b) => a.table - b.table || a.spec.localeCompare(b.spec) || a.hidden - b.hidden || a.rows - b.rows);
  return plan;
}

export function emitWebGpu(p: WgslPlan, tables: WgslDeviceTable[], name: string): string {
  const { file, constant } = tsFile('webgpu.ts');
  const where = tables.map((t) => adapterName(t.adapter, t.adapter.backend)).join(', ');
  file.addStatements(`// normgen kernel package ${name}: WGSL kernels for WebGPU and the dispatch table${tables.length > 1 ? 's' : ''} tuned on ${where}. Generated; do not edit.`);
  file.addTypeAlias({ isExported: true, name: 'WgslDType', type: "'fp32' | 'fp16'" });
  file.addInterface({
    isExported: true,
    name: 'WgslParams',
    properties: [
      { name: 'workgroup', type: 'number' },
      { name: 'vec', type: 'number' },
      { name: 'threadsPerRow', type: 'number' },
      { name: 'reduce', type: "'workgroup' | 'subgroup'" },
      { name: 'items', type: 'number', hasQuestionToken: true },
    ],
  });
  file.addInterface({
    isExported: true,
    name: 'WgslVariant',
    docs: ['A shader: the text the tuner verified, its kernel spec and parameters.'],
    properties: [{ name: 'spec', type: 'string' }, { name: 'id', type: 'string' }, { name: 'params', type: 'WgslParams' }, { name: 'shader', type: 'string' }],
  });
  file.addInterface({
    isExported: true,
    name: 'WgslSpec',
    docs: ['A kernel spec the package has, and its default variants (vec4, vec2, scalar) for adapters without a table.'],
    properties: [
      { name: 'key', type: 'string' },
      { name: 'op', type: "'rmsnorm' | 'layernorm'" },
      { name: 'dtype', type: 'WgslDType' },
      { name: 'weight', type: "'none' | 'fp32' | 'same'" },
      { name: 'weightOffset', type: 'boolean' },
      { name: 'bias', type: 'boolean' },
      { name: 'residual', type: "'none' | 'same' | 'fp32'" },
      { name: 'stats', type: 'boolean' },
      { name: 'defaults', type: 'readonly number[]' },
    ],
  });
  file.addInterface({
    isExported: true,
    name: 'WgslTable',
    docs: ['The dispatch table tuned on one adapter: tuned (spec, hidden, rows) -> index into WGSL_VARIANTS.'],
    properties: [
      { name: 'adapter', type: '{ vendor: string; architecture: string; device: string; description: string; backend: string }' },
      { name: 'tunedOn', type: 'string' },
      { name: 'rowBuckets', type: 'readonly number[]' },
      { name: 'entries', type: 'readonly { spec: string; hidden: number; rows: number; variant: number }[]' },
    ],
  });
  const json = (v: unknown) => JSON.stringify(v);
  constant('WGSL_VARIANTS', 'readonly WgslVariant[]', `[\n${p.variants.map((v) => `  ${json(v)},`).join('\n')}\n]`);
  const specText = p.specs.map(({ key, spec, defaults }) => {
    const f = spec.features;
    const fields = { key, op: spec.op, dtype: spec.dtype, weight: f.weight, weightOffset: f.weightOffset, bias: f.bias, residual: f.residual, stats: f.stats, defaults };
    return `  ${json(fields)},`;
  });
  constant('WGSL_SPECS', 'readonly WgslSpec[]', `[\n${specText.join('\n')}\n]`);
  const tableText = tables.map((t, i) => {
    const a = t.adapter;
    const adapter = { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description, backend: a.backend };
    const entries = p.entries.filter((e) => e.table === i).map((e) => `      ${json({ spec: e.spec, hidden: e.hidden, rows: e.rows, variant: e.variant })},`);
    return `  {\n    adapter: ${json(adapter)},\n    tunedOn: ${json(t.tunedOn)},\n    rowBuckets: ${json(t.table.rowBuckets)},\n    entries: [\n${entries.join('\n')}\n    ],\n  },`;
  });
  constant('WGSL_TABLES', 'readonly WgslTable[]', `[\n${tableText.join('\n')}\n]`);
  file.addStatements(readFileSync(join(TEMPLATE_ROOT, 'package', 'webgpu.ts.hbs'), 'utf8'));
  file.formatText({ indentSize: 2 });
  return file.getFullText();
}
