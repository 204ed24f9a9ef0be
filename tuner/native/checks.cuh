// The runner's device side of verification: the hash generator the inputs come from (the same
// bits as generator/numeric.ts), the float64 reference and the checks of outputs, padding,
// guard zones and inputs, each tallied per thread and combined per warp into a Check.
// Included by runner.cu, its only user.
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <string>

#include "normgen_params.h"

enum DType { F32 = 0, F16 = 1, BF16 = 2, NONE = -1 };

static DType parse_dtype(const std::string& s) {
  if (s == "fp32") return F32;
  if (s == "fp16") return F16;
  if (s == "bf16") return BF16;
  return NONE;
}
__host__ __device__ static size_t dtype_bytes(DType d) { return d == F32 ? 4 : d == NONE ? 0 : 2; }

__device__ __forceinline__ double load_as_double(const void* p, DType d, long long i) {
  switch (d) {
    case F32: return (double)static_cast<const float*>(p)[i];
    case F16: return (double)__half2float(static_cast<const __half*>(p)[i]);
    default: return (double)__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
}

__device__ __forceinline__ double round_double(double v, DType d) {
  switch (d) {
    case F32: return (double)__double2float_rn(v);
    case F16: return (double)__half2float(__double2half(v));
    default: return (double)__bfloat162float(__double2bfloat16(v));
  }
}

// Must match generator/numeric.ts: mix32, uniform (22 bits), rawInput.
__host__ __device__ __forceinline__ unsigned mix32(unsigned h) {
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
  return h;
}
__host__ __device__ __forceinline__ float uniform(unsigned seed, unsigned stream, unsigned long long index) {
  unsigned h = mix32(seed ^ (stream * 0x9e3779b9u));
  h = mix32(h ^ (unsigned)(index & 0xffffffffu));
  h = mix32(h ^ (unsigned)(index >> 32));
  return (float)(h >> 10) * (1.0f / 4194304.0f);
}
enum Stream { S_X = 1, S_RES = 2, S_W = 3, S_B = 4 };
__device__ __forceinline__ float raw_input(unsigned seed, int stream, unsigned long long index, bool offset) {
  const float u = uniform(seed, stream, index);
  switch (stream) {
    case S_X: return 4.f * u - 1.5f;
    case S_RES: return 2.f * u - 1.f;
    case S_W: return offset ? u - 0.5f : 0.5f + u;
    default: return u - 0.5f;
  }
}
__device__ __forceinline__ void store_as(void* p, DType d, long long i, float v) {
  switch (d) {
    case F32: static_cast<float*>(p)[i] = v; break;
    case F16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    default: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
  }
}

// The checks read U elements a thread, `step` apart, as raw bits, every load issued before
// any value is used (the dtype's size is branched on once, outside): converting each value
// as it was loaded kept one load in flight per thread, and checking a long-row problem took
// several times as long as timing its kernel.
constexpr int kCheckUnroll = 8;
using CheckBits = unsigned[kCheckUnroll];
template <int U>
__device__ __forceinline__ void load_bits(const void* p, DType d, long long offset, long long first, long long step, long long end, unsigned (&bits)[U]) {
  if (dtype_bytes(d) == 4) {
#pragma unroll
    for (int u = 0; u < U; ++u) { const long long c = first + u * step; bits[u] = c < end ? static_cast<const unsigned*>(p)[offset + c] : 0u; }
  } else {
#pragma unroll
    for (int u = 0; u < U; ++u) { const long long c = first + u * step; bits[u] = c < end ? static_cast<const unsigned short*>(p)[offset + c] : 0u; }
  }
}
__device__ __forceinline__ double bits_as_double(unsigned b, DType d) {
  switch (d) {
    case F32: return (double)__uint_as_float(b);
    case F16: return (double)__half2float(__ushort_as_half((unsigned short)b));
    default: return (double)__bfloat162float(__ushort_as_bfloat16((unsigned short)b));
  }
}
// The bits a generated value is stored as (fill_input's rounding).
__device__ __forceinline__ unsigned stored_bits(float v, DType d) {
  switch (d) {
    case F32: return __float_as_uint(v);
    case F16: return __half_as_ushort(__float2half_rn(v));
    default: return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
}

// Fill a [rows, stride] tensor's first `cols` columns with generated values.
__global__ void fill_input(void* p, DType d, long long rows, long long cols, long long stride, unsigned seed, int stream, bool offset) {
  const long long n = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / cols, c = i % cols;
    store_as(p, d, r * stride + c, raw_input(seed, stream, i, offset));
  }
}

struct Check {
  unsigned long long bad[8];      // per checked thing (see CheckIndex)
  unsigned long long worst[8];    // largest |error| / tolerance as double bits (>= 0)
  unsigned long long first[8];    // smallest bad index
};
enum CheckIndex { C_Y = 0, C_RESOUT, C_MEAN, C_RSTD, C_PADDING, C_GUARD, C_INPUT, C_COUNT };
static const char* kCheckNames[C_COUNT] = {"y", "residual_out", "mean", "rstd", "padding", "guard", "inputs"};

struct Tol { double atol, rtol; };

// Each thread tallies one checked thing locally and flushes once: an atomic per element
// would serialize billions of updates on one address.
struct Tally {
  int what;
  unsigned long long bad = 0, first = ~0ull;
  double worst = 0;
  __device__ explicit Tally(CheckIndex w) : what(w) {}
  __device__ void add(double err_over_tol, long long index) {
    if (!(err_over_tol <= 1.0)) {  // NaN counts as bad
      ++bad;
      first = min(first, (unsigned long long)index);
    }
    worst = fmax(worst, isnan(err_over_tol) ? 1e300 : err_over_tol);
  }
  // The same for one output element, without a float64 division where it passes (the worst
  // ratio of passing elements, at most 1, is kept to float precision).
  __device__ void add(double got, double ref, Tol t, long long index) {
    const double err = fabs(got - ref), tol = t.atol + t.rtol * fabs(ref);
    if (err <= tol) worst = fmax(worst, (double)__fdividef((float)err, (float)tol));
    else add(err / tol, index);
  }
  // A warp's tallies are combined before one lane's atomics: one atomic a thread on the same
  // address took a check of 2 M elements 0.2 ms (H200). Every lane of the warp must call it.
  __device__ void flush(Check* c) const {
    unsigned long long b = bad, f = first;
    double w = worst;
    for (int o = 16; o > 0; o /= 2) {
      b += __shfl_xor_sync(0xffffffffu, b, o);
      f = min(f, __shfl_xor_sync(0xffffffffu, f, o));
      w = fmax(w, __shfl_xor_sync(0xffffffffu, w, o));
    }
    if (threadIdx.x % 32 != 0) return;
    if (b) { atomicAdd(&c->bad[what], b); atomicMin(&c->first[what], f); }
    if (w > 0) atomicMax(&c->worst[what], (unsigned long long)__double_as_longlong(w));
  }
};

__device__ __forceinline__ double scaled_error(double got, double ref, Tol t) {
  return fabs(got - ref) / (t.atol + t.rtol * fabs(ref));
}

struct ProblemDescView { DType x, res, w, b; bool offset; };

struct RefArgs {
  NormgenFwdParams p;
  DType x, res, w, b;
  bool layernorm, offset, stats;
  Tol y_tol, res_tol, stats_tol;
};

__device__ double block_sum(double v, double* scratch) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double t = 0;
  for (int w = 0; w < (int)blockDim.x / 32; ++w) t += scratch[w];
  __syncthreads();
  return t;
}

