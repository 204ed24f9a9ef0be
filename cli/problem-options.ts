// Command-line options that describe a problem, shared by list, generate and tune.

import type { Argv } from 'yargs';
import { parseArch, type Arch } from '../generator/arch.js';
import {
  backwardSpec,
  checkPositiveInt,
  InputError,
  makeProblem,
  parseDType,
  parseOp,
  parseResidual,
  parseWeight,
  type Problem,
} from '../generator/problem.js';

export function withProblemOptions<T>(y: Argv<T>) {
  return y
    .option('op', { type: 'string', default: 'rmsnorm', describe: 'rmsnorm | layernorm' })
    .option('dtype', { type: 'string', default: 'bf16', describe: 'x and y dtype: fp32 | fp16 | bf16' })
    .option('hidden', { type: 'string', demandOption: true, describe: 'row length (elements)' })
    .option('rows', { type: 'string', default: '1', describe: 'number of rows (only prunes rows per CTA)' })
    .option('weight', { type: 'string', default: 'same', describe: 'none | fp32 | same (as x)' })
    .option('bias', { type: 'boolean', default: false, describe: 'add a bias' })
    .option('offset', { type: 'boolean', default: false, describe: 'apply (1 + weight), as in Gemma' })
    .option('residual', { type: 'string', default: 'none', describe: 'fused residual: none | same | fp32' })
    .option('stats', { type: 'boolean', default: false, describe: 'write fp32 rstd (and mean for layernorm)' })
    .option('x-stride', { type: 'string', describe: 'row stride of x and y in elements (default: hidden)' })
    .option('arch', { type: 'string', default: 'sm90', describe: 'target: sm80 | sm86 | sm89 | sm90 | sm100 | sm120' });
}

export function withBackendOption<T>(y: Argv<T>) {
  return y.option('backend', { type: 'string', default: 'cuda', choices: ['cuda', 'wgsl'], describe: 'kernel language (wgsl ignores --arch)' });
}

export function withDirectionOption<T>(y: Argv<T>) {
  return y.option('direction', {
    type: 'string',
    default: 'fwd',
    choices: ['fwd', 'bwd'],
    describe: 'forward kernels, or the backward of the same feature sets (with --stats: the forward\'s statistics given)',
  });
}

/** The backward of a forward problem: its op, dtype, features, shape and strides; CUDA only. */
export function backwardOf(problem: Problem, backend = 'cuda'): Problem {
  if (backend !== 'cuda') throw new InputError(`--direction bwd: --backend ${backend} has no backward kernels`);
  return makeProblem(backwardSpec(problem), problem.hidden, problem.rows, problem.strides);
}

export interface ProblemArgs {
  op: string;
  dtype: string;
  hidden: string;
  rows: string;
  weight: string;
  bias: boolean;
  offset: boolean;
  residual: string;
  stats: boolean;
  xStride?: string;
  arch: string;
}

export function problemFromArgs(a: ProblemArgs): { problem: Problem; arch: Arch } {
  const arch = parseArch(a.arch);
  const hidden = checkPositiveInt('--hidden', a.hidden);
  const rows = checkPositiveInt('--rows', a.rows);
  const stride = a.xStride === undefined ? hidden : checkPositiveInt('--x-stride', a.xStride);
  if (stride < hidden) throw new InputError(`--x-stride ${stride} is smaller than --hidden ${hidden}`);
  const spec = {
    op: parseOp(a.op),
    dtype: parseDType(a.dtype),
    features: {
      weight: parseWeight(a.weight),
      bias: a.bias,
      weightOffset: a.offset,
      residual: parseResidual(a.residual),
      stats: a.stats,
    },
  };
  const problem = makeProblem(spec, hidden, rows, { x: stride, y: stride, residual: stride, residualOut: stride });
  return { problem, arch };
}
