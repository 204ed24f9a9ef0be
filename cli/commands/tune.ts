// normgen tune: compile, verify and time a grid of problems; results to the database.

import { availableParallelism } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { Argv } from 'yargs';
import { parseArch } from '../../generator/arch.js';
import { prepareOutputDir, writeFileAtomic } from '../../generator/files.js';
import { checkPositiveInt, InputError, problemKey } from '../../generator/problem.js';
import { DEFAULT_HIDDEN, DEFAULT_ROWS, DEFAULT_TUNE_OPS, gridFromArgs, parseGpus, TUNE_OPS } from '../../tuner/grid.js';
import { WINNER_HEADER, winnerRow, winners } from '../../tuner/select.js';
import { tuneReport } from '../../tuner/tune-report.js';
import { tune, type Search } from '../../tuner/tune.js';
import { TuningDb } from '../../tuner/db.js';
import { DEFAULT_SEED_KEEP, TuneSeed } from '../../tuner/seed.js';
import { DAWN_BACKENDS, parseAdapter } from '../../tuner/wgsl/adapter.js';
import { wgslTuneReport, wgslWinnerTable } from '../../tuner/wgsl/report.js';
import { tuneWgsl, type WgslDb } from '../../tuner/wgsl/tune.js';
import { progressReporter } from '../progress.js';
import { formatTable } from '../table.js';

export const command = 'tune';
export const describe = 'compile, verify and time every variant of a grid of problems on the GPU (CUDA, or WGSL through Dawn)';
export const builder = (y: Argv) =>
  y
    .option('backend', { type: 'string', default: 'cuda', choices: ['cuda', 'wgsl'], describe: 'cuda (nvcc + the bench runner) or wgsl (a WebGPU adapter through Dawn)' })
    .option('arch', { type: 'string', describe: "the GPU's arch (sm80, sm86, sm89, sm90, sm100, sm120); checked against the device (cuda only)" })
    .option('adapter', { type: 'string', describe: `wgsl: Dawn backend (${DAWN_BACKENDS.filter((b) => b !== 'null').join(', ')}) or auto, then optional Dawn flags: opengles,key=value (default auto)` })
    .option('max-seconds', { type: 'number', describe: 'wgsl: start no new problem after this many seconds (re-run the command to finish)' })
    .option('cuda-db', { type: 'string', describe: 'wgsl: a CUDA tuning database of the same GPU; the report compares with its winners' })
    .option('op', { type: 'string', describe: `comma list of ${TUNE_OPS.join(', ')} (default: ${DEFAULT_TUNE_OPS.join(',')})` })
    .option('dtype', { type: 'string', describe: 'comma list of fp32, fp16, bf16 (default: all; wgsl: fp32, and fp16 where the adapter has shader-f16)' })
    .option('hidden', { type: 'string', describe: `comma list (default: ${DEFAULT_HIDDEN.join(',')})` })
    .option('rows', { type: 'string', describe: `comma list (default: ${DEFAULT_ROWS.join(',')})` })
    .option('residual', { type: 'string', default: 'same', describe: 'dtype of the residual in +residual ops: same | fp32' })
    .option('gpus', { type: 'string', default: '0', describe: 'comma list of CUDA device indices; problems are sharded across them (cuda)' })
    .option('jobs', { type: 'number', default: availableParallelism(), describe: 'parallel nvcc processes' })
    .option('direction', { type: 'string', default: 'fwd', choices: ['fwd', 'bwd'], describe: 'forward kernels, or the backward of the same feature sets (saved statistics given)' })
    .option('stats', { type: 'boolean', default: false, describe: 'bwd: the saved statistics are given (reading them or recomputing is then tuned)' })
    .option('budget', { type: 'string', default: 'none', describe: 'none (exhaustive) or screen[:N]: time all briefly, re-time the best N (default 4)' })
    .option('db', { type: 'string', describe: 'tuning database (JSON lines; resumed when it exists). Default out/tuning/<arch>.jsonl, wgsl: out/tuning/wgsl-<Dawn backend>.jsonl' })
    .option('report', { type: 'string', describe: 'also write a markdown performance log here' })
    .option('seed', {
      type: 'string',
      describe: 'cuda: re-tune from an earlier database (e.g. tuned with older templates): problems it finished time only its fastest variants, the baseline and variants it never tried',
    })
    .option('seed-keep', { type: 'number', describe: `with --seed: the earlier tune's fastest variants kept per problem (default ${DEFAULT_SEED_KEEP})` });

