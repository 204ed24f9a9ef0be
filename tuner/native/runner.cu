// normgen's native bench runner: one long-lived process per GPU. It reads one JSON
// object per line on stdin and answers one JSON line on stdout:
//   {"cmd":"info"}                         device identity
//   {"cmd":"copy","bytes":N}               device-to-device copy bandwidth
//   {"cmd":"copy","bytes":N,"graph":true}  a copy kernel over N bytes, timed like a kernel
//                                          (add "programmatic":true: launched as kernels are timed)
//   {"cmd":"run", ...}                     load a kernel from a cubin, run it on inputs
//                                          generated on the device, verify, time
//   {"cmd":"bwd", ...}                     the same for a backward variant (see below)
// Inputs come from the hash generator of generator/numeric.ts (same bits), outputs are
// poisoned (0xFF bytes: NaN) before every verified launch, and a float64 reference on
// the device checks every output element, the padding between rows, guard zones
// around every buffer and that no input changed. A fault inside a kernel leaves the
// CUDA context unusable: the runner answers RUNTIME_ERROR and exits; the tuner
// restarts it. Built by tuner/runner.ts with nvcc (-lcuda).

#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "normgen_params.h"
#include "normgen_bwd_params.h"

// ---------------------------------------------------------------- tiny JSON ---

struct Json {
  std::map<std::string, std::string> fields;  // raw text of each value (strings unquoted)
  bool has(const std::string& k) const { return fields.count(k) > 0; }
  std::string str(const std::string& k, const std::string& d = "") const {
    auto it = fields.find(k);
    return it == fields.end() ? d : it->second;
  }
  double num(const std::string& k, double d = 0) const {
    auto it = fields.find(k);
    return it == fields.end() ? d : strtod(it->second.c_str(), nullptr);
  }
  long long integer(const std::string& k, long long d = 0) const {
    auto it = fields.find(k);
    return it == fields.end() ? d : strtoll(it->second.c_str(), nullptr, 10);
  }
  bool flag(const std::string& k) const { return str(k) == "true"; }
};

// A flat object of strings, numbers and booleans: all the protocol needs.
static bool parse_json(const std::string& s, Json& out, std::string& err) {
  size_t i = 0;
  auto ws = [&] { while (i < s.size() && isspace((unsigned char)s[i])) ++i; };
  auto str = [&](std::string& v) -> bool {
    if (s[i] != '"') return false;
    for (++i; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) {
        ++i;
        v += s[i] == 'n' ? '\n' : s[i] == 't' ? '\t' : s[i];
      } else {
        v += s[i];
      }
    }
    if (i >= s.size()) return false;
    ++i;
    return true;
  };
  ws();
  if (i >= s.size() || s[i] != '{') { err = "expected an object"; return false; }
  ++i;
  for (;;) {
    ws();
    if (i < s.size() && s[i] == '}') return true;
    std::string key, val;
    if (!str(key)) { err = "expected a key"; return false; }
    ws();
    if (i >= s.size() || s[i] != ':') { err = "expected ':'"; return false; }
    ++i;
    ws();
    if (i < s.size() && s[i] == '"') {
      if (!str(val)) { err = "bad string"; return false; }
    } else {
      size_t j = i;
      while (j < s.size() && s[j] != ',' && s[j] != '}' && !isspace((unsigned char)s[j])) ++j;
      val = s.substr(i, j - i);
      i = j;
    }
    out.fields[key] = val;
    ws();
    if (i < s.size() && s[i] == ',') { ++i; continue; }
    if (i < s.size() && s[i] == '}') return true;
    err = "expected ',' or '}'";
    return false;
  }
}

static std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (c == '\n') o += "\\n";
    else if ((unsigned char)c < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

static std::string num(double v) {
  if (std::isnan(v)) return "null";
  if (std::isinf(v)) return v > 0 ? "1e308" : "-1e308";
  char b[64];
  snprintf(b, sizeof b, "%.9g", v);
  return b;
}

static void reply(const std::string& body) {
  fprintf(stdout, "{%s}\n", body.c_str());
  fflush(stdout);
}

// Where a request's host time goes ("phases": true): the time since the mark before, by name.
struct HostPhases {
  bool on = false;
  std::chrono::steady_clock::time_point last;
  std::string json;
  void start(bool enabled) { on = enabled; json.clear(); last = std::chrono::steady_clock::now(); }
  void mark(const char* name) {
    if (!on) return;
    const auto now = std::chrono::steady_clock::now();
    json += (json.empty() ? "\"" : ",\"") + std::string(name) + "\":" + num(std::chrono::duration<double, std::micro>(now - last).count());
    last = now;
  }
  std::string field() const { return on ? ",\"phasesUs\":{" + json + "}" : ""; }
};
static HostPhases g_phases;

// A CUDA failure that poisons the context: report and exit so the tuner restarts us.
[[noreturn]] static void fatal(const std::string& status, const std::string& msg) {
  reply("\"status\":" + quote(status) + ",\"error\":" + quote(msg));
  exit(3);
}

#define CUDA_OK(call)                                                                 \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) fatal("RUNTIME_ERROR", std::string(#call) + ": " + cudaGetErrorString(e_)); \
  } while (0)

// Driver API entry points, resolved through the runtime so the runner links without
// libcuda's stub (it may be absent where the runner is only compiled).
struct Driver {
  decltype(&::cuModuleLoad) moduleLoad;
  decltype(&::cuModuleGetFunction) moduleGetFunction;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuLaunchKernelEx) launchKernelEx;
  decltype(&::cuFuncSetAttribute) funcSetAttribute;
  decltype(&::cuGetErrorString) getErrorString;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy;
  decltype(&::cuOccupancyMaxActiveClusters) clusterOccupancy;
  decltype(&::cuGraphKernelNodeGetParams) graphKernelNodeGetParams;
  decltype(&::cuGraphExecKernelNodeSetParams) graphExecKernelNodeSetParams;
};
static Driver g_cu;

template <typename F>
static void resolve(const char* name, F& fn) {
  cudaDriverEntryPointQueryResult q;
  void* p = nullptr;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess || !p)
    fatal("RUNTIME_ERROR", std::string("driver entry point not found: ") + name);
  fn = reinterpret_cast<F>(p);
}

static void resolve_driver() {
  resolve("cuModuleLoad", g_cu.moduleLoad);
  resolve("cuModuleGetFunction", g_cu.moduleGetFunction);
  resolve("cuLaunchKernel", g_cu.launchKernel);
  resolve("cuLaunchKernelEx", g_cu.launchKernelEx);
  resolve("cuFuncSetAttribute", g_cu.funcSetAttribute);
  resolve("cuGetErrorString", g_cu.getErrorString);
  resolve("cuOccupancyMaxActiveBlocksPerMultiprocessor", g_cu.occupancy);
  resolve("cuOccupancyMaxActiveClusters", g_cu.clusterOccupancy);
  resolve("cuGraphKernelNodeGetParams", g_cu.graphKernelNodeGetParams);
  resolve("cuGraphExecKernelNodeSetParams", g_cu.graphExecKernelNodeSetParams);
}

static std::string cu_error(CUresult r) {
  const char* s = nullptr;
  g_cu.getErrorString(r, &s);
  return s ? s : "unknown driver error";
}

// ------------------------------------------------------- device side of checks ---

#include "checks.cuh"

// ------------------------------------------------------------------ buffers ---

// A device buffer with poisoned guard zones on both sides.
struct Buffer {
  unsigned char* base = nullptr;
  size_t bytes = 0;
  void* data() const { return base ? base + kGuard : nullptr; }
  void alloc(size_t n) {
    bytes = n;
    CUDA_OK(cudaMalloc(&base, n + 2 * kGuard));
    CUDA_OK(cudaMemset(base, 0xFF, n + 2 * kGuard));
  }
  void poison() const { if (base) CUDA_OK(cudaMemset(base, 0xFF, bytes + 2 * kGuard)); }
  void release() { if (base) cudaFree(base); base = nullptr; bytes = 0; }
};

struct ProblemDesc {
  std::string key;
  DType x, res, w, b;
  bool layernorm, offset, stats;
  long long rows, hidden, xs, ys, rs, ros;
  unsigned seed;
};

struct Copy {
  Buffer x, r, y, ro, mean, rstd;
  void release() { x.release(); r.release(); y.release(); ro.release(); mean.release(); rstd.release(); }
};

// The inputs verification reads (copy 0's): x, residual, weight, bias.
enum InputIndex { I_X = 0, I_RES, I_W, I_B, I_COUNT };

struct Workspace {
  ProblemDesc d;
  Buffer w, b;
  std::vector<Copy> copies;
  size_t bytes_per_copy = 0;
  Buffer ref_stats;                                // RowStats of copy 0's rows, for ref_eps
  float ref_eps = NAN;
  unsigned long long fingerprints[I_COUNT] = {};  // of the inputs as generated
  void release() {
    for (auto& c : copies) c.release();
    copies.clear();
    w.release();
    b.release();
    ref_stats.release();
    ref_eps = NAN;
  }
};

static Workspace g_ws;
static bool g_have_ws = false;
static void release_bwd_workspace();
static int g_l2_bytes = 0;
static int g_sms = 0;
// Timed launches use programmatic dependent launch (sm90 and later), as the package launches
// them: each kernel starts while the one before drains (the templates wait in
// griddepcontrol.wait before touching memory). NORMGEN_PDL=0 times plain launches.
static bool g_pdl = false;

/** One launch of a 1-D grid; with `programmatic`, allowed to overlap the stream's previous kernel. */
static CUresult launch_grid(CUfunction fn, unsigned grid, unsigned block, unsigned smem, cudaStream_t s, void** args, bool programmatic) {
  if (!programmatic) return g_cu.launchKernel(fn, grid, 1, 1, block, 1, 1, smem, (CUstream)s, args, nullptr);
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = grid; cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = block; cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = smem;
  cfg.hStream = (CUstream)s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return g_cu.launchKernelEx(&cfg, fn, args, nullptr);
}

static void grid_for(long long n, int& blocks) { blocks = (int)std::min<long long>((n + 255) / 256, 65536); if (blocks < 1) blocks = 1; }

