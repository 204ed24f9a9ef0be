import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { makeProblem, type KernelSpec } from '../generator/problem.js';
import { baselineParams, GENERIC_PARAMS } from '../generator/space.js';
import { makeVariant } from '../generator/variant.js';
import type { DeviceId } from '../tuner/device.js';
import { failureLines, type VerifyResult } from '../tuner/verify.js';
import { verifyReport } from '../tuner/verify-report.js';

const device: DeviceId = { name: 'NVIDIA H200', arch: 'sm90', computeCapability: '9.0', sms: 132, memoryBytes: 150e9, l2Bytes: 62914560, driver: '580.1', driverCuda: 13000, cudaRuntime: 13000, uuid: 'x' };
const spec: KernelSpec = { op: 'rmsnorm', dtype: 'bf16', features: { weight: 'same', bias: false, weightOffset: false, residual: 'none', stats: false } };
const problem = makeProblem(spec, 4096, 64);
const run = (status: string, params = baselineParams(problem)): VerifyResult => ({ problem, variant: makeVariant(spec, params), status, detail: '', tsChecked: false });

test('a variant whose registers spill is reported as not run, not as a failure', () => {
  const results = [run('OK'), run('SPILLS', GENERIC_PARAMS)];
  const report = verifyReport(device, 'normgen verify --arch sm90', results, 1);
  assert.match(report, /^# GPU correctness: PASS/);
  assert.match(report, /- runs: 1, failures: 0;/);
  assert.match(report, /not run: 1 variant\(s\) whose registers spill/);
  assert.match(report, /## not run: registers spill\n\n- rmsnorm/);
  assert.equal(failureLines(results), []);
});

test('wrong results and faults are failures', () => {
  for (const status of ['INCORRECT', 'RUNTIME_ERROR', 'TIMEOUT', 'COMPILE_ERROR']) {
    const results = [run('OK'), run(status, GENERIC_PARAMS)];
    assert.match(verifyReport(device, 'normgen verify --arch sm90', results, 1), /^# GPU correctness: FAIL/, status);
    assert.equal(failureLines(results).length, 1, status);
  }
});

test.run();