// The float64 reference's row statistics (mean, 1 / standard deviation), computed once per
// problem from the generated inputs: every variant timed at the problem is checked against
// them, so a check is one pass over the outputs (the statistics' two reduction passes per
// variant were most of a large problem's verification time).
struct RowStats { double mean, rstd; };

__global__ void reference_row_stats(RefArgs a, RowStats* out) {
  __shared__ double scratch[32];
  constexpr int U = kCheckUnroll;
  const NormgenFwdParams& p = a.p;
  const long long H = p.hidden, step = blockDim.x;
  for (long long row = blockIdx.x; row < p.rows; row += gridDim.x) {
    // The normalized input: x, or x plus the residual rounded as the kernel stores the sum.
    auto load_inputs = [&](long long first, double (&s)[U]) {
      CheckBits xb, rb;
      load_bits(p.x, a.x, row * p.x_stride, first, step, H, xb);
      if (a.res != NONE) load_bits(p.residual, a.res, row * p.residual_stride, first, step, H, rb);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        s[u] = bits_as_double(xb[u], a.x);
        if (a.res != NONE) s[u] = round_double(s[u] + bits_as_double(rb[u], a.res), a.res);
      }
    };
    double mean = 0;
    if (a.layernorm) {
      double sum = 0;
      for (long long first = threadIdx.x; first < H; first += U * step) {
        double s[U];
        load_inputs(first, s);
#pragma unroll
        for (int u = 0; u < U; ++u) if (first + u * step < H) sum += s[u];
      }
      mean = block_sum(sum, scratch) / H;
    }
    double sq = 0;
    for (long long first = threadIdx.x; first < H; first += U * step) {
      double s[U];
      load_inputs(first, s);
#pragma unroll
      for (int u = 0; u < U; ++u) if (first + u * step < H) sq += (s[u] - mean) * (s[u] - mean);
    }
    const double rstd = 1.0 / sqrt(block_sum(sq, scratch) / H + (double)p.eps);
    if (threadIdx.x == 0) out[row] = {mean, rstd};
  }
}