static void fill(const Buffer& buf, DType d, long long rows, long long cols, long long stride, unsigned seed, int stream, bool offset) {
  int blocks;
  grid_for(rows * cols, blocks);
  fill_input<<<blocks, 256>>>(buf.data(), d, rows, cols, stride, seed, stream, offset);
  CUDA_OK(cudaGetLastError());
}

// Verification's scratch on the device: the tallies and the inputs' fingerprints.
struct CheckScratch { Check check; unsigned long long fingerprints[I_COUNT]; };
static CheckScratch* g_scratch = nullptr;

static CheckScratch* reset_scratch() {
  if (!g_scratch) CUDA_OK(cudaMalloc(&g_scratch, sizeof(CheckScratch)));
  CheckScratch init;
  for (int i = 0; i < 8; ++i) { init.check.bad[i] = 0; init.check.worst[i] = 0; init.check.first[i] = ~0ull; }
  for (auto& f : init.fingerprints) f = 0;
  CUDA_OK(cudaMemcpy(g_scratch, &init, sizeof init, cudaMemcpyHostToDevice));
  return g_scratch;
}

static void fingerprint_of(const Buffer& b, unsigned long long* out) {
  if (!b.base) return;
  const long long blocks = std::min<long long>(g_sms * 8, (long long)(b.bytes / 16 + 255) / 256);  // a block per 4096 bytes, at most
  fingerprint<<<(unsigned)std::max(1LL, blocks), 256>>>(static_cast<const unsigned char*>(b.data()), b.bytes, out);
}

// A verified input (copy 0's) and how it was generated.
struct VerifiedInput { const Buffer* buffer; DType dtype; long long rows, stride; int stream; bool offset; };
static VerifiedInput verified_input(const ProblemDesc& d, int i) {
  const Copy& c = g_ws.copies[0];
  switch (i) {
    case I_X: return {&c.x, d.x, d.rows, d.xs, S_X, false};
    case I_RES: return {&c.r, d.res, d.rows, d.rs, S_RES, false};
    case I_W: return {&g_ws.w, d.w, 1, d.hidden, S_W, d.offset};
    default: return {&g_ws.b, d.b, 1, d.hidden, S_B, d.offset};
  }
}

// The fault tests' stand-in for a kernel that writes into one of its inputs: one bit of the
// named input ("x", "residual", "weight", "bias") flipped in the middle of copy 0, after the
// verification launch (a request's corruptInput) or after the timing (corruptInputWhileTimed).
static std::string corrupt_input(const ProblemDesc& d, const std::string& name) {
  static const char* names[I_COUNT] = {"x", "residual", "weight", "bias"};
  for (int i = 0; i < I_COUNT; ++i) {
    if (name != names[i]) continue;
    const VerifiedInput in = verified_input(d, i);
    if (!in.buffer->base) return "the problem has no input '" + name + "' to corrupt";
    unsigned char* at = static_cast<unsigned char*>(in.buffer->data()) + ((in.rows / 2) * in.stride + d.hidden / 2) * dtype_bytes(in.dtype);
    unsigned char byte;
    CUDA_OK(cudaMemcpy(&byte, at, 1, cudaMemcpyDeviceToHost));
    byte ^= 1;
    CUDA_OK(cudaMemcpy(at, &byte, 1, cudaMemcpyHostToDevice));
    return "";
  }
  return "cannot corrupt unknown input '" + name + "'";
}

// Copy 0's inputs whose fingerprints (in got) differ from those taken when they were
// generated are checked element by element, to say where; got is then read again. A change
// check_input cannot place (no element differs from what was generated, which the
// fingerprint says is not so) still counts as one bad input element.
static bool locate_changed_inputs(const ProblemDesc& d, CheckScratch* scratch, CheckScratch& got) {
  bool changed = false;
  for (int i = 0; i < I_COUNT; ++i) {
    if (got.fingerprints[i] == g_ws.fingerprints[i]) continue;
    changed = true;
    const VerifiedInput in = verified_input(d, i);
    int blocks;
    grid_for(in.rows * in.stride, blocks);
    check_input<<<blocks, 256>>>(in.buffer->data(), in.dtype, in.rows, d.hidden, in.stride, d.seed, in.stream, in.offset, &scratch->check);
  }
  if (!changed) return false;
  CUDA_OK(cudaMemcpy(&got, scratch, sizeof got, cudaMemcpyDeviceToHost));
  if (got.check.bad[C_INPUT] == 0) { got.check.bad[C_INPUT] = 1; got.check.first[C_INPUT] = 0; }
  return true;
}

// After a verified variant was timed: copy 0's inputs must be as generated, or the variant
// wrote into them (through another copy's rotation, out of every guard zone) and the next
// variant's verification would fail in its place. status is empty when they are intact.
struct InputsAfterTiming { std::string status, fields; };
static InputsAfterTiming inputs_after_timing(const ProblemDesc& d, const Json& req) {
  if (!req.str("corruptInputWhileTimed").empty()) {  // the fault tests' stand-in for such a kernel
    const std::string e = corrupt_input(d, req.str("corruptInputWhileTimed"));
    if (!e.empty()) return {"BAD_REQUEST", "\"error\":" + quote(e) + ","};
  }
  CheckScratch* scratch = reset_scratch();
  for (int i = 0; i < I_COUNT; ++i) fingerprint_of(*verified_input(d, i).buffer, &scratch->fingerprints[i]);
  CheckScratch got;
  CUDA_OK(cudaMemcpy(&got, scratch, sizeof got, cudaMemcpyDeviceToHost));
  if (!locate_changed_inputs(d, scratch, got)) return {};
  g_have_ws = false;
  g_ws.release();  // rebuilt for the next request
  return {"INCORRECT", "\"bad_inputs\":" + num((double)got.check.bad[C_INPUT]) + ",\"first_bad_inputs\":" +
                           num((double)got.check.first[C_INPUT]) + ",\"error\":\"an input changed while the variant was timed\","};
}

static void check_guards_of(std::initializer_list<const Buffer*> buffers, Check* check) {
  GuardZones g;
  g.n = 0;
  for (const Buffer* b : buffers)
    if (b->base) { g.at[g.n++] = b->base; g.at[g.n++] = b->base + kGuard + b->bytes; }
  if (g.n) check_guards<<<g.n, 256>>>(g, check);
}

static void setup_workspace(const ProblemDesc& d, size_t copies_wanted) {
  if (g_have_ws && g_ws.d.key == d.key && g_ws.copies.size() >= copies_wanted) return;
  if (g_have_ws) g_ws.release();
  g_ws.d = d;
  const size_t xb = dtype_bytes(d.x), rb = dtype_bytes(d.res);
  if (d.w != NONE) { g_ws.w.alloc(d.hidden * dtype_bytes(d.w)); fill(g_ws.w, d.w, 1, d.hidden, d.hidden, d.seed, S_W, d.offset); }
  if (d.b != NONE) { g_ws.b.alloc(d.hidden * dtype_bytes(d.b)); fill(g_ws.b, d.b, 1, d.hidden, d.hidden, d.seed, S_B, d.offset); }
  g_ws.copies.resize(copies_wanted);
  for (auto& c : g_ws.copies) {
    c.x.alloc(d.rows * d.xs * xb);
    fill(c.x, d.x, d.rows, d.hidden, d.xs, d.seed, S_X, false);
    c.y.alloc(d.rows * d.ys * xb);
    if (d.res != NONE) {
      c.r.alloc(d.rows * d.rs * rb);
      fill(c.r, d.res, d.rows, d.hidden, d.rs, d.seed, S_RES, false);
      c.ro.alloc(d.rows * d.ros * rb);
    }
    if (d.stats) {
      c.rstd.alloc(d.rows * 4);
      if (d.layernorm) c.mean.alloc(d.rows * 4);
    }
  }
  CheckScratch* scratch = reset_scratch();
  for (int i = 0; i < I_COUNT; ++i) fingerprint_of(*verified_input(d, i).buffer, &scratch->fingerprints[i]);
  CUDA_OK(cudaMemcpy(g_ws.fingerprints, scratch->fingerprints, sizeof g_ws.fingerprints, cudaMemcpyDeviceToHost));
  g_have_ws = true;
}

static NormgenFwdParams params_for(const Copy& c, const ProblemDesc& d, float eps) {
  NormgenFwdParams p;
  memset(&p, 0, sizeof p);
  p.x = c.x.data(); p.residual = c.r.data(); p.weight = g_ws.w.data(); p.bias = g_ws.b.data();
  p.y = c.y.data(); p.residual_out = c.ro.data();
  p.mean = static_cast<float*>(c.mean.data()); p.rstd = static_cast<float*>(c.rstd.data());
  p.rows = d.rows; p.hidden = d.hidden;
  p.x_stride = d.xs; p.residual_stride = d.rs; p.y_stride = d.ys; p.residual_out_stride = d.ros;
  p.eps = eps;
  return p;
}

// ------------------------------------------------------------------ kernels ---

static std::map<std::string, CUmodule> g_modules;

struct Kernel { CUfunction fn; std::string error; };

static Kernel load_kernel(const std::string& cubin, const std::string& symbol) {
  CUmodule m;
  auto it = g_modules.find(cubin);
  if (it == g_modules.end()) {
    CUresult r = g_cu.moduleLoad(&m, cubin.c_str());
    if (r != CUDA_SUCCESS) return {nullptr, "cuModuleLoad(" + cubin + "): " + cu_error(r)};
    g_modules[cubin] = m;
  } else {
    m = it->second;
  }
  CUfunction f;
  CUresult r = g_cu.moduleGetFunction(&f, m, symbol.c_str());
  if (r != CUDA_SUCCESS) return {nullptr, "cuModuleGetFunction(" + symbol + "): " + cu_error(r)};
  return {f, ""};
}

struct Launch { CUfunction fn; unsigned grid, block, smem; };

/**
 * CTAs of `fn` resident on the whole GPU at once. Clusters must fit inside one GPC, so
 * fewer of them fit than SMs / cluster suggests: counted by the cluster occupancy query.
 */