type TuneArgs = {
  backend: string; arch?: string; adapter?: string; maxSeconds?: number; cudaDb?: string;
  op?: string; dtype?: string; hidden?: string; rows?: string; residual?: string;
  gpus: string; jobs: number; budget: string; db?: string; report?: string; direction: string; stats: boolean;
  seed?: string; seedKeep?: number;
};

export async function handler(args: TuneArgs): Promise<void> {
  if (args.backend === 'wgsl') {
    if (args.direction !== 'fwd' || args.stats) throw new InputError('--backend wgsl tunes forward kernels only');
    return tuneWgslCommand(args);
  }
  if (args.seedKeep !== undefined && args.seed === undefined) throw new InputError('--seed-keep applies to --seed (a seeded re-tune)');
  for (const o of ['adapter', 'maxSeconds', 'cudaDb'] as const)
    if (args[o] !== undefined) throw new InputError(`--${o.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is for --backend wgsl`);
  const direction = args.direction === 'bwd' ? 'bwd' : 'fwd';
  if (args.stats && direction !== 'bwd') throw new InputError('--stats applies to --direction bwd (forward tuning writes no statistics)');
  if (!args.arch) throw new InputError('--arch is required (the GPU you are tuning on, e.g. --arch sm90)');
  const arch = parseArch(args.arch);
  const grid = gridFromArgs(args);
  const gpus = parseGpus(args.gpus);
  const search = parseBudget(args.budget);
  // Read first: a bad seed fails before any work.
  const seed = args.seed === undefined ? undefined : TuneSeed.read(args.seed, args.seedKeep ?? DEFAULT_SEED_KEEP, direction === 'bwd');
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
    seed,
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

async function tuneWgslCommand(args: TuneArgs): Promise<void> {
  if (args.arch) throw new InputError('--arch is for --backend cuda; WGSL tunes the adapter named by --adapter');
  if (args.seed !== undefined || args.seedKeep !== undefined) throw new InputError('--seed is for --backend cuda');
  if (args.gpus !== '0') throw new InputError('--gpus is for --backend cuda; WGSL tunes one adapter');
  if (args.maxSeconds !== undefined && !(args.maxSeconds >= 0)) throw new InputError(`--max-seconds must be a number >= 0, got ${args.maxSeconds}`);
  const adapter = parseAdapter(args.adapter);
  const grid = gridFromArgs(args);
  const search = parseBudget(args.budget);
  const cuda = args.cudaDb ? TuningDb.readChecked(args.cudaDb) : undefined; // read first: a bad file fails before any work
  const command = ['normgen tune', ...process.argv.slice(3)].join(' ');
  const started = performance.now();
  if (args.db) prepareOutputDir(dirname(args.db));
  if (args.report) prepareOutputDir(dirname(args.report));
  const writeReport = (db: WgslDb) => args.report && writeFileAtomic(args.report, wgslTuneReport(db, (performance.now() - started) / 1000, cuda, args.cudaDb && basename(args.cudaDb)));
  const outcome = await tuneWgsl({
    onProblem: writeReport,
    adapter,
    grid,
    search,
    dbPath: args.db,
    command,
    explicitDtypes: args.dtype !== undefined,
    maxSeconds: args.maxSeconds,
    onProgress: progressReporter('tune'),
    log: (l) => console.error(l),
  });
  console.log(wgslWinnerTable(outcome.db, new Set(outcome.problems.map(problemKey))));
  if (args.report) {
    writeReport(outcome.db);
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
