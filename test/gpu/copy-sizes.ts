// What a copy of a problem's own size reaches, next to the tuned winner of that problem.
// The tune reports every kernel as a fraction of a 1 GiB copy; a short kernel (tens of
// microseconds) also pays its launch, ramp-up and tail, and so does a copy of its size.
// This times the runner's plain copy kernel over each problem's bytes exactly as the runner
// times normalization kernels (CUDA graph of back-to-back launches, rotating buffers, cold
// L2, median) on this GPU.
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

/** One copy per distinct size: GB/s (read + write) of a copy moving `bytes` in all. */
const sized = new Map<number, number>();
async function copyOfSize(bytes: number): Promise<number> {
  const each = Math.round(bytes / 2 / 256) * 256; // read half, write half; whole 256-byte blocks
  if (!sized.has(each)) {
    const r = await runner.request({ cmd: 'copy', bytes: each, graph: true, samples: 15 }, 300_000);
    if (r.status !== 'OK') throw new Error(`copy of ${each} bytes: ${r.error ?? r.status}`);
    sized.set(each, (2 * each) / ((r.medianUs as number) * 1e3));
  }
  return sized.get(each)!;
}

const copyKernelGiB = await copyOfSize(2 ** 31); // 1 GiB read, 1 GiB written

const chosen = winners(db)
  .filter((w) => w.problem.rows * w.problem.hidden >= minElements && w.best.fractionOfCopy !== undefined)
  .sort((a, b) => problemKey(a.problem).localeCompare(problemKey(b.problem)));
const rows: (string | number)[][] = [];
let atTarget = 0;
let atSizedCopy = 0;
for (const w of chosen) {
  const sizedGbps = await copyOfSize(bytesMoved(w.problem));
  const kernel = 100 * w.best.fractionOfCopy!;
  const copy = (100 * sizedGbps) / copyGbps;
  if (kernel >= 92) atTarget++;
  if (kernel >= 0.98 * copy) atSizedCopy++;
  rows.push([problemKey(w.problem), Number(w.best.medianUs!.toFixed(2)), Number(kernel.toFixed(1)), Number(copy.toFixed(1)), Number((kernel / copy).toFixed(3)), describeParams(fwdParams(w.best))]);
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
  '',
  '```',
  formatTable(['problem', 'winner us', 'winner % copy', 'sized copy % copy', 'winner / sized copy', 'winner'], rows),
  '```',
  '',
].join('\n');
if (log) writeFileSync(log, text);
console.log(text);
