// The H100's package (out/normgen-sm90-h100-80gb-hbm3): re-emitted from the committed H100
// databases it is identical, it compiles with nvcc, and its C library picks every tuned
// problem's winner from the H100's table, as its TypeScript does (the backward's too), and
// for plain launches the winner of the H100's plain-launch table where it tuned the problem.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, H100_BWD_DB, H100_COMMITTED, H100_DB, H100_PLAIN_DB, WGSL_DB } from './paths.js';
import { assertBackwardWinners, assertSamePackage, importPackageTs, loadBuiltPackage, makePackage, SELECT_PATHS } from './test-package.js';

const name = 'normgen-sm90-h100-80gb-hbm3';
const pkg = join(mkdtempSync(join(tmpdir(), 'normgen-pkg-h100-')), name);
execFileSync(process.execPath, [CLI, 'build', '--db', H100_DB, '--db', H100_PLAIN_DB, '--db', H100_BWD_DB, '--db', WGSL_DB, '--out', pkg, '--name', name], { encoding: 'utf8' });

test('re-emitted from the committed H100 databases, the package is the committed one', () => {
  assertSamePackage(H100_COMMITTED, pkg);
});

test("TypeScript's selectBackward picks each tuned backward problem's winner", async () => {
  const dispatch = JSON.parse(readFileSync(join(pkg, 'dispatch.json'), 'utf8'));
  assert.is(assertBackwardWinners(await importPackageTs(pkg), dispatch).flat().length, 8);
});

test('it compiles, and C and TypeScript pick each tuned problem\'s winner from the H100 table', async () => {
  makePackage(pkg);
  const { mod, selectAllC, selectAllPlainC } = await loadBuiltPackage(pkg);
  const dispatch = JSON.parse(readFileSync(join(pkg, 'dispatch.json'), 'utf8'));
  assert.is(dispatch.tables.length, 1);
  const table = dispatch.tables[0];
  assert.is(table.device, 'NVIDIA H100 80GB HBM3');
  assert.is(mod.TABLES[0].device, table.device);
  const h100 = { name: table.device, cc: 90 };
  const queries = table.entries.map((e: { spec: string; hidden: number; rows: number }) => {
    const [op, dtype] = e.spec.split('.');
    return { op, dtype, residual: e.spec.includes('.res-same') ? 'same' : 'none', hidden: e.hidden, rows: e.rows, device: h100 };
  });
  assert.ok(queries.length > 1000, `${queries.length} tuned problems`);
  const chosen = selectAllC(queries);
  for (const [i, e] of table.entries.entries()) {
    const q = queries[i];
    const label = `${e.spec} h${e.hidden} r${e.rows}`;
    assert.is(SELECT_PATHS[chosen[i].path], 'exact', label);
    // A variant of the tuned parameters (kernels are shared across dtypes: symbols name the first one's id).
    const variant = mod.VARIANTS[chosen[i].variant];
    for (const [key, value] of Object.entries(e.params)) assert.equal(variant[key], value, `${label}: ${key}`);
    const ts = mod.select({ op: q.op, dtype: q.dtype, bias: q.op === 'layernorm', residual: q.residual, hidden: q.hidden, rows: q.rows });
    assert.is(ts.variant.symbol, mod.VARIANTS[chosen[i].variant].symbol, label);
  }
  // Launched plainly: the plain-launch table's winner where it tuned the problem, else the same kernel.
  const plainWinners = new Map(table.plain.entries.map((e: { spec: string; hidden: number; rows: number; variantId: string }) => [`${e.spec} h${e.hidden} r${e.rows}`, e]));
  const plainChosen = selectAllPlainC(queries);
  let others = 0;
  for (const [i, e] of table.entries.entries()) {
    const q = queries[i];
    const label = `${e.spec} h${e.hidden} r${e.rows}`;
    const want = (plainWinners.get(label) as { params: Record<string, unknown> } | undefined)?.params ?? e.params;
    const variant = mod.VARIANTS[plainChosen[i].variant];
    assert.is(SELECT_PATHS[plainChosen[i].path], 'exact', label);
    for (const [key, value] of Object.entries(want)) assert.equal(variant[key], value, `${label} (plain launch): ${key}`);
    const ts = mod.select({ op: q.op, dtype: q.dtype, bias: q.op === 'layernorm', residual: q.residual, hidden: q.hidden, rows: q.rows }, undefined, 'plain');
    assert.is(ts.variant.symbol, variant.symbol, `${label} (plain launch)`);
    if (plainChosen[i].variant !== chosen[i].variant) others++;
  }
  assert.ok(plainWinners.size > 0, 'the H100 has plain-launch winners');
  assert.is(others, plainWinners.size, 'each plain-launch winner is another kernel than the tuned one');
});

test.run();
