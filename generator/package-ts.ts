// The TypeScript side of a kernel package (emitted with ts-morph): the variants, the
// kernel specs, one dispatch table per device, and select() from templates/package; with a
// backward, its tables and selectBackward() (package-ts-bwd.ts).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BwdPlan } from './package-bwd.js';
import type { DeviceTable, Plan } from './package-plan.js';
import { addBackward } from './package-ts-bwd.js';
import { maxDynamicSharedBytes, stageBytes, STORAGES } from './space.js';
import { tsFile } from './ts-file.js';
import { TEMPLATE_ROOT } from './templates.js';

export function emitTypeScript(p: Plan, tables: DeviceTable[], name: string, bwd?: BwdPlan | null): string {
  const { file, constant } = tsFile('index.ts');
  const where = tables.map((t) => `${t.device} (${t.arch.name})`).join(', ');
  file.addStatements(`// normgen kernel package ${name}: the dispatch table${tables.length > 1 ? 's' : ''} tuned on ${where}. Generated; do not edit.`);
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
      ...['threads', 'vec', 'threadsPerRow', 'items', 'cluster', 'stages'].map((n) => ({ name: n, type: 'number' })),
      { name: 'stagedWeights', type: 'boolean' },
      { name: 'stageBytes', type: 'number', docs: ["Bytes of a staged element: the residual's dtype when fused, else x's (smem variants stage rows)."] },
      { name: 'fixedHidden', type: 'number', hasQuestionToken: true, docs: ['The hidden size the kernel was compiled for; absent: any.'] },
      { name: 'earlyAffine', type: 'boolean', hasQuestionToken: true, docs: ['Weight and bias loaded with x, before the reductions; absent: at the stores.'] },
      { name: 'deferOutput', type: 'boolean', hasQuestionToken: true, docs: ["Each row's output written while the next row's cluster exchange is in flight."] },
      { name: 'registerCap', type: 'number', hasQuestionToken: true, docs: ['Resident threads per SM the launch bounds ask for (registers capped to fit them).'] },
      { name: 'holdRow', type: 'boolean', hasQuestionToken: true, docs: ["A ring's row values kept in registers after the first pass; absent: read back from shared memory."] },
    ],
  });
  file.addInterface({
    isExported: true,
    name: 'Device',
    docs: ['The GPU to select for: its name as CUDA reports it, and compute capability as major * 10 + minor (9.0 -> 90).'],
    properties: [
      { name: 'name', type: 'string', hasQuestionToken: true },
      { name: 'computeCapability', type: 'number', hasQuestionToken: true },
    ],
  });
  file.addInterface({
    isExported: true,
    name: 'Table',
    docs: ['The dispatch table tuned on one GPU model: tuned (spec, hidden, rows) -> index into VARIANTS.'],
    properties: [
      { name: 'device', type: 'string' },
      { name: 'arch', type: 'string' },
      { name: 'computeCapability', type: 'number' },
      { name: 'rowBuckets', type: 'readonly number[]' },
      { name: 'maxSharedBytes', type: 'number', docs: ['Dynamic shared memory a kernel may take on the tuned arch, in bytes: staged rows past it are not selected.'] },
      {
        name: 'entries',
        type: 'readonly { spec: string; hidden: number; rows: number; variant: number; portable: number; plain?: number }[]',
        docs: ['portable: the variant standing for other hidden sizes (the tuned one may be compiled for this size only); plain: where a plain launch runs another variant (from the table tuned under plain launches).'],
      },
    ],
  });
  const json = (v: unknown) => JSON.stringify(v);
  constant('VARIANTS', 'readonly Variant[]', `[\n${p.variants.map((v) => `  ${json({ symbol: v.symbol, ...v.params, stageBytes: stageBytes(v.spec) })},`).join('\n')}\n]`);
  constant('SPECS', 'readonly { key: string; generic: number }[]', `[\n${p.specs.map((s) => `  ${json({ key: s.key, generic: s.generic })},`).join('\n')}\n]`);
  const tableText = tables.map((t, i) => {
    const entries = p.entries
      .filter((e) => e.table === i)
      .map((e) => `      ${json({ spec: p.specs[e.spec].key, hidden: e.hidden, rows: e.rows, variant: e.variant, portable: e.portable, ...(e.plain !== e.variant ? { plain: e.plain } : {}) })},`);
    const head = `    device: ${json(t.device)},\n    arch: ${json(t.arch.name)},\n    computeCapability: ${t.arch.cc},\n    rowBuckets: ${json(t.table.rowBuckets)},\n    maxSharedBytes: ${maxDynamicSharedBytes(t.arch)},`;
    return `  {\n${head}\n    entries: [\n${entries.join('\n')}\n    ],\n  },`;
  });
  constant('TABLES', 'readonly Table[]', `[\n${tableText.join('\n')}\n]`);
  file.addStatements(readFileSync(join(TEMPLATE_ROOT, 'package', 'select.ts.hbs'), 'utf8'));
  if (bwd) addBackward(file, constant, bwd);
  file.formatText({ indentSize: 2 });
  return file.getFullText();
}
