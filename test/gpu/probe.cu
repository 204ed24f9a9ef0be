// Probe: hand-written bf16 RMSNorm/LayerNorm kernels, one row per CTA, timed against
// cudaMemcpy in one process (32768 rows).
// 1. Load order, row in registers. What the bounds checks of a kernel that takes hidden at
//    run time cost, depending on the order of its loads:
//   fixed         hidden known at compile time, no bounds checks (the ceiling)
//   convert-in-if each chunk loaded and converted inside its own bounds check (the
//                 templates before load_chunks)
//   loads-first   every chunk's vector load issued, then partial chunks, then conversions
//                 (load_chunks in templates/cuda/partials/fwd_common.cuh.hbs)
// 2. Two passes over the row at full occupancy (the shape of torch.compile's kernels: 512
//    threads, ~32 registers, the row read again from L2 in pass two): loop-fixed (hidden
//    known at compile time, two steps of one chunk unrolled), loop-N
//    (hidden at run time, N 16-byte chunks a thread per step).
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/probe test/gpu/probe.cu && /tmp/probe > probe.md
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "block_sum.cuh"
#include "cuda_check.h"

using bf16 = __nv_bfloat16;
struct alignas(16) Chunk { bf16 v[8]; };  // 8 values, one 16-byte load
enum Order { FIXED, CONVERT_IN_IF, LOADS_FIRST };
const char* kOrderName[] = {"fixed", "convert-in-if", "loads-first"};

__device__ Chunk zero_chunk() {
  Chunk c;
  for (int k = 0; k < 8; ++k) c.v[k] = __float2bfloat16(0.f);
  return c;
}

/** Weight or bias at one chunk: one vector load when whole, else element by element. */
__device__ Chunk chunk_at(const bf16* __restrict__ p, int col, int hidden) {
  if (col + 8 <= hidden) return *reinterpret_cast<const Chunk*>(p + col);
  Chunk c = zero_chunk();
#pragma unroll
  for (int k = 0; k < 8; ++k)
    if (col + k < hidden) c.v[k] = p[col + k];
  return c;
}

// Row of ITEMS chunks per thread (THREADS * 8 * ITEMS columns at most), kept as floats.
template <bool LN, int THREADS, int ITEMS, Order ORDER>
__global__ void __launch_bounds__(THREADS) norm_row(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                    const bf16* __restrict__ b, bf16* __restrict__ y, int hidden_arg) {
  __shared__ float partial[2][THREADS / 32];
  const int hidden = ORDER == FIXED ? THREADS * 8 * ITEMS : hidden_arg;
  const bf16* xr = x + size_t(blockIdx.x) * hidden;
  bf16* yr = y + size_t(blockIdx.x) * hidden;
  auto col = [](int i) { return (i * THREADS + int(threadIdx.x)) * 8; };
  float v[ITEMS][8];
  if (ORDER == CONVERT_IN_IF) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (col(i) + 8 <= hidden) {
        const Chunk c = *reinterpret_cast<const Chunk*>(xr + col(i));
        for (int k = 0; k < 8; ++k) v[i][k] = __bfloat162float(c.v[k]);
      } else {
        for (int k = 0; k < 8; ++k) v[i][k] = col(i) + k < hidden ? __bfloat162float(xr[col(i) + k]) : 0.f;
      }
    }
  } else {
    Chunk raw[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      raw[i] = zero_chunk();
      if (ORDER == FIXED || col(i) + 8 <= hidden) raw[i] = *reinterpret_cast<const Chunk*>(xr + col(i));
    }
    if (ORDER == LOADS_FIRST && hidden % 8 != 0) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i)
        if (col(i) < hidden && col(i) + 8 > hidden)
#pragma unroll
          for (int k = 0; k < 8; ++k)
            if (col(i) + k < hidden) raw[i].v[k] = xr[col(i) + k];
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      for (int k = 0; k < 8; ++k) v[i][k] = __bfloat162float(raw[i].v[k]);
  }
  float sum = 0.f, sq = 0.f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i)
    for (int k = 0; k < 8; ++k) sum += v[i][k];
  const float mean = LN ? block_sum<THREADS>(sum, partial[0]) / hidden : 0.f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i)
    for (int k = 0; k < 8; ++k)
      if (col(i) + k < hidden) sq += (v[i][k] - mean) * (v[i][k] - mean);
  const float rstd = rsqrtf(block_sum<THREADS>(sq, partial[1]) / hidden + 1e-6f);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (col(i) >= hidden) continue;
    const Chunk wc = chunk_at(w, col(i), hidden), bc = chunk_at(b, col(i), hidden);
    Chunk out;
    for (int k = 0; k < 8; ++k) {
      const float o = (v[i][k] - mean) * rstd * __bfloat162float(wc.v[k]);
      out.v[k] = __float2bfloat16(LN ? o + __bfloat162float(bc.v[k]) : o);
    }
    if (col(i) + 8 <= hidden) *reinterpret_cast<Chunk*>(yr + col(i)) = out;
    else
