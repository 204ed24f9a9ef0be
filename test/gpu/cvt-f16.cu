// How fast an SM widens 16-bit values to float: fp16 by cvt.f32.f16 (what __half2float
// compiles to), fp16 by integer operations and one multiply, and bf16 by a shift and a mask
// (what the templates do). Each thread widens pairs from registers (no memory in the loop)
// and sums them, with 8 independent chains, so the pipe that converts is what limits.
// Also checks the integer widening against cvt.f32.f16 for all 65536 fp16 bit patterns.
//   nvcc -arch=native -O3 -o /tmp/cvt-f16 test/gpu/cvt-f16.cu && /tmp/cvt-f16
//   /tmp/cvt-f16 --host-check    the integer widening against an fp16 decoder, on the CPU (CI)
#include <cuda_fp16.h>
#include <cmath>
#include <cstdio>
#include <cstring>

__host__ __device__ __forceinline__ float bits_float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
__host__ __device__ __forceinline__ unsigned float_bits(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}

__device__ __forceinline__ float f16_cvt(unsigned short h) {
  float f;
  asm("{.reg .f16 t; mov.b16 t, %1; cvt.f32.f16 %0, t;}" : "=f"(f) : "h"(h));
  return f;
}
// Exact for every pattern: the magnitude's bits moved into a float's place and scaled by
// 2^112 (rebiasing the exponent; subnormal halves come out as the normal floats they are),
// infinities and NaNs rebuilt, then the sign.
__host__ __device__ __forceinline__ float f16_int(unsigned short h) {
  const unsigned mag = h & 0x7fffu;
  float f = bits_float(mag << 13) * 0x1p112f;
  if (mag >= 0x7c00u) f = bits_float((mag << 13) | 0x7f800000u);
  return bits_float(float_bits(f) | ((h & 0x8000u) << 16));
}

// fp16 decoded from its fields (sign, 5-bit exponent, 10-bit mantissa), on the host.
static float f16_decoded(unsigned short h) {
  const int exponent = (h >> 10) & 31, mantissa = h & 1023;
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -24)
                          : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                           : std::ldexp(float(1024 + mantissa), exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

// Every pattern: the same bits, or both NaN. No GPU needed.
static int host_check() {
  int mismatches = 0;
  for (unsigned h = 0; h < 65536; ++h) {
    const float a = f16_decoded((unsigned short)h), b = f16_int((unsigned short)h);
    if (float_bits(a) != float_bits(b) && !(std::isnan(a) && std::isnan(b))) ++mismatches;
  }
  printf("integer widening vs the decoded fp16 over all 65536 patterns: %d mismatches\n", mismatches);
  return mismatches == 0 ? 0 : 1;
}
__device__ __forceinline__ float bf16_lo(unsigned pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float bf16_hi(unsigned pair) { return __uint_as_float(pair & 0xffff0000u); }

template <int KIND>
__global__ void widen(const unsigned* in, float* out, int iters) {
  unsigned v[8];
  for (int k = 0; k < 8; ++k) v[k] = in[(threadIdx.x + k) & 255];
  float acc[8] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const unsigned p = v[k];
      float lo, hi;
      if (KIND == 0) lo = f16_cvt(p & 0xffff), hi = f16_cvt(p >> 16);
      else if (KIND == 1) lo = f16_int(p & 0xffff), hi = f16_int(p >> 16);
      else lo = bf16_lo(p), hi = bf16_hi(p);
      acc[k] += lo + hi;
      v[k] = p * 1664525u + 1013904223u;  // new bits each step, so nothing is hoisted
    }
  }
  float s = 0;
  for (int k = 0; k < 8; ++k) s += acc[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void check(int* mismatches) {
  const unsigned h = blockIdx.x * blockDim.x + threadIdx.x;
  if (h >= 65536) return;
  const float a = f16_cvt((unsigned short)h), b = f16_int((unsigned short)h);
  const bool same = float_bits(a) == float_bits(b) || (a != a && b != b);
  if (!same) atomicAdd(mismatches, 1);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--host-check") == 0) return host_check();
  int sms = 0, clock_khz = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  int* bad;
  cudaMalloc(&bad, sizeof(int));
  cudaMemset(bad, 0, sizeof(int));
  check<<<256, 256>>>(bad);
  int mismatches = -1;
  cudaMemcpy(&mismatches, bad, sizeof(int), cudaMemcpyDeviceToHost);
  printf("integer widening vs cvt.f32.f16 over all 65536 fp16 patterns: %d mismatches\n", mismatches);

  unsigned* in;
  float* out;
  const int blocks = sms * 8, threads = 256, iters = 4096;
  cudaMalloc(&in, 256 * sizeof(unsigned));
  cudaMemset(in, 0x3c, 256 * sizeof(unsigned));
  cudaMalloc(&out, blocks * threads * sizeof(float));
  const char* names[] = {"fp16 cvt.f32.f16", "fp16 integer + multiply", "bf16 shift / mask"};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int kind = 0; kind < 3; ++kind) {
    auto run = [&] {
      if (kind == 0) widen<0><<<blocks, threads>>>(in, out, iters);
      else if (kind == 1) widen<1><<<blocks, threads>>>(in, out, iters);
      else widen<2><<<blocks, threads>>>(in, out, iters);
    };
    run();  // warm-up
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
      cudaEventRecord(e0);
      run();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      best = ms < best ? ms : best;
    }
    const double values = 2.0 * 8 * iters * double(blocks) * threads;
    printf("%-26s %8.3f ms  %7.1f G values/s  %5.1f values/clock/SM (at %d MHz)\n", names[kind], best, values / best / 1e6,
           values / (best * 1e-3) / sms / (clock_khz * 1e3), clock_khz / 1000);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return mismatches == 0 ? 0 : 1;
}