// Eight consecutive elements' bits from column `col` of a row (`offset` elements into p): one
// or two 16-byte loads where the row and column are aligned, element by element otherwise (a
// row's end, strides that are not a multiple of 16 bytes).
__device__ __forceinline__ void load8(const void* p, DType d, long long offset, long long col, long long end, unsigned (&bits)[8]) {
  const long long at = offset + col;
  if (dtype_bytes(d) == 2) {
    const unsigned short* q = static_cast<const unsigned short*>(p);
    if (col + 8 <= end && at % 8 == 0) {
      const uint4 v = *reinterpret_cast<const uint4*>(q + at);
      const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int u = 0; u < 4; ++u) { bits[2 * u] = w[u] & 0xffffu; bits[2 * u + 1] = w[u] >> 16; }
    } else {
#pragma unroll
      for (int u = 0; u < 8; ++u) bits[u] = col + u < end ? q[at + u] : 0u;
    }
  } else {
    const unsigned* q = static_cast<const unsigned*>(p);
    if (col + 8 <= end && at % 4 == 0) {
      const uint4 v0 = *reinterpret_cast<const uint4*>(q + at), v1 = *reinterpret_cast<const uint4*>(q + at + 4);
      bits[0] = v0.x; bits[1] = v0.y; bits[2] = v0.z; bits[3] = v0.w;
      bits[4] = v1.x; bits[5] = v1.y; bits[6] = v1.z; bits[7] = v1.w;
    } else {
#pragma unroll
      for (int u = 0; u < 8; ++u) bits[u] = col + u < end ? q[at + u] : 0u;
    }
  }
}

// Every output element against the float64 reference. A thread takes eight consecutive
// columns of a row, a block 8 * blockDim.x of them (many rows in flight, no reduction between
// the loads; two blocks an SM keep the loads in registers). The tensors' dtypes and the weight
// offset are template arguments for the kinds the tune's grid has (no branch between one
// element's arithmetic and the next's, so their float64 chains overlap); ANY reads them from
// the arguments (every other kind).
constexpr int ANY = -2;
template <int D> __device__ __forceinline__ DType dtype_or(DType given) { return D == ANY ? given : (DType)D; }

