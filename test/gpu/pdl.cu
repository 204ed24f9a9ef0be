// Probe: does programmatic dependent launch (PDL) lift short kernels toward copy bandwidth,
// and does an L2 prefetch of the CTA's rows before griddepcontrol.wait lift them further?
// The problems still short of 92% at rows x hidden >= 16M are mostly 16-bit kernels of
// 18-37 us, where a plain copy of the same bytes also falls short: launch, ramp-up and tail
// cost a few us each time. With PDL the next kernel in the stream is launched while this one
// runs; its CTAs wait in griddepcontrol.wait until this grid has finished and its writes are
// visible, so only the launch and the CTAs' start overlap, never the memory traffic.
//
// A bf16 RMSNorm (hidden known at compile time, a row per TPR threads, 256-thread CTAs) and
// a copy of the same bytes, each timed as a CUDA graph of back-to-back launches over
// rotating copies (cold L2, as the tuner times), in these modes:
//   plain        <<<>>> launches
//   pdl-exit     launched with programmatic stream serialization, griddepcontrol.wait before
//                any load; dependents released as the CTAs exit
//   pdl-start    the same, and griddepcontrol.launch_dependents at the kernel's start
//   pdl-w-early  pdl-start, and the weight loaded before the wait (weights are not written
//                by the kernel before: only x and y depend on it)
//   pdl-pf       pdl-start, and each thread prefetches its x chunks into L2 before the wait
//   pdl-bulk-pf  pdl-start, and one thread prefetches the CTA's rows into L2 (one bulk
//                prefetch, sm90) before the wait
// A prefetch only moves lines into L2, the point of coherence that the previous grid's
// writes go through, so it cannot make a load see stale data: the chain check below is
// the test of that. What it may buy: the DRAM reads of the first rows start while the
// grid before is in its tail, not after it.
// Every mode is checked against float64 on random data (y poisoned first), and a chain
// (each launch reading what the one before wrote) must end bitwise equal to plain launches'.
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/pdl test/gpu/pdl.cu && /tmp/pdl > pdl.md
// (test/gpu/pdl.md: the log of the first four modes; test/gpu/pdl-prefetch.md: all six.)
#include <cuda_bf16.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "cuda_check.h"

using bf16 = __nv_bfloat16;
struct alignas(16) Chunk { bf16 v[8]; };  // one 16-byte load
enum Mode { PLAIN, PDL_EXIT, PDL_START, PDL_W_EARLY, PDL_PF, PDL_BULK_PF, kModes };
constexpr int kThreads = 256;

__device__ __forceinline__ void wait_for_previous_grid() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void release_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

template <int H, int TPR, int MODE, bool COPY>
__global__ void __launch_bounds__(kThreads) norm_kernel(const Chunk* __restrict__ x, const Chunk* __restrict__ w, Chunk* __restrict__ y) {
  constexpr int kChunks = H / 8 / TPR;
  constexpr int kRowChunks = H / 8;
  static_assert(kChunks * 8 * TPR == H, "H must split into whole chunks");
  const int lane = threadIdx.x % TPR;
  const int64_t row = int64_t(blockIdx.x) * (kThreads / TPR) + threadIdx.x / TPR;
  Chunk wc[kChunks], xc[kChunks];
  if (MODE >= PDL_START) release_dependents();
  if (MODE == PDL_PF)
#pragma unroll
    for (int i = 0; i < kChunks; ++i) asm volatile("prefetch.global.L2 [%0];" ::"l"(x + row * kRowChunks + lane + i * TPR));
  if (MODE == PDL_BULK_PF && threadIdx.x == 0) {
    const Chunk* first = x + int64_t(blockIdx.x) * (kThreads / TPR) * kRowChunks;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(first), "r"(unsigned(kThreads / TPR * H * 2)) : "memory");
  }
  if (MODE == PDL_W_EARLY && !COPY)
#pragma unroll
    for (int i = 0; i < kChunks; ++i) wc[i] = w[lane + i * TPR];
  if (MODE != PLAIN) wait_for_previous_grid();
#pragma unroll
  for (int i = 0; i < kChunks; ++i) xc[i] = x[row * kRowChunks + lane + i * TPR];
  if (COPY) {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) y[row * kRowChunks + lane + i * TPR] = xc[i];
    return;
  }
  if (MODE != PDL_W_EARLY)
#pragma unroll
    for (int i = 0; i < kChunks; ++i) wc[i] = w[lane + i * TPR];
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i)
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float v = __bfloat162float(xc[i].v[k]);
      ss += v * v;
    }