static CUresult resident_ctas(CUfunction fn, unsigned block, unsigned smem, unsigned cluster, int* resident) {
  if (cluster > 1) {
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cluster; cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = block; cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = smem;
    int clusters = 0;
    const CUresult r = g_cu.clusterOccupancy(&clusters, fn, &cfg);
    *resident = clusters * (int)cluster;
    return r;
  }
  int per_sm = 0;
  const CUresult r = g_cu.occupancy(&per_sm, fn, (int)block, smem);
  *resident = per_sm * g_sms;
  return r;
}

// Verification launches plainly; timing as the package launches (g_pdl).
static CUresult launch(const Launch& l, NormgenFwdParams& p, cudaStream_t s, bool programmatic = false) {
  void* args[] = {&p};
  return launch_grid(l.fn, l.grid, l.block, l.smem, s, args, programmatic);
}

static void write_dump(const std::string& prefix, const char* name, const Buffer& b, long long rows, long long cols, long long stride, size_t elt) {
  std::vector<unsigned char> host(rows * cols * elt);
  CUDA_OK(cudaMemcpy2D(host.data(), cols * elt, b.data(), stride * elt, cols * elt, rows, cudaMemcpyDeviceToHost));
  std::string path = prefix + "." + name + ".bin";
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) fatal("RUNTIME_ERROR", "cannot write " + path);
  fwrite(host.data(), 1, host.size(), f);
  fclose(f);
}

static std::string verify(const Launch& l, const ProblemDesc& d, float eps, const Json& req) {
  Copy& c = g_ws.copies[0];
  RefArgs a;
  a.p = params_for(c, d, eps); a.x = d.x; a.res = d.res; a.w = d.w; a.b = d.b;
  a.layernorm = d.layernorm; a.offset = d.offset; a.stats = d.stats;
  a.y_tol = {req.num("atol"), req.num("rtol")};
  a.res_tol = {req.num("resAtol"), req.num("resRtol")};
  a.stats_tol = {req.num("statsAtol"), req.num("statsRtol")};
  // From copy 0's inputs as they are now: if a kernel timed before changed them, their
  // fingerprints (taken when they were generated) fail this verification anyway.
  if (!(g_ws.ref_eps == eps)) {
    if (!g_ws.ref_stats.base) g_ws.ref_stats.alloc(d.rows * sizeof(RowStats));
    reference_row_stats<<<(unsigned)std::min<long long>(d.rows, 8192), 256>>>(a, static_cast<RowStats*>(g_ws.ref_stats.data()));
    CUDA_OK(cudaGetLastError());
    g_ws.ref_eps = eps;
  }
  const RowStats* stats = static_cast<const RowStats*>(g_ws.ref_stats.data());

  for (Buffer* b : {&c.y, &c.ro, &c.mean, &c.rstd}) b->poison();
  NormgenFwdParams p = a.p;
  CUresult lr = launch(l, p, 0);
  if (lr != CUDA_SUCCESS) return "LAUNCH_ERROR:" + cu_error(lr);
  CUDA_OK(cudaDeviceSynchronize());
  if (!req.str("corruptInput").empty()) {
    const std::string e = corrupt_input(d, req.str("corruptInput"));
    if (!e.empty()) return "BAD_REQUEST|\"error\":" + quote(e) + ",";
  }

  CheckScratch* scratch = reset_scratch();
  Check* check = &scratch->check;
  const unsigned output_blocks = (unsigned)std::min<long long>(d.rows * ((d.hidden + 2047) / 2048), g_sms * 16);
  launch_check_outputs({d.x, d.res, d.w, d.b, d.offset}, output_blocks, a, stats, check);
  if (d.stats) check_stats<<<(unsigned)std::min<long long>((d.rows + 255) / 256, 1024), 256>>>(a, stats, check);
  int blocks;
  if (d.ys > d.hidden) {
    grid_for(d.rows * (d.ys - d.hidden), blocks);
    check_padding<<<blocks, 256>>>(static_cast<const unsigned char*>(c.y.data()), dtype_bytes(d.x), d.rows, d.hidden, d.ys, check);
  }
  if (d.res != NONE && d.ros > d.hidden) {
    grid_for(d.rows * (d.ros - d.hidden), blocks);
    check_padding<<<blocks, 256>>>(static_cast<const unsigned char*>(c.ro.data()), dtype_bytes(d.res), d.rows, d.hidden, d.ros, check);
  }
  for (int i = 0; i < I_COUNT; ++i) fingerprint_of(*verified_input(d, i).buffer, &scratch->fingerprints[i]);
  check_guards_of({&c.y, &c.ro, &c.mean, &c.rstd, &c.x, &c.r, &g_ws.w, &g_ws.b}, check);
  CUDA_OK(cudaGetLastError());
  CheckScratch got;
  CUDA_OK(cudaMemcpy(&got, scratch, sizeof got, cudaMemcpyDeviceToHost));
  locate_changed_inputs(d, scratch, got);
  const Check& checked = got.check;

  std::string dump = req.str("dump");
  if (!dump.empty()) {
    write_dump(dump, "y", c.y, d.rows, d.hidden, d.ys, dtype_bytes(d.x));
    if (d.res != NONE) write_dump(dump, "residual_out", c.ro, d.rows, d.hidden, d.ros, dtype_bytes(d.res));
    if (d.stats) {
      write_dump(dump, "rstd", c.rstd, d.rows, 1, 1, 4);
      if (d.layernorm) write_dump(dump, "mean", c.mean, d.rows, 1, 1, 4);
    }
  }

  std::string out;
  unsigned long long total_bad = 0;
  for (int i = 0; i < C_COUNT; ++i) {
    double worst;
    memcpy(&worst, &checked.worst[i], sizeof worst);
    total_bad += checked.bad[i];
    if (i <= C_RSTD) out += "\"err_" + std::string(kCheckNames[i]) + "\":" + num(worst) + ",";
    if (checked.bad[i]) out += "\"bad_" + std::string(kCheckNames[i]) + "\":" + num((double)checked.bad[i]) + ",\"first_bad_" + kCheckNames[i] + "\":" + num((double)checked.first[i]) + ",";
  }
  if (total_bad) { g_have_ws = false; g_ws.release(); }  // inputs may be damaged: rebuild next time
  return std::string(total_bad ? "INCORRECT" : "OK") + "|" + out;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Timing the next variant of a problem can reuse the last one's instantiated graph: the same
// chain of launches over the same copies, each kernel node given the new kernel and launch
// shape (capturing and instantiating a graph of 256 launches cost about a millisecond of host
// time, more than a small problem's timed samples). Forward runs only (one kernel a launch,
// its one parameter the copy's NormgenFwdParams).
struct GraphReuse {
  std::string key;                      // the problem and everything else the graph fixes
  CUfunction fn; unsigned grid, block, smem;
  std::vector<NormgenFwdParams>* params;  // per copy
};
struct CachedGraph {
  std::string key;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<std::pair<CUgraphNode, size_t>> nodes;  // kernel node, its copy
  void release() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    exec = nullptr; graph = nullptr; nodes.clear(); key.clear();
  }
};
static CachedGraph g_graph;

// Each kernel node of a captured forward graph with the copy it reads (by its x pointer);
// false where the graph is not such a chain.
static bool map_graph_nodes(CachedGraph& g, const std::vector<NormgenFwdParams>& params) {
  size_t n = 0;
  if (cudaGraphGetNodes(g.graph, nullptr, &n) != cudaSuccess) return false;
  std::vector<cudaGraphNode_t> nodes(n);
  if (cudaGraphGetNodes(g.graph, nodes.data(), &n) != cudaSuccess) return false;
  std::map<const void*, size_t> copy_of;
  for (size_t k = 0; k < params.size(); ++k) copy_of[params[k].x] = k;
  for (cudaGraphNode_t node : nodes) {
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    if (g_cu.graphKernelNodeGetParams((CUgraphNode)node, &kp) != CUDA_SUCCESS || !kp.kernelParams) return false;
    auto it = copy_of.find(static_cast<const NormgenFwdParams*>(kp.kernelParams[0])->x);
    if (it == copy_of.end()) return false;
    g.nodes.push_back({(CUgraphNode)node, it->second});
  }
  return true;
}

// Point every node of the cached graph at the new kernel; false (the graph then released)
// where the driver refuses.
static bool retarget_graph(CachedGraph& g, const GraphReuse& r) {
  for (auto& [node, copy] : g.nodes) {
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = r.fn;
    kp.gridDimX = r.grid; kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = r.block; kp.blockDimY = kp.blockDimZ = 1;
    kp.sharedMemBytes = r.smem;
    void* args[] = {&(*r.params)[copy]};
    kp.kernelParams = args;
    if (g_cu.graphExecKernelNodeSetParams((CUgraphExec)g.exec, node, &kp) != CUDA_SUCCESS) { g.release(); return false; }
  }
  return true;
}

