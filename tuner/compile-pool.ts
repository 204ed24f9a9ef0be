// The compile pool: render each compile unit, then compile units on all cores with
// piscina workers running nvcc. Cubins are cached by the hash of the unit's text, the
// arch and nvcc's version, so an unchanged unit is never compiled twice.

import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import type { Arch } from '../generator/arch.js';
import { isBackward, type KernelSpec } from '../generator/problem.js';
import { renderCudaUnit, renderPackageUnit, timedSymbol, unitFileName } from '../generator/render-cuda.js';
import { renderCudaBwdUnit } from '../generator/render-cuda-bwd.js';
import type { Variant } from '../generator/variant.js';
import { bwdTemplateHash, type BwdVariant } from '../generator/variant-bwd.js';
import { templateHash } from '../generator/templates.js';
import { cacheDir } from './cache.js';
import type { CompileTask } from './compile-worker.js';
import { includeFamilies, nvccVersion, spills, type KernelUsage } from './nvcc.js';

export interface CompiledUnit {
  cubin: string;
  ok: boolean;
  log: string;
  usage: Map<string, KernelUsage>;
  cached: boolean;
}

/** Forward variants, or backward ones (a backward spec): each unit is one direction. */
export interface UnitRequest {
  spec: KernelSpec;
  variants: Variant[] | BwdVariant[];
  /**
   * Forward units: each kernel's plain twin `<symbol>_plain` too, as a package has it, and
   * the twin's build is the variant's (a tune under plain launches times the twins).
   */
  twins?: boolean;
}

/** The unit's text and the hash of the templates it came from. */
function renderUnit(req: UnitRequest): { source: string; templates: string } {
  if (isBackward(req.spec)) return { source: renderCudaBwdUnit(req.spec, req.variants as BwdVariant[]), templates: bwdTemplateHash() };
  const variants = req.variants as Variant[];
  return { source: req.twins ? renderPackageUnit(req.spec, variants, new Map()) : renderCudaUnit(req.spec, variants), templates: templateHash('cuda') };
}

/** What became of one variant after compiling. */
export type VariantBuild =
  | { status: 'OK'; cubin: string; usage: KernelUsage }
  | { status: 'COMPILE_ERROR'; log: string }
  | { status: 'SPILLS'; usage: KernelUsage };

/**
 * Variants per nvcc call. One call per whole unit (up to ~250 variants, minutes of
 * nvcc) left cores idle at the end of a tune and kept the GPU waiting for the first.
 */
const MAX_UNIT_VARIANTS = 24;

export class CompilePool {
  private pool: Piscina;
  /** `worker`: the module that compiles a CompileTask (tests pass a stand-in). */
  constructor(readonly arch: Arch, jobs = availableParallelism(), worker = new URL('./compile-worker.js', import.meta.url).href) {
    this.pool = new Piscina({
      filename: worker,
      maxThreads: Math.max(1, jobs),
      minThreads: 1,
      // Compile in the order asked: by default piscina sends a task it cannot place on a
      // busy pool to the back of its queue, which scattered each unit's chunks through the
      // whole tune (the GPU waited ~2 minutes for the first units on one H200).
      stricterFIFO: true,
      // piscina require()s the worker first. Where Node can require() ES modules, that raced
      // with the import of the same graph and aborted the whole process once in CI ("v8::Module::
      // IsGraphAsync must be used on an instantiated module"): workers import it instead.
      execArgv: process.features.require_module ? ['--no-experimental-require-module'] : [],
    });
  }

  /** Units being compiled, by cache key: a second request for one waits for the first. */
  private inFlight = new Map<string, Promise<CompiledUnit>>();

