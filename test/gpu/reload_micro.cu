// The template's reload kernel against hand-written two-pass kernels, bf16 RMSNorm 32768 x 8192,
// timed in one process against cudaMemcpy (test/gpu/predicated-loads.md).
//   template  normgen::reload_kernel as the templates render it (the generated file's Config),
//             several CTA shapes, with and without the kernel's programmatic-launch prologue
//   hand      one row per CTA of TPR threads, H / (TPR * 8) 16-byte chunks a thread, loads issued
//             before any use; axes: weights loaded before the stores or chunk by chunk, L2
//             eviction hints or none, the CTA's sum by a second shuffle or read serially
// Build and run on the GPU machine, with the templates to measure:
//   node dist/cli/main.js generate --op rmsnorm --dtype bf16 --hidden 8192 --rows 32768 --out /tmp/gen
//   nvcc -O3 -std=c++17 -arch=sm_90a -I /tmp/gen -DGENERATED='"rmsnorm.bf16.w-same.sm90.176v.cu"' \
//     -o /tmp/reload_micro test/gpu/reload_micro.cu && /tmp/reload_micro
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include GENERATED

#include "cuda_check.h"

using bf16 = __nv_bfloat16;
constexpr int kHidden = 8192, kRows = 32768, kCopies = 3;  // 3 x 512 MiB of x: no L2 reuse between launches
constexpr float kEps = 1e-6f;

// Prologue 0: none; 1: the generated kernels' (release as p.release_at says, wait).
template <int THREADS, int TPR, int MIN_CTAS, int PROLOGUE>
__global__ void __launch_bounds__(THREADS, MIN_CTAS) template_reload(const NormgenFwdParams p) {
  if constexpr (PROLOGUE == 1) {
    if (p.release_at == 0) normgen::release_dependents();
    normgen::wait_for_previous_grid();
    if (p.release_at == 1) normgen::release_dependents();
  }
  normgen::reload_kernel<Config, THREADS, 8, TPR, 0, 1, kHidden>(p);
}

struct HandArgs { const bf16* x; const bf16* w; bf16* y; };

__device__ __forceinline__ uint4 load16(const void* p, bool keep, bool hinted) {
  uint4 r;
  if (!hinted) return *static_cast<const uint4*>(p);
  uint64_t pol;
  if (keep) {
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("ld.global.L1::evict_last.L2::cache_hint.v4.b32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(pol));
  } else {
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("ld.global.L1::evict_first.L2::cache_hint.v4.b32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(pol));
  }
  return r;
}
__device__ __forceinline__ void widen(uint4 u, float (&f)[8]) {
  const uint32_t words[4] = {u.x, u.y, u.z, u.w};
  for (int i = 0; i < 4; ++i) f[2 * i] = __uint_as_float(words[i] << 16), f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
}
__device__ __forceinline__ uint4 narrow(const float (&f)[8]) {
  uint32_t words[4];
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    words[i] = *reinterpret_cast<const uint32_t*>(&pair);
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

template <int TPR, int MIN_CTAS, bool WEIGHTS_FIRST, bool HINTED, bool SHUFFLE_SUM>
__global__ void __launch_bounds__(TPR, MIN_CTAS) hand_reload(HandArgs a) {
  constexpr int kChunks = kHidden / (TPR * 8), kWarps = TPR / 32;
  const int t = threadIdx.x;
  const bf16* x = a.x + int64_t(blockIdx.x) * kHidden;
  float sq = 0.f;
  {
    uint4 raw[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) raw[c] = load16(x + (c * TPR + t) * 8, true, HINTED);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      float f[8];
      widen(raw[c], f);
#pragma unroll
      for (int k = 0; k < 8; ++k) sq = fmaf(f[k], f[k], sq);
    }
  }
  for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(~0u, sq, o);
  __shared__ float partial[kWarps], total;
  if (t % 32 == 0) partial[t / 32] = sq;
  __syncthreads();
  if constexpr (SHUFFLE_SUM) {
    if (t < 32) {
      float v = t < kWarps ? partial[t] : 0.f;
      for (int o = kWarps / 2; o > 0; o /= 2) v += __shfl_xor_sync(~0u, v, o);
      if (t == 0) total = v;
    }
    __syncthreads();
    sq = total;
  } else {
    sq = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sq += partial[w];
  }
  const float rstd = rsqrtf(sq / kHidden + kEps);
  uint4 raw[kChunks], wraw[kChunks];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) raw[c] = load16(x + (c * TPR + t) * 8, false, HINTED);
  if constexpr (WEIGHTS_FIRST) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) wraw[c] = *reinterpret_cast<const uint4*>(a.w + (c * TPR + t) * 8);
  }
  bf16* y = a.y + int64_t(blockIdx.x) * kHidden;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    if constexpr (!WEIGHTS_FIRST) wraw[c] = *reinterpret_cast<const uint4*>(a.w + (c * TPR + t) * 8);
    float f[8], w[8];
    widen(raw[c], f);
    widen(wraw[c], w);
