// Probe: launched plainly, bf16 RMSNorm + residual at hidden 1024 x 32 rows runs 7.7% behind
// torch.compile (2.23 against 2.07 us, test/gpu/bench_torch-h100-80gb-hbm3.md). Its code or its
// shape? One process, plain <<<>>> launches, each variant timed as a CUDA graph of back-to-back
// calls over rotating input copies that span 3.5 L2s (each call reads cold x and residual and
// writes fresh outputs, as bench_torch.py times), median of 7 replays, 3 rounds in turn:
//   pkg t128 v8   the package's kernel for this shape (regs.t128.v8.tpr128.i1.early.h1024, as its
//                 plain twin: normgen::regs_kernel from the package's own source)
//   pkg t256 v4   the same code in torch.compile's shape: 256 threads, 4 values (8 bytes) each
//   lean t128 v8, lean t256 v4   a minimal kernel of each shape: weight, x and residual loaded
//                 first (restrict pointers), the sum stored, one block reduction, y stored
//   floor: copy   the same loads and stores without the reduction (what the memory costs)
//   floor: empty  a grid of 32 CTAs of 256 threads that does nothing (what a launch costs)
// Every variant's y and residual sum, of every copy, are checked against float64 on random
// data, outputs poisoned (NaN) first.
// Build and run on the GPU machine (no Node needed):
//   nvcc -O3 -std=c++17 -arch=sm_90a -I out/normgen-sm90-h100-80gb-hbm3/src -o /tmp/lean \
//     test/gpu/lean-small.cu && /tmp/lean > lean-small.md
#include "normgen_kernels.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "block_sum.cuh"
#include "cuda_check.h"

using bf16 = __nv_bfloat16;
constexpr int kHidden = 1024, kRows = 32;
constexpr float kEps = 1e-6f;

namespace {
struct Config {  // the package's bf16 RMSNorm + residual (kernels_04_rmsnorm.bf16.w-same.res-same.cu)
  using T = bf16;
  using R = bf16;
  using W = bf16;
  using B = bf16;
  static constexpr bool kLayerNorm = false;
  static constexpr bool kWeight = true;
  static constexpr bool kWeightOffset = false;
  static constexpr bool kBias = false;
  static constexpr bool kResidual = true;
  static constexpr bool kStats = false;
};
}  // namespace

template <int THREADS, int VEC, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) pkg_kernel(const NormgenFwdParams p) {
  normgen::regs_kernel<Config, THREADS, VEC, THREADS, 1, 1, kHidden, true>(p);
}

template <int VEC>
struct alignas(2 * VEC) Vec { bf16 v[VEC]; };

// One row per CTA, THREADS * VEC == kHidden.
template <int THREADS, int VEC, bool REDUCE>
__global__ void __launch_bounds__(THREADS) lean_kernel(const bf16* __restrict__ x, const bf16* __restrict__ r, const bf16* __restrict__ w,
                                                       bf16* __restrict__ y, bf16* __restrict__ sum_out) {
  static_assert(THREADS * VEC == kHidden);
  const int64_t at = int64_t(blockIdx.x) * kHidden + threadIdx.x * VEC;
  const Vec<VEC> wv = *reinterpret_cast<const Vec<VEC>*>(w + threadIdx.x * VEC);
  const Vec<VEC> xv = *reinterpret_cast<const Vec<VEC>*>(x + at);
  const Vec<VEC> rv = *reinterpret_cast<const Vec<VEC>*>(r + at);
  Vec<VEC> sv;
  float s[VEC], squares = 0.f;
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    sv.v[k] = __float2bfloat16(__bfloat162float(xv.v[k]) + __bfloat162float(rv.v[k]));
    s[k] = __bfloat162float(sv.v[k]);
    squares += s[k] * s[k];
  }
  *reinterpret_cast<Vec<VEC>*>(sum_out + at) = sv;
  __shared__ float partial[THREADS / 32];
  const float rstd = REDUCE ? rsqrtf(block_sum<THREADS>(squares, partial) / float(kHidden) + kEps) : 1.f;
  Vec<VEC> yv;
#pragma unroll
  for (int k = 0; k < VEC; ++k) yv.v[k] = __float2bfloat16(s[k] * rstd * __bfloat162float(wv.v[k]));
  *reinterpret_cast<Vec<VEC>*>(y + at) = yv;
}

__global__ void empty_kernel() {}

struct Buffers {
  bf16 *x, *r, *w, *y, *sum;
  int copies;
};