#pragma unroll
  for (int o = min(TPR, 32) / 2; o > 0; o /= 2) ss += __shfl_xor_sync(~0u, ss, o);
  if constexpr (TPR > 32) {  // the row's warps combine through shared memory
    __shared__ float partial[kThreads / 32];
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
    __syncthreads();
    const int first = threadIdx.x / TPR * (TPR / 32);
    ss = 0.f;
#pragma unroll
    for (int i = 0; i < TPR / 32; ++i) ss += partial[first + i];
  }
  const float rstd = rsqrtf(ss / H + 1e-6f);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    Chunk out;
#pragma unroll
    for (int k = 0; k < 8; ++k) out.v[k] = __float2bfloat16(__bfloat162float(xc[i].v[k]) * rstd * __bfloat162float(wc[i].v[k]));
    y[row * kRowChunks + lane + i * TPR] = out;
  }
}

using Kernel = void (*)(const Chunk*, const Chunk*, Chunk*);

struct Shape {
  int hidden, rows, tpr;
  std::array<Kernel, kModes> norm, copy;
};

// The kernel of every mode, in Mode order.
template <int H, int TPR, bool COPY, int... MODES>
std::array<Kernel, kModes> kernels(std::integer_sequence<int, MODES...>) {
  return {norm_kernel<H, TPR, MODES, COPY>...};
}

template <int H, int TPR>
Shape shape(int rows) {
  const auto modes = std::make_integer_sequence<int, kModes>{};
  return {H, rows, TPR, kernels<H, TPR, false>(modes), kernels<H, TPR, true>(modes)};
}

void launch(Kernel k, int mode, const Shape& s, cudaStream_t stream, const void* x, const void* w, void* y) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(s.rows / (kThreads / s.tpr));
  cfg.blockDim = dim3(kThreads);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = mode == PLAIN ? 0 : 1;
  CHECK(cudaLaunchKernelEx(&cfg, k, static_cast<const Chunk*>(x), static_cast<const Chunk*>(w), static_cast<Chunk*>(y)));
}

