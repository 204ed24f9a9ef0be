#!/usr/bin/env node
// normgen's command line.

import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { parseArch } from '../generator/arch.js';
import { emitSources, prepareOutputDir, variantsFor, writeFileAtomic } from '../generator/emit-sources.js';
import { failureLines, runVerify } from '../tuner/verify.js';
import { verifyReport } from '../tuner/verify-report.js';
import { checkPositiveInt, InputError, problemKey } from '../generator/problem.js';
import { DEFAULT_HIDDEN, DEFAULT_ROWS, DEFAULT_TUNE_OPS, gridFromArgs, parseList, TUNE_OPS } from '../tuner/grid.js';
import { tune, type Search } from '../tuner/tune.js';
import { WINNER_HEADER, winnerRow, winners } from '../tuner/select.js';
import { tuneReport } from '../tuner/tune-report.js';
import { progressReporter } from './progress.js';
import { describeParams, capacity, rowsPerCta } from '../generator/space.js';
import { launchGeometry } from '../generator/variant.js';
import { ToolchainError } from '../tuner/nvcc.js';
import { DeviceError } from '../tuner/device.js';
import { problemFromArgs, withProblemOptions, type ProblemArgs } from './problem-options.js';
import { formatTable } from './table.js';

function listCommand(args: ProblemArgs & { limit: number }): void {
  const { problem, arch } = problemFromArgs(args);
  const variants = variantsFor(problem, arch);
  console.log(`${problemKey(problem)} on ${arch.name}: ${variants.length} variants`);
  const rows = variants.slice(0, args.limit).map((v) => {
    const p = v.params;
    const g = launchGeometry(v, problem.rows, problem.hidden);
    const cap = capacity(p);
    return [v.id, p.storage, p.threads, p.vec, p.threadsPerRow, rowsPerCta(p), p.items, p.cluster, Number.isFinite(cap) ? cap : 'any', g.grid, g.sharedBytes];
  });
  console.log(formatTable(['id', 'storage', 'threads', 'vec', 'thr/row', 'rows/cta', 'items', 'cluster', 'max hidden', 'grid', 'dyn smem'], rows));
  if (variants.length > args.limit) console.log(`... ${variants.length - args.limit} more (--limit)`);
}

function generateCommand(args: ProblemArgs & { out: string }): void {
  const { problem, arch } = problemFromArgs(args);
  const manifest = emitSources(problem, arch, args.out);
  const n = Object.keys(manifest.variants).length;
  console.log(`wrote ${n} variants of ${problemKey(problem)} for ${arch.name} to ${args.out}: ${manifest.units.map((u) => u.file).join(', ')} and a manifest`);
  for (const [id, v] of Object.entries(manifest.variants).slice(0, 3)) console.log(`  ${id} ${describeParams(v.params)}`);
}

async function verifyCommand(args: { arch: string; quick: boolean; jobs: number; gpu: number; log: string }): Promise<void> {
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
  console.log(`${results.length - failures.length} passed, ${failures.length} failed (log: ${args.log})`);
  if (failures.length) process.exitCode = 1;
}

async function tuneCommand(args: {
  arch?: string; op?: string; dtype?: string; hidden?: string; rows?: string; residual?: string;
  gpus: string; jobs: number; budget: string; db?: string; report?: string;
}): Promise<void> {
  if (!args.arch) throw new InputError('--arch is required (the GPU you are tuning on, e.g. --arch sm90)');
  const arch = parseArch(args.arch);
  const grid = gridFromArgs(args);
  const gpus = parseList('--gpus', args.gpus, (s) => checkPositiveInt('--gpus entry', Number(s) + 1) - 1, [0]);
  const search = parseBudget(args.budget);
  const command = ['normgen tune', ...process.argv.slice(3)].join(' ');
  const started = performance.now();
  const dbPath = args.db ?? join('out', 'tuning', `${arch.name}.jsonl`);
  prepareOutputDir(dirname(dbPath));
  const outcome = await tune({
    arch,
    grid,
    gpus,
    jobs: args.jobs,
    search,
    dbPath,
    command,
    onProgress: progressReporter('tune'),
    log: (l) => console.error(l),
  });
  const tuned = new Set(outcome.problems.map(problemKey));
  const ws = winners(outcome.db).filter((w) => tuned.has(problemKey(w.problem)));
  console.log(formatTable(WINNER_HEADER, ws.map(winnerRow)));
  if (args.report) {
    prepareOutputDir(dirname(args.report));
    writeFileAtomic(args.report, tuneReport(outcome.db, (performance.now() - started) / 1000, outcome.restarts));
    console.error(`wrote ${args.report}`);
  }
  outcome.db.close();
}