#pragma unroll
      for (int k = 0; k < 8; ++k)
        if (col(i) + k < hidden) yr[col(i) + k] = out.v[k];
  }
}

// Two passes: sums of the row (LayerNorm: shifted by its first value), then the row read
// again (from L2) and normalized. CHUNKS 16-byte chunks a thread per step; FIXED > 0: hidden
// is FIXED at compile time. hidden must be a multiple of THREADS * 8 * CHUNKS.
template <bool LN, int THREADS, int CHUNKS, int FIXED, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) norm_loop(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                                 const bf16* __restrict__ b, bf16* __restrict__ y, int hidden_arg) {
  __shared__ float partial[2][THREADS / 32];
  const int hidden = FIXED > 0 ? FIXED : hidden_arg;
  const bf16* xr = x + size_t(blockIdx.x) * hidden;
  bf16* yr = y + size_t(blockIdx.x) * hidden;
  constexpr int kStep = THREADS * 8 * CHUNKS;
  constexpr int kUnrollSteps = FIXED > 0 ? 2 : 1;  // run-time hidden: exactly CHUNKS loads in flight
  auto col = [](int base, int u) { return base + (u * THREADS + int(threadIdx.x)) * 8; };
  const float shift = LN ? __bfloat162float(xr[0]) : 0.f;
  float sum = 0.f, sq = 0.f;
#pragma unroll(kUnrollSteps)
  for (int base = 0; base < hidden; base += kStep) {
    Chunk c[CHUNKS];
#pragma unroll
    for (int u = 0; u < CHUNKS; ++u) c[u] = *reinterpret_cast<const Chunk*>(xr + col(base, u));
#pragma unroll
    for (int u = 0; u < CHUNKS; ++u)
      for (int k = 0; k < 8; ++k) {
        const float d = __bfloat162float(c[u].v[k]) - shift;
        sum += d;
        sq += d * d;
      }
  }
  float mean = 0.f, rstd;
  if (LN) {
    const float shifted = block_sum<THREADS>(sum, partial[0]) / hidden;
    mean = shift + shifted;
    rstd = rsqrtf(fmaxf(block_sum<THREADS>(sq, partial[1]) / hidden - shifted * shifted, 0.f) + 1e-6f);
  } else {
    rstd = rsqrtf(block_sum<THREADS>(sq, partial[1]) / hidden + 1e-6f);
  }
#pragma unroll(kUnrollSteps)
  for (int base = 0; base < hidden; base += kStep) {
    Chunk c[CHUNKS], wc[CHUNKS], bc[CHUNKS];
#pragma unroll
    for (int u = 0; u < CHUNKS; ++u) {
      c[u] = *reinterpret_cast<const Chunk*>(xr + col(base, u));
      wc[u] = *reinterpret_cast<const Chunk*>(w + col(base, u));
      if (LN) bc[u] = *reinterpret_cast<const Chunk*>(b + col(base, u));
    }
#pragma unroll
    for (int u = 0; u < CHUNKS; ++u) {
      Chunk out;
      for (int k = 0; k < 8; ++k) {
        const float o = (__bfloat162float(c[u].v[k]) - mean) * rstd * __bfloat162float(wc[u].v[k]);
        out.v[k] = __float2bfloat16(LN ? o + __bfloat162float(bc[u].v[k]) : o);
      }
      *reinterpret_cast<Chunk*>(yr + col(base, u)) = out;
    }
  }
}

using Kernel = void (*)(const bf16*, const bf16*, const bf16*, bf16*, int);
struct Case { bool layernorm; int hidden, threads; const char* kind; Kernel kernel; };
#define CASES(LN, H, T)                                                                     \
  Case{LN, H, T, kOrderName[FIXED], norm_row<LN, T, H / (T * 8), FIXED>},                   \
  Case{LN, H, T, kOrderName[CONVERT_IN_IF], norm_row<LN, T, H / (T * 8), CONVERT_IN_IF>},   \
  Case{LN, H, T, kOrderName[LOADS_FIRST], norm_row<LN, T, H / (T * 8), LOADS_FIRST>}
// Two-pass loops, 512 threads, N CTAs an SM (4: at most 32 registers, 3: 40, 2: 64).
#define LOOPS(LN, H)                                                                        \
  Case{LN, H, 512, "loop-fixed, 2 CTAs", norm_loop<LN, 512, 1, H, 2>},                      \
  Case{LN, H, 512, "loop-1, 4 CTAs", norm_loop<LN, 512, 1, 0, 4>},                          \
  Case{LN, H, 512, "loop-1, 3 CTAs", norm_loop<LN, 512, 1, 0, 3>},                          \
  Case{LN, H, 512, "loop-2, 3 CTAs", norm_loop<LN, 512, 2, 0, 3>},                          \
  Case{LN, H, 512, "loop-2, 2 CTAs", norm_loop<LN, 512, 2, 0, 2>}

