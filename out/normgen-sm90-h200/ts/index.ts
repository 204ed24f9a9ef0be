// normgen kernel package normgen-sm90-h200: the dispatch table tuned on NVIDIA H200 (sm90). Generated; do not edit.
export type DType = 'fp32' | 'fp16' | 'bf16';

export interface Problem {
  op: 'rmsnorm' | 'layernorm';
  dtype: DType;
  weight?: 'none' | 'fp32' | 'same';
  weightOffset?: boolean;
  bias?: boolean;
  residual?: 'none' | 'same' | 'fp32';
  stats?: boolean;
  hidden: number;
  rows: number;
  /** Row stride in elements (default: hidden). */
  stride?: number;
  /** Largest power of two, in elements, dividing every pointer (default 16). */
  alignmentElems?: number;
}

export interface Variant {
  symbol: string;
  storage: 'regs' | 'packed' | 'pipelined' | 'smem' | 'reload';
  threads: number;
  vec: number;
  threadsPerRow: number;
  items: number;
  cluster: number;
}

/** The GPU to select for: its name as CUDA reports it, and compute capability as major * 10 + minor (9.0 -> 90). */
export interface Device {
  name?: string;
  computeCapability?: number;
}

/** The dispatch table tuned on one GPU model: tuned (spec, hidden, rows) -> index into VARIANTS. */
export interface Table {
  device: string;
  arch: string;
  computeCapability: number;
  rowBuckets: readonly number[];
  entries: readonly { spec: string; hidden: number; rows: number; variant: number }[];
}

