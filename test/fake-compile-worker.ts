// A stand-in compile worker: takes a little while, writes an empty cubin, reports no kernels.
import { writeFileSync } from 'node:fs';
import type { CompileTask } from '../tuner/compile-worker.js';

export default async function compile(task: CompileTask) {
  await new Promise((done) => setTimeout(done, 15));
  writeFileSync(task.cubin, '');
  return { ok: true, log: '', usage: [], seconds: 0.015 };
}
