// Where a kernel releases the next grid, in long chains of programmatic launches. For each
// problem, the tune's finalists and best screened variants are timed as finals are (FULL:
// graphs of >= 16 launches, cold L2), releasing the next grid at the kernel's start (0), after
// its wait (1) and only as its CTAs exit (2), and with plain launches (a second runner,
// NORMGEN_PDL=0). Clustered rings timed 3-20% slower in their finals than in their screening
// (short graphs), with a wide spread: the next grid's clusters, placed as this grid's CTAs
// retire, are the suspect (test/gpu/pdl-chain.md).
// node dist/test/gpu/release-points.js DB.jsonl[.gz] PROBLEM_KEY,... [--screened N] [--log FILE]
import { writeFileSync } from 'node:fs';
import { formatTable } from '../../cli/table.js';
import { parseArch } from '../../generator/arch.js';
import { describeParams } from '../../generator/space.js';
import { makeVariant } from '../../generator/variant.js';
import { CompilePool } from '../../tuner/compile-pool.js';
import { copyBandwidth, queryDevice } from '../../tuner/device.js';
import { fwdParams, TuningDb, type DbResult } from '../../tuner/db.js';
import { runRequest } from '../../tuner/measure.js';
import { buildRunner, Runner, type RunnerReply } from '../../tuner/runner.js';
import { FULL } from '../../tuner/tune.js';

const args = process.argv.slice(2);
const option = (name: string, d: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : d;
};
const log = option('--log', '');
const screened = Number(option('--screened', '4'));
const [dbPath, keyList] = args;
if (!dbPath || !keyList) {
  console.error('usage: release-points DB.jsonl[.gz] PROBLEM_KEY,... [--screened N] [--log FILE]');
  process.exit(2);
}
const db = TuningDb.read(dbPath);
const arch = parseArch(db.header.arch);
const exe = await buildRunner();
const runner = new Runner(exe, 0);
const device = await queryDevice(runner);
const copyGbps = await copyBandwidth(runner);
// The plain runner reads NORMGEN_PDL when it starts (its first request).
process.env.NORMGEN_PDL = '0';
const plain = new Runner(exe, 0);
await queryDevice(plain);
delete process.env.NORMGEN_PDL;
const pool = new CompilePool(arch);

const MODES: [string, Runner, number][] = [
  ['start', runner, 0],
  ['after wait', runner, 1],
  ['at exit', runner, 2],
  ['plain', plain, 0],
];
const rows: string[][] = [];
for (const key of keyList.split(',')) {
  const results = db.results.filter((r) => r.problemKey === key && r.status === 'OK' && r.medianUs !== undefined) as (DbResult & { medianUs: number })[];
  if (!results.length) throw new Error(`${key}: no timed results in ${dbPath}`);
  const finals = results.filter((r) => r.stage === 'final');
  const screens = results.filter((r) => r.stage === 'screen').sort((a, b) => a.medianUs - b.medianUs);
  const chosen = new Map<string, DbResult>();
  for (const r of [...finals, ...screens.slice(0, screened)]) chosen.set(r.variantId, r);
  const problem = results[0].problem;
  // The database's variant ids hash the templates it was tuned with; these are rebuilt from its params.
  const variants = [...chosen.values()].map((r) => ({ v: makeVariant(problem, fwdParams(r)), id: r.variantId }));
  const builds = await pool.build({ spec: variants[0].v.spec, variants: variants.map(({ v }) => v) });
  for (const { v, id } of variants) {
    const build = builds.get(v.id);
    if (build?.status !== 'OK') continue;
    const screen = screens.find((r) => r.variantId === id);
    const final = finals.find((r) => r.variantId === id);
    const cells: string[] = [];
    for (const [i, [, r, release]] of MODES.entries()) {
      const req = { ...runRequest(problem, v, build.cubin, { ...FULL, verify: i === 0 }), release };
      const reply: RunnerReply = await r.request(req, 600_000);
      if (reply.status !== 'OK') {
        cells.push(reply.status);
        continue;
      }
      const us = reply.medianUs as number;
      cells.push(`${us.toFixed(2)} [${(reply.minUs as number).toFixed(2)}-${(reply.maxUs as number).toFixed(2)}]`);
    }
    rows.push([key, describeParams(v.params), screen ? screen.medianUs.toFixed(2) : '-', final ? final.medianUs!.toFixed(2) : '-', ...cells]);
    console.log(rows.at(-1)!.join('  '));
  }
}
await pool.close();
await runner.close();
await plain.close();

const text = [
  `# Release points in long chains (${device.name}, ${new Date().toISOString()})`,
  '',
  `    node dist/test/gpu/release-points.js ${dbPath} ${keyList} --screened ${screened}`,
  '',
  `- copy bandwidth now: ${copyGbps.toFixed(0)} GB/s; the tune's: ${db.sessions[0]?.copyGbps?.toFixed(0)} GB/s`,
  '- us a launch, median [min-max] of the samples, timed as finals are (graphs of >= 16 launches, cold L2);',
  '  tune screen / final: the database\'s medians (screening: short graphs)',
  '',
  '```',
  formatTable(['problem', 'variant', 'tune screen', 'tune final', ...MODES.map(([m]) => m)], rows),
  '```',
  '',
].join('\n');
if (log) writeFileSync(log, text);
console.log(text);
