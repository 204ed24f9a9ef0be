/* GPU test of a built multi-device package: which table the launcher picks for the GPU
 * present (and that it agrees with normgen_table_for on this GPU's properties), then a
 * few normgen_forward calls checked against a float64 reference on the host.
 *   nvcc -x cu -I PKG/include -o package-device test/gpu/package-device.c -LPKG -lnormgen -Xlinker -rpath=PKG
 *   ./package-device            -> one line per check; exit 1 on any failure */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "normgen.h"

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
  return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* y = norm(x) * w (+ b); bf16 rows, fp32 math on the device, float64 here. */
static int check_forward(normgen_op op, int64_t rows, int64_t hidden) {
  const size_t n = (size_t)(rows * hidden);
  uint16_t *x = (uint16_t*)malloc(n * 2), *y = (uint16_t*)malloc(n * 2), *w = (uint16_t*)malloc(hidden * 2), *b = (uint16_t*)malloc(hidden * 2);
  srand(7);
  for (size_t i = 0; i < n; ++i) x[i] = to_bf16((float)rand() / RAND_MAX * 4.0f - 2.0f);
  for (int64_t i = 0; i < hidden; ++i) {
    w[i] = to_bf16(0.5f + (float)rand() / RAND_MAX);
    b[i] = to_bf16((float)rand() / RAND_MAX - 0.5f);
  }
  void *dx, *dy, *dw, *db;
  cudaMalloc(&dx, n * 2); cudaMalloc(&dy, n * 2); cudaMalloc(&dw, hidden * 2); cudaMalloc(&db, hidden * 2);
  cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w, hidden * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, hidden * 2, cudaMemcpyHostToDevice);
  cudaMemset(dy, 0xff, n * 2); /* NaN until written */
  normgen_fwd_desc d;
  memset(&d, 0, sizeof d);
  d.op = op; d.dtype = NORMGEN_BF16; d.weight_dtype = NORMGEN_BF16; d.residual_dtype = NORMGEN_NONE;
  d.has_bias = op == NORMGEN_LAYERNORM;
  d.x = dx; d.y = dy; d.weight = dw; d.bias = d.has_bias ? db : NULL;
  d.rows = rows; d.hidden = hidden; d.x_stride = d.y_stride = hidden; d.eps = 1e-6f;
  int path = -1;
  const int variant = normgen_select(&d, &path);
  const normgen_status s = normgen_forward(&d);
  const cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(y, dy, n * 2, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, sq = 0;
    for (int64_t c = 0; c < hidden; ++c) mean += from_bf16(x[r * hidden + c]);
    mean = op == NORMGEN_LAYERNORM ? mean / hidden : 0;
    for (int64_t c = 0; c < hidden; ++c) {
      const double v = from_bf16(x[r * hidden + c]) - mean;
      sq += v * v;
    }
    const double rstd = 1.0 / sqrt(sq / hidden + 1e-6);
    for (int64_t c = 0; c < hidden; ++c) {
      double want = (from_bf16(x[r * hidden + c]) - mean) * rstd * from_bf16(w[c]) + (d.has_bias ? from_bf16(b[c]) : 0);
      const double got = from_bf16(y[r * hidden + c]);
      const double ratio = fabs(got - want) / (1e-5 + 8e-3 * fabs(want)); /* bf16 tolerance */
      if (!(ratio <= worst)) worst = ratio; /* NaN propagates as a failure */
    }
  }
  const int ok = s == NORMGEN_OK && e == cudaSuccess && worst <= 1.0;
  printf("%s forward %s bf16 rows %lld hidden %lld: variant %d path %d, status %d (%s), worst error %.3f of tolerance\n",
         ok ? "ok" : "FAIL", op == NORMGEN_RMSNORM ? "rmsnorm" : "layernorm", (long long)rows, (long long)hidden, variant, path, (int)s,
         s == NORMGEN_OK ? cudaGetErrorString(e) : normgen_last_error(), worst);
  cudaFree(dx); cudaFree(dy); cudaFree(dw); cudaFree(db);
  free(x); free(y); free(w); free(b);
  return ok;
}

int main(void) {
  int device = 0;
  cudaDeviceProp prop;
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    printf("FAIL no usable GPU\n");
    return 1;
  }
  const int cc = prop.major * 10 + prop.minor;
  const int current = normgen_current_table(), again = normgen_current_table();
  const int expected = normgen_table_for(prop.name, cc);
  int ok = current == expected && again == current;
  printf("%s GPU '%s' (compute capability %d): table %d of %d, tuned on '%s'; normgen_table_for says %d\n", ok ? "ok" : "FAIL", prop.name, cc,
         current, normgen_table_count(), normgen_table_device(current), expected);
  ok &= check_forward(NORMGEN_RMSNORM, 2048, 4096);
  ok &= check_forward(NORMGEN_RMSNORM, 37, 5000);
  ok &= check_forward(NORMGEN_LAYERNORM, 32, 8192);
  return ok ? 0 : 1;
}