enum Kind { PKG, LEAN, EMPTY };
struct Variant {
  const char* name;
  Kind kind;
  const void* kernel;
  int threads;
  bool checked;  // computes the op (the floors do not)
};

void launch(const Variant& v, const Buffers& b, int copy, cudaStream_t stream) {
  const int64_t off = int64_t(copy) * kRows * kHidden;
  if (v.kind == PKG) {
    NormgenFwdParams p = {};
    p.x = b.x + off, p.residual = b.r + off, p.weight = b.w, p.y = b.y + off, p.residual_out = b.sum + off;
    p.rows = kRows, p.hidden = kHidden, p.x_stride = p.residual_stride = p.y_stride = p.residual_out_stride = kHidden;
    p.eps = kEps, p.release_at = 2;
    void* args[] = {&p};
    CHECK(cudaLaunchKernel(v.kernel, dim3(kRows), dim3(v.threads), args, 0, stream));
  } else if (v.kind == LEAN) {
    const bf16 *x = b.x + off, *r = b.r + off, *w = b.w;
    bf16 *y = b.y + off, *sum = b.sum + off;
    void* args[] = {&x, &r, &w, &y, &sum};
    CHECK(cudaLaunchKernel(v.kernel, dim3(kRows), dim3(v.threads), args, 0, stream));
  } else {
    CHECK(cudaLaunchKernel(v.kernel, dim3(kRows), dim3(v.threads), nullptr, 0, stream));
  }
}

cudaGraphExec_t capture(const Variant& v, const Buffers& b, cudaStream_t stream) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int c = 0; c < b.copies; ++c) launch(v, b, c, stream);
  CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  return exec;
}

