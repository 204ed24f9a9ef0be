// The TypeScript side of the native bench runner (tuner/native/runner.cu): building it
// with nvcc on first use (cached by source hash), one long-lived process per GPU
// talking JSON lines, and restarting it after a fault or a hang.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { execa } from 'execa';
import { TEMPLATE_ROOT } from '../generator/templates.js';
import { cacheDir } from './cache.js';
import { findNvcc, nvccVersion, ToolchainError } from './nvcc.js';

const SOURCE = join(TEMPLATE_ROOT, '..', 'tuner', 'native', 'runner.cu');
const PARAMS_HEADER = join(TEMPLATE_ROOT, 'cuda', 'normgen_params.h');

/** Build the runner once per source, header and nvcc version; return its path. */
export async function buildRunner(): Promise<string> {
  const hash = createHash('sha256').update(readFileSync(SOURCE)).update(readFileSync(PARAMS_HEADER)).update(await nvccVersion()).digest('hex').slice(0, 16);
  const exe = join(cacheDir('runner'), `normgen-runner-${hash}`);
  if (existsSync(exe)) return exe;
  const nvcc = await findNvcc();
  const common = ['-O2', '-std=c++17', '-I', join(TEMPLATE_ROOT, 'cuda'), '-o', `${exe}.tmp`, SOURCE];
  // Prefer the GPU present; without one (a build machine) cover the archs normgen targets.
  let r = await execa(nvcc, ['-arch=native', ...common], { reject: false, all: true });
  if (r.exitCode !== 0) {
    const gencode = ['80', '90', '100', '120'].flatMap((a) => ['-gencode', `arch=compute_${a},code=sm_${a}`]);
    r = await execa(nvcc, [...gencode, '-gencode', 'arch=compute_120,code=compute_120', ...common], { reject: false, all: true });
  }
  if (r.exitCode !== 0) throw new ToolchainError(`building the bench runner failed:\n${r.all}`);
  renameSync(`${exe}.tmp`, exe);
  return exe;
}

export type RunnerReply = Record<string, unknown> & { status: string; error?: string };

/** One runner process bound to one GPU. Requests are serialized. */
export class Runner {
  private proc?: ChildProcessWithoutNullStreams;
  private lines: string[] = [];
  private waiter?: (line: string | null) => void;
  private stderr = '';
  private started = false;
  /** How many times a fault or hang forced a fresh process. */
  restarts = 0;

  constructor(private readonly exe: string, readonly gpu: number) {}

  private start(): void {
    const proc = spawn(this.exe, [], { env: { ...process.env, CUDA_VISIBLE_DEVICES: String(this.gpu) }, stdio: 'pipe' });
    this.proc = proc;
    this.lines = [];
    this.stderr = '';
    createInterface({ input: proc.stdout }).on('line', (l) => this.deliver(l));
    proc.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    proc.on('exit', () => {
      if (this.proc === proc) this.proc = undefined;
      this.deliver(null);
    });
  }

  private deliver(line: string | null): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(line);
    } else if (line !== null) this.lines.push(line);
  }

  private next(timeoutMs: number): Promise<string | null | 'timeout'> {
    if (this.lines.length) return Promise.resolve(this.lines.shift()!);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve('timeout');
      }, timeoutMs);
      this.waiter = (l) => {
        clearTimeout(timer);
        resolve(l);
      };
    });
  }

  /**
   * Send one request. A hang past timeoutMs kills the process (TIMEOUT); a process
   * that dies answers RUNTIME_ERROR. Either way the next request starts a fresh one.
   */
  async request(req: Record<string, unknown>, timeoutMs = 120_000): Promise<RunnerReply> {
    if (!this.proc) {
      if (this.started) this.restarts++;
      this.started = true;
      this.start();
    }
    const proc = this.proc!;
    proc.stdin.write(JSON.stringify(req) + '\n');
    const line = await this.next(timeoutMs);
    if (line === 'timeout') {
      this.kill();
      return { status: 'TIMEOUT', error: `no answer within ${timeoutMs} ms` };
    }
    if (line === null) {
      this.proc = undefined;
      return { status: 'RUNTIME_ERROR', error: `runner exited: ${this.stderr.trim() || 'no message'}` };
    }
    const reply = JSON.parse(line) as RunnerReply;
    if (reply.status === 'RUNTIME_ERROR') this.kill(); // it exits by itself; make sure
    return reply;
  }

  kill(): void {
    const p = this.proc;
    this.proc = undefined;
    this.lines = [];
    if (p && p.exitCode === null) p.kill('SIGKILL');
  }

  async close(): Promise<void> {
    if (this.proc) {
      this.proc.stdin.end(JSON.stringify({ cmd: 'quit' }) + '\n');
      this.proc = undefined;
    }
  }
}
