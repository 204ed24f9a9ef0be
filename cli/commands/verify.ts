// normgen verify: the GPU correctness matrix and its committed summary.

import { availableParallelism } from 'node:os';
import { dirname } from 'node:path';
import type { Argv } from 'yargs';
import { parseArch } from '../../generator/arch.js';
import { prepareOutputDir, writeFileAtomic } from '../../generator/files.js';
import { checkPositiveInt } from '../../generator/problem.js';
import { isDropped, isFailure } from '../../tuner/measure.js';
import { failureLines, runVerify } from '../../tuner/verify.js';
import { bwdVerifyReport, runVerifyBwd } from '../../tuner/verify-bwd.js';
import { verifyReport } from '../../tuner/verify-report.js';

export const command = 'verify';
export const describe = 'check the correctness matrix on the GPU (needs a GPU and nvcc)';
export const builder = (y: Argv) =>
  y
    .option('arch', { type: 'string', default: 'sm90', describe: "the GPU's arch; checked against the device" })
    .option('quick', { type: 'boolean', default: false, describe: 'a smaller matrix' })
    .option('jobs', { type: 'number', default: availableParallelism(), describe: 'parallel nvcc processes' })
    .option('gpu', { type: 'number', default: 0, describe: 'CUDA device index' })
    .option('direction', { type: 'string', default: 'fwd', choices: ['fwd', 'bwd'], describe: 'forward or backward kernels' })
    .option('repeat', { type: 'number', default: 9, describe: 'bwd: further runs of each variant that must give the same bits' })
    .option('log', { type: 'string', describe: 'where to write the summary (default test/gpu/correctness.md, bwd: test/gpu/correctness-bwd.md)' });

export async function handler(args: { arch: string; quick: boolean; jobs: number; gpu: number; direction: string; repeat: number; log?: string }): Promise<void> {
  const arch = parseArch(args.arch);
  const started = performance.now();
  let last = 0;
  const progress = (done: number, total: number, failures: number) => {
    if (done === total || performance.now() - last > 5000) {
      last = performance.now();
      console.log(`verify: ${done}/${total} runs, ${failures} failures`);
    }
  };
  if (args.direction === 'bwd') {
    const log = args.log ?? 'test/gpu/correctness-bwd.md';
    const repeat = checkPositiveInt('--repeat', args.repeat);
    const { device, results } = await runVerifyBwd({ arch, quick: args.quick, jobs: args.jobs, gpu: args.gpu, repeat, onProgress: progress });
    const command = `normgen verify --direction bwd --arch ${args.arch} --repeat ${repeat}${args.quick ? ' --quick' : ''}`;
    prepareOutputDir(dirname(log));
    writeFileAtomic(log, bwdVerifyReport(device, command, results, repeat, (performance.now() - started) / 1000));
    const failed = results.filter(isFailure);
    for (const r of failed.slice(0, 20)) console.log(`FAIL ${r.problem.op} h${r.problem.hidden} r${r.problem.rows} ${r.variant.id}: ${r.status} ${r.detail}`);
    console.log(`${results.length - failed.length} passed, ${failed.length} failed (log: ${log})`);
    if (failed.length) process.exitCode = 1;
    return;
  }
  args.log ??= 'test/gpu/correctness.md';
  const { device, results } = await runVerify({
    arch,
    quick: args.quick,
    jobs: args.jobs,
    gpu: args.gpu,
    onProgress: progress,
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