// Time `launch(i, stream)` (i: which input copy, of K) cycling over the copies (cold L2),
// captured in a CUDA graph so small problems measure the kernels and not the launch
// path. Returns the body of the reply (the median also in *median_us when given). Shared by
// forward and backward runs (forward ones pass `reuse`).
template <typename LaunchFn>
static std::string time_launches(size_t K, LaunchFn launch_copy, const Json& req, const GraphReuse* reuse = nullptr, double* median_us = nullptr) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));

  // Estimate one launch's time (verify has already run it once): one launch,
  // then eight more for short kernels. Long kernels (large problems, where most of a
  // tune's GPU time goes) get no further warm-up launches.
  auto timed_launches = [&](int n) {
    CUDA_OK(cudaEventRecord(e0, s));
    for (int i = 0; i < n; ++i) if (launch_copy(i % K, s) != CUDA_SUCCESS) fatal("RUNTIME_ERROR", "launch failed during warm-up");
    CUDA_OK(cudaEventRecord(e1, s));
    CUDA_OK(cudaEventSynchronize(e1));
    float elapsed;
    CUDA_OK(cudaEventElapsedTime(&elapsed, e0, e1));
    return (double)elapsed / n;
  };
  double per = timed_launches(1);
  const bool single_launch_estimate = per >= 0.5;
  if (!single_launch_estimate) per = timed_launches(8);
  per = std::max(1e-4, per);
  g_phases.mark("estimate");
  const double target_ms = req.num("sampleMs", 1.0);
  const int per_target = (int)std::ceil(target_ms / per);  // launches that make one sample
  // Every copy once per replay (fewer would leave the replayed ones in L2), at most 2000
  // launches unless the copies need more.
  int per_graph = std::min(std::max<int>(per_target, (int)K), std::max<int>(2000, (int)K));
  // Programmatic launches overlap each kernel with the one before, and a short graph does not
  // show a long chain's steady state: on an H200 a LayerNorm of 16384 clustered 128-thread CTAs
  // took 150 us a launch in graphs of 2-7 launches and 163-186 us in graphs of 14-64
  // (test/gpu/pdl-chain.md). Full timings ask for a chain of chainLaunches, up to ~8 ms of work.
  const int chain = (int)req.integer("chainLaunches", 0);
  if (g_pdl && chain > per_graph) per_graph = std::max(per_graph, std::min(chain, (int)std::ceil(8.0 / per)));
  // The last variant's graph of this problem and rotation serves if it has as many launches
  // as a sample needs, or up to twice as many (its samples then hold more launches): variants'
  // estimates differ, and each new length would be a graph captured again.
  const std::string key = reuse ? reuse->key + "|" + std::to_string(K) : "";
  const size_t cached = g_graph.nodes.size();
  const bool reusable = reuse && g_graph.key == key &&
                        (cached == (size_t)per_graph || (per_graph >= 16 && cached > (size_t)per_graph && cached <= 2 * (size_t)per_graph));
  if (reusable) per_graph = (int)cached;
  int samples = (int)req.integer("samples", 15);
  // A replay visits every copy. Where that takes more launches than a sample needs (tiny
  // problems rotate over thousands of copies), fewer replays time as many launches, but
  // never fewer than minSamples.
  if (per_graph > per_target)
    samples = std::max((int)req.integer("minSamples", samples), (int)std::ceil((double)samples * per_target / per_graph));
  std::vector<double> us;
  // A sample of one launch over one copy (inputs beyond the L2) is what the estimate was:
  // it counts, one launch fewer for each of the long kernels that take most of a tune's time.
  if (per_graph == 1 && single_launch_estimate) us.push_back(1000.0 * per);
  // Screening passes a cutoff: a long kernel whose first sample is already slower is not
  // a contender, and its remaining samples are skipped.
  const double cutoff_us = req.num("cutoffUs", 0.0);
  const auto over_cutoff = [&] { return us.size() == 1 && cutoff_us > 0 && per >= 0.2 && us[0] > cutoff_us; };
  if ((int)us.size() < samples && !over_cutoff()) {
    const bool reused = reusable && retarget_graph(g_graph, *reuse);
    if (!reused) {
      g_graph.release();
      CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < per_graph; ++i) launch_copy(i % K, s);
      CUDA_OK(cudaStreamEndCapture(s, &g_graph.graph));
      CUDA_OK(cudaGraphInstantiate(&g_graph.exec, g_graph.graph, 0));
      if (reuse && map_graph_nodes(g_graph, *reuse->params)) g_graph.key = key;
    }
    cudaGraphExec_t exec = g_graph.exec;
    CUDA_OK(cudaGraphUpload(exec, s));  // ready to launch without running it once more
    const bool unmappable = reuse && g_graph.key.empty();
    g_phases.mark(reused ? "graph retargeted" : reusable ? "graph captured, retarget refused" : unmappable ? "graph captured, not mappable" : "graph captured");
    float ms;
    while ((int)us.size() < samples) {
      CUDA_OK(cudaEventRecord(e0, s));
      CUDA_OK(cudaGraphLaunch(exec, s));
      CUDA_OK(cudaEventRecord(e1, s));
      CUDA_OK(cudaEventSynchronize(e1));
      CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
      us.push_back(1000.0 * ms / per_graph);
      if (over_cutoff()) break;
    }
    g_phases.mark("samples");
    if (g_graph.key.empty()) g_graph.release();  // not reusable: keep nothing
  }
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  CUDA_OK(cudaStreamDestroy(s));
  std::sort(us.begin(), us.end());
  std::string arr;
  for (double u : us) arr += (arr.empty() ? "" : ",") + num(u);
  const double med = median(us);
  if (median_us) *median_us = med;
  return "\"medianUs\":" + num(med) + ",\"minUs\":" + num(us.front()) + ",\"maxUs\":" + num(us.back()) +
         ",\"launchesPerSample\":" + num(per_graph) + ",\"copies\":" + num((double)K) + ",\"samplesUs\":[" + arr + "]";
}

// Weight and bias copied where they share L1 sets with each other and with x's first row: at
// x's address modulo `period`, the bias whole periods after the weight. On the H200 (period
// 64 KiB) a reload kernel whose weight and bias lay so lost its rows from L1 before its second
// pass and ran 5-12% slower than with them elsewhere (test/gpu/placement.md).
struct AliasedAffine {
  void* base = nullptr;
  const void* w = nullptr;
  const void* b = nullptr;
  AliasedAffine(const ProblemDesc& d, size_t period) {
    const size_t wb = d.w != NONE ? d.hidden * dtype_bytes(d.w) : 0, bb = d.b != NONE ? d.hidden * dtype_bytes(d.b) : 0;
    const size_t span = (std::max(wb, bb) + period - 1) / period * period;
    CUDA_OK(cudaMalloc(&base, 2 * span + 2 * period));
    const uintptr_t at = ((uintptr_t)base + period - 1) / period * period + (uintptr_t)g_ws.copies[0].x.data() % period;
    if (wb) { CUDA_OK(cudaMemcpy((void*)at, g_ws.w.data(), wb, cudaMemcpyDeviceToDevice)); w = (const void*)at; }
    if (bb) { CUDA_OK(cudaMemcpy((void*)(at + span), g_ws.b.data(), bb, cudaMemcpyDeviceToDevice)); b = (const void*)(at + span); }
  }
  ~AliasedAffine() {
    g_graph.release();  // its nodes may point here
    cudaFree(base);
  }
};

// The workspace may hold more copies than this request rotates over (a finalist's came first).
// `affine`: weight and bias elsewhere than the workspace's (the same values). `release`: where
// the kernel releases its dependents (NormgenFwdParams::release_at: 0 start, 1 after its wait, 2 at exit).
static std::string time_kernel(const Launch& l, const ProblemDesc& d, float eps, size_t copies, unsigned cluster, const Json& req,
                               int release, const AliasedAffine* affine = nullptr, double* median_us = nullptr) {
  std::vector<NormgenFwdParams> ps;
  for (size_t i = 0; i < copies; ++i) {
    ps.push_back(params_for(g_ws.copies[i], d, eps));
    ps.back().release_at = release;
    if (affine && affine->w) ps.back().weight = affine->w;
    if (affine && affine->b) ps.back().bias = affine->b;
  }
  // The graph fixes the problem, the copies, eps and the cluster shape (a kernel attribute the
  // node may carry); every node's buffers are set again on reuse. freshGraph asks for a graph
  // of its own, and plain launches always get one: in graphs retargeted from the kernel before,
  // plain tunes timed 32-row kernels 0.3-0.37 us (14-18%) slower than in fresh ones, all but
  // the first final of each problem, which then won (test/gpu/plain-fresh-graphs.md).
  const GraphReuse reuse{d.key + "|" + num(eps) + "|" + std::to_string(cluster), l.fn, l.grid, l.block, l.smem, &ps};
  return time_launches(ps.size(), [&](size_t i, cudaStream_t s) { return launch(l, ps[i], s, g_pdl); }, req,
                       req.flag("freshGraph") || !g_pdl ? nullptr : &reuse, median_us);
}

// What forward and backward requests share: the op's kind, the weight and bias dtypes, the shape.
template <typename Desc>
static void read_common(const Json& req, Desc& d) {
  d.w = parse_dtype(req.str("weight", "none"));
  d.b = parse_dtype(req.str("bias", "none"));
  d.layernorm = req.str("op") == "layernorm";
  d.offset = req.flag("offset");
  d.stats = req.flag("stats");
  d.rows = req.integer("rows");
  d.hidden = req.integer("hidden");
  d.seed = (unsigned)req.integer("seed", 1);
}

// The request's kernel, with its dynamic shared memory opted in (static plus dynamic may pass
// the 48 KiB default), and clusters of more than 8 CTAs (non-portable on sm90: CUDA requires
// the opt-in before such a kernel is queried or launched). On failure the reply is sent and fn is null.
static CUfunction load_request_kernel(const Json& req, const std::string& symbol, unsigned smem) {
  Kernel k = load_kernel(req.str("cubin"), symbol);
  if (!k.fn) { reply("\"status\":\"LOAD_ERROR\",\"error\":" + quote(k.error)); return nullptr; }
  if (smem > 0) {
    CUresult r = g_cu.funcSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
    if (r != CUDA_SUCCESS) { reply("\"status\":\"LAUNCH_ERROR\",\"error\":" + quote("shared memory: " + cu_error(r))); return nullptr; }
  }
  if (req.integer("cluster", 1) > 8) {
    CUresult r = g_cu.funcSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (r != CUDA_SUCCESS) { reply("\"status\":\"LAUNCH_ERROR\",\"error\":" + quote("cluster size: " + cu_error(r))); return nullptr; }
  }
  return k.fn;
}

// The launch of `symbol` the request describes. Persistent kernels loop over rows: as many
// CTAs as fit on the GPU at once. Clusters must fit inside one GPC, so fewer of them fit than
// SMs / cluster suggests; a cluster that is not resident from the start would run its rows
// after the others. On failure the reply is sent and false returned.
static bool request_launch(const Json& req, const std::string& symbol, Launch* l) {
  const unsigned smem = (unsigned)req.integer("smem");
  CUfunction fn = load_request_kernel(req, symbol, smem);
  if (!fn) return false;
  *l = Launch{fn, (unsigned)req.integer("grid"), (unsigned)req.integer("block"), smem};
  if (req.flag("persistent")) {
    int resident = 0;
    const CUresult r = resident_ctas(fn, l->block, l->smem, (unsigned)req.integer("cluster", 1), &resident);
    if (r != CUDA_SUCCESS || resident < 1) { reply("\"status\":\"LAUNCH_ERROR\",\"error\":" + quote("occupancy: " + (r != CUDA_SUCCESS ? cu_error(r) : std::string("no CTA fits on the GPU")))); return false; }
    l->grid = std::min(l->grid, (unsigned)resident);
  }
  return true;
}