template <int X, int R, int W, int B, int OFFSET>
__global__ void __launch_bounds__(256, 2) check_outputs(RefArgs a, const RowStats* stats, Check* c) {
  const NormgenFwdParams& p = a.p;
  const DType xd = dtype_or<X>(a.x), rd = dtype_or<R>(a.res), wd = dtype_or<W>(a.w), bd = dtype_or<B>(a.b);
  const bool offset = OFFSET == ANY ? a.offset : OFFSET;
  const long long H = p.hidden, tile = 8 * blockDim.x, tiles = (H + tile - 1) / tile;
  Tally t_y(C_Y), t_resout(C_RESOUT);
  float worst_y = 0, worst_res = 0;  // passing elements' largest error / tolerance
  for (long long job = blockIdx.x; job < p.rows * tiles; job += gridDim.x) {
    const long long row = job / tiles, first = job % tiles * tile + 8 * threadIdx.x;
    if (first >= H) continue;
    unsigned xb[8], rb[8], yb[8], rob[8], wb[8], bb[8];
    load8(p.x, xd, row * p.x_stride, first, H, xb);
    if (rd != NONE) load8(p.residual, rd, row * p.residual_stride, first, H, rb);
    load8(p.y, xd, row * p.y_stride, first, H, yb);
    if (rd != NONE) load8(p.residual_out, rd, row * p.residual_out_stride, first, H, rob);
    if (wd != NONE) load8(p.weight, wd, 0, first, H, wb);
    if (bd != NONE) load8(p.bias, bd, 0, first, H, bb);
    const RowStats st = stats[row];
    // Element u's |error| and tolerance: y against the reference, residual_out against the sum.
    struct Errors { double y, y_tol, res, res_tol; };
    auto errors = [&](int u) {
      double s = bits_as_double(xb[u], xd);
      if (rd != NONE) s = round_double(s + bits_as_double(rb[u], rd), rd);
      double ref = (s - st.mean) * st.rstd;
      if (wd != NONE) { const double w = bits_as_double(wb[u], wd); ref *= offset ? 1.0 + w : w; }
      if (bd != NONE) ref += bits_as_double(bb[u], bd);
      Errors e;
      e.y = fabs(bits_as_double(yb[u], xd) - ref);
      e.y_tol = a.y_tol.atol + a.y_tol.rtol * fabs(ref);
      if (rd != NONE) { e.res = fabs(bits_as_double(rob[u], rd) - s); e.res_tol = a.res_tol.atol + a.res_tol.rtol * fabs(s); }
      return e;
    };
    // Passing elements need no branch and no float64 division; a tile with a failing (or
    // NaN) element is gone through again to count it exactly.
    const int n = (int)min(8LL, H - first);
    unsigned failing = 0;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      if (u >= n) break;
      const Errors e = errors(u);
      failing |= (unsigned)!(e.y <= e.y_tol) << u;
      worst_y = fmaxf(worst_y, __fdividef((float)e.y, (float)e.y_tol));
      if (rd != NONE) {
        failing |= (unsigned)!(e.res <= e.res_tol) << u;
        worst_res = fmaxf(worst_res, __fdividef((float)e.res, (float)e.res_tol));
      }
    }
    if (failing)
      for (int u = 0; u < n; ++u) {
        const Errors e = errors(u);
        t_y.add(e.y / e.y_tol, row * H + first + u);
        if (rd != NONE) t_resout.add(e.res / e.res_tol, row * H + first + u);
      }
  }
  t_y.add(fminf(worst_y, 1.0f), 0);  // at most 1: counts as passing
  if (R != NONE) t_resout.add(fminf(worst_res, 1.0f), 0);
  t_y.flush(c); t_resout.flush(c);
}

// The kinds of forward problem the tune's grid has: the weight (and bias, and residual) in x's
// dtype, no weight offset; each its own check_outputs.
template <int X>
static void check_outputs_as(bool res, bool bias, unsigned blocks, const RefArgs& a, const RowStats* stats, Check* check) {
  if (!res && !bias) check_outputs<X, NONE, X, NONE, 0><<<blocks, 256>>>(a, stats, check);
  else if (!res) check_outputs<X, NONE, X, X, 0><<<blocks, 256>>>(a, stats, check);
  else if (!bias) check_outputs<X, X, X, NONE, 0><<<blocks, 256>>>(a, stats, check);
  else check_outputs<X, X, X, X, 0><<<blocks, 256>>>(a, stats, check);
}
static void launch_check_outputs(const ProblemDescView& d, unsigned blocks, const RefArgs& a, const RowStats* stats, Check* check) {
  const bool common = d.w == d.x && (d.res == NONE || d.res == d.x) && (d.b == NONE || d.b == d.x) && !d.offset;
  if (!common) check_outputs<ANY, ANY, ANY, ANY, ANY><<<blocks, 256>>>(a, stats, check);
  else if (d.x == F32) check_outputs_as<F32>(d.res != NONE, d.b != NONE, blocks, a, stats, check);
  else if (d.x == F16) check_outputs_as<F16>(d.res != NONE, d.b != NONE, blocks, a, stats, check);
  else check_outputs_as<BF16>(d.res != NONE, d.b != NONE, blocks, a, stats, check);
}