#pragma unroll
    for (int k = 0; k < 8; ++k) f[k] = f[k] * rstd * w[k];
    *reinterpret_cast<uint4*>(y + (c * TPR + t) * 8) = narrow(f);
  }
}

static bf16 *d_x, *d_w, *d_y;
static NormgenFwdParams params(int copy) {
  NormgenFwdParams p{};
  p.x = d_x + size_t(copy) * kRows * kHidden;
  p.weight = d_w;
  p.y = d_y + size_t(copy) * kRows * kHidden;
  p.rows = kRows, p.hidden = kHidden, p.eps = kEps, p.release_at = 2;
  p.x_stride = p.y_stride = p.residual_stride = p.residual_out_stride = kHidden;
  return p;
}
static HandArgs hand_args(int copy) { return {d_x + size_t(copy) * kRows * kHidden, d_w, d_y + size_t(copy) * kRows * kHidden}; }

struct Kernel { const char* name; void (*launch)(int copy); };
#define TEMPLATE(threads, tpr, min_ctas, prologue) \
  [](int c) { template_reload<threads, tpr, min_ctas, prologue><<<kRows / (threads / tpr), threads>>>(params(c)); }
#define HAND(tpr, min_ctas, weights_first, hinted, shuffle_sum) \
  [](int c) { hand_reload<tpr, min_ctas, weights_first, hinted, shuffle_sum><<<kRows, tpr>>>(hand_args(c)); }