float bf16_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main() {
  const Shape shapes[] = {
      shape<512, 32>(32768), shape<768, 32>(32768), shape<2048, 64>(8192),
      shape<3072, 128>(8192), shape<8192, 256>(2048), shape<12288, 256>(2048), shape<16384, 256>(1024 * 2),
      shape<4096, 128>(32768),
  };
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0;
  CHECK(cudaDriverGetVersion(&driver));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  // Copy bandwidth: cudaMemcpy of 1 GiB device to device, read + write, median of 15.
  const size_t copy_bytes = size_t(1) << 30;
  void *ca, *cb;
  CHECK(cudaMalloc(&ca, copy_bytes));
  CHECK(cudaMalloc(&cb, copy_bytes));
  std::vector<float> ms_list;
  for (int r = 0; r < 18; ++r) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaMemcpyAsync(cb, ca, copy_bytes, cudaMemcpyDeviceToDevice, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r >= 3) ms_list.push_back(ms);
  }
  std::sort(ms_list.begin(), ms_list.end());
  const double copy_gbps = 2.0 * copy_bytes / (ms_list[ms_list.size() / 2] * 1e-3) / 1e9;
  CHECK(cudaFree(ca));
  CHECK(cudaFree(cb));

  printf("# PDL probe: bf16 RMSNorm and copy, back-to-back in CUDA graphs (%s)\n\n", prop.name);
  printf("- card: %s, %d SMs, driver %d.%d; copy bandwidth (cudaMemcpy 1 GiB, read + write): %.0f GB/s\n", prop.name, prop.multiProcessorCount,
         driver / 1000, driver % 1000 / 10, copy_gbps);
  printf("- command: `nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/pdl test/gpu/pdl.cu && /tmp/pdl`\n");
  printf("- each cell: %% of copy bandwidth, median of 15 replays of a graph of 64 launches over rotating copies (>= 4x L2)\n\n");
  printf("| hidden x rows | us (plain norm) | copy plain | copy pdl-start | copy pdl-pf | copy pdl-bulk-pf | norm plain | norm pdl-exit | norm pdl-start | norm pdl-w-early | norm pdl-pf | norm pdl-bulk-pf | checks |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");

  int failures = 0;
  for (const Shape& s : shapes) {
    const size_t elems = size_t(s.rows) * s.hidden, bytes = elems * 2;
    const int copies = int(std::max<size_t>(2, (4 * size_t(prop.l2CacheSize) + 2 * bytes - 1) / (2 * bytes)));
    std::vector<void*> x(copies), y(copies);
    std::vector<uint16_t> hx(elems), hw(s.hidden);
    srand(1234);
    for (auto& v : hx) v = uint16_t(rand() % 0x3f00 + (rand() % 2 ? 0x8000 : 0));  // finite, both signs
    for (auto& v : hw) v = uint16_t(0x3f00 + rand() % 0x100);                       // 0.5..1
    for (int c = 0; c < copies; ++c) {
      CHECK(cudaMalloc(&x[c], bytes));
      CHECK(cudaMalloc(&y[c], bytes));
      CHECK(cudaMemcpy(x[c], hx.data(), bytes, cudaMemcpyHostToDevice));
    }
    void* w;
    CHECK(cudaMalloc(&w, s.hidden * 2));
    CHECK(cudaMemcpy(w, hw.data(), s.hidden * 2, cudaMemcpyHostToDevice));

    // Correctness of each mode: float64 reference on sampled rows, y poisoned (0xFF: NaN).
    std::vector<uint16_t> hy(elems);
    bool ok = true;
    for (int mode = 0; mode < kModes; ++mode) {
      CHECK(cudaMemset(y[0], 0xFF, bytes));
      launch(s.norm[mode], mode, s, stream, x[0], w, y[0]);
      CHECK(cudaStreamSynchronize(stream));
      CHECK(cudaMemcpy(hy.data(), y[0], bytes, cudaMemcpyDeviceToHost));
      for (int row = 0; row < s.rows; row += std::max(1, s.rows / 64)) {
        double ss = 0;
        for (int c = 0; c < s.hidden; ++c) ss += std::pow(double(bf16_to_float(hx[size_t(row) * s.hidden + c])), 2);
        const double rstd = 1.0 / std::sqrt(ss / s.hidden + 1e-6);
        for (int c = 0; c < s.hidden; ++c) {
          const double want = bf16_to_float(hx[size_t(row) * s.hidden + c]) * rstd * bf16_to_float(hw[c]);
          const double got = bf16_to_float(hy[size_t(row) * s.hidden + c]);
          if (!(std::fabs(got - want) <= 1e-2 * std::fabs(want) + 1e-3)) ok = false;
        }
      }
    }
    // A chain, each launch reading the output of the one before: PDL must end bitwise equal.
    std::vector<uint16_t> chain[kModes];
    for (int mode = 0; mode < kModes; ++mode) {
      CHECK(cudaMemcpy(y[0], hx.data(), bytes, cudaMemcpyHostToDevice));
      for (int i = 0; i < 8; ++i) launch(s.norm[mode], mode, s, stream, i % 2 ? x[1] : y[0], w, i % 2 ? y[0] : x[1]);
      CHECK(cudaStreamSynchronize(stream));
      chain[mode].resize(elems);
      CHECK(cudaMemcpy(chain[mode].data(), y[0], bytes, cudaMemcpyDeviceToHost));
      if (chain[mode] != chain[0]) ok = false;
    }
    CHECK(cudaMemcpy(x[1], hx.data(), bytes, cudaMemcpyHostToDevice));
    failures += !ok;

    // Timing: a graph of 64 launches over the rotating copies, median of 15 replays.
    auto pct = [&](Kernel k, int mode, double* us_out) {
      constexpr int kLaunches = 64;
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < kLaunches; ++i) launch(k, mode, s, stream, x[i % copies], w, y[i % copies]);
      CHECK(cudaStreamEndCapture(stream, &graph));
      CHECK(cudaGraphInstantiate(&exec, graph, 0));
      std::vector<float> t;
      for (int r = 0; r < 18; ++r) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r >= 3) t.push_back(ms);
      }
      CHECK(cudaGraphExecDestroy(exec));
      CHECK(cudaGraphDestroy(graph));
      std::sort(t.begin(), t.end());
      const double us = t[t.size() / 2] * 1e3 / kLaunches;
      if (us_out) *us_out = us;
      return 100.0 * (2.0 * bytes / (us * 1e-6) / 1e9) / copy_gbps;
    };
    double us = 0;
    printf("| %d x %d |", s.hidden, s.rows);
    std::vector<double> cells;
    for (int mode : {PLAIN, PDL_START, PDL_PF, PDL_BULK_PF}) cells.push_back(pct(s.copy[mode], mode, nullptr));
    cells.push_back(pct(s.norm[PLAIN], PLAIN, &us));
    for (int mode = PDL_EXIT; mode < kModes; ++mode) cells.push_back(pct(s.norm[mode], mode, nullptr));
    printf(" %.2f |", us);
    for (double c : cells) printf(" %.1f |", c);
    printf(" %s |\n", ok ? "PASS" : "FAIL");
    fflush(stdout);
    for (int c = 0; c < copies; ++c) {
      CHECK(cudaFree(x[c]));
      CHECK(cudaFree(y[c]));
    }
    CHECK(cudaFree(w));
  }
  printf("\n%s\n", failures ? "FAIL: a mode gave wrong values or a chain that differs from plain launches" : "every mode verified; chains bitwise equal");
  return failures ? 1 : 0;
}
