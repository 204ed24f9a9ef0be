// Kernel arguments of every normgen forward kernel: one struct passed by value, so
// every variant of every feature set has the same signature. Unused pointers are null.
#pragma once
#include <stdint.h>

typedef struct NormgenFwdParams {
  const void* x;             // [rows, x_stride], dtype T
  const void* residual;      // [rows, residual_stride], dtype R (fused residual only)
  const void* weight;        // [hidden], dtype W
  const void* bias;          // [hidden], dtype B
  void* y;                   // [rows, y_stride], dtype T
  void* residual_out;        // [rows, residual_out_stride], dtype R: x + residual
  float* mean;               // [rows] (LayerNorm with statistics)
  float* rstd;               // [rows] (with statistics)
  int64_t rows;
  int64_t hidden;
  int64_t x_stride;          // row strides in elements; the last dimension is contiguous
  int64_t residual_stride;
  int64_t y_stride;
  int64_t residual_out_stride;
  float eps;
  // With programmatic launch, where this grid lets the next one launch: 0 as it starts, 1 once
  // it has waited for its predecessor, 2 as its CTAs exit (chosen per problem by the tuner's finals).
  int32_t release_at;
} NormgenFwdParams;
