// GPU check: on the GPU a package was tuned on, its C selection picks every tuned winner,
// clusters of 16 CTAs included. normgen_select passes over a kernel whose clusters of more
// than 8 CTAs the GPU present cannot hold (it asks cudaOccupancyMaxActiveClusters); CI plays
// a GPU that holds none (test/package-cluster-fit.test.ts), this runs the real query.
//   make -j"$(nproc)" -C out/normgen-sm90-h200 && node dist/test/gpu/cluster-select.js [PKG] [--log FILE]
// Every tuned problem of the bf16 and fp32 specs the C harness can describe (RMSNorm, with a
// residual, LayerNorm with bias; weight in x's dtype): the C selection must return the table's
// own variant on the exact path. Exit 1 on any difference, 2 without a GPU.

import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadBuiltPackage, SELECT_PATHS } from '../test-package.js';

const args = process.argv.slice(2);
const logAt = args.indexOf('--log');
const log = logAt >= 0 ? args.splice(logAt, 2)[1] : 'test/gpu/cluster-select.md';
const dir = args[0] ?? 'out/normgen-sm90-h200';
if (!existsSync(join(dir, 'libnormgen.so'))) {
  console.error(`${join(dir, 'libnormgen.so')} not found: build it first (make -C ${dir})`);
  process.exit(2);
}
let card: string;
try {
  card = execFileSync('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader', '-i', '0'], { encoding: 'utf8' }).trim();
} catch {
  console.error('no NVIDIA GPU here (nvidia-smi failed): without one the selection keeps every kernel, and this check means nothing');
  process.exit(2);
}

const pkg = await loadBuiltPackage(dir);
const table = Number(pkg.run('current').split(' ')[0]);

/** The harness's arguments for a spec it can describe, else null. */
function harnessSpec(spec: string): [string, string, string] | null {
  const m = /^(rmsnorm|layernorm)\.(bf16|fp32)\.w-same(\.res-same|\.bias)?$/.exec(spec);
  if (!m || (m[1] === 'layernorm') !== (m[3] === '.bias')) return null;
  return [m[1], m[2], m[3] === '.res-same' ? 'same' : 'none'];
}

type Entry = { spec: string; hidden: number; rows: number; variant: number };
const entries = (pkg.mod.TABLES[table].entries as Entry[]).flatMap((e) => {
  const spec = harnessSpec(e.spec);
  return spec ? [{ e, query: { op: spec[0], dtype: spec[1], residual: spec[2], hidden: e.hidden, rows: e.rows } }] : [];
});
// One harness process for every lookup: each start initializes CUDA.
const chosen = pkg.selectAllC(entries.map(({ query }) => query));
const checked = entries.length;
let wide = 0;
const differences: string[] = [];
for (const [i, { e }] of entries.entries()) {
  const { variant, path } = chosen[i];
  const want = pkg.mod.VARIANTS[e.variant];
  if (want.cluster > 8) wide++;
  if (variant !== e.variant || SELECT_PATHS[path] !== 'exact')
    differences.push(`| ${e.spec} | ${e.hidden} | ${e.rows} | ${want.symbol} (cluster ${want.cluster}) | ${pkg.mod.VARIANTS[variant]?.symbol ?? variant} (cluster ${pkg.mod.VARIANTS[variant]?.cluster}), ${SELECT_PATHS[path] ?? path} |`);
}

const lines = [
  `# The package's selection on the GPU it was tuned on: ${differences.length ? 'FAIL' : 'PASS'}`,
  '',
  `- date: ${new Date().toISOString()}`,
  `- card: ${card}`,
  `- command: \`node dist/test/gpu/cluster-select.js ${dir}\` (after \`make -C ${dir}\`)`,
  `- package table ${table} (${pkg.mod.TABLES[table].device}); tuned problems checked: ${checked} (bf16 and fp32 RMSNorm, RMSNorm + residual, LayerNorm + bias), ${wide} of them won by clusters of more than 8 CTAs`,
  `- normgen_select against the table's own variant on the exact path: ${differences.length} differences`,
];
if (differences.length) lines.push('', '| spec | hidden | rows | tuned | selected |', '|---|---|---|---|---|', ...differences);
writeFileSync(log, lines.join('\n') + '\n');
console.log(`${checked} tuned problems (${wide} with clusters of more than 8 CTAs): ${differences.length} differences`);
process.exitCode = differences.length ? 1 : 0;
