// normgen tune: compile, verify and time a grid of problems; results to the database.

import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import type { Argv } from 'yargs';
import { parseArch } from '../../generator/arch.js';
import { prepareOutputDir, writeFileAtomic } from '../../generator/files.js';
import { checkPositiveInt, InputError, problemKey } from '../../generator/problem.js';
import { DEFAULT_HIDDEN, DEFAULT_ROWS, DEFAULT_TUNE_OPS, gridFromArgs, parseGpus, TUNE_OPS } from '../../tuner/grid.js';
import { WINNER_HEADER, winnerRow, winners } from '../../tuner/select.js';
import { tuneReport } from '../../tuner/tune-report.js';
import { tune, type Search } from '../../tuner/tune.js';
import { progressReporter } from '../progress.js';
import { formatTable } from '../table.js';

export const command = 'tune';
export const describe = 'compile, verify and time every variant of a grid of problems on the GPU';
export const builder = (y: Argv) =>
  y
    .option('arch', { type: 'string', describe: "the GPU's arch (sm80, sm86, sm89, sm90, sm100, sm120); checked against the device" })
    .option('op', { type: 'string', describe: `comma list of ${TUNE_OPS.join(', ')} (default: ${DEFAULT_TUNE_OPS.join(',')})` })
    .option('dtype', { type: 'string', describe: 'comma list of fp32, fp16, bf16 (default: all)' })
    .option('hidden', { type: 'string', describe: `comma list (default: ${DEFAULT_HIDDEN.join(',')})` })
    .option('rows', { type: 'string', describe: `comma list (default: ${DEFAULT_ROWS.join(',')})` })
    .option('residual', { type: 'string', default: 'same', describe: 'dtype of the residual in +residual ops: same | fp32' })
    .option('gpus', { type: 'string', default: '0', describe: 'comma list of CUDA device indices; problems are sharded across them' })
    .option('jobs', { type: 'number', default: availableParallelism(), describe: 'parallel nvcc processes' })
    .option('direction', { type: 'string', default: 'fwd', choices: ['fwd', 'bwd'], describe: 'forward kernels, or the backward of the same feature sets (saved statistics given)' })
    .option('stats', { type: 'boolean', default: false, describe: 'bwd: the saved statistics are given (reading them or recomputing is then tuned)' })
    .option('budget', { type: 'string', default: 'none', describe: 'none (exhaustive) or screen[:N]: time all briefly, re-time the best N (default 4)' })
    .option('db', { type: 'string', describe: 'tuning database (JSON lines; resumed when it exists). Default out/tuning/<arch>.jsonl' })
    .option('report', { type: 'string', describe: 'also write a markdown performance log here' });

export async function handler(args: {
  arch?: string; op?: string; dtype?: string; hidden?: string; rows?: string; residual?: string;
  gpus: string; jobs: number; budget: string; db?: string; report?: string; direction: string; stats: boolean;
}): Promise<void> {
  const direction = args.direction === 'bwd' ? 'bwd' : 'fwd';
  if (args.stats && direction !== 'bwd') throw new InputError('--stats applies to --direction bwd (forward tuning writes no statistics)');
  if (!args.arch) throw new InputError('--arch is required (the GPU you are tuning on, e.g. --arch sm90)');
  const arch = parseArch(args.arch);
  const grid = gridFromArgs(args);
  const gpus = parseGpus(args.gpus);
  const search = parseBudget(args.budget);
  const command = ['normgen tune', ...process.argv.slice(3)].join(' ');
  const started = performance.now();
  const dbPath = args.db ?? join('out', 'tuning', `${arch.name}${direction === 'bwd' ? '-bwd' : ''}.jsonl`);
  prepareOutputDir(dirname(dbPath));
  const outcome = await tune({
    arch,
    grid,
    gpus,
    jobs: args.jobs,
    search,
    dbPath,
    command,
    direction,
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
