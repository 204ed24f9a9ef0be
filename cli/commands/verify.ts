// normgen verify: the GPU correctness matrix and its committed summary.

import { availableParallelism } from 'node:os';
import { dirname } from 'node:path';
import type { Argv } from 'yargs';
import { parseArch } from '../../generator/arch.js';
import { prepareOutputDir, writeFileAtomic } from '../../generator/files.js';
import { failureLines, isDropped, runVerify } from '../../tuner/verify.js';
import { verifyReport } from '../../tuner/verify-report.js';

export const command = 'verify';
export const describe = 'check the correctness matrix on the GPU (needs a GPU and nvcc)';
export const builder = (y: Argv) =>
  y
    .option('arch', { type: 'string', default: 'sm90', describe: "the GPU's arch; checked against the device" })
    .option('quick', { type: 'boolean', default: false, describe: 'a smaller matrix' })
    .option('jobs', { type: 'number', default: availableParallelism(), describe: 'parallel nvcc processes' })
    .option('gpu', { type: 'number', default: 0, describe: 'CUDA device index' })
    .option('log', { type: 'string', default: 'test/gpu/correctness.md', describe: 'where to write the summary' });

export async function handler(args: { arch: string; quick: boolean; jobs: number; gpu: number; log: string }): Promise<void> {
  const arch = parseArch(args.arch);
  const started = performance.now();
  let last = 0;
  const { device, results } = await runVerify({
    arch,
    quick: args.quick,
    jobs: args.jobs,
    gpu: args.gpu,
    onProgress: (done, total, failures) => {
      if (done === total || performance.now() - last > 5000) {
        last = performance.now();
        console.log(`verify: ${done}/${total} runs, ${failures} failures`);
      }
    },
  });
  const command = `normgen verify --arch ${args.arch}${args.quick ? ' --quick' : ''}`;
  const report = verifyReport(device, command, results, (performance.now() - started) / 1000);
  prepareOutputDir(dirname(args.log));
  writeFileAtomic(args.log, report);
  const failures = failureLines(results);
  for (const f of failures.slice(0, 20)) console.log(`FAIL ${f}`);
  const dropped = results.filter(isDropped).length;
  const notRun = dropped ? `, ${dropped} not run (registers spill: the tuner drops them)` : '';
  console.log(`${results.length - failures.length - dropped} passed, ${failures.length} failed${notRun} (log: ${args.log})`);
  if (failures.length) process.exitCode = 1;
}
