"""Shared by the PyTorch GPU scripts (torch_consumer.py, bench_torch.py): import a package's
binding, read its kernel specs and tuned grid from dispatch.json, make inputs, call the
package and the torch peers the same way, and write the markdown log header."""

import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
L2_COLD_FACTOR = 3.5  # the rotated inputs (what a call reads) span this many L2 sizes; the tuner rotates as many
MAX_COPIES = 4096  # also the most calls in one graph


@dataclass(frozen=True)
class Spec:
    """A kernel spec parsed from its key, e.g. rmsnorm.bf16.w-same.res-same."""

    key: str
    op: str  # rmsnorm | layernorm
    dtype: str  # fp32 | fp16 | bf16
    weight: str  # none | fp32 | same
    offset: bool
    bias: bool
    residual: str  # none | same | fp32
    stats: bool

    @staticmethod
    def parse(key):
        op, dtype, weight, *rest = key.split(".")
        residual = next((p[4:] for p in rest if p.startswith("res-")), "none")
        return Spec(key, op, dtype, weight[2:], "offset" in rest, "bias" in rest, residual, "stats" in rest)

    def dtype_of(self, kind):
        """The torch dtype of x ('same') or of an fp32 tensor."""
        return DTYPES[self.dtype] if kind == "same" else torch.float32

    def bytes_moved(self, rows, hidden):
        """The bytes a forward pass must move at least (normgen's roofline numerator)."""
        elems = rows * hidden
        total = 2 * elems * BYTES[self.dtype]
        wbytes = 0 if self.weight == "none" else (4 if self.weight == "fp32" else BYTES[self.dtype])
        total += hidden * wbytes
        if self.bias:
            total += hidden * (wbytes or BYTES[self.dtype])
        if self.residual != "none":
            total += 2 * elems * (4 if self.residual == "fp32" else BYTES[self.dtype])
        if self.stats:
            total += rows * 4 * (2 if self.op == "layernorm" else 1)
        return total


def import_binding(pkg_dir):
    """normgen_torch from PKG_DIR/python (the library as it finds it: PKG_DIR/libnormgen.so, build/, $NORMGEN_LIB)."""
    sys.dont_write_bytecode = True  # no __pycache__ inside the (committed) package
    sys.path.insert(0, str(Path(pkg_dir) / "python"))
    import normgen_torch

    return normgen_torch


def read_dispatch(pkg_dir):
    return json.loads((Path(pkg_dir) / "dispatch.json").read_text())


def dispatch_entries(pkg_dir):
    """The tuned problems of every device table in the package."""
    return [e for table in read_dispatch(pkg_dir)["tables"] for e in table["entries"]]


def package_specs(pkg_dir):
    """Every kernel spec the package was tuned for, sorted by key."""
    return [Spec.parse(k) for k in sorted({e["spec"] for e in dispatch_entries(pkg_dir)})]


def tuned_grid(pkg_dir):
    """(hidden sizes, row counts) of the tuned problems."""
    entries = dispatch_entries(pkg_dir)
    return sorted({e["hidden"] for e in entries}), sorted({e["rows"] for e in entries})


def make_inputs(spec, shape, gen, device="cuda"):
    """Random (never zero) inputs: x and residual ~ N(0, 1), weight ~ 1 + N(0, 0.5^2) (N(0, 0.5^2) with an offset), bias ~ N(0, 0.5^2)."""
    hidden = shape[-1]
    randn = lambda shape, dtype: torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)
    inputs = {"x": randn(shape, DTYPES[spec.dtype]), "weight": None, "bias": None, "residual": None}
    if spec.weight != "none":
        w = 0.5 * randn((hidden,), torch.float32)
        inputs["weight"] = (w if spec.offset else 1 + w).to(spec.dtype_of(spec.weight))
    if spec.bias:
        inputs["bias"] = (0.5 * randn((hidden,), torch.float32)).to(spec.dtype_of(spec.weight if spec.weight != "none" else "same"))
    if spec.residual != "none":
        inputs["residual"] = randn(shape, spec.dtype_of(spec.residual))
    return inputs


def call_normgen(ng, spec, inp, eps):
    """The package's op for this spec; returns {y, residual_out?, mean?, rstd?}."""
    kw = dict(eps=eps, residual=inp["residual"], weight_offset=spec.offset, return_stats=spec.stats)
    if spec.op == "rmsnorm":
        out = ng.rms_norm(inp["x"], inp["weight"], **kw)
    else:
        out = ng.layer_norm(inp["x"], inp["weight"], inp["bias"], **kw)
    outs = list(out) if isinstance(out, tuple) else [out]
    names = ["y"] + (["residual_out"] if spec.residual != "none" else [])
    names += (["mean", "rstd"] if spec.op == "layernorm" else ["rstd"]) if spec.stats else []
    return dict(zip(names, outs))


def call_normgen_plain(ng, spec, inp, eps):
    """call_normgen with programmatic launch turned off for this call (what a call after a kernel that does not release its dependents gets)."""
    before = ng.set_programmatic_launch(False)
    try:
        return call_normgen(ng, spec, inp, eps)
    finally:
        ng.set_programmatic_launch(before)


