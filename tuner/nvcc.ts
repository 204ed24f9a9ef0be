// Compiling CUDA compile units to cubins with nvcc, and reading ptxas's report of
// each kernel's registers, shared memory and spills.

import { existsSync } from 'node:fs';
import { execa } from 'execa';
import { TEMPLATE_ROOT } from '../generator/templates.js';
import { join } from 'node:path';

export class ToolchainError extends Error {
  override name = 'ToolchainError';
}

const CANDIDATES = ['/usr/local/cuda/bin/nvcc'];

/** nvcc from $NVCC, PATH or CUDA's usual prefix; a clear error when there is none. */
export async function findNvcc(): Promise<string> {
  if (process.env.NVCC) {
    if (!existsSync(process.env.NVCC)) throw new ToolchainError(`NVCC=${process.env.NVCC} does not exist`);
    return process.env.NVCC;
  }
  const onPath = await execa('sh', ['-c', 'command -v nvcc'], { reject: false });
  if (onPath.exitCode === 0 && onPath.stdout.trim()) return onPath.stdout.trim();
  const found = CANDIDATES.find((c) => existsSync(c));
  if (found) return found;
  throw new ToolchainError(
    'nvcc not found: install the CUDA toolkit (CUDA 12.8 or newer) under /usr/local/cuda, put nvcc on PATH, or set NVCC',
  );
}

let versionCache: Promise<string> | undefined;

/** "13.0.88"-style release of the nvcc in use; part of every cubin's cache key. */
export function nvccVersion(): Promise<string> {
  versionCache ??= (async () => {
    const { stdout } = await execa(await findNvcc(), ['--version']);
    const m = /release [\d.]+, V([\d.]+)/.exec(stdout);
    if (!m) throw new ToolchainError(`cannot read nvcc's version from: ${stdout}`);
    return m[1];
  })();
  return versionCache;
}

export interface KernelUsage {
  registers: number;
  /** Static shared memory in bytes (dynamic shared memory is per launch). */
  sharedBytes: number;
  spillStores: number;
  spillLoads: number;
  stackBytes: number;
}

/** Per-kernel resource usage from `ptxas -v` output (nvcc -Xptxas -v, on stderr). */
export function parsePtxasReport(text: string): Map<string, KernelUsage> {
  const usage = new Map<string, KernelUsage>();
  let current: KernelUsage | undefined;
  for (const line of text.split('\n')) {
    const fn = /Function properties for (\S+)/.exec(line);
    if (fn) {
      current = { registers: 0, sharedBytes: 0, spillStores: 0, spillLoads: 0, stackBytes: 0 };
      usage.set(fn[1], current);
      continue;
    }
    if (!current) continue;
    const frame = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line);
    if (frame) {
      current.stackBytes = Number(frame[1]);
      current.spillStores = Number(frame[2]);
      current.spillLoads = Number(frame[3]);
    }
    const used = /Used (\d+) registers/.exec(line);
    if (used) {
      current.registers = Number(used[1]);
      const smem = /(\d+) bytes smem/.exec(line);
      current.sharedBytes = smem ? Number(smem[1]) : 0;
    }
  }
  return usage;
}

export const spills = (u: KernelUsage) => u.spillStores > 0 || u.spillLoads > 0;

export interface CompileResult {
  ok: boolean;
  /** nvcc's diagnostics when it failed. */
  log: string;
  usage: Map<string, KernelUsage>;
  seconds: number;
}

/** Template families whose headers a unit includes: forward units the forward's, backward units both. */
export const includeFamilies = (backward: boolean) => (backward ? ['cuda', 'cuda-bwd'] : ['cuda']);

/** The flags every unit is compiled with, for one arch (tests that read PTX use them too). */
export const unitFlags = (nvccArch: string, families = includeFamilies(false)) => [
  `-arch=${nvccArch}`, '-O3', '-std=c++17', ...families.flatMap((f) => ['-I', join(TEMPLATE_ROOT, f)]),
];

/**
 * The compiles run at a lower CPU priority (nice 10) where `nice` exists. A tune measures
 * on the GPU while the pool compiles on every core, and the bench runner's host work
 * (graph capture, checks, replies) competed with nvcc for the CPU: on the default grid
 * (H200, 16 cores) each measurement took 1.5x as long until the compile pool finished, and
 * the same 204 problems measured during a niced compile took 31% less time
 * (test/gpu/tune-time.md).
 */
let niceAvailable: Promise<boolean> | undefined;
const lowPriority = () => (niceAvailable ??= execa('sh', ['-c', 'command -v nice'], { reject: false }).then((r) => r.exitCode === 0 && !!r.stdout.trim()));
const COMPILE_NICENESS = 10;

/** nvcc -cubin for one arch; a failed compile is a result, not an exception. */
export async function compileCubin(source: string, cubin: string, nvccArch: string, families = includeFamilies(false)): Promise<CompileResult> {
  const nvcc = await findNvcc();
  const started = performance.now();
  const args = ['-cubin', ...unitFlags(nvccArch, families), '-Xptxas', '-v', '-o', cubin, source];
  const r = (await lowPriority())
    ? await execa('nice', ['-n', String(COMPILE_NICENESS), nvcc, ...args], { reject: false, all: true })
    : await execa(nvcc, args, { reject: false, all: true });
  const seconds = (performance.now() - started) / 1000;
  return { ok: r.exitCode === 0, log: r.all ?? '', usage: parsePtxasReport(r.all ?? ''), seconds };
}