int main() {
  const Kernel kernels[] = {
      {"template t512.tpr512, prologue", TEMPLATE(512, 512, 1, 1)},
      {"template t512.tpr512", TEMPLATE(512, 512, 1, 0)},
      {"template t512.tpr512, 4 CTAs an SM", TEMPLATE(512, 512, 4, 0)},
      {"template t512.tpr256, prologue", TEMPLATE(512, 256, 1, 1)},
      {"template t512.tpr256.cap1536, prologue", TEMPLATE(512, 256, 3, 1)},
      {"template t256.tpr256.cap1536, prologue", TEMPLATE(256, 256, 6, 1)},
      {"hand 512, weights first, hinted, shuffle sum", HAND(512, 4, true, true, true)},
      {"hand 512, weights by chunk, hinted, shuffle sum", HAND(512, 4, false, true, true)},
      {"hand 512, weights first, no hints, shuffle sum", HAND(512, 4, true, false, true)},
      {"hand 512, weights first, hinted, serial sum", HAND(512, 4, true, true, false)},
      {"hand 256 (8 CTAs), weights first, hinted", HAND(256, 8, true, true, true)},
      {"hand 256 (6 CTAs), weights first, hinted", HAND(256, 6, true, true, true)},
      {"hand 256 (6 CTAs), weights by chunk, hinted", HAND(256, 6, false, true, true)},
      {"hand 1024, weights first, hinted", HAND(1024, 2, true, true, true)},
  };
  const size_t n = size_t(kRows) * kHidden;
  CHECK(cudaMalloc(&d_x, n * kCopies * sizeof(bf16)));
  CHECK(cudaMalloc(&d_y, n * kCopies * sizeof(bf16)));
  CHECK(cudaMalloc(&d_w, kHidden * sizeof(bf16)));
  std::vector<bf16> x(n), w(kHidden), y(kHidden);
  srand(1);
  for (auto& v : x) v = __float2bfloat16(float(rand()) / RAND_MAX * 4.f - 2.f);
  for (auto& v : w) v = __float2bfloat16(float(rand()) / RAND_MAX + 0.5f);
  for (int c = 0; c < kCopies; ++c) CHECK(cudaMemcpy(d_x + c * n, x.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_w, w.data(), kHidden * sizeof(bf16), cudaMemcpyHostToDevice));

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  float copy_ms = 1e9f;
  for (int r = 0; r < 5; ++r) {
    CHECK(cudaEventRecord(start));
    CHECK(cudaMemcpyAsync(d_y, d_x, n * sizeof(bf16), cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    copy_ms = std::min(copy_ms, ms);
  }
  const double bytes = 2.0 * n * sizeof(bf16), copy_gbs = bytes / (copy_ms * 1e-3) / 1e9;
  printf("copy: %.0f GB/s (%.1f us for x's bytes, read + write)\n\n", copy_gbs, copy_ms * 1e3);

  // Every kernel checked on five rows against float64, outputs poisoned first.
  bool all_ok = true;
  for (const Kernel& k : kernels) {
    CHECK(cudaMemset(d_y, 0xff, n * sizeof(bf16)));
    k.launch(0);
    CHECK(cudaDeviceSynchronize());
    double worst = 0;
    for (int row : {0, 1, 777, 12345, kRows - 1}) {
      CHECK(cudaMemcpy(y.data(), d_y + size_t(row) * kHidden, kHidden * sizeof(bf16), cudaMemcpyDeviceToHost));
      double sum = 0;
      for (int i = 0; i < kHidden; ++i) sum += std::pow(double(__bfloat162float(x[size_t(row) * kHidden + i])), 2);
      const double rstd = 1.0 / std::sqrt(sum / kHidden + kEps);
      for (int i = 0; i < kHidden; ++i) {
        const double want = __bfloat162float(x[size_t(row) * kHidden + i]) * rstd * __bfloat162float(w[i]);
        const double err = std::fabs(__bfloat162float(y[i]) - want) / (1 + std::fabs(want));
        if (!(err <= worst)) worst = err;  // NaN (poison left) counts as worst
      }
    }
    if (!(worst < 2e-2)) printf("WRONG: %s (max error %.2e)\n", k.name, worst), all_ok = false;
  }

  // Rounds over every kernel, each round starting one further; per round 5 timings of 20 launches.
  constexpr int kRounds = 5, kTimings = 5, kLaunches = 20, kCount = sizeof(kernels) / sizeof(kernels[0]);
  std::vector<float> us[kCount];
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kCount; ++i) {
      const int k = (i + round) % kCount;
      for (int l = 0; l < 3; ++l) kernels[k].launch(l % kCopies);
      for (int t = 0; t < kTimings; ++t) {
        CHECK(cudaEventRecord(start));
        for (int l = 0; l < kLaunches; ++l) kernels[k].launch(l % kCopies);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        us[k].push_back(ms * 1e3f / kLaunches);
      }
    }
  }
  CHECK(cudaGetLastError());
  printf("| kernel | median us | min | max | GB/s | %% of copy |\n|---|---|---|---|---|---|\n");
  for (int k = 0; k < kCount; ++k) {
    std::sort(us[k].begin(), us[k].end());
    const float median = us[k][us[k].size() / 2];
    const double gbs = bytes / (median * 1e-6) / 1e9;
    printf("| %s | %.2f | %.2f | %.2f | %.0f | %.1f |\n", kernels[k].name, median, us[k].front(), us[k].back(), gbs, 100 * gbs / copy_gbs);
  }
  return all_ok ? 0 : 1;
}
