// A piscina worker: compile one CUDA unit to a cubin.
import { compileCubin, type CompileResult } from './nvcc.js';

export interface CompileTask {
  source: string;
  cubin: string;
  nvccArch: string;
  /** Template families to put on the include path (default: the forward's). */
  families?: string[];
}

export default async function compile(task: CompileTask): Promise<Omit<CompileResult, 'usage'> & { usage: [string, ReturnType<CompileResult['usage']['get']>][] }> {
  const r = await compileCubin(task.source, task.cubin, task.nvccArch, task.families);
  return { ...r, usage: [...r.usage.entries()] }; // Maps do not cross threads as Maps
}
