// The GPU a runner sees: identity, and the check that it matches the requested arch.

import { archForComputeCapability, type Arch } from '../generator/arch.js';
import { InputError } from '../generator/problem.js';
import type { LaunchMode } from './db.js';
import type { Runner } from './runner.js';

/** No usable GPU: a clear one-line error, not a stack trace. */
export class DeviceError extends Error {
  override name = 'DeviceError';
}

export interface DeviceId {
  name: string;
  arch: string;
  computeCapability: string;
  sms: number;
  memoryBytes: number;
  l2Bytes: number;
  /** The kernel driver's version (580.x), and the CUDA version it supports (13000). */
  driver: string;
  driverCuda: number;
  cudaRuntime: number;
  uuid: string;
}

export async function queryDevice(runner: Runner): Promise<DeviceId> {
  return (await queryRunner(runner)).device;
}

/**
 * The GPU, and how the runner launches the kernels it times: with programmatic dependent
 * launch (sm90 and later unless NORMGEN_PDL=0), as the package launches them, or plainly.
 */
export async function queryRunner(runner: Runner): Promise<{ device: DeviceId; launch: LaunchMode }> {
  const r = await runner.request({ cmd: 'info' }, 60_000);
  if (r.status !== 'OK') throw new DeviceError(`no usable GPU ${runner.gpu} (the bench runner says: ${r.error ?? r.status})`);
  const major = r.major as number;
  const minor = r.minor as number;
  const device: DeviceId = {
    name: String(r.name),
    arch: archForComputeCapability(major, minor)?.name ?? `sm${major}${minor}`,
    computeCapability: `${major}.${minor}`,
    sms: r.sms as number,
    memoryBytes: r.memoryBytes as number,
    l2Bytes: r.l2Bytes as number,
    driver: /\b(\d+\.\d+(?:\.\d+)?)\b/.exec(String(r.driverVersion))?.[1] ?? String(r.driverVersion),
    driverCuda: r.driver as number,
    cudaRuntime: r.runtime as number,
    uuid: String(r.uuid),
  };
  return { device, launch: r.programmaticLaunch === true ? 'programmatic' : 'plain' };
}

/** --arch must name the GPU that is actually there. */
export function checkArchMatches(arch: Arch, device: DeviceId): void {
  if (device.arch !== arch.name) {
    throw new InputError(`--arch ${arch.name} does not match GPU '${device.name}' (compute capability ${device.computeCapability}, ${device.arch}): pass --arch ${device.arch}`);
  }
}

export async function copyBandwidth(runner: Runner, bytes = 1 << 30): Promise<number> {
  const r = await runner.request({ cmd: 'copy', bytes, samples: 20 }, 120_000);
  if (r.status !== 'OK') throw new Error(`copy bandwidth measurement failed: ${r.error ?? r.status}`);
  return r.gbps as number;
}
