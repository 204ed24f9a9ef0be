// The backward half of the package's TypeScript (ts/index.ts): the backward variants and
// specs, each device's backward table, and selectBackward() from templates/package.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SourceFile } from 'ts-morph';
import type { BwdPlan } from './package-bwd.js';
import { bwdCapacity, bwdFixedSharedBytes, sumCount } from './space-bwd.js';
import { TEMPLATE_ROOT } from './templates.js';

export function addBackward(file: SourceFile, constant: (name: string, type: string, initializer: string) => void, b: BwdPlan): void {
  file.addInterface({
    isExported: true,
    name: 'BackwardProblem',
    extends: ["Omit<Problem, 'stats'>"],
    docs: ["A backward call: the forward's features (dtype: dy's; stride: every tensor's), and whether its saved mean/rstd are given."],
    properties: [{ name: 'savedStats', type: 'boolean', hasQuestionToken: true, docs: ["The forward's mean/rstd are given (default: recomputed from x)."] }],
  });
  file.addInterface({
    isExported: true,
    name: 'BackwardVariant',
    properties: [
      { name: 'symbol', type: 'string' },
      { name: 'storage', type: "'regs' | 'regs-smem' | 'loop' | 'global'" },
      ...['threads', 'vec', 'threadsPerRow', 'items', 'cluster', 'ctasPerSm'].map((n) => ({ name: n, type: 'number' })),
      { name: 'capacity', type: 'number', docs: ['The longest row it handles (Infinity: any).'] },
      { name: 'recompute', type: 'boolean', docs: ['Recomputes mean and rstd from x; false: needs the saved ones.'] },
      { name: 'sums', type: 'number', docs: ['Column sums it writes (dweight, dbias).'] },
      { name: 'fixedSharedBytes', type: 'number', docs: ['Shared memory its parameters fix (a ring, a staged weight).'] },
    ],
  });
  const json = (v: unknown) => JSON.stringify(v);
  const variants = b.variants.map((v) => {
    const p = v.params;
    const capacity = bwdCapacity(p);
    const fields = { symbol: v.symbol, storage: p.storage, threads: p.threads, vec: p.vec, threadsPerRow: p.threadsPerRow, items: p.items, cluster: p.cluster ?? 1, ctasPerSm: p.ctasPerSm };
    return `  { ${json(fields).slice(1, -1)}, "capacity": ${capacity === Infinity ? 'Infinity' : capacity}, "recompute": ${p.recompute}, "sums": ${sumCount(v.spec)}, "fixedSharedBytes": ${bwdFixedSharedBytes(v.spec, p)} },`;
  });
  constant('BWD_VARIANTS', 'readonly BackwardVariant[]', `[\n${variants.join('\n')}\n]`);
  constant('BWD_SPECS', 'readonly { key: string; generic: number }[]', `[\n${b.specs.map((s) => `  ${json({ key: s.key, generic: s.generic })},`).join('\n')}\n]`);
  const tables = b.tables.map((t, i) => {
    const entries = b.entries.slice(t.firstEntry, t.firstEntry + t.entries).map((e) => `      ${json({ spec: b.specs[e.spec].key, hidden: e.hidden, rows: e.rows, variant: e.variant })},`);
    const rowBuckets = b.rowBuckets.slice(t.firstBucket, t.firstBucket + t.buckets);
    return `  // table ${i}: the backward tuned for table ${t.source}\n  {\n    source: ${t.source},\n    rowBuckets: ${json(rowBuckets)},\n    entries: [\n${entries.join('\n')}\n    ],\n  },`;
  });
  constant(
    'BWD_TABLES',
    'readonly { source: number; rowBuckets: readonly number[]; entries: readonly { spec: string; hidden: number; rows: number; variant: number }[] }[]',
    `[\n${tables.join('\n')}\n]`,
  );
  file.getVariableStatementOrThrow('BWD_TABLES').addJsDoc(
    "Per TABLES entry, the backward its device uses: the one tuned with it, or (source: another table) that of a table of the same compute capability, else the nearest older, else the first that has one.",
  );
  file.addStatements(readFileSync(join(TEMPLATE_ROOT, 'package', 'select-bwd.ts.hbs'), 'utf8'));
}