// Input copies to rotate over when timing, so every timed launch reads from a cold L2: enough
// that the bytes read in one pass over them (x, residual) span 3.5 L2s, as in
// test/gpu/bench_torch.py (at most kMaxCopies: the tiniest problems stay partly warm), as many
// as fit in 60% of the free memory (plus what the workspace already holds, `have` bytes).
// Before 2026-11-29 one pass moved 1.5 L2s, reads and writes counted: x alone spanned 0.75 L2
// or less, and kernels of a few microseconds that stall on every load ran up to 1.4x their
// tuned time in the benchmark (fp32 RMSNorm 32 x 4096: 1.99 us in the tune, 2.78 us there;
// test/gpu/cold-l2-reads.md).
static const size_t kMaxCopies = 4096;
static const double kColdL2Factor = 3.5;
static size_t copies_spanning_l2(size_t read_bytes, size_t per_copy, size_t free_b, size_t have) {
  const size_t span = (size_t)std::ceil(kColdL2Factor * g_l2_bytes / (double)std::max<size_t>(read_bytes, 1));
  size_t copies = std::max<size_t>(1, std::min(span, kMaxCopies));
  while (copies > 1 && copies * per_copy > (free_b + have) * 0.6) --copies;
  return copies;
}

// A request may ask for fewer (maxCopies): screening ranks variants over a shorter rotation,
// as capturing, instantiating and replaying a graph of 4096 launches for each variant of a
// 1-row problem took 29 ms a variant (H200); finalists are then timed over the whole rotation.
static size_t rotation_copies(const Json& req, size_t read_bytes, size_t per_copy, size_t free_b, size_t have) {
  if (!req.flag("time")) return 1;
  const size_t copies = copies_spanning_l2(read_bytes, per_copy, free_b, have);
  const long long cap = req.integer("maxCopies", 0);
  return cap > 0 ? std::min<size_t>(copies, (size_t)cap) : copies;
}

// The timing's reply fields. With affineAlias (a period in bytes) and a weight or bias, the
// kernel is timed twice, as the workspace places them and aliased (AliasedAffine); the slower
// timing is the reply's, both medians beside it (usualUs, aliasedUs): a kernel that is fast
// in one placement only must not win on it.
static std::string time_placements(const Launch& l, const ProblemDesc& d, float eps, size_t copies, const Json& req, int release, double* median_us) {
  const unsigned cluster = (unsigned)req.integer("cluster", 1);
  const long long period = req.integer("affineAlias", 0);
  if (period <= 0 || (d.w == NONE && d.b == NONE)) return time_kernel(l, d, eps, copies, cluster, req, release, nullptr, median_us);
  double usual = 0, aliased = 0;
  const std::string usual_body = time_kernel(l, d, eps, copies, cluster, req, release, nullptr, &usual);
  const AliasedAffine affine(d, (size_t)period);
  const std::string aliased_body = time_kernel(l, d, eps, copies, cluster, req, release, &affine, &aliased);
  *median_us = std::max(usual, aliased);
  return (aliased > usual ? aliased_body : usual_body) + ",\"usualUs\":" + num(usual) + ",\"aliasedUs\":" + num(aliased);
}

// With programmatic launch, the kernel is timed releasing its dependents at its start and,
// with compareRelease, after its wait, with compareExit, not at all (the next grid launches
// as its CTAs exit); each as time_placements does. The fastest is the reply's, with
// release ("late" or "exit") set where it was not the start, and every median beside it
// (releaseStartUs, releaseLateUs, releaseExitUs). The release point changes no result, only
// how far grids run ahead: in long chains of short kernels start and after the wait can each
// be the faster by 10-25% (test/gpu/release-late.md); persistent clusters placed as the
// previous grid retires can run 3-20% slower than on an empty GPU (test/gpu/release-points.md).
// Comparing nothing, `release` (default 0) says where it releases them. *median_us: the reply's median.
static std::string time_releases(const Launch& l, const ProblemDesc& d, float eps, size_t copies, const Json& req, double* median_us) {
  const bool late = g_pdl && req.flag("compareRelease"), at_exit = g_pdl && req.flag("compareExit");
  double& best = *median_us;
  if (!late && !at_exit) return time_placements(l, d, eps, copies, req, (int)req.integer("release", 0), &best);
  std::string body = time_placements(l, d, eps, copies, req, 0, &best), chosen, medians = ",\"releaseStartUs\":" + num(best);
  auto compare = [&](int release, const char* point, const char* field) {
    double us = 0;
    std::string b = time_placements(l, d, eps, copies, req, release, &us);
    medians += std::string(",\"") + field + "\":" + num(us);
    if (us < best) best = us, body = b, chosen = std::string(",\"release\":\"") + point + "\"";
  };
  if (late) compare(1, "late", "releaseLateUs");
  if (at_exit) compare(2, "exit", "releaseExitUs");
  return body + chosen + medians;
}

// Launched plainly, a unit compiled with plain twins may ask for both kernels of a variant
// (compareSymbol: the twin of the kernel `symbol` names, or the kernel of the twin): the twin
// saves the kernel's prologue, the kernel's L2 prefetch of its first rows kept some long calls
// faster (test/gpu/plain-twin-rows.md). The counterpart is verified like the kernel (a wrong
// one fails the request) and timed as time_releases does; the faster is the reply's, with
// compared:true where it was the counterpart, both medians beside it (timedUs, comparedUs);
// `winner` becomes the counterpart's launch where it won (its grid is the reply's).
// False where a reply was sent (the counterpart failed).
static bool time_counterpart(const Json& req, const ProblemDesc& d, float eps, size_t copies, double timed_us, std::string* timed, Launch* winner) {
  Launch l;
  if (!request_launch(req, req.str("compareSymbol"), &l)) return false;
  if (req.flag("verify")) {
    const std::string v = verify(l, d, eps, req);
    if (v.rfind("LAUNCH_ERROR:", 0) == 0) { reply("\"status\":\"LAUNCH_ERROR\",\"compared\":true,\"error\":" + quote(v.substr(13))); return false; }
    const std::string status = v.substr(0, v.find('|'));
    if (status != "OK") { reply("\"status\":" + quote(status) + "," + v.substr(v.find('|') + 1) + "\"compared\":true,\"verified\":true"); return false; }
  }
  double us = 0;
  const std::string body = time_releases(l, d, eps, copies, req, &us);
  const std::string medians = ",\"timedUs\":" + num(timed_us) + ",\"comparedUs\":" + num(us);
  if (us < timed_us) { *timed = body + ",\"compared\":true"; *winner = l; }
  *timed += medians;
  return true;
}

static void cmd_run(const Json& req) {
  g_phases.start(req.flag("phases"));
  ProblemDesc d;
  read_common(req, d);
  d.x = parse_dtype(req.str("dtype"));
  d.res = parse_dtype(req.str("residual", "none"));
  d.xs = req.integer("xStride", d.hidden);
  d.ys = req.integer("yStride", d.hidden);
  d.rs = req.integer("residualStride", d.hidden);
  d.ros = req.integer("residualOutStride", d.hidden);
  if (d.x == NONE || d.rows <= 0 || d.hidden <= 0) { reply("\"status\":\"BAD_REQUEST\",\"error\":\"dtype, rows and hidden are required\""); return; }
  d.key = req.str("dtype") + req.str("residual") + req.str("weight") + req.str("bias") + req.str("op") + (d.offset ? "o" : "") + (d.stats ? "s" : "") +
          "|" + std::to_string(d.rows) + "|" + std::to_string(d.hidden) + "|" + std::to_string(d.xs) + "|" + std::to_string(d.ys) + "|" +
          std::to_string(d.rs) + "|" + std::to_string(d.ros) + "|" + std::to_string(d.seed);
  const float eps = (float)req.num("eps", 1e-6);

  Launch l;
  if (!request_launch(req, req.str("symbol"), &l)) return;

  // Copies to rotate over so every timed launch starts with a cold L2.
  const size_t xb = dtype_bytes(d.x), rb = dtype_bytes(d.res);
  const size_t per_copy = d.rows * (d.xs + d.ys) * xb + (d.res != NONE ? d.rows * (d.rs + d.ros) * rb : 0) + d.rows * 8;
  size_t free_b, total_b;
  CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
  const size_t have = (g_have_ws && g_ws.d.key == d.key) ? g_ws.copies.size() * per_copy : 0;
  if (per_copy > (free_b + have) * 0.9) { reply("\"status\":\"TOO_LARGE\",\"error\":\"the problem does not fit in GPU memory\""); return; }
  const size_t read_bytes = d.rows * d.hidden * (xb + (d.res != NONE ? rb : 0));
  const size_t copies = rotation_copies(req, read_bytes, per_copy, free_b, have);
  release_bwd_workspace();  // not needed by forward runs
  g_phases.mark("kernel");
  setup_workspace(d, copies);
  g_phases.mark("workspace");

  std::string body;
  std::string status = "OK";
  if (req.flag("verify")) {
    std::string v = verify(l, d, eps, req);
    if (v.rfind("LAUNCH_ERROR:", 0) == 0) { reply("\"status\":\"LAUNCH_ERROR\",\"error\":" + quote(v.substr(13))); return; }
    status = v.substr(0, v.find('|'));
    body += v.substr(v.find('|') + 1);
    if (status != "OK") { reply("\"status\":" + quote(status) + "," + body + "\"verified\":true"); return; }
    g_phases.mark("verify");
    setup_workspace(d, copies);
  }
  const std::string verified = body;
  if (req.flag("time")) {
    double us = 0;
    std::string timed = time_releases(l, d, eps, copies, req, &us);
    if (!g_pdl && !req.str("compareSymbol").empty() && !time_counterpart(req, d, eps, copies, us, &timed, &l)) return;
    body += timed + ",";
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) fatal("RUNTIME_ERROR", cudaGetErrorString(e));
  if (req.flag("time") && req.flag("verify")) {
    const InputsAfterTiming after = inputs_after_timing(d, req);
    if (!after.status.empty()) { reply("\"status\":" + quote(after.status) + "," + verified + after.fields + "\"verified\":true"); return; }
    g_phases.mark("inputs after timing");
  }
  g_phases.mark("rest");
  reply("\"status\":" + quote(status) + "," + body + "\"grid\":" + num(l.grid) + ",\"verified\":" + (req.flag("verify") ? "true" : "false") + g_phases.field());
}

