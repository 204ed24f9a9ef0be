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
  storage: 'regs' | 'packed' | 'pipelined' | 'smem' | 'reload' | 'ring';
  threads: number;
  vec: number;
  threadsPerRow: number;
  items: number;
  cluster: number;
  stages: number;
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
  { "symbol": "normgen_layernorm_fwd_e667bf723922", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1, "stages": 3 },
  { "symbol": "normgen_layernorm_fwd_91fce6cec897", "storage": "regs", "threads": 64, "vec": 8, "threadsPerRow": 64, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_a5281092c6c8", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 32, "items": 4, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_layernorm_fwd_2179c0aebe61", "storage": "ring", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 1, "cluster": 1, "stages": 3 },
  { "symbol": "normgen_layernorm_fwd_d97aa2b79b01", "storage": "ring", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 2, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_layernorm_fwd_6efcafd0761b", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 128, "items": 4, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_layernorm_fwd_3affb0b3d438", "storage": "ring", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 1, "stages": 3 },
  { "symbol": "normgen_layernorm_fwd_4112e1075c88", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 256, "items": 4, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_layernorm_fwd_e70b45b45896", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 2, "cluster": 8, "stages": 3 },
  { "symbol": "normgen_layernorm_fwd_fdd6be72e6b7", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 512, "items": 4, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_layernorm_fwd_6d0670913373", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 8, "cluster": 8, "stages": 2 },
  { "symbol": "normgen_layernorm_fwd_f5a76a5a38a2", "storage": "smem", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_0086ff8df012", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 16, "cluster": 8, "stages": 2 },
  { "symbol": "normgen_layernorm_fwd_832433d2d7b5", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 4, "cluster": 4, "stages": 3 },
  { "symbol": "normgen_layernorm_fwd_ff2da0f97816", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_e09e8cd6b7cc", "storage": "pipelined", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 1, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_cc524043a298", "storage": "regs", "threads": 128, "vec": 2, "threadsPerRow": 128, "items": 4, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_8da69f47f3e2", "storage": "regs", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_f47ed9037c0a", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_f006b59512a6", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 4, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_1525b1f5cf6e", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 4, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_c49e011140d6", "storage": "smem", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_4ffd6a4cad63", "storage": "pipelined", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 4, "cluster": 4, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_b6a17a73ac1c", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 4, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_94c7c598a101", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 16, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_ea2ca53013d8", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 16, "cluster": 4, "stages": 0 },
  { "symbol": "normgen_layernorm_fwd_58eb164a4b29", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_7f360e3158ca", "storage": "ring", "threads": 256, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_3fd293002f29", "storage": "regs", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_dbbadfeaba76", "storage": "ring", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 1, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_f1dd0bc265cc", "storage": "ring", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 2, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_e66bc88e5fdd", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 256, "items": 2, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_4f52bd52bc42", "storage": "ring", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_47e5aa8fa344", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_0b7df2768a90", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 2, "cluster": 8, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_a13362f3ac22", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 512, "items": 4, "cluster": 1, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_c8e2e5802b8a", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_110c120772e9", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 4, "cluster": 2, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_2d3e4b6557f7", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 16, "cluster": 8, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_ad97a5ff75e4", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 4, "cluster": 4, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_0d3a3a983d1d", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_ebbb91c86042", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_b05251c18d8a", "storage": "regs", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 1, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_5b76d0afba88", "storage": "ring", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 1, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_9007a53b6a26", "storage": "regs", "threads": 256, "vec": 8, "threadsPerRow": 256, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_9a91178d8438", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 1, "cluster": 1, "stages": 2 },
  { "symbol": "normgen_rmsnorm_fwd_314d559b76f6", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 1, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_e0b7654bdb43", "storage": "ring", "threads": 128, "vec": 8, "threadsPerRow": 128, "items": 2, "cluster": 8, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_ac43801931eb", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 2, "cluster": 1, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_deadcf113dcd", "storage": "regs", "threads": 512, "vec": 8, "threadsPerRow": 512, "items": 2, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_c26190926f77", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 2, "cluster": 4, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_7917d9a35518", "storage": "ring", "threads": 1024, "vec": 8, "threadsPerRow": 1024, "items": 2, "cluster": 8, "stages": 3 },
  { "symbol": "normgen_rmsnorm_fwd_8913c559ae97", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_4a43a3acd88a", "storage": "pipelined", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 1, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_49211daed8ed", "storage": "regs", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_12e453e6dda4", "storage": "pipelined", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 4, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_8a4f39f61080", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_1849855dd3fb", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 4, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_a72b5d0d03df", "storage": "smem", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_78ea7decbd0e", "storage": "pipelined", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 4, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_cada3228df81", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_ed9e4ff46658", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 8, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_9f5a4932f8ab", "storage": "regs", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 16, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_ce8f990c52a8", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_343698900f65", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_bab770529fc9", "storage": "pipelined", "threads": 512, "vec": 2, "threadsPerRow": 512, "items": 1, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_fffbf7d9fd2a", "storage": "regs", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_3284ccdc2365", "storage": "pipelined", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_4997793fc821", "storage": "regs", "threads": 1024, "vec": 4, "threadsPerRow": 1024, "items": 1, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_00f616022ead", "storage": "pipelined", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 4, "cluster": 4, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_49513d0a1bae", "storage": "regs", "threads": 1024, "vec": 4, "threadsPerRow": 1024, "items": 2, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_41a0ce7dfa48", "storage": "pipelined", "threads": 128, "vec": 4, "threadsPerRow": 128, "items": 4, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_e15fc8fb6bcb", "storage": "regs", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 4, "cluster": 4, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_cc751b563d16", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 4, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_f0c6092f588f", "storage": "pipelined", "threads": 256, "vec": 4, "threadsPerRow": 256, "items": 8, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_911de0b32672", "storage": "regs", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 8, "cluster": 8, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_6d8631493801", "storage": "reload", "threads": 512, "vec": 4, "threadsPerRow": 512, "items": 0, "cluster": 1, "stages": 0 },
  { "symbol": "normgen_rmsnorm_fwd_b7c26804b933", "storage": "reload", "threads": 256, "vec": 1, "threadsPerRow": 256, "items": 0, "cluster": 1, "stages": 0 },
];
export const SPECS: readonly { key: string; generic: number }[] = [
  { "key": "layernorm.bf16.w-same.bias", "generic": 14 },
  { "key": "layernorm.fp32.w-same.bias", "generic": 26 },
  { "key": "rmsnorm.bf16.w-same", "generic": 40 },
  { "key": "rmsnorm.bf16.w-same.res-same", "generic": 52 },
  { "key": "rmsnorm.fp32.w-same", "generic": 64 },
  { "key": "rmsnorm.fp32.w-same.res-same", "generic": 77 },
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
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 1024, "rows": 32768, "variant": 2 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 4096, "rows": 32, "variant": 3 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 4096, "rows": 2048, "variant": 4 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 4096, "rows": 32768, "variant": 5 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 8192, "rows": 32, "variant": 6 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 8192, "rows": 2048, "variant": 7 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 8192, "rows": 32768, "variant": 7 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 16384, "rows": 32, "variant": 8 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 16384, "rows": 2048, "variant": 9 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 16384, "rows": 32768, "variant": 9 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 65536, "rows": 32, "variant": 10 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 65536, "rows": 2048, "variant": 11 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 65536, "rows": 32768, "variant": 11 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 131072, "rows": 32, "variant": 12 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 131072, "rows": 2048, "variant": 13 },
      { "spec": "layernorm.bf16.w-same.bias", "hidden": 131072, "rows": 32768, "variant": 13 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 1024, "rows": 32, "variant": 15 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 1024, "rows": 2048, "variant": 16 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 1024, "rows": 32768, "variant": 17 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 4096, "rows": 32, "variant": 18 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 4096, "rows": 2048, "variant": 18 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 4096, "rows": 32768, "variant": 19 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 8192, "rows": 32, "variant": 20 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 8192, "rows": 2048, "variant": 20 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 8192, "rows": 32768, "variant": 21 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 16384, "rows": 32, "variant": 22 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 16384, "rows": 2048, "variant": 21 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 16384, "rows": 32768, "variant": 21 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 65536, "rows": 32, "variant": 23 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 65536, "rows": 2048, "variant": 23 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 65536, "rows": 32768, "variant": 23 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 131072, "rows": 32, "variant": 24 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 131072, "rows": 2048, "variant": 24 },
      { "spec": "layernorm.fp32.w-same.bias", "hidden": 131072, "rows": 32768, "variant": 25 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 1024, "rows": 32, "variant": 27 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 1024, "rows": 2048, "variant": 28 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 1024, "rows": 32768, "variant": 28 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 4096, "rows": 32, "variant": 29 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 4096, "rows": 2048, "variant": 30 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 4096, "rows": 32768, "variant": 31 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 8192, "rows": 32, "variant": 32 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 8192, "rows": 2048, "variant": 33 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 8192, "rows": 32768, "variant": 33 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 16384, "rows": 32, "variant": 34 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 16384, "rows": 2048, "variant": 35 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 16384, "rows": 32768, "variant": 35 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 65536, "rows": 32, "variant": 36 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 65536, "rows": 2048, "variant": 37 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 65536, "rows": 32768, "variant": 37 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 131072, "rows": 32, "variant": 38 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 131072, "rows": 2048, "variant": 39 },
      { "spec": "rmsnorm.bf16.w-same", "hidden": 131072, "rows": 32768, "variant": 39 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 1024, "rows": 32, "variant": 41 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 1024, "rows": 2048, "variant": 42 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 1024, "rows": 32768, "variant": 42 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 4096, "rows": 32, "variant": 43 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 4096, "rows": 2048, "variant": 43 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 4096, "rows": 32768, "variant": 44 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 8192, "rows": 32, "variant": 45 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 8192, "rows": 2048, "variant": 46 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 8192, "rows": 32768, "variant": 46 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 16384, "rows": 32, "variant": 47 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 16384, "rows": 2048, "variant": 48 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 16384, "rows": 32768, "variant": 48 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 65536, "rows": 32, "variant": 49 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 65536, "rows": 2048, "variant": 50 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 65536, "rows": 32768, "variant": 50 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 131072, "rows": 32, "variant": 51 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 131072, "rows": 2048, "variant": 51 },
      { "spec": "rmsnorm.bf16.w-same.res-same", "hidden": 131072, "rows": 32768, "variant": 51 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 1024, "rows": 32, "variant": 53 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 1024, "rows": 2048, "variant": 54 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 1024, "rows": 32768, "variant": 54 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 4096, "rows": 32, "variant": 55 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 4096, "rows": 2048, "variant": 55 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 4096, "rows": 32768, "variant": 56 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 8192, "rows": 32, "variant": 57 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 8192, "rows": 2048, "variant": 57 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 8192, "rows": 32768, "variant": 58 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 16384, "rows": 32, "variant": 59 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 16384, "rows": 2048, "variant": 60 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 16384, "rows": 32768, "variant": 58 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 65536, "rows": 32, "variant": 61 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 65536, "rows": 2048, "variant": 61 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 65536, "rows": 32768, "variant": 62 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 131072, "rows": 32, "variant": 63 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 131072, "rows": 2048, "variant": 63 },
      { "spec": "rmsnorm.fp32.w-same", "hidden": 131072, "rows": 32768, "variant": 63 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 1024, "rows": 32, "variant": 65 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 1024, "rows": 2048, "variant": 66 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 1024, "rows": 32768, "variant": 66 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 4096, "rows": 32, "variant": 67 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 4096, "rows": 2048, "variant": 68 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 4096, "rows": 32768, "variant": 68 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 8192, "rows": 32, "variant": 69 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 8192, "rows": 2048, "variant": 70 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 8192, "rows": 32768, "variant": 70 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 16384, "rows": 32, "variant": 71 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 16384, "rows": 2048, "variant": 72 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 16384, "rows": 32768, "variant": 72 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 65536, "rows": 32, "variant": 73 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 65536, "rows": 2048, "variant": 74 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 65536, "rows": 32768, "variant": 73 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 131072, "rows": 32, "variant": 75 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 131072, "rows": 2048, "variant": 76 },
      { "spec": "rmsnorm.fp32.w-same.res-same", "hidden": 131072, "rows": 32768, "variant": 76 },
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