int main() {
  const int rows = 32768, max_hidden = 16384;
  const Case cases[] = {CASES(false, 4096, 256), CASES(false, 8192, 256), CASES(false, 16384, 512),
                        CASES(true, 4096, 256),  CASES(true, 8192, 256),  CASES(true, 16384, 512),
                        LOOPS(false, 8192),      LOOPS(false, 16384),     LOOPS(true, 8192),
                        LOOPS(true, 16384)};
  const size_t max_elems = size_t(rows) * max_hidden;
  // Two sets of inputs and outputs, alternated, so no launch finds its input in L2.
  bf16 *x[2], *y[2], *w, *b;
  for (int s = 0; s < 2; ++s) {
    CHECK(cudaMalloc(&x[s], max_elems * 2));
    CHECK(cudaMalloc(&y[s], max_elems * 2));
  }
  CHECK(cudaMalloc(&w, max_hidden * 2));
  CHECK(cudaMalloc(&b, max_hidden * 2));
  std::vector<bf16> hx(max_elems), hw(max_hidden), hb(max_hidden);
  srand(7);
  for (auto& e : hx) e = __float2bfloat16(2.f * rand() / RAND_MAX - 0.5f);
  for (int i = 0; i < max_hidden; ++i) hw[i] = __float2bfloat16(0.5f + float(rand()) / RAND_MAX);
  for (int i = 0; i < max_hidden; ++i) hb[i] = __float2bfloat16(float(rand()) / RAND_MAX - 0.5f);
  for (int s = 0; s < 2; ++s) CHECK(cudaMemcpy(x[s], hx.data(), max_elems * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(w, hw.data(), max_hidden * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), max_hidden * 2, cudaMemcpyHostToDevice));

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  auto median_us = [&](auto launch) {  // 3 warm-up launches, median of 15
    std::vector<float> us;
    for (int i = 0; i < 18; ++i) {
      CHECK(cudaEventRecord(start));
      launch(i & 1);
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (i >= 3) us.push_back(1000.f * ms);
    }
    CHECK(cudaGetLastError());
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  // Largest error over three rows against float64.
  auto max_error = [&](const Case& c) {
    std::vector<bf16> hy(c.hidden);
    double worst = 0;
    for (int row : {0, 1, rows - 1}) {
      CHECK(cudaMemcpy(hy.data(), y[0] + size_t(row) * c.hidden, c.hidden * 2, cudaMemcpyDeviceToHost));
      const bf16* xr = hx.data() + size_t(row) * c.hidden;
      double sum = 0, sq = 0;
      for (int i = 0; i < c.hidden; ++i) sum += __bfloat162float(xr[i]);
      const double mean = c.layernorm ? sum / c.hidden : 0;
      for (int i = 0; i < c.hidden; ++i) sq += std::pow(__bfloat162float(xr[i]) - mean, 2);
      const double rstd = 1 / std::sqrt(sq / c.hidden + 1e-6);
      for (int i = 0; i < c.hidden; ++i) {
        const double ref = (__bfloat162float(xr[i]) - mean) * rstd * __bfloat162float(hw[i]) + (c.layernorm ? __bfloat162float(hb[i]) : 0);
        const double err = std::fabs(ref - __bfloat162float(hy[i]));
        if (!(err <= worst)) worst = err;  // NaN counts as worst
      }
    }
    return worst;
  };

  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("# Probe: %s, bf16, %d rows\n\n", prop.name, rows);
  printf("| op | hidden | threads | kernel | us | %% of memcpy | max error |\n|---|---|---|---|---|---|---|\n");
  for (const Case& c : cases) {
    const size_t bytes = size_t(rows) * c.hidden * 2;
    // Input rows are laid out with stride `hidden`: x[s] reinterpreted for this hidden.
    const float copy_us = median_us([&](int s) { CHECK(cudaMemcpyAsync(y[s], x[s], bytes, cudaMemcpyDeviceToDevice)); });
    CHECK(cudaMemset(y[0], 0xff, bytes));  // poison: NaNs
    const float us = median_us([&](int s) { c.kernel<<<rows, c.threads>>>(x[s], w, b, y[s], c.hidden); });
    printf("| %s | %d | %d | %s | %.1f | %.1f | %.3g |\n", c.layernorm ? "layernorm" : "rmsnorm", c.hidden, c.threads,
           c.kind, us, 100.f * copy_us / us, max_error(c));
  }
  return 0;
}