static void cmd_info() {
  int dev = 0, driver = 0, runtime = 0;
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, dev));
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  char uuid[64];
  const unsigned char* u = reinterpret_cast<const unsigned char*>(&prop.uuid);
  snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  // The kernel driver's version, as nvidia-smi shows it.
  std::string driver_version = std::to_string(driver);
  if (FILE* f = fopen("/proc/driver/nvidia/version", "r")) {
    char buf[512];
    if (fgets(buf, sizeof buf, f)) driver_version = buf;  // the TypeScript side picks the version out
    fclose(f);
  }
  reply("\"status\":\"OK\",\"driverVersion\":" + quote(driver_version) + ",\"name\":" + quote(prop.name) + ",\"major\":" + num(prop.major) + ",\"minor\":" + num(prop.minor) +
        ",\"sms\":" + num(prop.multiProcessorCount) + ",\"memoryBytes\":" + num((double)prop.totalGlobalMem) +
        ",\"l2Bytes\":" + num(prop.l2CacheSize) + ",\"driver\":" + num(driver) + ",\"runtime\":" + num(runtime) +
        ",\"uuid\":" + quote(uuid) + ",\"programmaticLaunch\":" + (g_pdl ? "true" : "false"));
}

// A plain copy kernel: each thread moves kCopyUnroll 16-byte vectors, all loads before the
// stores (so each thread keeps that many in flight), one CTA per 256 * kCopyUnroll vectors.
// Launched with programmatic dependent launch it releases the next grid at its start and
// waits for the previous one before touching memory, as the templates' kernels do (without
// the launch attribute both instructions are no-ops).
constexpr int kCopyUnroll = 4;
__global__ void __launch_bounds__(256) copy16(const int4* __restrict__ src, int4* __restrict__ dst, long long n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const long long first = blockIdx.x * 256LL * kCopyUnroll + threadIdx.x;
  int4 v[kCopyUnroll];
#pragma unroll
  for (int k = 0; k < kCopyUnroll; ++k)
    if (first + k * 256 < n) v[k] = src[first + k * 256];
#pragma unroll
  for (int k = 0; k < kCopyUnroll; ++k)
    if (first + k * 256 < n) dst[first + k * 256] = v[k];
}

// {"cmd":"copy","bytes":N,"graph":true}: copy16 over N bytes (rounded down to 16), timed as
// kernels are (a CUDA graph of back-to-back launches over rotating buffers, cold L2, median),
// so a short kernel can be set beside a copy of its own size: launch, ramp-up and tail
// included. With "programmatic":true (where the runner times kernels so) each launch may
// overlap the one before, as timed kernels do. (cudaMemcpyAsync is not used here: captured
// in a graph, its speed jumped between about 60% and 100% of the 1 GiB copy from one size to
// the next.)
static void cmd_copy_like_kernel(const Json& req, size_t bytes) {
  const long long n = (long long)(bytes / 16);
  bytes = size_t(n) * 16;
  size_t free_b, total_b;
  CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
  const size_t pairs = n == 0 ? 1 : copies_spanning_l2(bytes, 2 * bytes, free_b, 0);
  if (n == 0 || pairs * 2 * bytes > free_b * 0.9) { reply("\"status\":\"TOO_LARGE\",\"error\":\"the copy is empty or does not fit in GPU memory\""); return; }
  std::vector<int4*> src(pairs), dst(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    CUDA_OK(cudaMalloc(&src[i], bytes));
    CUDA_OK(cudaMalloc(&dst[i], bytes));
    CUDA_OK(cudaMemset(src[i], 1, bytes));
  }
  const unsigned grid = unsigned((n + 256 * kCopyUnroll - 1) / (256 * kCopyUnroll));
  // The runtime's kernel as a driver function, so it launches as the templates' kernels do.
  cudaFunction_t copy_fn;
  CUDA_OK(cudaGetFuncBySymbol(&copy_fn, (const void*)copy16));
  const bool programmatic = g_pdl && req.flag("programmatic");
  const std::string body = time_launches(pairs, [&](size_t i, cudaStream_t s) {
    const int4* from = src[i];
    int4* to = dst[i];
    long long count = n;
    void* args[] = {&from, &to, &count};
    return launch_grid((CUfunction)copy_fn, grid, 256, 0, s, args, programmatic);
  }, req);
  for (size_t i = 0; i < pairs; ++i) {
    CUDA_OK(cudaFree(src[i]));
    CUDA_OK(cudaFree(dst[i]));
  }
  reply("\"status\":\"OK\",\"bytes\":" + num((double)bytes) + ",\"programmatic\":" + (programmatic ? "true" : "false") + "," + body);
}

static void cmd_copy(const Json& req) {
  const size_t bytes = (size_t)req.num("bytes", 1 << 30);
  if (req.flag("graph")) return cmd_copy_like_kernel(req, bytes);
  void *a, *b;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  std::vector<double> gbps;
  for (int i = 0; i < (int)req.integer("samples", 20) + 2; ++i) {
    CUDA_OK(cudaEventRecord(e0));
    CUDA_OK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaEventRecord(e1));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 2) gbps.push_back(2.0 * bytes / (ms * 1e6));  // read + write
  }
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  std::sort(gbps.begin(), gbps.end());
  reply("\"status\":\"OK\",\"gbps\":" + num(median(gbps)) + ",\"maxGbps\":" + num(gbps.back()) + ",\"bytes\":" + num((double)bytes));
}

// ------------------------------------------------------------------ backward ---
// {"cmd":"bwd", ...}: a backward variant (row kernel + column reduction) on generated
// x, dy, weight, dresidual and saved statistics (computed here in float64, stored as
// fp32 as a forward would). Verified against a float64 reference of dx, dweight and
// dbias; `repeat` further runs must give the same bits (determinism); then timed like
// forward kernels (graphs over rotating copies, median). Stream 5 is dy.

enum { S_DY = 5 };

// What the device-side checks need to know (plain data: it is a kernel argument).
struct BwdKinds {
  DType t, x, w, b;  // dy; x, dx and dresidual; weight; bias
  bool layernorm, offset, stats, dres;
};

struct BwdDesc : BwdKinds {
  std::string key;
  long long rows, hidden, xs, dys, drs, dxs;
  int sums;
  unsigned seed;
};

struct BwdCopy {
  Buffer x, dy, dres, dx, mean, rstd;
  void release() { x.release(); dy.release(); dres.release(); dx.release(); mean.release(); rstd.release(); }
};

struct BwdWorkspace {
  BwdDesc d;
  Buffer w, partial, dw, db;
  std::vector<BwdCopy> copies;
  void release() {
    for (auto& c : copies) c.release();
    copies.clear();
    w.release(); partial.release(); dw.release(); db.release();
  }
};
static BwdWorkspace g_bws;
static bool g_have_bws = false;
static void release_bwd_workspace() {
  if (g_have_bws) g_bws.release();
  g_have_bws = false;
}

__device__ __forceinline__ double gamma_at(const void* w, DType wd, bool offset, long long col) {
  if (wd == NONE) return 1.0;
  const double v = load_as_double(w, wd, col);
  return offset ? 1.0 + v : v;
}

// Row statistics in float64: what the forward's reference computes. Saved ones are these rounded to fp32.
__global__ void bwd_row_stats(const void* x, DType xd, long long rows, long long H, long long xs, float eps, bool layernorm,
                              double* mean_out, double* rstd_out, float* mean_f, float* rstd_f) {
  __shared__ double scratch[32];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    double mean = 0;
    if (layernorm) {
      double s = 0;
      for (long long c = threadIdx.x; c < H; c += blockDim.x) s += load_as_double(x, xd, row * xs + c);
      mean = block_sum(s, scratch) / H;
    }
    double sq = 0;
    for (long long c = threadIdx.x; c < H; c += blockDim.x) { double d = load_as_double(x, xd, row * xs + c) - mean; sq += d * d; }
    const double rstd = 1.0 / sqrt(block_sum(sq, scratch) / H + (double)eps);
    if (threadIdx.x == 0) {
      if (mean_out) { mean_out[row] = mean; rstd_out[row] = rstd; }
      if (rstd_f) { rstd_f[row] = (float)rstd; if (layernorm) mean_f[row] = (float)mean; }
    }
  }
}

struct BwdRef {
  NormgenBwdParams p;
  BwdKinds d;
  const double* mean;
  const double* rstd;
  Tol dx_tol, dw_tol, db_tol;
  double acc_rtol;  // fp32 accumulation: tolerance also grows with the sum of |terms|
};