float to_float(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// Worst error of y and of the residual sum over every copy, against float64 (NaN if any output is not finite).
void check(const Buffers& b, const std::vector<uint16_t>& x, const std::vector<uint16_t>& r, const std::vector<uint16_t>& w,
           double& y_err, double& sum_err, bool& ok) {
  const size_t n = size_t(b.copies) * kRows * kHidden;
  std::vector<uint16_t> y(n), sum(n);
  CHECK(cudaMemcpy(y.data(), b.y, n * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sum.data(), b.sum, n * 2, cudaMemcpyDeviceToHost));
  y_err = sum_err = 0;
  ok = true;
  std::vector<double> s(kHidden);
  for (size_t row = 0; row < n / kHidden; ++row) {
    double squares = 0;
    for (int c = 0; c < kHidden; ++c) {
      const size_t i = row * kHidden + c;
      s[c] = double(to_float(x[i])) + double(to_float(r[i]));
      squares += s[c] * s[c];
      const double got = to_float(sum[i]), err = std::fabs(got - s[c]);
      if (!std::isfinite(got) || err > 0.004 * std::fabs(s[c]) + 1e-6) ok = false;  // a bf16 ulp: 2^-8
      sum_err = std::max(sum_err, std::isfinite(got) ? err : INFINITY);
    }
    const double rstd = 1 / std::sqrt(squares / kHidden + kEps);
    for (int c = 0; c < kHidden; ++c) {
      const size_t i = row * kHidden + c;
      const double want = s[c] * rstd * to_float(w[c]), got = to_float(y[i]), err = std::fabs(got - want);
      if (!std::isfinite(got) || err > 0.016 * std::fabs(want) + 0.01) ok = false;  // the package's bf16 tolerance
      y_err = std::max(y_err, std::isfinite(got) ? err : INFINITY);
    }
  }
}

int main() {
  int device = 0, l2 = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, device));
  const size_t in_bytes = size_t(kRows) * kHidden * 2 * 2;  // x and residual of one call
  Buffers b;
  b.copies = int(std::min<size_t>(4096, std::max<size_t>(3, (size_t(3.5 * l2) + in_bytes - 1) / in_bytes)));
  const size_t n = size_t(b.copies) * kRows * kHidden;

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> values(-2.f, 2.f), weights(0.5f, 1.5f);
  auto bf16_bits = [](float f) {
    bf16 h = __float2bfloat16(f);
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
  };
  std::vector<uint16_t> x(n), r(n), w(kHidden);
  for (auto& v : x) v = bf16_bits(values(rng));
  for (auto& v : r) v = bf16_bits(values(rng));
  for (auto& v : w) v = bf16_bits(weights(rng));
  CHECK(cudaMalloc(&b.x, n * 2));
  CHECK(cudaMalloc(&b.r, n * 2));
  CHECK(cudaMalloc(&b.y, n * 2));
  CHECK(cudaMalloc(&b.sum, n * 2));
  CHECK(cudaMalloc(&b.w, kHidden * 2));
  CHECK(cudaMemcpy(b.x, x.data(), n * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b.r, r.data(), n * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b.w, w.data(), kHidden * 2, cudaMemcpyHostToDevice));

  const Variant variants[] = {
      {"pkg t128 v8", PKG, (const void*)&pkg_kernel<128, 8, 16>, 128, true},
      {"pkg t256 v4", PKG, (const void*)&pkg_kernel<256, 4, 8>, 256, true},
      {"lean t128 v8", LEAN, (const void*)&lean_kernel<128, 8, true>, 128, true},
      {"lean t256 v4", LEAN, (const void*)&lean_kernel<256, 4, true>, 256, true},
      {"floor: copy (t256 v4)", LEAN, (const void*)&lean_kernel<256, 4, false>, 256, false},
      {"floor: empty (t256)", EMPTY, (const void*)&empty_kernel, 256, false},
  };
  constexpr int kVariants = sizeof variants / sizeof variants[0];
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  cudaGraphExec_t graphs[kVariants];
  double y_err[kVariants] = {}, sum_err[kVariants] = {};
  bool ok[kVariants];
  for (int v = 0; v < kVariants; ++v) {
    graphs[v] = capture(variants[v], b, stream);
    CHECK(cudaMemset(b.y, 0xff, n * 2));  // NaN in bf16
    CHECK(cudaMemset(b.sum, 0xff, n * 2));
    CHECK(cudaGraphLaunch(graphs[v], stream));
    CHECK(cudaStreamSynchronize(stream));
    ok[v] = true;
    if (variants[v].checked) check(b, x, r, w, y_err[v], sum_err[v], ok[v]);
  }

  // Round k times every variant once, starting at variant k; a variant's time is the median over
  // rounds of its median over 7 replays.
  constexpr int kRounds = 3, kReplays = 7;
  std::vector<double> round_us[kVariants];
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kVariants; ++i) {
      const int v = (round + i) % kVariants;
      CHECK(cudaGraphLaunch(graphs[v], stream));  // warm-up
      std::vector<double> replay_us;
      for (int rep = 0; rep < kReplays; ++rep) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaGraphLaunch(graphs[v], stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        replay_us.push_back(1000.0 * ms / b.copies);
      }
      std::sort(replay_us.begin(), replay_us.end());
      round_us[v].push_back(replay_us[kReplays / 2]);
    }
  }

  int driver = 0;
  CHECK(cudaDriverGetVersion(&driver));
  printf("# bf16 RMSNorm + residual, hidden %d x %d rows, plain launches: code or shape (test/gpu/lean-small.cu)\n\n", kHidden, kRows);
  printf("- card: %s (%d SMs, L2 %d MiB), driver CUDA %d.%d\n", prop.name, prop.multiProcessorCount, l2 >> 20, driver / 1000, driver % 1000 / 10);
  printf("- timing: a CUDA graph of %d back-to-back calls, each on its own copy of x and residual (3.5 L2s in all) and writing its own outputs; us per call, median of %d replays, median of %d rounds\n",
         b.copies, kReplays, kRounds);
  printf("- check: every output of every copy against float64 (y within 0.016 |y| + 0.01, the sum within a bf16 ulp), outputs NaN-poisoned first\n\n");
  printf("| variant | us per call (rounds) | median | / pkg t128 v8 | y max error | sum max error | check |\n|---|---|---|---|---|---|---|\n");
  double base = 0;
  for (int v = 0; v < kVariants; ++v) {
    std::vector<double> t = round_us[v];
    std::sort(t.begin(), t.end());
    const double median = t[kRounds / 2];
    if (v == 0) base = median;
    printf("| %s | %.3f %.3f %.3f | %.3f | %.3f |", variants[v].name, round_us[v][0], round_us[v][1], round_us[v][2], median, median / base);
    if (variants[v].checked)
      printf(" %.4f | %.4f | %s |\n", y_err[v], sum_err[v], ok[v] ? "ok" : "FAILED");
    else
      printf(" - | - | (not the op) |\n");
  }
  bool all = true;
  for (int v = 0; v < kVariants; ++v) all = all && ok[v];
  return all ? 0 : 1;
}
