// What a copy of a problem's own size reaches, next to the tuned winner of that problem.
// The tune reports every kernel as a fraction of a 1 GiB copy; a short kernel (tens of
// microseconds) also pays its launch, ramp-up and tail, and so does a copy of its size.
// This times the runner's plain copy kernel over each problem's bytes exactly as the runner
// times normalization kernels (CUDA graph of back-to-back launches, rotating buffers, cold
// L2, median) on this GPU: launched plainly, and launched as the kernels are timed (with
// programmatic dependent launch on sm90+, each copy's ramp-up under the one before's tail).
// node dist/test/gpu/copy-sizes.js DB.jsonl[.gz] [--min-elements N] [--log FILE]
import { writeFileSync } from 'node:fs';
import { formatTable } from '../../cli/table.js';
import { bytesMoved, problemKey } from '../../generator/problem.js';
import { describeParams } from '../../generator/space.js';
import { fwdParams, TuningDb } from '../../tuner/db.js';
import { copyBandwidth, queryDevice } from '../../tuner/device.js';
import { buildRunner, Runner } from '../../tuner/runner.js';
import { winners } from '../../tuner/select.js';

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : d;
};
const dbPath = process.argv[2];
if (!dbPath || dbPath.startsWith('--')) {
  console.error('usage: copy-sizes DB.jsonl[.gz] [--min-elements N] [--log FILE]');
  process.exit(2);
}
const minElements = Number(arg('--min-elements', String(16 * 1024 * 1024)));
const log = arg('--log', '');

const db = TuningDb.read(dbPath);
const runner = new Runner(await buildRunner(), 0);
const device = await queryDevice(runner);
const copyGbps = await copyBandwidth(runner);

/** One copy per distinct size and launch: GB/s (read + write) of a copy moving `bytes` in all. */
const sized = new Map<string, number>();
let programmaticLaunch = false;
async function copyOfSize(bytes: number, programmatic = false): Promise<number> {
  const each = Math.round(bytes / 2 / 256) * 256; // read half, write half; whole 256-byte blocks
  const key = `${each}${programmatic ? 'p' : ''}`;
  if (!sized.has(key)) {
    const r = await runner.request({ cmd: 'copy', bytes: each, graph: true, samples: 15, programmatic }, 300_000);
    if (r.status !== 'OK') throw new Error(`copy of ${each} bytes: ${r.error ?? r.status}`);
    if (r.programmatic === true) programmaticLaunch = true;
    sized.set(key, (2 * each) / ((r.medianUs as number) * 1e3));
  }
  return sized.get(key)!;
}

const copyKernelGiB = await copyOfSize(2 ** 31); // 1 GiB read, 1 GiB written

const chosen = winners(db)
  .filter((w) => w.problem.rows * w.problem.hidden >= minElements && w.best.fractionOfCopy !== undefined)
  .sort((a, b) => problemKey(a.problem).localeCompare(problemKey(b.problem)));
const rows: (string | number)[][] = [];
let atTarget = 0;
let atSizedCopy = 0;
let chainedCopyShort = 0; // the programmatic copy of the problem's size under 92% itself
let shortOfBoth = 0; // the winner and that copy both under 92%
for (const w of chosen) {
  const kernel = 100 * w.best.fractionOfCopy!;
  const copy = (100 * (await copyOfSize(bytesMoved(w.problem)))) / copyGbps;
  const chained = (100 * (await copyOfSize(bytesMoved(w.problem), true))) / copyGbps;
  if (kernel >= 92) atTarget++;
  if (kernel >= 0.98 * copy) atSizedCopy++;
  if (chained < 92) chainedCopyShort++;
  if (chained < 92 && kernel < 92) shortOfBoth++;
  const pct = (v: number) => Number(v.toFixed(1));
  rows.push([problemKey(w.problem), Number(w.best.medianUs!.toFixed(2)), pct(kernel), pct(copy), pct(chained), Number((kernel / chained).toFixed(3)), describeParams(fwdParams(w.best))]);
}
await runner.close();

const text = [
  `# A copy of each problem's size next to its tuned winner (${device.name})`,
  '',
  `- date: ${new Date().toISOString()}`,
  `- card: ${device.name}, ${device.sms} SMs, driver ${device.driver}, CUDA runtime ${device.cudaRuntime}`,
  `- command: \`node dist/test/gpu/copy-sizes.js ${process.argv.slice(2).join(' ')}\``,
  `- winners from ${dbPath} (last session ${db.sessions.at(-1)?.started ?? '?'}, its 1 GiB copy ${db.sessions.at(-1)?.copyGbps.toFixed(0) ?? '?'} GB/s); 1 GiB copy now: ${copyGbps.toFixed(0)} GB/s`,
  `- sized copy: the runner's copy kernel (16-byte vectors, 4 loads in flight per thread) over half the problem's bytes`,
  `  (the other half is the write), timed as kernels are (CUDA graph of back-to-back launches over buffers whose reads span 3.5x L2,`,
  `  median of 15 samples); the same kernel over 1 GiB: ${copyKernelGiB.toFixed(0)} GB/s (${((100 * copyKernelGiB) / copyGbps).toFixed(1)}% of cudaMemcpy's)`,
  `- problems with rows x hidden >= ${minElements}: ${chosen.length}; winner >= 92% of the 1 GiB copy: ${atTarget};`,
  `  winner within 2% of (or faster than) the copy of its own size: ${atSizedCopy}`,
  `- chained copy: the same copy kernel and timing, ${programmaticLaunch ? 'launched with programmatic dependent launch as the kernels are timed' : 'launched plainly (no programmatic launch on this GPU or runner: the same as the sized copy)'};`,
  `  under 92% of the 1 GiB copy itself: ${chainedCopyShort} problems; ${shortOfBoth} of the ${chosen.length - atTarget} winners under 92% are among them`,
  '',
  '```',
  formatTable(['problem', 'winner us', 'winner % copy', 'sized copy % copy', 'chained copy % copy', 'winner / chained copy', 'winner'], rows),
  '```',
  '',
].join('\n');
if (log) writeFileSync(log, text);
console.log(text);
