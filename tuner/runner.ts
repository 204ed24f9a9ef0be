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

const NATIVE = join(TEMPLATE_ROOT, '..', 'tuner', 'native');
const SOURCE = join(NATIVE, 'runner.cu');
const INCLUDES = [join(NATIVE, 'checks.cuh')]; // runner.cu's own headers, part of its hash
const PARAMS_HEADERS = [join(TEMPLATE_ROOT, 'cuda', 'normgen_params.h'), join(TEMPLATE_ROOT, 'cuda-bwd', 'normgen_bwd_params.h')];

/**
 * Build the runner once per source, header and nvcc version; return its path.
 * $NORMGEN_RUNNER names a runner to use instead (a prebuilt one, or the tests' stand-in).
 */
export async function buildRunner(): Promise<string> {
  const given = process.env.NORMGEN_RUNNER;
  if (given) {
    if (!existsSync(given)) throw new ToolchainError(`NORMGEN_RUNNER names ${given}, which does not exist`);
    return given;
  }
  const sha = createHash('sha256').update(readFileSync(SOURCE));
  for (const h of [...INCLUDES, ...PARAMS_HEADERS]) sha.update(readFileSync(h));
  const hash = sha.update(await nvccVersion()).digest('hex').slice(0, 16);
  const exe = join(cacheDir('runner'), `normgen-runner-${hash}`);
  if (existsSync(exe)) return exe;
  const nvcc = await findNvcc();
  const common = ['-O2', '-std=c++17', '-I', join(TEMPLATE_ROOT, 'cuda'), '-I', join(TEMPLATE_ROOT, 'cuda-bwd'), '-o', `${exe}.tmp`, SOURCE];
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

/** One runner process and the lines it has written; events of an old process stay with it. */
class RunnerProcess {
  private lines: (string | null)[] = [];
  private waiter?: (line: string | null) => void;
  stderr = '';

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (l) => this.deliver(l));
    child.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    child.on('exit', () => this.deliver(null)); // null: the process is gone
    // A runner that exits before reading its request (no usable GPU, a fault) breaks the
    // pipe: the write fails with EPIPE. The exit is what reports it (RUNTIME_ERROR with the
    // runner's stderr); unhandled, the error would crash the tuner with a stack trace.
    child.stdin.on('error', () => {});
  }

  private deliver(line: string | null): void {
    const w = this.waiter;
    this.waiter = undefined;
    if (w) w(line);
    else this.lines.push(line);
  }

  /** The next line, null once the process has exited, 'timeout' after timeoutMs. */
  next(timeoutMs: number): Promise<string | null | 'timeout'> {
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

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(): void {
    if (this.alive) this.child.kill('SIGKILL');
  }
}

const live = new Set<RunnerProcess>();
// A runner left behind would keep its GPU busy (a hung kernel spins forever).
process.on('exit', () => {
  for (const p of live) p.kill();
});

/** One runner process bound to one GPU. Requests are serialized by the caller. */
export class Runner {
  private current?: RunnerProcess;
  /** How many times a fault or hang forced a fresh process. */
  restarts = 0;
  private started = false;

  constructor(private readonly exe: string, readonly gpu: number) {}

  private process(): RunnerProcess {
    if (this.current?.alive) return this.current;
    if (this.started) this.restarts++;
    this.started = true;
    // A .js runner (the tests' stand-in) runs under this Node.
    const [cmd, args] = this.exe.endsWith('.js') ? [process.execPath, [this.exe]] : [this.exe, []];
    const child = spawn(cmd, args, { env: { ...process.env, CUDA_VISIBLE_DEVICES: String(this.gpu) }, stdio: 'pipe' });
    const p = new RunnerProcess(child);
    live.add(p);
    child.on('exit', () => live.delete(p));
    this.current = p;
    return p;
  }

  private drop(p: RunnerProcess): void {
    p.kill();
    if (this.current === p) this.current = undefined;
  }

  /**
   * Send one request. A hang past timeoutMs kills the process (TIMEOUT); a process
   * that dies answers RUNTIME_ERROR. Either way the next request starts a fresh one.
   */
  async request(req: Record<string, unknown>, timeoutMs = 120_000): Promise<RunnerReply> {
    const p = this.process();
    p.child.stdin.write(JSON.stringify(req) + '\n');
    const line = await p.next(timeoutMs);
    if (line === 'timeout') {
      this.drop(p);
      return { status: 'TIMEOUT', error: `no answer within ${timeoutMs} ms` };
    }
    if (line === null) {
      this.drop(p);
      return { status: 'RUNTIME_ERROR', error: `runner exited: ${p.stderr.trim() || 'no message'}` };
    }
    const reply = JSON.parse(line) as RunnerReply;
    if (reply.status === 'RUNTIME_ERROR') this.drop(p); // it exits by itself; make sure
    return reply;
  }

  async close(): Promise<void> {
    const p = this.current;
    this.current = undefined;
    if (!p?.alive) return;
    p.child.stdin.end(JSON.stringify({ cmd: 'quit' }) + '\n');
    // Give it a moment to exit cleanly, then make sure.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise((r) => p.child.once('exit', r)), new Promise((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer); // a pending timer would keep the process alive for 5 s after its work is done
    p.kill();
  }
}
