// Where a tune's time per measurement goes. For a few problems it sends the bench runner the
// requests a tune sends (screening and final timings, each verified) and the same with
// verification alone and timing alone, and sets each request's wall time beside the GPU time
// its timed samples account for. The rest is the runner's host work (workspace, checks,
// graph capture and instantiation) and the round trip. Screening and finals run twice: each
// variant's graph retargeted from the one before (as a tune runs) and captured afresh; each
// variant's median against its fresh-graph median shows the reuse times the right kernel.
// Under NORMGEN_PDL=0 the runner never retargets (test/gpu/plain-fresh-graphs.md): both are fresh.
// node dist/test/gpu/overhead.js [--variants N] [--shapes ROWSxHIDDEN,...] [--log FILE] [--busy N]
//   --busy N: N processes spinning on the CPU meanwhile, as nvcc does early in a tune.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { formatTable } from '../../cli/table.js';
import { parseArch } from '../../generator/arch.js';
import { problemKey, type Problem } from '../../generator/problem.js';
import { describeParams } from '../../generator/space.js';
import type { Variant } from '../../generator/variant.js';
import { CompilePool } from '../../tuner/compile-pool.js';
import { queryDevice } from '../../tuner/device.js';
import { FORWARD } from '../../tuner/direction.js';
import { gridProblems } from '../../tuner/grid.js';
import { runRequest, type RunOptions } from '../../tuner/measure.js';
import { buildRunner, Runner, type RunnerReply } from '../../tuner/runner.js';
import { FULL, SCREEN } from '../../tuner/tune.js';

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : d;
};
const perProblem = Number(arg('--variants', '12'));
const busy = Number(arg('--busy', '0'));
const log = arg('--log', '');

const KINDS: [string, RunOptions][] = [
  ['screen', SCREEN],
  ['screen, fresh graphs', { ...SCREEN, freshGraph: true }],
  ['screen, no verify', { ...SCREEN, verify: false }],
  ['verify only', { verify: true, time: false }],
  ['final', FULL],
  ['final, fresh graphs', { ...FULL, freshGraph: true }],
];
const FRESH_TWIN: Record<string, string> = { screen: 'screen, fresh graphs', final: 'final, fresh graphs' };

const arch = parseArch('sm90');
const DEFAULT_SHAPES = '1x4096,8x8192,32x4096,512x4096,2048x4096,8192x8192,32768x4096,128x131072,32768x16384';
const shapes = arg('--shapes', DEFAULT_SHAPES).split(',').map((s) => s.split('x').map(Number) as [number, number]);
const problems: Problem[] = shapes.map(([rows, hidden]) =>
  gridProblems({ ops: ['rmsnorm'], dtypes: ['bf16'], hiddens: [hidden], rows: [rows], residual: 'same' }, 2 ** 40).problems[0]);

const pool = new CompilePool(arch);
const runner = new Runner(await buildRunner(), 0);
const device = await queryDevice(runner);
const spinners = Array.from({ length: busy }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));

const rows: string[][] = [];
const phaseRows: string[][] = [];
for (const p of problems) {
  // An even spread over the problem's space, so every kind of kernel is in the sample.
  const all = FORWARD.variants(p, arch) as Variant[];
  const step = Math.max(1, Math.floor(all.length / perProblem));
  const chosen = all.filter((_, i) => i % step === 0).slice(0, perProblem);
  const builds = await pool.build({ spec: chosen[0].spec, variants: chosen });
  const ok = chosen.filter((v) => builds.get(v.id)?.status === 'OK');
  // The workspace at its largest rotation and the module, once, before any request is timed.
  await runner.request(runRequest(p, ok[0], (builds.get(ok[0].id) as { cubin: string }).cubin, FULL), 600_000);
  const medians = new Map<string, number[]>(); // kind -> each variant's median
  for (const [kind, o] of KINDS) {
    let wall = 0, gpu = 0, copies = 0;
    medians.set(kind, []);
    const phases = new Map<string, number>();
    for (const v of ok) {
      const req = runRequest(p, v, (builds.get(v.id) as { cubin: string }).cubin, { ...o, phases: true });
      const t = performance.now();
      const r: RunnerReply = await runner.request(req, 600_000);
      wall += performance.now() - t;
      if (r.status !== 'OK') throw new Error(`${problemKey(p)} ${describeParams(v.params)}: ${r.status} ${r.error ?? ''}`);
      if (typeof r.medianUs === 'number') {
        const samples = (r.samplesUs as number[]).reduce((a, b) => a + b, 0);
        gpu += (samples * (r.launchesPerSample as number)) / 1000;
        copies += r.copies as number;
        medians.get(kind)!.push(r.medianUs);
      }
      for (const [name, us] of Object.entries((r.phasesUs ?? {}) as Record<string, number>)) phases.set(name, (phases.get(name) ?? 0) + us);
    }
    phaseRows.push([problemKey(p), kind, [...phases].map(([name, us]) => `${name} ${(us / ok.length / 1000).toFixed(2)}`).join(', ')]);
    const n = ok.length;
    rows.push([problemKey(p), kind, String(n), (wall / n).toFixed(2), (gpu / n).toFixed(2), ((wall - gpu) / n).toFixed(2), copies ? (copies / n).toFixed(0) : '-', '']);
  }
  // Reused against fresh graphs, variant by variant: the ratio furthest from 1 and the
  // spread of the variants' own times (a graph still running the first kernel would show
  // ratios as wide as that spread).
  for (const [kind, fresh] of Object.entries(FRESH_TWIN)) {
    const a = medians.get(kind)!, b = medians.get(fresh)!;
    const ratios = a.map((x, i) => x / b[i]);
    const worst = ratios.reduce((w, r) => (Math.abs(Math.log(r)) > Math.abs(Math.log(w)) ? r : w), 1);
    const row = rows.find((r) => r[0] === problemKey(p) && r[1] === kind)!;
    row[7] = `${worst.toFixed(3)} (variants ${(Math.min(...b)).toFixed(2)}-${(Math.max(...b)).toFixed(2)} us)`;
  }
}
for (const s of spinners) s.kill();
await pool.close();
await runner.close();

const table = formatTable(['problem', 'request', 'variants', 'ms per request', 'ms in timed samples', 'ms else', 'copies', 'reused / fresh, furthest'], rows);
const text = [
  `# Time per runner request (${device.name}, ${new Date().toISOString().slice(0, 10)})`,
  '',
  `    node dist/test/gpu/overhead.js --variants ${perProblem} --shapes ${shapes.map((s) => s.join('x')).join(',')}${busy ? ` --busy ${busy}` : ''}`,
  '',
  `${busy} busy processes on the CPU meanwhile. 'ms in timed samples': the launches of the samples the reply reports (graph replays); everything else a request costs is in 'ms else'. 'reused / fresh': each variant's median with the graph retargeted from the variant before against its median with a graph of its own, the ratio furthest from 1 (and the span of the variants' own medians).`,
  '',
  '```',
  table,
  '```',
  '',
  "The runner's host time by phase, ms per request (from the request's arrival to its reply; 'samples' is the graph replays' wall time):",
  '',
  '```',
  formatTable(['problem', 'request', 'phases'], phaseRows),
  '```',
  '',
].join('\n');
if (log) writeFileSync(log, text);
console.log(text);
