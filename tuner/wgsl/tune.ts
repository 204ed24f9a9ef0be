// `normgen tune --backend wgsl`: per problem of a grid, every WGSL variant the adapter
// allows (and the ONNX-Runtime-style baseline) verified against the float64 reference
// and timed on a Dawn adapter; results appended to a database keyed by the adapter.

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { prepareOutputDir } from '../../generator/files.js';
import { InputError, problemKey, type Problem } from '../../generator/problem.js';
import { wgslVariantId } from '../../generator/render-wgsl.js';
import { enumerateWgslSpace, ortBaselineParams, wgslProblemReason, type WgslParams } from '../../generator/space-wgsl.js';
import { templateHash } from '../../generator/templates.js';
import { VERSION } from '../../generator/version.js';
import { TuningDb, type Stage, type WgslDbHeader, type WgslDbResult } from '../db.js';
import { DeviceError } from '../device.js';
import { gridProblems, type GridSpec } from '../grid.js';
import { EPS, SEED } from '../measure.js';
import { SearchPlan, type Search } from '../search.js';
import { WGSL_NAMING } from '../select.js';
import { trackProgress, type Progress } from '../progress.js';
import { autoBackends, type AdapterChoice } from './adapter.js';
import { openDevice, type DawnDevice } from './dawn.js';
import { copyBandwidthWgsl, WgslProblemRun, type WgslMeasurement, type WgslTiming } from './run.js';

/** Full timing (every winner, the baseline) and the brief screening one. */
export const WGSL_FULL: WgslTiming = { samples: 9, sampleMs: 5 };
export const WGSL_SCREEN: WgslTiming = { samples: 3, sampleMs: 1 };
/** Timed dispatches cycle through copies of the tensors this large in all (3x an H200's L2, as the CUDA runner does). */
export const ROTATE_BYTES = 192 * 2 ** 20;

export type WgslDb = TuningDb<WgslParams, WgslDbHeader>;

export interface WgslTuneOptions {
  adapter: AdapterChoice;
  grid: GridSpec;
  search: Search;
  /** Default: out/tuning/wgsl-<Dawn backend>.jsonl. */
  dbPath?: string;
  command: string;
  /** The grid's dtypes were named (--dtype): one the adapter lacks is an error, not skipped. */
  explicitDtypes?: boolean;
  /** Start no new problem after this many seconds (what is measured stays; the report is written). */
  maxSeconds?: number;
  rotateBytes?: number;
  timing?: { full: WgslTiming; screen: WgslTiming };
  /** Tests only: alter the shader text of some variants, to prove a wrong kernel never wins. */
  mutate?: (p: Problem, params: WgslParams) => ((code: string) => string) | undefined;
  onProgress?: (p: Progress) => void;
  /** After each problem (the CLI rewrites its report, so a killed run still leaves one). */
  onProblem?: (db: WgslDb) => void;
  log?: (line: string) => void;
}

export interface WgslTuneOutcome {
  dawn: DawnDevice;
  copyGbps: number;
  db: WgslDb;
  problems: Problem[];
  /** Problems left for a later run by --max-seconds. */
  unfinished: Problem[];
}

/** The adapter named by --adapter, or the first that `auto` finds. */
export async function openAdapter(choice: AdapterChoice): Promise<DawnDevice> {
  const tries = choice.backend === 'auto' ? autoBackends() : [choice.backend];
  for (const backend of tries) {
    const d = await openDevice(backend, choice.flags);
    if (d) return d;
  }
  throw new DeviceError(`no WebGPU adapter on Dawn's ${tries.join(' or ')} backend${tries.length > 1 ? 's' : ''}: name one with --adapter (e.g. --adapter opengles)`);
}

/** The grid's problems for this adapter; a named dtype it cannot run (bf16; fp16 without shader-f16) is an error, a default one is left out. */
export function wgslGridProblems(g: GridSpec, d: DawnDevice, explicitDtypes = true): Problem[] {
  const problems: Problem[] = [];
  for (const p of gridProblems(g, Infinity).problems) {
    const reason = wgslProblemReason(p, d.limits);
    if (reason && explicitDtypes) throw new InputError(`--dtype ${p.dtype}: ${reason} (${d.id.name})`);
    if (!reason) problems.push(p);
  }
  // Small problems first: an interrupted or time-limited run still covers every op.
  return problems.sort((a, b) => a.rows * a.hidden - b.rows * b.hidden);
}

/** The variants of a problem: the pruned space and the baseline, each once. */
export function wgslVariantsOf(p: Problem, d: DawnDevice): Map<string, WgslParams> {
  const out = new Map<string, WgslParams>();
  for (const params of [...enumerateWgslSpace(p, d.limits), ortBaselineParams(p)]) out.set(wgslVariantId(p, params), params);
  return out;
}

