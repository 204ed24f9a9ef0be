// GPU architectures normgen targets and the limits that prune the tunable space.

import { InputError } from './problem.js';

export interface Arch {
  /** Name users type: sm80, sm90, ... */
  name: string;
  /** Compute capability as an integer: 80, 90, ... */
  cc: number;
  /** What nvcc's -arch takes. sm90 builds sm_90a for Hopper-only instructions. */
  nvccArch: string;
  /**
   * Most CTAs a thread-block cluster (distributed shared memory, Hopper and later) may
   * have: 1 where there are none; past 8 non-portable, launched with an opt-in.
   */
  maxCluster: number;
  /** Largest dynamic shared memory one CTA may opt into, in bytes. */
  maxSharedPerBlock: number;
  maxThreadsPerSm: number;
}

const KB = 1024;

/** An SM's shared memory: 1 KiB more than one CTA may take (sm80 164/163 KiB, sm90 228/227, sm86 100/99). */
const smSharedBytes = (arch: Arch) => arch.maxSharedPerBlock + KB;

/** CTAs of `threads` threads and `sharedBytes` of shared memory each that an SM has room for (registers may allow fewer). */
export const ctasPerSm = (arch: Arch, threads: number, sharedBytes: number) =>
  Math.min(Math.floor(arch.maxThreadsPerSm / threads), Math.floor(smSharedBytes(arch) / sharedBytes));
// From the CUDA C++ Programming Guide's table of compute capabilities.
const ARCHES: Arch[] = [
  { name: 'sm80', cc: 80, nvccArch: 'sm_80', maxCluster: 1, maxSharedPerBlock: 163 * KB, maxThreadsPerSm: 2048 },
  { name: 'sm86', cc: 86, nvccArch: 'sm_86', maxCluster: 1, maxSharedPerBlock: 99 * KB, maxThreadsPerSm: 1536 },
  { name: 'sm89', cc: 89, nvccArch: 'sm_89', maxCluster: 1, maxSharedPerBlock: 99 * KB, maxThreadsPerSm: 1536 },
  { name: 'sm90', cc: 90, nvccArch: 'sm_90a', maxCluster: 16, maxSharedPerBlock: 227 * KB, maxThreadsPerSm: 2048 },
  { name: 'sm100', cc: 100, nvccArch: 'sm_100', maxCluster: 16, maxSharedPerBlock: 227 * KB, maxThreadsPerSm: 2048 },
  { name: 'sm120', cc: 120, nvccArch: 'sm_120', maxCluster: 8, maxSharedPerBlock: 99 * KB, maxThreadsPerSm: 1536 },
];

export const ARCH_NAMES = ARCHES.map((a) => a.name);

export function parseArch(name: string): Arch {
  const key = name.toLowerCase().replace(/^sm_/, 'sm').replace(/a$/, '');
  const arch = ARCHES.find((a) => a.name === key);
  if (!arch) throw new InputError(`unknown arch '${name}' (expected one of: ${ARCH_NAMES.join(', ')})`);
  return arch;
}

/** The arch of a device with compute capability major.minor, if normgen knows it. */
export function archForComputeCapability(major: number, minor: number): Arch | undefined {
  return ARCHES.find((a) => a.cc === major * 10 + minor);
}

/** Whether the arch has thread-block clusters at all. */
export function hasClusters(arch: Arch): boolean {
  return arch.maxCluster > 1;
}

/** Why a cluster larger than the arch allows cannot run. */
export function clusterLimit(arch: Arch): string {
  return hasClusters(arch) ? `${arch.name} allows clusters of at most ${arch.maxCluster} CTAs` : `${arch.name} has no thread-block clusters`;
}
