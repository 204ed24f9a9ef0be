// FlashInfer-Bench's dataset schema, checked in TypeScript: the fields, types and
// validators of its pydantic models (flashinfer_bench/data: Definition, Solution,
// Workload, Trace, Evaluation) and the layout checks of its dataset validator
// (flashinfer_bench/data/validate.py). Written from their source; stricter in one
// way: unknown fields are reported (pydantic ignores them), to catch misspelled names.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

type Json = unknown;
type Obj = Record<string, Json>;

const DTYPES = ['float32', 'float16', 'bfloat16', 'float8_e4m3fn', 'float8_e5m2', 'float4_e2m1', 'int64', 'int32', 'int16', 'int8', 'bool'];
const LANGUAGES = ['python', 'triton', 'cpp', 'cuda', 'tilelang'];
const BINDINGS = ['tvm-ffi', 'torch'];
const STATUSES = ['PASSED', 'INCORRECT_SHAPE', 'INCORRECT_NUMERICAL', 'INCORRECT_DTYPE', 'RUNTIME_ERROR', 'COMPILE_ERROR', 'TIMEOUT'];

class Checker {
  errors: string[] = [];
  constructor(private where: string) {}
  fail(path: string, message: string): void {
    this.errors.push(`${this.where}: ${path}: ${message}`);
  }
  obj(v: Json, path: string, required: string[], optional: string[] = []): v is Obj {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      this.fail(path, 'must be an object');
      return false;
    }
    for (const k of required) if (!(k in v)) this.fail(path, `missing field '${k}'`);
    for (const k of Object.keys(v)) if (!required.includes(k) && !optional.includes(k)) this.fail(path, `unknown field '${k}'`);
    return true;
  }
  /** A dict with any keys (pydantic Dict[str, ...]). */
  map(v: Json, path: string): v is Obj {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return true;
    this.fail(path, 'must be an object');
    return false;
  }
  str(v: Json, path: string, nonEmpty = true): v is string {
    if (typeof v !== 'string') this.fail(path, 'must be a string');
    else if (nonEmpty && v.length === 0) this.fail(path, 'must not be empty');
    else return true;
    return false;
  }
  optStr(v: Json, path: string): void {
    if (v !== undefined && v !== null) this.str(v, path, false);
  }
  strList(v: Json, path: string, minLength = 0): v is string[] {
    if (!Array.isArray(v)) {
      this.fail(path, 'must be a list');
      return false;
    }
    if (v.length < minLength) this.fail(path, `needs at least ${minLength} item(s)`);
    v.forEach((x, i) => this.str(x, `${path}[${i}]`));
    return true;
  }
  oneOf(v: Json, path: string, allowed: string[]): void {
    if (typeof v !== 'string' || !allowed.includes(v)) this.fail(path, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  }
  int(v: Json, path: string, min: number): void {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) this.fail(path, `must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  /** A pydantic float: a JSON number, or with ser_json_inf_nan='strings' "NaN" / "Infinity" / "-Infinity". */
  float(v: Json, path: string): number | undefined {
    if (typeof v === 'number') return v;
    if (v === 'NaN') return NaN;
    if (v === 'Infinity') return Infinity;
    if (v === '-Infinity') return -Infinity;
    this.fail(path, `must be a float, got ${JSON.stringify(v)}`);
    return undefined;
  }
}

export interface Definition {
  name: string;
  op_type: string;
  axes: Record<string, { type: 'const' | 'var'; value?: number }>;
  inputs: Record<string, { shape: string[] | null; dtype: string }>;
  outputs: Record<string, { shape: string[] | null; dtype: string }>;
}

export function checkDefinition(v: Json, where: string): string[] {
  const c = new Checker(where);
  if (!c.obj(v, '$', ['name', 'op_type', 'axes', 'inputs', 'outputs', 'reference'], ['tags', 'description', 'constraints'])) return c.errors;
  c.str(v.name, 'name');
  c.str(v.op_type, 'op_type');
  if (v.tags !== undefined) c.strList(v.tags, 'tags');
  if (v.constraints !== undefined) c.strList(v.constraints, 'constraints');
  c.optStr(v.description, 'description');
  const axes = c.map(v.axes, 'axes') ? v.axes : {};
  for (const [name, axis] of Object.entries(axes)) {
    if (name === '') c.fail('axes', 'an axis name is empty');
    const a = axis as Obj;
    if (a?.type === 'const') {
      if (c.obj(a, `axes.${name}`, ['type', 'value'], ['description'])) c.int(a.value, `axes.${name}.value`, 0);
    } else if (a?.type === 'var') c.obj(a, `axes.${name}`, ['type'], ['description']);
    else c.fail(`axes.${name}.type`, `must be 'const' or 'var', got ${JSON.stringify(a?.type)}`);
    if (a && typeof a === 'object') c.optStr(a.description, `axes.${name}.description`);
  }
  const tensors = (field: 'inputs' | 'outputs') => {
    const given = v[field];
    const all = c.map(given, field) ? given : {};
    for (const [name, t] of Object.entries(all)) {
      if (!c.obj(t, `${field}.${name}`, ['shape', 'dtype'], ['description'])) continue;
      if (t.shape !== null && c.strList(t.shape, `${field}.${name}.shape`))
        for (const axis of t.shape) if (!(axis in axes)) c.fail(`${field}.${name}.shape`, `references undefined axis "${axis}"`);
      c.oneOf(t.dtype, `${field}.${name}.dtype`, DTYPES);
      c.optStr(t.description, `${field}.${name}.description`);
    }
    return all;
  };
  const inputs = tensors('inputs');
  const outputs = tensors('outputs');
  for (const n of Object.keys(inputs)) if (n in outputs) c.fail('outputs', `input and output names must not overlap ('${n}')`);
  // pydantic parses the reference with Python's ast and requires a top-level def run.
  if (c.str(v.reference, 'reference') && !/^def run\(/m.test(v.reference)) c.fail('reference', "must define a top-level function named 'run'");
  return c.errors;
}

export function checkSolution(v: Json, where: string): string[] {
  const c = new Checker(where);
  if (!c.obj(v, '$', ['name', 'definition', 'author', 'spec', 'sources'], ['description'])) return c.errors;
  c.str(v.name, 'name');
  c.str(v.definition, 'definition');
  c.str(v.author, 'author');
  c.optStr(v.description, 'description');
  const s = v.spec as Obj;
  if (c.obj(s, 'spec', ['language', 'target_hardware', 'entry_point'], ['dependencies', 'destination_passing_style', 'binding'])) {
    c.oneOf(s.language, 'spec.language', LANGUAGES);
    c.strList(s.target_hardware, 'spec.target_hardware', 1);
    if (c.str(s.entry_point, 'spec.entry_point') && s.entry_point.split('::').length !== 2)
      c.fail('spec.entry_point', `must be "<file_path>::<function_name>", got ${JSON.stringify(s.entry_point)}`);
    if (s.dependencies !== undefined) c.strList(s.dependencies, 'spec.dependencies');
    if (s.destination_passing_style !== undefined && typeof s.destination_passing_style !== 'boolean') c.fail('spec.destination_passing_style', 'must be a boolean');
    if (s.binding !== undefined && s.binding !== null) c.oneOf(s.binding, 'spec.binding', BINDINGS);
  }
  if (!Array.isArray(v.sources) || v.sources.length === 0) c.fail('sources', 'must be a list of at least one file');
  else {
    const paths = new Set<string>();
    v.sources.forEach((f: Json, i: number) => {
      if (!c.obj(f, `sources[${i}]`, ['path', 'content'])) return;
      if (c.str(f.path, `sources[${i}].path`)) {
        if (f.path.startsWith('/')) c.fail(`sources[${i}].path`, `absolute path not allowed: ${f.path}`);
        if (f.path.split('/').includes('..')) c.fail(`sources[${i}].path`, `parent directory traversal not allowed: ${f.path}`);
        if (paths.has(f.path)) c.fail('sources', `duplicate source path '${f.path}'`);
        paths.add(f.path);
      }
      c.str(f.content, `sources[${i}].content`);
    });
    const entry = typeof s?.entry_point === 'string' ? s.entry_point.split('::')[0] : undefined;
    if (entry && !paths.has(entry)) c.fail('spec.entry_point', `entry source file '${entry}' not found in sources`);
  }
  return c.errors;
}

function checkWorkload(c: Checker, w: Json, path: string): void {
  if (!c.obj(w, path, ['axes', 'inputs', 'uuid'])) return;
  if (c.map(w.axes, `${path}.axes`)) for (const [k, n] of Object.entries(w.axes)) c.int(n, `${path}.axes.${k}`, 0);
  if (c.map(w.inputs, `${path}.inputs`))
    for (const [k, i] of Object.entries(w.inputs)) {
      const t = (i as Obj)?.type;
      if (t === 'random') c.obj(i, `${path}.inputs.${k}`, ['type']);
      else if (t === 'scalar') {
        if (c.obj(i, `${path}.inputs.${k}`, ['type', 'value']) && !['number', 'boolean'].includes(typeof (i as Obj).value)) c.fail(`${path}.inputs.${k}.value`, 'must be int, float or bool');
      } else if (t === 'safetensors') {
        if (c.obj(i, `${path}.inputs.${k}`, ['type', 'path', 'tensor_key'])) {
          c.str((i as Obj).path, `${path}.inputs.${k}.path`);
          c.str((i as Obj).tensor_key, `${path}.inputs.${k}.tensor_key`);
        }
      } else c.fail(`${path}.inputs.${k}.type`, `must be random, scalar or safetensors, got ${JSON.stringify(t)}`);
    }
  c.str(w.uuid, `${path}.uuid`);
}

function checkEvaluation(c: Checker, e: Json, path: string): void {
  if (!c.obj(e, path, ['status', 'environment', 'timestamp'], ['log', 'correctness', 'performance'])) return;
  c.oneOf(e.status, `${path}.status`, STATUSES);
  if (c.obj(e.environment, `${path}.environment`, ['hardware'], ['libs'])) {
    const env = e.environment as Obj;
    c.str(env.hardware, `${path}.environment.hardware`);
    if (env.libs !== undefined && c.map(env.libs, `${path}.environment.libs`))
      for (const [k, ver] of Object.entries(env.libs)) c.str(ver, `${path}.environment.libs.${k}`, false);
  }
  c.str(e.timestamp, `${path}.timestamp`);
  if (e.log !== undefined) c.str(e.log, `${path}.log`, false);
  const has = (k: string) => e[k] !== undefined && e[k] !== null;
  if (has('correctness') && c.obj(e.correctness, `${path}.correctness`, [], ['max_relative_error', 'max_absolute_error', 'extra'])) {
    const corr = e.correctness as Obj;
    for (const k of ['max_relative_error', 'max_absolute_error'])
      if (corr[k] !== undefined) {
        const x = c.float(corr[k], `${path}.correctness.${k}`);
        if (x !== undefined && x < 0) c.fail(`${path}.correctness.${k}`, 'must be non-negative or NaN');
      }
    if (corr.extra !== undefined && corr.extra !== null) c.map(corr.extra, `${path}.correctness.extra`);
  }
  if (has('performance') && c.obj(e.performance, `${path}.performance`, [], ['latency_ms', 'reference_latency_ms', 'speedup_factor'])) {
    const perf = e.performance as Obj;
    for (const k of ['latency_ms', 'reference_latency_ms', 'speedup_factor'])
      if (perf[k] !== undefined) {
        const x = c.float(perf[k], `${path}.performance.${k}`);
        if (x !== undefined && !(x >= 0)) c.fail(`${path}.performance.${k}`, 'must be >= 0');
      }
  }
  // Which metrics a status carries (Evaluation's model validator).
  const status = e.status;
  if (status === 'PASSED' && (!has('correctness') || !has('performance'))) c.fail(path, 'PASSED needs correctness and performance');
  if (status === 'INCORRECT_NUMERICAL' && (!has('correctness') || has('performance'))) c.fail(path, 'INCORRECT_NUMERICAL needs correctness and no performance');
  if (status !== 'PASSED' && status !== 'INCORRECT_NUMERICAL' && (has('correctness') || has('performance'))) c.fail(path, `${String(status)} carries neither correctness nor performance`);
}

export function checkTrace(v: Json, where: string): string[] {
  const c = new Checker(where);
  if (!c.obj(v, '$', ['definition', 'workload'], ['solution', 'evaluation'])) return c.errors;
  c.str(v.definition, 'definition');
  checkWorkload(c, v.workload, 'workload');
  if (v.solution !== undefined && v.solution !== null) c.str(v.solution, 'solution');
  if (v.evaluation !== undefined && v.evaluation !== null) checkEvaluation(c, v.evaluation, 'evaluation');
  return c.errors;
}

const filesUnder = (dir: string): string[] => {
  try {
    return readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? filesUnder(join(dir, f)) : [join(dir, f)]));
  } catch {
    return [];
  }
};

function parseJson(text: string, where: string, errors: string[]): Json {
  try {
    return JSON.parse(text);
  } catch (e) {
    errors.push(`${where}: not JSON: ${(e as Error).message}`);
    return undefined;
  }
}

/** Check a whole dataset folder: every file against its model, then the layout rules. */
export function checkDataset(root: string): { errors: string[]; counts: Record<string, number> } {
  const errors: string[] = [];
  const rel = (p: string) => relative(root, p).split(sep);
  const definitions = new Map<string, { def: Definition; opType: string }>();
  for (const p of filesUnder(join(root, 'definitions')).filter((f) => f.endsWith('.json')).sort()) {
    const [, opType, file] = rel(p);
    const where = relative(root, p);
    const d = parseJson(readFileSync(p, 'utf8'), where, errors) as Definition;
    errors.push(...checkDefinition(d, where));
    const name = file?.replace(/\.json$/, '');
    if (!d || !name) continue;
    if (definitions.has(name)) errors.push(`${where}: duplicate definition name ${name}`);
    if (d.name !== name) errors.push(`${where}: definition name mismatch: path says '${name}', JSON says '${d.name}'`);
    if (d.op_type !== opType) errors.push(`${where}: definition op_type mismatch: path says '${opType}', JSON says '${d.op_type}'`);
    definitions.set(name, { def: d, opType });
  }
  const solutions = new Set<string>();
  for (const p of filesUnder(join(root, 'solutions')).filter((f) => f.endsWith('.json')).sort()) {
    const parts = rel(p);
    const where = relative(root, p);
    if (parts.length !== 5) {
      errors.push(`${where}: solutions belong at solutions/<author>/<op_type>/<definition>/<solution>.json`);
      continue;
    }
    const [, author, opType, defName, file] = parts;
    const s = parseJson(readFileSync(p, 'utf8'), where, errors) as Obj;
    errors.push(...checkSolution(s, where));
    if (!s) continue;
    const name = file.replace(/\.json$/, '');
    if (s.author !== author) errors.push(`${where}: solution author mismatch: path '${author}', JSON '${String(s.author)}'`);
    if (s.definition !== defName) errors.push(`${where}: solution definition mismatch: path '${defName}', JSON '${String(s.definition)}'`);
    if (s.name !== name) errors.push(`${where}: solution name mismatch: path '${name}', JSON '${String(s.name)}'`);
    const def = definitions.get(defName);
    if (!def) errors.push(`${where}: definition ${defName} does not exist`);
    else if (def.opType !== opType) errors.push(`${where}: solution op_type mismatch: expected '${def.opType}', got '${opType}'`);
    if (solutions.has(name)) errors.push(`${where}: duplicate solution name ${name}`);
    solutions.add(name);
  }
  const workloadUuids = new Map<string, Set<string>>();
  let traceCount = 0;
  let workloadCount = 0;
  for (const kind of ['workloads', 'traces'] as const)
    for (const p of filesUnder(join(root, kind)).filter((f) => f.endsWith('.jsonl')).sort()) {
      const parts = rel(p);
      const where = relative(root, p);
      const [opType, file] = kind === 'workloads' ? parts.slice(1) : parts.slice(2);
      if (parts.length !== (kind === 'workloads' ? 3 : 4)) {
        errors.push(`${where}: ${kind} belong at ${kind === 'workloads' ? 'workloads/<op_type>' : 'traces/<author>/<op_type>'}/<definition>.jsonl`);
        continue;
      }
      const defName = file.replace(/\.jsonl$/, '');
      const def = definitions.get(defName);
      if (!def) errors.push(`${where}: definition ${defName} does not exist`);
      else if (def.opType !== opType) errors.push(`${where}: op_type mismatch: expected '${def.opType}', got '${opType}'`);
      readFileSync(p, 'utf8').split('\n').forEach((line, i) => {
        if (line.trim() === '') return;
        const at = `${where}:${i + 1}`;
        const t = parseJson(line, at, errors) as Obj;
        errors.push(...checkTrace(t, at));
        if (!t) return;
        if (t.definition !== defName) errors.push(`${at}: trace definition mismatch: expected '${defName}', got '${String(t.definition)}'`);
        const workload = t.workload as { axes: Obj; inputs: Obj; uuid: string };
        const onlyWorkload = (t.solution ?? null) === null && (t.evaluation ?? null) === null;
        if (kind === 'workloads') {
          workloadCount++;
          if (!onlyWorkload) errors.push(`${at}: a workload entry has no solution or evaluation`);
          const uuids = workloadUuids.get(defName) ?? new Set<string>();
          uuids.add(workload?.uuid);
          workloadUuids.set(defName, uuids);
        } else {
          traceCount++;
          if (onlyWorkload || !t.solution || !t.evaluation) errors.push(`${at}: a trace needs a solution and an evaluation`);
          else if (!solutions.has(String(t.solution))) errors.push(`${at}: unknown solution ${String(t.solution)}`);
          if (!workloadUuids.get(defName)?.has(workload?.uuid)) errors.push(`${at}: workload ${workload?.uuid} is not in workloads/`);
        }
        // The workload binds every var axis (no extra) to a positive value and names exactly the inputs.
        if (def && workload?.axes && workload.inputs) {
          const vars = Object.entries(def.def.axes).filter(([, a]) => a.type === 'var').map(([n]) => n).sort();
          const given = Object.keys(workload.axes).sort();
          if (vars.join() !== given.join()) errors.push(`${at}: workload axes ${given.join(',')} do not match the var axes ${vars.join(',')}`);
          for (const [k, n] of Object.entries(workload.axes)) if (!((n as number) > 0)) errors.push(`${at}: axis ${k} must be > 0`);
          const inputs = Object.keys(def.def.inputs).sort();
          if (Object.keys(workload.inputs).sort().join() !== inputs.join()) errors.push(`${at}: workload inputs must be exactly ${inputs.join(', ')}`);
        }
      });
    }
  return { errors, counts: { definitions: definitions.size, solutions: solutions.size, workloads: workloadCount, traces: traceCount } };
}