  /** Compile (or take from the cache) one unit holding the given variants. */
  async compileUnit(req: UnitRequest): Promise<CompiledUnit> {
    const { source, templates } = renderUnit(req);
    const key = createHash('sha256').update(source).update(templates).update(this.arch.nvccArch).update(await nvccVersion()).digest('hex').slice(0, 20);
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const compiled = this.compileKeyed(req, source, key).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, compiled);
    return compiled;
  }

  private async compileKeyed(req: UnitRequest, source: string, key: string): Promise<CompiledUnit> {
    const dir = cacheDir('cubins', this.arch.name);
    const cubin = join(dir, `${key}.cubin`);
    const report = join(dir, `${key}.json`);
    if (existsSync(cubin) && existsSync(report)) {
      const saved = JSON.parse(readFileSync(report, 'utf8'));
      return { cubin, ok: true, log: '', usage: new Map(saved.usage), cached: true };
    }
    const file = join(dir, `${key}.${unitFileName(req.spec, req.variants)}`);
    writeFileSync(file, source);
    // A name of its own: another process may share the cache and compile the same unit.
    const partial = `${cubin}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
    const task: CompileTask = { source: file, cubin: partial, nvccArch: this.arch.nvccArch, families: includeFamilies(isBackward(req.spec)) };
    const r = await this.pool.run(task);
    if (r.ok) {
      renameSync(partial, cubin); // the cubin appears whole, then its report
      writeFileSync(report, JSON.stringify({ usage: r.usage, seconds: r.seconds }));
    }
    return { cubin, ok: r.ok, log: r.log, usage: new Map(r.usage as [string, KernelUsage][]), cached: false };
  }

  /**
   * Compile a unit; when it fails as a whole, compile its variants one by one so a
   * single bad variant is recorded as COMPILE_ERROR and the rest still build.
   */
  async build(req: UnitRequest): Promise<Map<string, VariantBuild>> {
    if (req.variants.length > MAX_UNIT_VARIANTS) {
      const chunks: UnitRequest['variants'][] = [];
      for (let i = 0; i < req.variants.length; i += MAX_UNIT_VARIANTS) chunks.push(req.variants.slice(i, i + MAX_UNIT_VARIANTS) as UnitRequest['variants']);
      const built = await Promise.all(chunks.map((variants) => this.build({ ...req, variants })));
      return new Map(built.flatMap((m) => [...m]));
    }
    const out = new Map<string, VariantBuild>();
    const unit = await this.compileUnit(req);
    if (unit.ok) {
      for (const v of req.variants) out.set(v.id, classify(unit, v, req.twins));
      return out;
    }
    if (req.variants.length === 1) {
      out.set(req.variants[0].id, { status: 'COMPILE_ERROR', log: unit.log });
      return out;
    }
    const singles = await Promise.all(req.variants.map((v: Variant | BwdVariant) => this.compileUnit({ ...req, variants: [v] } as UnitRequest)));
    req.variants.forEach((v, i) => out.set(v.id, singles[i].ok ? classify(singles[i], v, req.twins) : { status: 'COMPILE_ERROR', log: singles[i].log }));
    return out;
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}

/**
 * A backward variant has a row kernel and a reduction: it spills if either does (the row
 * kernel's usage is reported). With twins, a forward variant is its twin and, from
 * PLAIN_TWIN_ROWS_BELOW rows on, the kernel itself: it spills if either does (the twin's
 * usage is reported).
 */
function classify(unit: CompiledUnit, v: Variant | BwdVariant, twins = false): VariantBuild {
  const backward = isBackward(v.spec);
  const symbol = timedSymbol(v, twins && !backward);
  const other = backward ? `${v.symbol}_reduce` : twins ? v.symbol : symbol;
  const usage = unit.usage.get(symbol);
  if (!usage) return { status: 'COMPILE_ERROR', log: `ptxas reported nothing for ${symbol}` };
  const otherUsage = unit.usage.get(other);
  if (!otherUsage) return { status: 'COMPILE_ERROR', log: `ptxas reported nothing for ${other}` };
  return spills(usage) || spills(otherUsage) ? { status: 'SPILLS', usage } : { status: 'OK', cubin: unit.cubin, usage };
}
