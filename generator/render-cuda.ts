// Rendering CUDA compile units: one .cu per kernel spec holding many variants, so one
// nvcc call compiles them all.

import { residualDType, weightDType, biasDType, specKey, type DType, type KernelSpec } from './problem.js';
import { ctasByRegisters, type CudaParams } from './space.js';
import { render } from './templates.js';
import { describeVariant, type Variant } from './variant.js';
import { VERSION } from './version.js';

export const CUDA_TYPE: Record<DType, string> = { fp32: 'float', fp16: '__half', bf16: '__nv_bfloat16' };

/**
 * What the forward and backward unit templates share: the spec's description and flags.
 * Throws when a variant belongs to another spec.
 */
export function unitContext(spec: KernelSpec, variants: readonly { id: string; spec: KernelSpec }[]) {
  for (const v of variants) {
    if (specKey(v.spec) !== specKey(spec)) throw new Error(`variant ${v.id} belongs to another kernel spec`);
  }
  return {
    version: VERSION,
    opTitle: spec.op === 'rmsnorm' ? 'RMSNorm' : 'LayerNorm',
    dtype: spec.dtype,
    features: spec.features,
    isLayerNorm: spec.op === 'layernorm',
    hasWeight: spec.features.weight !== 'none',
    hasResidual: residualDType(spec) !== null,
  };
}

export function renderCudaUnit(spec: KernelSpec, variants: Variant[]): string {
  const x = CUDA_TYPE[spec.dtype];
  const typeOf = (d: DType | null) => (d ? CUDA_TYPE[d] : x);
  return render('cuda', 'norm_fwd.cu.hbs', {
    ...unitContext(spec, variants),
    types: { x, residual: typeOf(residualDType(spec)), weight: typeOf(weightDType(spec)), bias: typeOf(biasDType(spec)) },
    kernels: variants.map(kernelContext),
  });
}

/** What the templates need of one forward kernel: its name, parameters and launch bounds. */
function kernelContext(v: Variant) {
  return {
    symbol: v.symbol,
    params: v.params,
    description: describeVariant(v),
    clusterDims: v.params.cluster > 1,
    minBlocks: v.params.registerCap ? v.params.registerCap / v.params.threads : 1,
    fault: v.fault ?? false,
  };
}

/** Persistent and cluster kernels' twins keep the L2 prefetch of the first rows (reload kernels have none). */
export const twinKeepsPrefetch = (p: CudaParams) => p.storage !== 'reload' && (p.storage === 'pipelined' || p.storage === 'ring' || p.cluster > 1);

/**
 * A package's forward unit: the tuned kernels (renderCudaUnit, the text the tuner compiled)
 * and, after them, each one's plain twin `<symbol>_plain` (templates/package/plain_twins.cu.hbs).
 * `tunedRegisters` (per variant id, Plan.tunedRegisters): a twin's launch bounds ask for as many
 * CTAs an SM as its kernel's registers allowed, so the twin does not lose occupancy.
 */
export function renderPackageUnit(spec: KernelSpec, variants: Variant[], tunedRegisters: ReadonlyMap<string, number>): string {
  const twins = variants.map((v) => {
    const kernel = { ...kernelContext(v), prefetch: twinKeepsPrefetch(v.params) };
    const registers = tunedRegisters.get(v.id);
    return registers === undefined ? kernel : { ...kernel, minBlocks: twinMinBlocks(v.params.threads, kernel.minBlocks, registers) };
  });
  return renderCudaUnit(spec, variants) + render('package', 'plain_twins.cu.hbs', { kernels: twins, rowsBelow: PLAIN_TWIN_ROWS_BELOW });
}

/** A plain twin's launch bounds' CTAs an SM: its kernel's, or as many as the kernel's `registers` a thread allow. */
export const twinMinBlocks = (threads: number, kernelMinBlocks: number, registers: number) =>
  Math.max(kernelMinBlocks, ctasByRegisters(threads, registers));

/**
 * Launched plainly, a problem of fewer rows runs its kernel's plain twin; one of this many rows
 * or more runs the kernel itself (its wait returns at once there). A long kernel gains nothing
 * from the twin, and the L2 prefetch a twin leaves out kept some 4-6% faster at 8192-32768 rows
 * (test/gpu/plain-twin-rows.md).
 */
export const PLAIN_TWIN_ROWS_BELOW = 8192;

/** A kernel's plain twin's name (templates/package/plain_twins.cu.hbs). */
export const twinSymbol = (symbol: string) => `${symbol}_plain`;

/** The kernel a variant runs as on `rows` rows: its plain twin where launched plainly from a unit with twins, below PLAIN_TWIN_ROWS_BELOW rows. */
export const timedSymbol = (v: { symbol: string }, plainTwin = false, rows = 0) => (plainTwin && rows < PLAIN_TWIN_ROWS_BELOW ? twinSymbol(v.symbol) : v.symbol);

/** File name of a compile unit: readable, and unique per spec and variant set. */
export function unitFileName(spec: KernelSpec, variants: readonly unknown[], tag = ''): string {
  return `${specKey(spec)}${tag ? '.' + tag : ''}.${variants.length}v.cu`;
}