// dx, row by row, with each element's tolerance widened by the magnitude of the terms it
// is made of (fp32 sums of them in the kernel); and the padding of dx kept poisoned.
__global__ void bwd_check_dx(BwdRef a, Check* c) {
  __shared__ double scratch[32];
  Tally t_y(C_Y), t_padding(C_PADDING);
  const NormgenBwdParams& p = a.p;
  const BwdKinds& d = a.d;
  const long long H = p.hidden;
  for (long long row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const double mean = a.mean[row], rstd = a.rstd[row];
    double sgx = 0, sg = 0, agx = 0, ag = 0;
    for (long long col = threadIdx.x; col < H; col += blockDim.x) {
      const double xhat = (load_as_double(p.x, d.x, row * p.x_stride + col) - mean) * rstd;
      const double g = load_as_double(p.dy, d.t, row * p.dy_stride + col) * gamma_at(p.weight, d.w, d.offset, col);
      sgx += g * xhat; sg += g; agx += fabs(g * xhat); ag += fabs(g);
    }
    const double A = block_sum(sgx, scratch) / H, B = d.layernorm ? block_sum(sg, scratch) / H : 0;
    const double Aabs = block_sum(agx, scratch) / H, Babs = d.layernorm ? block_sum(ag, scratch) / H : 0;
    for (long long col = threadIdx.x; col < H; col += blockDim.x) {
      const double xhat = (load_as_double(p.x, d.x, row * p.x_stride + col) - mean) * rstd;
      const double g = load_as_double(p.dy, d.t, row * p.dy_stride + col) * gamma_at(p.weight, d.w, d.offset, col);
      double ref = rstd * (g - xhat * A - B);
      double mag = rstd * (fabs(g) + fabs(xhat) * (fabs(A) + Aabs) + fabs(B) + Babs);
      if (d.dres) { const double r = load_as_double(p.dresidual, d.x, row * p.dresidual_stride + col); ref += r; mag += fabs(r); }
      const double got = load_as_double(p.dx, d.x, row * p.dx_stride + col);
      const double err = fabs(got - ref) / (a.dx_tol.atol + a.dx_tol.rtol * fabs(ref) + a.acc_rtol * mag);
      t_y.add(err, row * H + col);
    }
    const size_t xb = dtype_bytes(d.x);
    for (long long col = H + threadIdx.x; col < p.dx_stride; col += blockDim.x) {
      const unsigned char* b = static_cast<const unsigned char*>(p.dx) + (row * p.dx_stride + col) * xb;
      for (size_t k = 0; k < xb; ++k) if (b[k] != 0xFF) t_padding.add(2.0, row * p.dx_stride + col);
    }
  }
  t_y.flush(c); t_padding.flush(c);
}

// dweight and dbias: one thread per column sums over all rows in float64.
__global__ void bwd_check_sums(BwdRef a, Check* c) {
  Tally t_mean(C_MEAN), t_rstd(C_RSTD);
  const NormgenBwdParams& p = a.p;
  const BwdKinds& d = a.d;
  for (long long col = blockIdx.x * (long long)blockDim.x + threadIdx.x; col < p.hidden; col += (long long)gridDim.x * blockDim.x) {
    double sw = 0, aw = 0, sb = 0, ab = 0;
    for (long long row = 0; row < p.rows; ++row) {
      const double dy = load_as_double(p.dy, d.t, row * p.dy_stride + col);
      const double xhat = (load_as_double(p.x, d.x, row * p.x_stride + col) - a.mean[row]) * a.rstd[row];
      sw += dy * xhat; aw += fabs(dy * xhat); sb += dy; ab += fabs(dy);
    }
    if (d.w != NONE) {
      const double got = load_as_double(p.dweight, d.w, col);
      t_mean.add(fabs(got - sw) / (a.dw_tol.atol + a.dw_tol.rtol * fabs(sw) + a.acc_rtol * aw), col);
    }
    if (d.b != NONE) {
      const double got = load_as_double(p.dbias, d.b, col);
      t_rstd.add(fabs(got - sb) / (a.db_tol.atol + a.db_tol.rtol * fabs(sb) + a.acc_rtol * ab), col);
    }
  }
  t_mean.flush(c); t_rstd.flush(c);
}

// Count bytes that differ between two buffers (determinism).
__global__ void count_diff(const unsigned char* a, const unsigned char* b, long long n, unsigned long long* out) {
  unsigned long long bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) bad += a[i] != b[i];
  if (bad) atomicAdd(out, bad);
}

static void bwd_setup(const BwdDesc& d, size_t copies_wanted, size_t partial_bytes) {
  if (!(g_have_bws && g_bws.d.key == d.key && g_bws.copies.size() >= copies_wanted)) {
    if (g_have_bws) g_bws.release();
    g_have_bws = false;
    g_bws.d = d;
    if (d.w != NONE) {
      g_bws.w.alloc(d.hidden * dtype_bytes(d.w));
      fill(g_bws.w, d.w, 1, d.hidden, d.hidden, d.seed, S_W, d.offset);
      g_bws.dw.alloc(d.hidden * dtype_bytes(d.w));
    }
    if (d.b != NONE) g_bws.db.alloc(d.hidden * dtype_bytes(d.b));
    g_bws.copies.resize(copies_wanted);
    for (auto& c : g_bws.copies) {
      c.x.alloc(d.rows * d.xs * dtype_bytes(d.x));
      fill(c.x, d.x, d.rows, d.hidden, d.xs, d.seed, S_X, false);
      c.dy.alloc(d.rows * d.dys * dtype_bytes(d.t));
      fill(c.dy, d.t, d.rows, d.hidden, d.dys, d.seed, S_DY, false);
      if (d.dres) {
        c.dres.alloc(d.rows * d.drs * dtype_bytes(d.x));
        fill(c.dres, d.x, d.rows, d.hidden, d.drs, d.seed, S_RES, false);
      }
      c.dx.alloc(d.rows * d.dxs * dtype_bytes(d.x));
      c.rstd.alloc(d.rows * 4);
      if (d.layernorm) c.mean.alloc(d.rows * 4);
      bwd_row_stats<<<(unsigned)std::min<long long>(d.rows, 8192), 256>>>(c.x.data(), d.x, d.rows, d.hidden, d.xs, 1e-6f, d.layernorm, nullptr, nullptr,
                                                                        static_cast<float*>(c.mean.data()), static_cast<float*>(c.rstd.data()));
      CUDA_OK(cudaGetLastError());
    }
    g_have_bws = true;
  }
  if (g_bws.partial.bytes < partial_bytes) {
    g_bws.partial.release();
    g_bws.partial.alloc(partial_bytes);
  }
  CUDA_OK(cudaDeviceSynchronize());
}

static NormgenBwdParams bwd_params(const BwdCopy& c, const BwdDesc& d, float eps, long long grid) {
  NormgenBwdParams p;
  memset(&p, 0, sizeof p);
  p.x = c.x.data(); p.dy = c.dy.data(); p.dresidual = c.dres.data(); p.weight = g_bws.w.data();
  p.mean = static_cast<const float*>(c.mean.data()); p.rstd = static_cast<const float*>(c.rstd.data());
  p.dx = c.dx.data(); p.partial = static_cast<float*>(g_bws.partial.data()); p.dweight = g_bws.dw.data(); p.dbias = g_bws.db.data();
  p.rows = d.rows; p.hidden = d.hidden;
  p.x_stride = d.xs; p.dy_stride = d.dys; p.dresidual_stride = d.drs; p.dx_stride = d.dxs;
  p.partial_rows = grid; p.eps = eps;
  return p;
}

struct BwdLaunch { CUfunction rows_fn, reduce_fn; unsigned grid, block, smem, reduce_grid; };

static CUresult bwd_launch(const BwdLaunch& l, NormgenBwdParams& p, cudaStream_t s, bool programmatic = false) {
  void* args[] = {&p};
  CUresult r = launch_grid(l.rows_fn, l.grid, l.block, l.smem, s, args, programmatic);
  if (r != CUDA_SUCCESS || l.reduce_grid == 0) return r;
  return launch_grid(l.reduce_fn, l.reduce_grid, 256, 0, s, args, programmatic);
}

static void bwd_poison_outputs(const BwdCopy& c) {
  for (const Buffer* b : std::initializer_list<const Buffer*>{&c.dx, &g_bws.partial, &g_bws.dw, &g_bws.db}) b->poison();
}