function parseBudget(text: string): Search {
  if (text === 'none' || text === 'exhaustive') return { kind: 'exhaustive' };
  const m = /^screen(?::(\d+))?$/.exec(text);
  if (!m) throw new InputError(`--budget must be 'none' (exhaustive) or 'screen[:N]' (time all briefly, the best N again in full), got '${text}'`);
  return { kind: 'screen', keep: m[1] ? checkPositiveInt('--budget screen:N', m[1]) : 4 };
}

function fail(message: string): never {
  console.error(`normgen: ${message}`);
  process.exit(2);
}

export async function main(argv: string[]): Promise<void> {
  await yargs(argv)
    .scriptName('normgen')
    .strict()
    .command('list', 'print the pruned tunable space for a problem', (y) => withProblemOptions(y).option('limit', { type: 'number', default: 50, describe: 'table rows to print' }), (a) => listCommand(a as never))
    .command('generate', 'write the .cu sources and a manifest for a problem', (y) => withProblemOptions(y).option('out', { type: 'string', demandOption: true, describe: 'output folder' }), (a) => generateCommand(a as never))
    .command('verify', 'check the correctness matrix on the GPU (needs a GPU and nvcc)', (y) =>
      y
        .option('arch', { type: 'string', default: 'sm90', describe: 'the GPU\'s arch; checked against the device' })
        .option('quick', { type: 'boolean', default: false, describe: 'a smaller matrix' })
        .option('jobs', { type: 'number', default: availableParallelism(), describe: 'parallel nvcc processes' })
        .option('gpu', { type: 'number', default: 0, describe: 'CUDA device index' })
        .option('log', { type: 'string', default: 'test/gpu/correctness.md', describe: 'where to write the summary' }),
      (a) => verifyCommand(a as never))
    .command('tune', 'compile, verify and time every variant of a grid of problems on the GPU', (y) =>
      y
        .option('arch', { type: 'string', describe: 'the GPU\'s arch (sm80, sm86, sm89, sm90, sm100, sm120); checked against the device' })
        .option('op', { type: 'string', describe: `comma list of ${TUNE_OPS.join(', ')} (default: ${DEFAULT_TUNE_OPS.join(',')})` })
        .option('dtype', { type: 'string', describe: 'comma list of fp32, fp16, bf16 (default: all)' })
        .option('hidden', { type: 'string', describe: `comma list (default: ${DEFAULT_HIDDEN.join(',')})` })
        .option('rows', { type: 'string', describe: `comma list (default: ${DEFAULT_ROWS.join(',')})` })
        .option('residual', { type: 'string', default: 'same', describe: 'dtype of the residual in +residual ops: same | fp32' })
        .option('gpus', { type: 'string', default: '0', describe: 'comma list of CUDA device indices; problems are sharded across them' })
        .option('jobs', { type: 'number', default: availableParallelism(), describe: 'parallel nvcc processes' })
        .option('budget', { type: 'string', default: 'none', describe: "none (exhaustive) or screen[:N]: time all briefly, re-time the best N (default 4)" })
        .option('db', { type: 'string', describe: 'tuning database (JSON lines; resumed when it exists). Default out/tuning/<arch>.jsonl' })
        .option('report', { type: 'string', describe: 'also write a markdown performance log here' }),
      (a) => tuneCommand(a as never))
    .demandCommand(1, 'name a command: list, generate, verify, tune')
    .fail((msg, err) => {
      if (err instanceof InputError || err instanceof ToolchainError || err instanceof DeviceError) fail(err.message);
      if (err) throw err;
      fail(msg);
    })
    .help()
    .parseAsync();
}

main(hideBin(process.argv)).catch((e) => {
  if (e instanceof InputError || e instanceof ToolchainError || e instanceof DeviceError) fail(e.message);
  console.error(e);
  process.exit(1);
});
