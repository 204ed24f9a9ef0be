// The default tuning grid and the problems a `normgen tune` run covers.

import { backwardSpec, bytesMoved, checkPositiveInt, DTYPES, InputError, makeProblem, parseDType, type DType, type Features, type Op, type Problem, type ResidualKind } from '../generator/problem.js';

export const DEFAULT_HIDDEN = [512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192, 12288, 16384, 32768, 65536, 131072];
export const DEFAULT_ROWS = [1, 8, 32, 128, 512, 2048, 8192, 32768];

/** What users tune: the common feature sets, by name. */
export const TUNE_OPS = ['rmsnorm', 'rmsnorm+residual', 'layernorm', 'layernorm+residual'] as const;
export type TuneOp = (typeof TUNE_OPS)[number];
export const DEFAULT_TUNE_OPS: TuneOp[] = ['rmsnorm', 'rmsnorm+residual', 'layernorm'];

export function featuresOf(op: TuneOp, residual: Exclude<ResidualKind, 'none'>): { op: Op; features: Features } {
  const base = op.startsWith('rmsnorm') ? 'rmsnorm' : 'layernorm';
  return {
    op: base,
    features: {
      weight: 'same',
      bias: base === 'layernorm', // LayerNorm as in most models: weight and bias
      weightOffset: false,
      residual: op.endsWith('+residual') ? residual : 'none',
      stats: false,
    },
  };
}

export function parseList<T>(what: string, text: string | undefined, parse: (s: string) => T, fallback: T[]): T[] {
  if (text === undefined || text === '') return fallback;
  const items = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new InputError(`${what} is empty`);
  return items.map(parse);
}

export function parseTuneOp(s: string): TuneOp {
  if (!(TUNE_OPS as readonly string[]).includes(s)) throw new InputError(`unknown op '${s}' (expected: ${TUNE_OPS.join(', ')})`);
  return s as TuneOp;
}

export interface GridSpec {
  ops: TuneOp[];
  dtypes: DType[];
  hiddens: number[];
  rows: number[];
  residual: Exclude<ResidualKind, 'none'>;
  /** Backward only: the forward's saved statistics are given (then reading or recomputing them is tuned). */
  stats?: boolean;
}

export function gridFromArgs(a: { op?: string; dtype?: string; hidden?: string; rows?: string; residual?: string; stats?: boolean }): GridSpec {
  const residual = a.residual ?? 'same';
  if (residual !== 'same' && residual !== 'fp32') throw new InputError(`--residual must be same or fp32, got '${residual}'`);
  return {
    ops: parseList('--op', a.op, parseTuneOp, DEFAULT_TUNE_OPS),
    dtypes: parseList('--dtype', a.dtype, parseDType, [...DTYPES]),
    hiddens: parseList('--hidden', a.hidden, (s) => checkPositiveInt('--hidden', s, 2 ** 30), DEFAULT_HIDDEN),
    rows: parseList('--rows', a.rows, (s) => checkPositiveInt('--rows', s), DEFAULT_ROWS),
    residual,
    stats: a.stats ?? false,
  };
}

/**
 * The grid's problems that fit in `memoryBytes` (inputs and outputs, with headroom).
 * Backward problems differentiate the same feature sets; `g.stats` says whether the
 * forward's statistics are given (the package's autograd recomputes them: no stats).
 */
export function gridProblems(g: GridSpec, memoryBytes: number, direction: 'fwd' | 'bwd' = 'fwd'): { problems: Problem[]; skipped: Problem[] } {
  const problems: Problem[] = [];
  const skipped: Problem[] = [];
  for (const op of g.ops)
    for (const dtype of g.dtypes)
      for (const hidden of g.hiddens)
        for (const rows of g.rows) {
          const spec = { dtype, ...featuresOf(op, g.residual) };
          const p = direction === 'bwd' ? makeProblem(backwardSpec({ ...spec, features: { ...spec.features, stats: g.stats ?? false } }), hidden, rows) : makeProblem(spec, hidden, rows);
          const bytes = direction === 'bwd' ? 2 * bytesMoved(p) : bytesMoved(p); // backward moves x, dy, dx (and dresidual)
          (bytes <= 0.6 * memoryBytes ? problems : skipped).push(p);
        }
  return { problems, skipped };
}

/** "0,1" -> [0, 1]: CUDA device indices, each once. */
export function parseGpus(text: string): number[] {
  const gpus = parseList('--gpus', text, (s) => {
    if (!/^\d+$/.test(s)) throw new InputError(`--gpus takes device indices like 0,1; got '${s}'`);
    return Number(s);
  }, [0]);
  if (new Set(gpus).size !== gpus.length) throw new InputError(`--gpus names a device twice: ${text}`);
  return gpus;
}