static std::string bwd_verify(const BwdLaunch& l, const BwdDesc& d, float eps, const Json& req) {
  BwdCopy& c = g_bws.copies[0];
  bwd_poison_outputs(c);
  NormgenBwdParams p = bwd_params(c, d, eps, l.grid);
  CUresult lr = bwd_launch(l, p, 0);
  if (lr != CUDA_SUCCESS) return "LAUNCH_ERROR:" + cu_error(lr);
  CUDA_OK(cudaDeviceSynchronize());

  Check* check = &reset_scratch()->check;
  double* stats;
  CUDA_OK(cudaMalloc(&stats, 2 * d.rows * sizeof(double)));
  const unsigned row_blocks = (unsigned)std::min<long long>(d.rows, 8192);
  bwd_row_stats<<<row_blocks, 256>>>(c.x.data(), d.x, d.rows, d.hidden, d.xs, eps, d.layernorm, stats, stats + d.rows, nullptr, nullptr);
  BwdRef a;
  a.p = p; a.d = static_cast<const BwdKinds&>(d); a.mean = stats; a.rstd = stats + d.rows;
  a.dx_tol = {req.num("atol"), req.num("rtol")};
  a.dw_tol = {req.num("dwAtol"), req.num("dwRtol")};
  a.db_tol = {req.num("dbAtol"), req.num("dbRtol")};
  a.acc_rtol = req.num("accRtol");
  bwd_check_dx<<<row_blocks, 256>>>(a, check);
  if (d.sums) bwd_check_sums<<<(unsigned)std::max<long long>(1, std::min<long long>((d.hidden + 127) / 128, 65536)), 128>>>(a, check);
  int blocks;
  grid_for(d.rows * std::max(d.xs, d.dys), blocks);
  check_input<<<blocks, 256>>>(c.x.data(), d.x, d.rows, d.hidden, d.xs, d.seed, S_X, false, check);
  check_input<<<blocks, 256>>>(c.dy.data(), d.t, d.rows, d.hidden, d.dys, d.seed, S_DY, false, check);
  if (d.dres) check_input<<<blocks, 256>>>(c.dres.data(), d.x, d.rows, d.hidden, d.drs, d.seed, S_RES, false, check);
  if (d.w != NONE) check_input<<<blocks, 256>>>(g_bws.w.data(), d.w, 1, d.hidden, d.hidden, d.seed, S_W, d.offset, check);
  check_guards_of({&c.x, &c.dy, &c.dres, &c.dx, &c.mean, &c.rstd, &g_bws.w, &g_bws.partial, &g_bws.dw, &g_bws.db}, check);
  CUDA_OK(cudaGetLastError());
  Check got;
  CUDA_OK(cudaMemcpy(&got, check, sizeof got, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(stats));

  // Names in the reply: dx, dweight, dbias, padding, guard, inputs.
  static const char* names[C_COUNT] = {"dx", "", "dweight", "dbias", "padding", "guard", "inputs"};
  std::string out;
  unsigned long long total_bad = 0;
  for (int i = 0; i < C_COUNT; ++i) {
    if (i == C_RESOUT) continue;
    double worst;
    memcpy(&worst, &got.worst[i], sizeof worst);
    total_bad += got.bad[i];
    const bool reported = i == C_Y || (i == C_MEAN && d.w != NONE) || (i == C_RSTD && d.b != NONE);
    if (reported) out += "\"err_" + std::string(names[i]) + "\":" + num(worst) + ",";
    if (got.bad[i]) out += "\"bad_" + std::string(names[i]) + "\":" + num((double)got.bad[i]) + ",\"first_bad_" + names[i] + "\":" + num((double)got.first[i]) + ",";
  }
  if (total_bad) { g_have_bws = false; g_bws.release(); return "INCORRECT|" + out; }

  // Determinism: more runs on the same inputs must write the same bits.
  const long long repeat = req.integer("repeat", 0);
  if (repeat > 0) {
    std::vector<std::pair<const Buffer*, unsigned char*>> saved;
    for (const Buffer* b : {&c.dx, &g_bws.dw, &g_bws.db}) {
      if (!b->base) continue;
      unsigned char* copy;
      CUDA_OK(cudaMalloc(&copy, b->bytes));
      CUDA_OK(cudaMemcpy(copy, b->data(), b->bytes, cudaMemcpyDeviceToDevice));
      saved.push_back({b, copy});
    }
    unsigned long long* diff;
    CUDA_OK(cudaMalloc(&diff, sizeof *diff));
    long long differing_runs = 0;
    for (long long r = 0; r < repeat; ++r) {
      bwd_poison_outputs(c);
      if (bwd_launch(l, p, 0) != CUDA_SUCCESS) fatal("RUNTIME_ERROR", "launch failed during the determinism runs");
      CUDA_OK(cudaMemset(diff, 0, sizeof *diff));
      for (auto& s : saved) count_diff<<<256, 256>>>(static_cast<const unsigned char*>(s.first->data()), s.second, (long long)s.first->bytes, diff);
      unsigned long long n;
      CUDA_OK(cudaMemcpy(&n, diff, sizeof n, cudaMemcpyDeviceToHost));
      differing_runs += n != 0;
    }
    for (auto& s : saved) CUDA_OK(cudaFree(s.second));
    CUDA_OK(cudaFree(diff));
    out += "\"repeats\":" + num((double)repeat) + ",\"differingRepeats\":" + num((double)differing_runs) + ",";
    if (differing_runs) return "NONDETERMINISTIC|" + out;
  }
  return "OK|" + out;
}

static std::string bwd_time(const BwdLaunch& l, const BwdDesc& d, float eps, size_t copies, const Json& req) {
  std::vector<NormgenBwdParams> ps;
  for (size_t i = 0; i < copies; ++i) ps.push_back(bwd_params(g_bws.copies[i], d, eps, l.grid));
  return time_launches(ps.size(), [&](size_t i, cudaStream_t s) { return bwd_launch(l, ps[i], s, g_pdl); }, req);
}

static void cmd_bwd(const Json& req) {
  BwdDesc d;
  read_common(req, d);
  d.t = parse_dtype(req.str("dtype"));
  d.x = parse_dtype(req.str("xDtype", req.str("dtype")));
  d.dres = req.flag("dresidual");
  d.xs = req.integer("xStride", d.hidden);
  d.dys = req.integer("dyStride", d.hidden);
  d.drs = req.integer("dresidualStride", d.hidden);
  d.dxs = req.integer("dxStride", d.hidden);
  d.sums = (d.w != NONE) + (d.b != NONE);
  if (d.t == NONE || d.x == NONE || d.rows <= 0 || d.hidden <= 0) { reply("\"status\":\"BAD_REQUEST\",\"error\":\"dtype, xDtype, rows and hidden are required\""); return; }
  d.key = req.str("dtype") + req.str("xDtype") + req.str("weight") + req.str("bias") + req.str("op") + (d.offset ? "o" : "") + (d.dres ? "r" : "") + "|" +
          std::to_string(d.rows) + "|" + std::to_string(d.hidden) + "|" + std::to_string(d.xs) + "|" + std::to_string(d.dys) + "|" +
          std::to_string(d.drs) + "|" + std::to_string(d.dxs) + "|" + std::to_string(d.seed);
  const float eps = (float)req.num("eps", 1e-6);
  if (eps != 1e-6f) { reply("\"status\":\"BAD_REQUEST\",\"error\":\"the saved statistics are generated with eps 1e-6\""); return; }

  const unsigned smem = (unsigned)req.integer("smem");
  CUfunction fn = load_request_kernel(req, req.str("symbol"), smem);
  if (!fn) return;
  Kernel kr = load_kernel(req.str("cubin"), req.str("symbol") + "_reduce");
  if (!kr.fn) { reply("\"status\":\"LOAD_ERROR\",\"error\":" + quote(kr.error)); return; }
  BwdLaunch l{fn, kr.fn, 0, (unsigned)req.integer("block"), smem, 0};
  // The persistent grid: CTAs per SM asked for, no more than fit at once, no more than row
  // groups; a cluster kernel's grid is a whole number of clusters, one per row group.
  const long long cluster = std::max<long long>(1, req.integer("cluster", 1));
  int resident = 0;
  CUresult r = resident_ctas(fn, l.block, l.smem, (unsigned)cluster, &resident);
  if (r != CUDA_SUCCESS || resident < 1) { reply("\"status\":\"LAUNCH_ERROR\",\"error\":" + quote("occupancy: " + (r != CUDA_SUCCESS ? cu_error(r) : std::string("no CTA fits on the GPU")))); return; }
  const int per_sm = (resident + g_sms - 1) / g_sms;
  const long long rows_per_cta = std::max<long long>(1, req.integer("rowsPerCta", 1));
  const long long ctas = std::min<long long>({req.integer("ctasPerSm", 1) * g_sms, (long long)resident, (d.rows + rows_per_cta - 1) / rows_per_cta * cluster});
  const long long grid = std::max<long long>(cluster, ctas / cluster * cluster);
  l.grid = (unsigned)grid;
  l.reduce_grid = d.sums ? (unsigned)((d.hidden + 31) / 32) : 0;
  const long long pstride = (d.hidden + 3) / 4 * 4;
  const size_t partial_bytes = (size_t)std::max(1, d.sums) * grid * pstride * 4;

  const size_t per_copy = d.rows * (d.xs + d.dxs + (d.dres ? d.drs : 0)) * dtype_bytes(d.x) + d.rows * d.dys * dtype_bytes(d.t) + d.rows * 8;
  size_t free_b, total_b;
  CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
  const size_t have = (g_have_bws && g_bws.d.key == d.key) ? g_bws.copies.size() * per_copy : 0;
  if (g_have_ws) { g_ws.release(); g_have_ws = false; }  // the forward workspace is not needed now
  const size_t read_bytes = d.rows * d.hidden * ((d.dres ? 2 : 1) * dtype_bytes(d.x) + dtype_bytes(d.t));  // x, dy (and dresidual)
  const size_t copies = rotation_copies(req, read_bytes, per_copy, free_b, have);
  if (per_copy + partial_bytes > (free_b + have) * 0.9) { reply("\"status\":\"TOO_LARGE\",\"error\":\"the problem does not fit in GPU memory\""); return; }
  bwd_setup(d, copies, partial_bytes);

  std::string body, status = "OK";
  if (req.flag("verify")) {
    std::string v = bwd_verify(l, d, eps, req);
    if (v.rfind("LAUNCH_ERROR:", 0) == 0) { reply("\"status\":\"LAUNCH_ERROR\",\"error\":" + quote(v.substr(13))); return; }
    status = v.substr(0, v.find('|'));
    body += v.substr(v.find('|') + 1);
    if (status != "OK") { reply("\"status\":" + quote(status) + "," + body + "\"grid\":" + num(l.grid) + ",\"verified\":true"); return; }
    bwd_setup(d, copies, partial_bytes);
  }
  if (req.flag("time")) body += bwd_time(l, d, eps, copies, req) + ",";
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) fatal("RUNTIME_ERROR", cudaGetErrorString(e));
  reply("\"status\":" + quote(status) + "," + body + "\"grid\":" + num(l.grid) + ",\"perSm\":" + num(per_sm) + ",\"verified\":" + (req.flag("verify") ? "true" : "false"));
}

int main() {
  // Without libcuda the runtime's own error reads "driver version is insufficient".
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) fatal("RUNTIME_ERROR", "no NVIDIA driver found (libcuda.so.1 could not be loaded): this machine cannot run CUDA kernels");
  CUDA_OK(cudaSetDevice(0));  // CUDA_VISIBLE_DEVICES picks the GPU
  CUDA_OK(cudaFree(0));       // create the primary context the driver API then uses
  resolve_driver();
  cudaDeviceGetAttribute(&g_l2_bytes, cudaDevAttrL2CacheSize, 0);
  cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0);
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  const char* pdl = getenv("NORMGEN_PDL");
  g_pdl = major >= 9 && !(pdl && std::string(pdl) == "0");
  char line[1 << 16];
  while (fgets(line, sizeof line, stdin)) {
    Json req;
    std::string err;
    if (!parse_json(line, req, err)) { reply("\"status\":\"BAD_REQUEST\",\"error\":" + quote(err)); continue; }
    const std::string cmd = req.str("cmd");
    if (cmd == "info") cmd_info();
    else if (cmd == "copy") cmd_copy(req);
    else if (cmd == "run") cmd_run(req);
    else if (cmd == "bwd") cmd_bwd(req);
    else if (cmd == "quit") break;
    else reply("\"status\":\"BAD_REQUEST\",\"error\":" + quote("unknown cmd '" + cmd + "'"));
  }
  return 0;
}