// The statistics the kernel wrote (mean, rstd as float) against the reference's.
__global__ void check_stats(RefArgs a, const RowStats* stats, Check* c) {
  Tally t_rstd(C_RSTD), t_mean(C_MEAN);
  for (long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x; row < a.p.rows; row += (long long)gridDim.x * blockDim.x) {
    t_rstd.add(scaled_error(a.p.rstd[row], stats[row].rstd, a.stats_tol), row);
    if (a.layernorm) t_mean.add(scaled_error(a.p.mean[row], stats[row].mean, a.stats_tol), row);
  }
  t_rstd.flush(c); t_mean.flush(c);
}

// Padding between rows (columns cols..stride) must keep its poison (0xFF bytes).
__global__ void check_padding(const unsigned char* p, size_t elt, long long rows, long long cols, long long stride, Check* c) {
  Tally t(C_PADDING);
  const long long pad = stride - cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows * pad; i += (long long)gridDim.x * blockDim.x) {
    const long long at = i / pad * stride + cols + i % pad;
    for (size_t k = 0; k < elt; ++k) if (p[at * elt + k] != 0xFF) t.add(2.0, at);
  }
  t.flush(c);
}

// Inputs must be bit-identical to what was generated (and their padding untouched). A block
// takes a tile of U * blockDim.x elements of one row at a time.
__global__ void check_input(const void* p, DType d, long long rows, long long cols, long long stride, unsigned seed, int stream, bool offset, Check* c) {
  constexpr int U = kCheckUnroll;
  const long long tile = (long long)blockDim.x * U, tiles = (stride + tile - 1) / tile;
  const unsigned poison = dtype_bytes(d) == 4 ? 0xFFFFFFFFu : 0xFFFFu;
  Tally t(C_INPUT);
  for (long long job = blockIdx.x; job < rows * tiles; job += gridDim.x) {
    const long long r = job / tiles, first = job % tiles * tile + threadIdx.x;
    CheckBits bits;
    load_bits(p, d, r * stride, first, blockDim.x, stride, bits);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long col = first + u * (long long)blockDim.x;
      if (col >= stride) continue;
      const unsigned want = col < cols ? stored_bits(raw_input(seed, stream, r * cols + col, offset), d) : poison;
      if (bits[u] != want) t.add(2.0, r * stride + col);
    }
  }
  t.flush(c);
}

static const size_t kGuard = 1024;  // bytes of poison before and after every buffer

// The guard zones around buffers, one block a zone.
struct GuardZones { const unsigned char* at[32]; int n; };
__global__ void check_guards(GuardZones g, Check* c) {
  Tally t(C_GUARD);
  for (int z = blockIdx.x; z < g.n; z += gridDim.x)
    for (int i = threadIdx.x; i < (int)kGuard; i += blockDim.x)
      if (g.at[z][i] != 0xFF) t.add(2.0, i);
  t.flush(c);
}

// A buffer's 64-bit fingerprint: the sum of its 32-bit words, each times an odd weight hashed
// from the word's index (mod 2^64). One changed word always changes it (a nonzero difference
// below 2^32 times an odd number is nonzero mod 2^64); several changes would have to cancel
// through the hashed weights. It reads at memory speed, where regenerating every input
// element (check_input) costs three hashes an element: verification compares each input
// with the fingerprint taken when it was generated, and runs check_input only to say where
// an input changed.
__device__ __forceinline__ unsigned fingerprint_weight(unsigned long long word) {
  return mix32((unsigned)word + 0x9e3779b9u * (unsigned)(word >> 32)) | 1u;
}
__global__ void fingerprint(const unsigned char* p, unsigned long long bytes, unsigned long long* out) {
  const unsigned long long vectors = bytes / 16, stride = (unsigned long long)gridDim.x * blockDim.x;
  const uint4* v = reinterpret_cast<const uint4*>(p);
  unsigned long long acc = 0;
#pragma unroll 4
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < vectors; i += stride) {
    const uint4 q = v[i];
    const unsigned long long w = 4 * i;
    acc += (unsigned long long)q.x * fingerprint_weight(w) + (unsigned long long)q.y * fingerprint_weight(w + 1) +
           (unsigned long long)q.z * fingerprint_weight(w + 2) + (unsigned long long)q.w * fingerprint_weight(w + 3);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0)  // the last bytes, byte by byte (a word's bytes sum to the word)
    for (unsigned long long b = vectors * 16; b < bytes; ++b) acc += ((unsigned long long)p[b] << (8 * (b % 4))) * fingerprint_weight(b / 4);
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, acc);
}