function webgpuVersion(): string {
  const pkg = createRequire(import.meta.url)('webgpu/package.json') as { version: string };
  return `webgpu ${pkg.version}`;
}

export async function tuneWgsl(o: WgslTuneOptions): Promise<WgslTuneOutcome> {
  if (o.grid.dtypes.includes('bf16') && o.explicitDtypes !== false) throw new InputError('--dtype bf16: WGSL has no bf16 (tune fp32 or fp16)');
  const dawn = await openAdapter(o.adapter);
  const problems = wgslGridProblems(o.grid, dawn, o.explicitDtypes ?? true);
  const dbPath = o.dbPath ?? join('out', 'tuning', `wgsl-${dawn.id.backend}.jsonl`);
  prepareOutputDir(dirname(dbPath));
  const db: WgslDb = TuningDb.open<WgslParams, WgslDbHeader>(dbPath, { backend: 'wgsl', arch: dawn.id.backend, device: dawn.id }, templateHash('wgsl'));
  const copyGbps = await copyBandwidthWgsl(dawn);
  const session = db.startSession({ started: new Date().toISOString(), command: o.command, normgen: VERSION, templateHash: templateHash('wgsl'), dawn: webgpuVersion(), copyGbps });
  const timer = dawn.timestamps ? 'timestamp queries' : 'the wall clock';
  o.log?.(`${dawn.id.name}: features [${dawn.id.features.join(', ')}], timed by ${timer}; buffer copy bandwidth ${copyGbps.toFixed(0)} GB/s; database ${dbPath} (${db.results.length} results already)`);

  const plan = new SearchPlan(db, o.search, WGSL_NAMING.baselineId);
  const variants = new Map(problems.map((p) => [p, wgslVariantsOf(p, dawn)]));
  const { elapsedS: elapsed, tick, counted, worked } = trackProgress(plan.count([...variants].map(([p, vs]) => [p, [...vs.keys()]])), o.onProgress);
  const timing = o.timing ?? { full: WGSL_FULL, screen: WGSL_SCREEN };
  const unfinished: Problem[] = [];

  for (const [p, vs] of variants) {
    const ids = [...vs.keys()];
    if (plan.problemDone(p, ids)) continue;
    if (o.maxSeconds !== undefined && elapsed() > o.maxSeconds) {
      unfinished.push(p);
      continue;
    }
    const base = { session: session.session, problemKey: problemKey(p), problem: p };
    const prepared = WgslProblemRun.prepare(dawn, p, { seed: SEED, eps: EPS, rotateBytes: o.rotateBytes ?? ROTATE_BYTES });
    const measure = async (id: string, stage: Stage): Promise<WgslDbResult> => {
      const params = vs.get(id)!;
      const m = prepared instanceof WgslProblemRun ? await prepared.run(params, stage === 'final' ? timing.full : timing.screen, o.mutate?.(p, params)) : prepared;
      // Never a winner without a time: a timer that cannot resolve the dispatches is an error, not 0 us.
      if (m.status === 'OK' && !(m.timeUs! > 0)) Object.assign(m, { status: 'RUNTIME_ERROR', message: `verified, but the ${m.timer} timer measured ${m.timeUs} us` });
      return db.record({ ...base, variantId: id, params, stage, ...toDbMeasurement(m, copyGbps) });
    };
    try {
      await plan.run(p, ids, measure, counted, worked);
    } finally {
      if (prepared instanceof WgslProblemRun) prepared.destroy();
    }
    o.onProblem?.(db);
  }
  if (unfinished.length) o.log?.(`--max-seconds ${o.maxSeconds}: ${unfinished.length} problems left for the next run of the same command`);
  tick();
  return { dawn, copyGbps, db, problems, unfinished };
}

/** The runner's measurement in the database's terms (the same fields as a CUDA result). */
function toDbMeasurement(m: WgslMeasurement, copyGbps: number) {
  return {
    status: m.status,
    ...(m.message ? { error: m.message.slice(0, 2000) } : {}),
    ...(m.timeUs !== undefined ? { medianUs: m.timeUs, minUs: m.minUs, maxUs: m.maxUs, samples: m.samples } : {}),
    ...(m.gbps !== undefined ? { gbps: m.gbps, fractionOfCopy: m.gbps / copyGbps } : {}),
    ...(m.errors ? { errors: m.errors } : {}),
    ...(m.bad ? { bad: m.bad } : {}),
    ...(m.timer ? { timer: m.timer, dispatchesPerSample: m.dispatchesPerSample, copies: m.copies } : {}),
  };
}