def input_copies(spec, rows, hidden, l2_bytes):
    """How many input copies a timing rotates over: together >= L2_COLD_FACTOR L2s (cold L2), at most MAX_COPIES."""
    return max(1, min(MAX_COPIES, math.ceil(L2_COLD_FACTOR * l2_bytes / (spec.bytes_moved(rows, hidden) / 2))))


def rotated_inputs(spec, rows, hidden, copies, gen):
    """`copies` input sets of random data (x and residual cloned; weight, bias and the peers' ones shared)."""
    first = make_inputs(spec, (rows, hidden), gen)
    first["peer_w"], first["peer_b"] = peer_params(spec, first)
    return [first] + [{k: (v.clone() if k in ("x", "residual") and v is not None else v) for k, v in first.items()} for _ in range(copies - 1)]


def positive_int(text):
    n = int(text)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return n


def peer_params(spec, inp):
    """weight and bias as torch's functional ops take them: in the normalized tensor's dtype, (1 + w) applied."""
    norm_dtype = spec.dtype_of(spec.residual) if spec.residual != "none" else DTYPES[spec.dtype]
    w, b = inp["weight"], inp["bias"]
    if w is not None:
        w = ((1 + w.float()) if spec.offset else w).to(norm_dtype)
    if b is not None:
        b = b.to(norm_dtype)
    return w, b


def call_torch(spec, inp, eps, w, b):
    """torch's own ops: s = x + r (when fused residual), then F.rms_norm / F.layer_norm; returns (y, s or None)."""
    x, r = inp["x"], inp["residual"]
    s = x + r if r is not None else x
    hidden = x.shape[-1]
    if spec.op == "rmsnorm":
        y = F.rms_norm(s, (hidden,), w, eps)
        if b is not None:
            y = y + b
    else:
        y = F.layer_norm(s, (hidden,), w, b, eps)
    return y.to(x.dtype), (s if r is not None else None)


def describe(e, limit=200):
    """'Type: first line of the message', short enough for a table cell."""
    lines = str(e).splitlines()
    return f"{type(e).__name__}: {lines[0][:limit] if lines else ''}"


def command_line():
    """The command as run, without machine paths: relative to the working directory, or under $OUT."""
    cwd, out = os.getcwd(), os.environ.get("OUT", "").rstrip("/")

    def portable(a):
        if os.path.isabs(a) and a.startswith(cwd + os.sep):
            return os.path.relpath(a, cwd)
        if out and os.path.isabs(a) and a.startswith(out + os.sep):
            return "$OUT/" + os.path.relpath(a, out)
        return a

    args = [portable(a) for a in sys.argv]
    return " ".join(["python3"] + [a if a.startswith("$OUT/") else shlex.quote(a) for a in args])


def log_header(title, ng):
    """The lines every log starts with: title, date, card, software, package, command."""
    props = torch.cuda.get_device_properties(0)
    return [
        f"# {title}",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- card: {torch.cuda.get_device_name(0)} ({props.multi_processor_count} SMs, {props.total_memory / 2**30:.0f} GiB)",
        f"- torch {torch.__version__} (CUDA {torch.version.cuda}), Python {sys.version.split()[0]}",
        f"- package: {ng.PACKAGE}, tuned on {ng.abi.DEVICE} ({ng.abi.ARCH}); library `{os.path.basename(str(ng.library._name))}`",
        f"- command: `{command_line()}`",
    ] + [f"- environment: {name}={os.environ[name]}" for name in ("NORMGEN_PDL", "NORMGEN_RELEASE") if name in os.environ]


def write_log(path, lines):
    """Written whole or not at all (a run stopped mid-write keeps the log before)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    part = Path(f"{path}.part")
    part.write_text("\n".join(lines) + "\n")
    os.replace(part, path)
    print(f"wrote {path}")


# ---- timing: CUDA graphs of back-to-back calls, events when capture fails ----


def warm_up(fn, inputs, calls=None):
    """Run outside any capture first (compiles, autotunes, loads kernels), on a side stream as graph capture wants:
    `calls` calls (default: the first two inputs)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(min(2, len(inputs)) if calls is None else calls):
            fn(inputs[i % len(inputs)])
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def time_graph(fn, inputs, calls, repeats, keep_outputs):
    """Median microseconds per call over `repeats` replays of a graph of `calls` calls."""
    graph = torch.cuda.CUDAGraph()
    kept = []
    with torch.cuda.graph(graph):
        for i in range(calls):
            out = fn(inputs[i % len(inputs)])
            if keep_outputs:  # every call writes fresh memory, as it reads fresh inputs
                kept.append(out)
    graph.replay()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / calls)
    del graph, kept
    return statistics.median(samples)


def time_events(fn, inputs, calls, repeats):
    """As time_graph, with eager calls between two events (includes CPU launch overhead when the GPU waits)."""
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / calls)
    return statistics.median(samples)


def measure(fn, inputs, calls, repeats, keep_outputs, warm_up_calls=None):
    """(us per call, via graph?); a failed capture falls back to events."""
    warm_up(fn, inputs, warm_up_calls)
    try:
        return time_graph(fn, inputs, calls, repeats, keep_outputs), True
    except Exception as e:
        print(f"  graph capture failed ({describe(e, 120)}); timing with events", file=sys.stderr)
        torch.cuda.synchronize()
        return time_events(fn, inputs, calls, repeats), False
