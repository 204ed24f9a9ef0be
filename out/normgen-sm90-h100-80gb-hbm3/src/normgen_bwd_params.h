// Kernel arguments of every normgen backward kernel (the row kernel and the column
// reduction): one struct passed by value, like NormgenFwdParams. Unused pointers are null.
#pragma once
#include <stdint.h>

typedef struct NormgenBwdParams {
  const void* x;             // [rows, x_stride], dtype X: what the forward normalized (x, or x + residual)
  const void* dy;            // [rows, dy_stride], dtype T: gradient of y
  const void* dresidual;     // [rows, dresidual_stride], dtype X: gradient reaching residual_out, added to dx
  const void* weight;        // [hidden], dtype W
  const float* mean;         // [rows] saved by the forward (LayerNorm); unused when recomputed
  const float* rstd;         // [rows] saved by the forward; unused when recomputed
  void* dx;                  // [rows, dx_stride], dtype X
  float* partial;            // [n_acc, partial_rows, hidden] fp32: per-CTA sums of dy * xhat (dweight), then dy (dbias)
  void* dweight;             // [hidden], dtype W
  void* dbias;               // [hidden], dtype B
  int64_t rows;
  int64_t hidden;
  int64_t x_stride;          // row strides in elements; the last dimension is contiguous
  int64_t dy_stride;
  int64_t dresidual_stride;
  int64_t dx_stride;
  int64_t partial_rows;      // CTAs the row kernel was launched with (its gridDim.x)
  float eps;
} NormgenBwdParams;