export const VARIANTS: readonly Variant[] = [
  { "symbol": "normgen_layernorm_fwd_05ca0ece3668", "storage": "regs", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_4e1af1ccca15", "storage": "regs", "threads": 64, "vec": 8, "threadsPerRow": 64, "items": 2, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_80013c9fc3b0", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 1, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_aabeb1027d3e", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 2, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_74f91e11ea37", "storage": "packed", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_6cad35c37d4b", "storage": "smem", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 0, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_78f5e9a3bb0b", "storage": "regs", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 2, "cluster": 8 },
  { "symbol": "normgen_layernorm_fwd_c0237a6feab9", "storage": "smem", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_710f42a71fe6", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 4 },
  { "symbol": "normgen_layernorm_fwd_d53c318002ed", "storage": "smem", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 0, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_61b2caf3ffc6", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 8, "cluster": 8 },
  { "symbol": "normgen_layernorm_fwd_41a9d0da596f", "storage": "reload", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 0, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_b387889e39e7", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_313cdefac5e9", "storage": "pipelined", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 1, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_e72d6c4be679", "storage": "regs", "threads": 128, "vec": 2, "threadsPerRow": 128, "items": 4, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_7f407b752b0a", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 2, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_ea5b82b88c9f", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 4, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_cd09a71f4004", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 4, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_98d5f8bb7afe", "storage": "smem", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 0, "cluster": 1 },
  { "symbol": "normgen_layernorm_fwd_9536abe4dab7", "storage": "pipelined", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 4, "cluster": 8 },
  { "symbol": "normgen_layernorm_fwd_409ddb75a006", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 4 },
  { "symbol": "normgen_layernorm_fwd_f8cd43b5577f", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 16, "cluster": 8 },
  { "symbol": "normgen_layernorm_fwd_d9e1a3f52f6b", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_134bc0e202f0", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_77a18139d5f6", "storage": "regs", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_2082dd480ee9", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_e205b685104f", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_0f73e874f6b6", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 1, "cluster": 4 },
  { "symbol": "normgen_rmsnorm_fwd_298aac7a0760", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_60bc7876c8ce", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 1, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_7e50d4b2a4ca", "storage": "smem", "threads": 512, "vec": 8, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_42fca84998c8", "storage": "smem", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_00a0b65cd5ee", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_361ca9d5f54a", "storage": "smem", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_e61585bf7f38", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 4, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_e76f578bc873", "storage": "reload", "threads": 1024, "vec": 4, "threadsPerRow": 128, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_713ce9f550b2", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_9aec074778f2", "storage": "pipelined", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_024a2559362e", "storage": "regs", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_543d28313f15", "storage": "pipelined", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_625425e26bb8", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_ad7532a9a554", "storage": "pipelined", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 1, "cluster": 4 },
  { "symbol": "normgen_rmsnorm_fwd_5a0e9e950def", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_18dfa92f86e9", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 1, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_04984be3084d", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 4, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_9e4a0a89f90e", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_c9e5746b49b3", "storage": "smem", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_a6a5a3a6032b", "storage": "packed", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 4, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_dc537149ec7c", "storage": "reload", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_edae6c196f9a", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_8bdd78c405c6", "storage": "pipelined", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_da8c3f98324a", "storage": "regs", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_6f63424d0648", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_24fb79d25232", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_940af6421afb", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 4, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_51dbdbde2b51", "storage": "smem", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_0d41f077b086", "storage": "pipelined", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 8, "cluster": 4 },
  { "symbol": "normgen_rmsnorm_fwd_750b995c87b0", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_64b444357b76", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 8, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_88bdeba0471e", "storage": "regs", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 16, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_9438b98bc15d", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_52e3b9702723", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_de327032cd8b", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_733b17baea9d", "storage": "regs", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_4e5ee30b9432", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_ad7ec0bd8ee9", "storage": "regs", "threads": 1024, "vec": 4, "threadsPerRow": 1024, "items": 1, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_339eb1517146", "storage": "reload", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 0, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_b462a8aec722", "storage": "pipelined", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 4, "cluster": 4 },
  { "symbol": "normgen_rmsnorm_fwd_7afafb5a6ac6", "storage": "regs", "threads": 1024, "vec": 4, "threadsPerRow": 1024, "items": 2, "cluster": 1 },
  { "symbol": "normgen_rmsnorm_fwd_a67cb0896713", "storage": "pipelined", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 4, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_0b682777378d", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 4, "cluster": 4 },
  { "symbol": "normgen_rmsnorm_fwd_1d083c4d2a99", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 4, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_91f3052ccfc8", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 8 },
  { "symbol": "normgen_rmsnorm_fwd_d546f184cdd3", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1 },
];
export const SPECS: readonly { key: string; generic: number }[] = [
  { "key": "layernorm.bf16.w-same.bias", "generic": 12 },
  { "key": "layernorm.fp32.w-same.bias", "generic": 22 },
  { "key": "rmsnorm.bf16.w-same", "generic": 36 },
  { "key": "rmsnorm.bf16.w-same.res-same", "generic": 49 },
  { "key": "rmsnorm.fp32.w-same", "generic": 61 },
  { "key": "rmsnorm.fp32.w-same.res-same", "generic": 73 },
];
export const TABLES: readonly Table[] = [
  {
    device: "NVIDIA H200",
    arch: "sm90",
    computeCapability: 90,
    rowBuckets: [32, 2048, 32768],
    entries: [
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 1024, "rows": 32, "variant": 0 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 1024, "rows": 2048, "variant": 1 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 1024, "rows": 32768, "variant": 1 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 4096, "rows": 32, "variant": 2 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 4096, "rows": 2048, "variant": 3 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 4096, "rows": 32768, "variant": 3 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 8192, "rows": 32, "variant": 4 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 8192, "rows": 2048, "variant": 5 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 8192, "rows": 32768, "variant": 5 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 16384, "rows": 32, "variant": 6 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 16384, "rows": 2048, "variant": 7 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 16384, "rows": 32768, "variant": 7 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 65536, "rows": 32, "variant": 8 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 65536, "rows": 2048, "variant": 9 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 65536, "rows": 32768, "variant": 9 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 131072, "rows": 32, "variant": 10 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 131072, "rows": 2048, "variant": 11 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 131072, "rows": 32768, "variant": 11 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 1024, "rows": 32, "variant": 13 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 1024, "rows": 2048, "variant": 14 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 1024, "rows": 32768, "variant": 14 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 4096, "rows": 32, "variant": 15 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 4096, "rows": 2048, "variant": 15 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 4096, "rows": 32768, "variant": 16 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 8192, "rows": 32, "variant": 17 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 8192, "rows": 2048, "variant": 17 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 8192, "rows": 32768, "variant": 18 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 16384, "rows": 32, "variant": 19 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 16384, "rows": 2048, "variant": 18 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 16384, "rows": 32768, "variant": 18 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 65536, "rows": 32, "variant": 20 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 65536, "rows": 2048, "variant": 20 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 65536, "rows": 32768, "variant": 20 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 131072, "rows": 32, "variant": 21 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 131072, "rows": 2048, "variant": 21 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 131072, "rows": 32768, "variant": 21 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 1024, "rows": 32, "variant": 23 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 1024, "rows": 2048, "variant": 24 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 1024, "rows": 32768, "variant": 24 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 4096, "rows": 32, "variant": 25 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 4096, "rows": 2048, "variant": 26 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 4096, "rows": 32768, "variant": 26 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 8192, "rows": 32, "variant": 27 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 8192, "rows": 2048, "variant": 28 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 8192, "rows": 32768, "variant": 28 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 16384, "rows": 32, "variant": 29 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 16384, "rows": 2048, "variant": 30 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 16384, "rows": 32768, "variant": 31 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 65536, "rows": 32, "variant": 32 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 65536, "rows": 2048, "variant": 33 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 65536, "rows": 32768, "variant": 33 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 131072, "rows": 32, "variant": 34 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 131072, "rows": 2048, "variant": 35 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 131072, "rows": 32768, "variant": 35 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 1024, "rows": 32, "variant": 37 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 1024, "rows": 2048, "variant": 38 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 1024, "rows": 32768, "variant": 38 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 4096, "rows": 32, "variant": 39 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 4096, "rows": 2048, "variant": 40 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 4096, "rows": 32768, "variant": 40 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 8192, "rows": 32, "variant": 41 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 8192, "rows": 2048, "variant": 42 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 8192, "rows": 32768, "variant": 42 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 16384, "rows": 32, "variant": 43 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 16384, "rows": 2048, "variant": 44 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 16384, "rows": 32768, "variant": 44 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 65536, "rows": 32, "variant": 45 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 65536, "rows": 2048, "variant": 46 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 65536, "rows": 32768, "variant": 46 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 131072, "rows": 32, "variant": 47 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 131072, "rows": 2048, "variant": 48 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 131072, "rows": 32768, "variant": 48 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 1024, "rows": 32, "variant": 50 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 1024, "rows": 2048, "variant": 51 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 1024, "rows": 32768, "variant": 51 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 4096, "rows": 32, "variant": 52 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 4096, "rows": 2048, "variant": 52 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 4096, "rows": 32768, "variant": 53 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 8192, "rows": 32, "variant": 54 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 8192, "rows": 2048, "variant": 55 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 8192, "rows": 32768, "variant": 55 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 16384, "rows": 32, "variant": 56 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 16384, "rows": 2048, "variant": 57 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 16384, "rows": 32768, "variant": 55 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 65536, "rows": 32, "variant": 58 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 65536, "rows": 2048, "variant": 59 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 65536, "rows": 32768, "variant": 59 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 131072, "rows": 32, "variant": 60 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 131072, "rows": 2048, "variant": 60 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 131072, "rows": 32768, "variant": 60 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 1024, "rows": 32, "variant": 62 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 1024, "rows": 2048, "variant": 63 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 1024, "rows": 32768, "variant": 62 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 4096, "rows": 32, "variant": 64 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 4096, "rows": 2048, "variant": 65 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 4096, "rows": 32768, "variant": 66 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 8192, "rows": 32, "variant": 67 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 8192, "rows": 2048, "variant": 68 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 8192, "rows": 32768, "variant": 68 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 16384, "rows": 32, "variant": 69 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 16384, "rows": 2048, "variant": 70 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 16384, "rows": 32768, "variant": 70 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 65536, "rows": 32, "variant": 71 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 65536, "rows": 2048, "variant": 71 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 65536, "rows": 32768, "variant": 71 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 131072, "rows": 32, "variant": 72 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 131072, "rows": 2048, "variant": 66 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 131072, "rows": 32768, "variant": 66 },
    ],
  },
];
/** Capacity of a variant: how long a row it can hold (regs-like storages are sized). */
function capacity(v: Variant): number {
  return v.storage === 'smem' || v.storage === 'reload' ? Infinity : v.items * v.threadsPerRow * v.vec * v.cluster;
}

/**
 * The table for a GPU: the one tuned on the same model (name), else on the same compute
 * capability, else on the nearest older one (code for a newer arch cannot run on it),
 * else the first. Without a device, the first table.
 */
export function tableFor(device?: Device): number {
  if (!device) return 0;
  const byName = TABLES.findIndex((t) => t.device === device.name);
  if (byName >= 0) return byName;
  const cc = device.computeCapability;
  if (cc === undefined) return 0;
  const same = TABLES.findIndex((t) => t.computeCapability === cc);
  if (same >= 0) return same;
  let nearest = -1;
  TABLES.forEach((t, i) => {
    if (t.computeCapability < cc && (nearest < 0 || t.computeCapability > TABLES[nearest].computeCapability)) nearest = i;
  });
  return nearest >= 0 ? nearest : 0;
}

/** The tuned row count standing for `rows` in a table: the nearest on a log scale. */
export function rowBucket(rows: number, table = 0): number {
  const buckets = TABLES[table].rowBuckets;
  let best = buckets[0];
  for (const b of buckets) if (Math.abs(Math.log2(b / rows)) < Math.abs(Math.log2(best / rows))) best = b;
  return best;
}

/**
 * The variant for a problem on a device (see tableFor): the exact tuned key, else the
 * nearest tuned hidden size whose variant can run it (capacity, and a vector width
 * dividing the stride and the alignment in elements), else the spec's generic variant.
 * Null for a spec the package does not have.
 */
export function select(problem: Problem, device?: Device): { variant: Variant; path: 'exact' | 'nearest' | 'generic'; table: number } | null {
  const spec = SPECS.find((s) => s.key === specKey(problem));
  if (!spec) return null;
  const table = tableFor(device);
  const stride = problem.stride ?? problem.hidden;
  const align = problem.alignmentElems ?? 16;
  const ok = (v: Variant) => problem.hidden <= capacity(v) && stride % v.vec === 0 && align % v.vec === 0;
  const bucket = rowBucket(problem.rows, table);
  let nearest: Variant | null = null;
  let distance = 0;
  for (const e of TABLES[table].entries) {
    const v = VARIANTS[e.variant];
    if (e.spec !== spec.key || e.rows !== bucket || !ok(v)) continue;
    if (e.hidden === problem.hidden) return { variant: v, path: 'exact', table };
    const d = Math.abs(Math.log2(e.hidden / problem.hidden));
    if (nearest === null || d < distance) [nearest, distance] = [v, d];
  }
  if (nearest) return { variant: nearest, path: 'nearest', table };
  return { variant: VARIANTS[spec.generic], path: 'generic', table };
}

/** The key of a problem's kernel spec, as in the tables above. */
export function specKey(p: Problem): string {
  const parts: string[] = [p.op, p.dtype, `w-${p.weight ?? 'same'}`];
  if (p.weightOffset) parts.push('offset');
  if (p.bias) parts.push('bias');
  if (p.residual && p.residual !== 'none') parts.push(`res-${p.residual}`);
  if (p.stats) parts.push('stats');
  return parts.join('.');
}

