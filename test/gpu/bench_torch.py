"""Time the package's PyTorch ops against torch eager (F.rms_norm / F.layer_norm, `x + r`
first for a fused residual), torch.compile of the same function, and Liger-Kernel when it
is importable, on the tuned grid, all in one process.

    make -j"$(nproc)" -C out/normgen-sm90-h200        # the library; this script builds nothing
    python3 test/gpu/bench_torch.py out/normgen-sm90-h200 test/gpu/bench_torch.md

Each implementation is timed as a CUDA graph of back-to-back calls (GPU time, no Python
or launch overhead) over input copies rotated through more than 3x the L2 size (cold
cache), the median of several replays; every implementation is timed once a round, in
turn, over several rounds (median), so that none always runs first. Falls back to CUDA
events around eager calls when a capture fails (marked *). Bytes moved are what a forward
pass must move (x, residual, y, x + r once; weight and bias once; stats), the same for
every implementation; % copy is against `dst.copy_(src)` of 1 GiB measured in the same
run. torch.compile compiles every shape (dynamic=False): that dominates the run time, so
compiles stop after --budget-s. Writes a markdown log (date, card, command) to OUT_MD."""

import argparse
import math
import statistics
import sys
import time

import torch
import torch._dynamo

from torch_common import (L2_COLD_FACTOR, MAX_COPIES, call_normgen, call_normgen_plain, call_torch, import_binding, input_copies, log_header,
                          measure, package_specs, positive_int, rotated_inputs, time_events, tuned_grid, warm_up, write_log)

EPS = 1e-5
GRAPH_US = 2000  # aim for at least this much GPU time per graph replay


def parse_ints(text):
    return [int(v) for v in text.split(",") if v]


def try_liger():
    """(rms_norm(x, w, eps), layer_norm(x, w, b, eps), note) from Liger-Kernel, or Nones and why not."""
    try:
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except ImportError as e:
        return None, None, f"Liger-Kernel: not importable ({e}); not timed"
    try:
        from importlib.metadata import version

        v = version("liger-kernel")
    except Exception:
        v = "version unknown"
    rms = lambda x, w, eps: LigerRMSNormFunction.apply(x, w, eps)
    ln = lambda x, w, b, eps: LigerLayerNormFunction.apply(x, w, b, eps)
    return rms, ln, f"Liger-Kernel {v}: LigerRMSNormFunction / LigerLayerNormFunction (after `x + r` for a fused residual)"


# ---- timing (measure, time_events: torch_common) ----


def copy_bandwidth(repeats):
    """GB/s of dst.copy_(src) on 1 GiB of fp32: bytes read + written over the median time.

    Timed with events around eager copies, not in a CUDA graph: a graph turns the copy
    into a memcpy node that runs on a copy engine, 2.7 TB/s on an H200 where the
    device-to-device memcpy outside graphs moves 4.2 TB/s."""
    n = 1 << 28
    src = torch.rand((n,), dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    warm_up(lambda _: dst.copy_(src), [None])
    us = time_events(lambda _: dst.copy_(src), [None], 10, repeats)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * 4 * n / (us * 1e-6) / 1e9


# ---- one problem ----


def implementations(ng, spec, args, liger, compile_ok):
    """name -> fn(inputs) for every implementation to time on this spec."""
    def normgen(inp):
        return call_normgen(ng, spec, inp, EPS)

    def eager(inp):
        return call_torch(spec, inp, EPS, inp["peer_w"], inp["peer_b"])

    impls = {"normgen": normgen}
    if args.plain:
        impls["normgen plain"] = lambda inp: call_normgen_plain(ng, spec, inp, EPS)
    impls["eager"] = eager
    if compile_ok:
        impls["compile"] = torch.compile(eager, fullgraph=True, dynamic=False)
        if args.max_autotune:
            impls["compile max-autotune"] = torch.compile(eager, fullgraph=True, dynamic=False, mode="max-autotune-no-cudagraphs")
    rms, ln, _ = liger
    if rms and not spec.stats and not spec.offset and spec.weight != "none" and (spec.op == "layernorm" or not spec.bias):

        def liger_fn(inp):
            x, r = inp["x"], inp["residual"]
            s = x + r if r is not None else x
            if spec.op == "rmsnorm":
                return rms(s, inp["peer_w"], EPS)
            return ln(s, inp["peer_w"], inp["peer_b"], EPS)

        impls["liger"] = liger_fn
    return impls


def fits(spec, rows, hidden, copies):
    """Inputs (every copy) and two calls' outputs, with 2 GiB to spare, in free memory (peers' temporaries may still not fit)."""
    half = spec.bytes_moved(rows, hidden) / 2  # what is read, or written
    free, _ = torch.cuda.mem_get_info()
    return (copies + 2) * half + (2 << 30) < 0.9 * free


def bench_problem(ng, spec, hidden, rows, args, liger, compile_ok, l2_bytes, gen):
    """{impl: (us, via graph)} for one (spec, hidden, rows); None when it does not fit."""
    bytes_moved = spec.bytes_moved(rows, hidden)
    copies = input_copies(spec, rows, hidden, l2_bytes)
    if not fits(spec, rows, hidden, copies):
        return None
    inputs = rotated_inputs(spec, rows, hidden, copies, gen)
    first = inputs[0]
    guess_us = bytes_moved / 3e6  # at ~3 TB/s, only to size the graph
    calls = min(args.max_calls, max(copies, 3, math.ceil(GRAPH_US / guess_us)))
    impls = implementations(ng, spec, args, liger, compile_ok)
    results = time_in_rounds(impls, inputs, calls, args.repeats, args.rounds, keep_outputs=copies > 1)
    try:
        results["check"] = agreement(impls, first, spec)
    except Exception as e:
        results["check"] = f"not checked ({type(e).__name__})"
    del inputs, first
    torch.cuda.empty_cache()
    return results


def time_in_rounds(impls, inputs, calls, repeats, rounds, keep_outputs):
    """{name: (us, via graph) or why not}: every implementation timed once a round, in turn, each
    round starting one implementation later (none always runs first, right after the inputs are
    made); the median of its rounds."""
    names, times, failed, via_graph = list(impls), {n: [] for n in impls}, {}, {}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if name in failed:
                continue
            try:
                us, via_graph[name] = measure(impls[name], inputs, calls, repeats, keep_outputs)
                times[name].append(us)
            except torch.cuda.OutOfMemoryError:
                failed[name] = "out of memory"
            except Exception as e:
                failed[name] = f"failed: {type(e).__name__}"
                print(f"  {name} failed: {e}", file=sys.stderr)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return {n: failed[n] if n in failed else (statistics.median(times[n]), via_graph[n]) for n in names}


def agreement(impls, inp, spec):
    """normgen's y (launched programmatically, and plainly where timed so: another kernel may run)
    against eager's on the first 256 rows: ok within twice the dtype's verify tolerance."""
    atol, rtol = {"fp32": (1e-5, 1e-5), "fp16": (1e-5, 1e-3), "bf16": (1e-5, 8e-3)}[spec.dtype]
    theirs = impls["eager"](inp)[0][:256].double()
    differing = []
    for name in (n for n in impls if n.startswith("normgen")):
        mine = impls[name](inp)["y"][:256].double()
        if not bool(((mine - theirs).abs() <= 2 * (atol + rtol * theirs.abs())).all()):
            differing.append(name)
    return "ok" if not differing else "DIFFERS: " + ", ".join(differing)


# ---- report ----


def cell(result, bytes_moved, copy_gbs):
    """'us / GB/s / % copy' of one measurement, or why there is none."""
    if not isinstance(result, tuple):
        return [result, "", ""]
    us, via_graph = result
    gbs = bytes_moved / (us * 1e-6) / 1e9
    return [f"{us:.2f}{'' if via_graph else '*'}", f"{gbs:.0f}", f"{100 * gbs / copy_gbs:.1f}"]


def spec_table(spec, rows_of_results, names, copy_gbs):
    """The spec's markdown table, {normgen implementation: [speedup over the best peer per shape]}, and how many
    shapes some peer did not run (their speedups are shown, over the peers that ran, but not counted)."""
    ours = [n for n in names if n.startswith("normgen")]
    header = ["hidden", "rows"] + [f"{n} {col}" for n in names for col in ("us", "GB/s", "% copy")]
    header += [f"{n} speedup vs best peer".replace("normgen speedup", "speedup") for n in ours] + ["y vs eager"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    speedups = {n: [] for n in ours}
    partial = 0
    for hidden, rows, res in rows_of_results:
        if res is None:
            lines.append(f"| {hidden} | {rows} | does not fit in free GPU memory |" + " |" * (len(header) - 3))
            continue
        b = spec.bytes_moved(rows, hidden)
        cells = [c for n in names for c in cell(res.get(n, "-"), b, copy_gbs)]
        peer_names = [n for n in names if not n.startswith("normgen")]
        peers = [res[n][0] for n in peer_names if isinstance(res.get(n), tuple)]
        every_peer = len(peers) == len(peer_names)
        partial += not every_peer
        for n in ours:
            speed = "-"
            if peers and isinstance(res.get(n), tuple):
                s = min(peers) / res[n][0]
                if every_peer:
                    speedups[n].append(s)
                speed = f"{s:.2f}x" + ("" if every_peer else " (not every peer)")
            cells.append(speed)
        lines.append("| " + " | ".join([str(hidden), str(rows)] + cells + [res["check"]]) + " |")
    return lines, speedups, partial


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pkg_dir")
    parser.add_argument("out_md")
    parser.add_argument("--hidden", type=parse_ints, help="comma-separated hidden sizes (default: the package's tuned ones)")
    parser.add_argument("--rows", type=parse_ints, help="comma-separated row counts (default: the package's tuned ones)")
    parser.add_argument("--specs", help="comma-separated spec keys (default: all in the package)")
    parser.add_argument("--repeats", type=int, default=7, help="graph replays per measurement (median)")
    parser.add_argument("--rounds", type=int, default=3, help="times every implementation is measured, in turn (median)")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--no-plain", dest="plain", action="store_false", help="do not also time normgen with plain launches")
    parser.add_argument("--max-autotune", action="store_true", help="also time torch.compile(mode='max-autotune-no-cudagraphs') (slow)")
    parser.add_argument("--budget-s", type=float, default=300, help="stop compiling new shapes after this many seconds")
    parser.add_argument("--max-calls", type=positive_int, default=MAX_COPIES,
                        help=f"at most this many calls in one graph (default {MAX_COPIES}), to compare chain lengths with the tuner's"
                        " (~1 ms of work, at least 16 launches); fewer calls than input copies read fewer copies, and the L2 is then less cold")
    args = parser.parse_args()

    started = time.time()
    ng = import_binding(args.pkg_dir)
    tuned_hidden, tuned_rows = tuned_grid(args.pkg_dir)
    hiddens, row_counts = args.hidden or tuned_hidden, args.rows or tuned_rows
    specs = package_specs(args.pkg_dir)
    if args.specs:
        specs = [s for s in specs if s.key in args.specs.split(",")]
    # Every shape is its own compile: allow them all, and reset between shapes.
    for knob in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 1 << 20)
    liger = try_liger()
    props = torch.cuda.get_device_properties(0)
    l2_bytes = getattr(props, "L2_cache_size", 50 << 20)
    copy_gbs = copy_bandwidth(args.repeats)
    print(f"copy bandwidth {copy_gbs:.0f} GB/s", file=sys.stderr)
    gen = torch.Generator(device="cuda").manual_seed(7)

    programmatic = ng.set_programmatic_launch(True)
    ng.set_programmatic_launch(programmatic)
    args.plain = args.plain and programmatic  # plain is the only mode under NORMGEN_PDL=0
    names = ["normgen"] + (["normgen plain"] if args.plain else []) + ["eager"] + ([] if args.no_compile else ["compile"] + (["compile max-autotune"] if args.max_autotune else []))
    names += ["liger"] if liger[0] else []
    shapes = len(specs) * len(hiddens) * len(row_counts)
    sections, uncompiled = [], 0  # sections: (spec, [(hidden, rows, result)])

    def write_report(done):
        """The log from the shapes measured so far; rewritten after each shape, so that a run
        stopped from outside (its machine taken back) still leaves every finished measurement."""
        all_speedups, plain_speedups, partial, tables = [], [], 0, []
        for spec, results in sections:
            spec_lines, speedups, spec_partial = spec_table(spec, results, names, copy_gbs)
            partial += spec_partial
            all_speedups += speedups["normgen"]
            plain_speedups += speedups.get("normgen plain", [])
            tables.append((spec, spec_lines, speedups))
        geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
        measured = sum(len(results) for _, results in sections)
        lines = log_header("normgen PyTorch ops against torch eager and torch.compile", ng) + [
            f"- timing: CUDA graphs of back-to-back calls (>= 3, and >= ~{GRAPH_US / 1000:.0f} ms of work, at most {args.max_calls}) over input copies whose inputs alone span >= {L2_COLD_FACTOR}x L2"
            f" ({l2_bytes / 2**20:.0f} MiB; at most {MAX_COPIES} copies), each call writing fresh outputs; median of {args.repeats} replays,"
            f" {args.rounds} rounds (every implementation once a round, in turn; each round starts with the next one), the median of the rounds;"
            " GPU time only (no Python or launch overhead)."
            " `*` marks a measurement with CUDA events around eager calls (its capture failed).",
            f"- copy bandwidth: {copy_gbs:.0f} GB/s (`dst.copy_(src)`, 1 GiB of fp32, read + write), measured in this run",
            "- bytes moved: x (+ residual) read, y (+ x + r) written, weight and bias once, stats; the same for every implementation",
            ("- normgen launches with programmatic dependent launch (the package's default on sm90 and later): in the graph each"
             " call may start while the one before drains; torch's kernels launch plainly. `normgen plain`: the same"
             " calls with programmatic launch turned off (what a call after a kernel that does not release its dependents gets)"
             if programmatic else
             "- normgen launches plainly (NORMGEN_PDL=0), as torch's kernels do"),
            "- eager: `s = x + r` (fused residual), then `F.rms_norm` (+ bias) / `F.layer_norm`; weight cast to the normalized dtype once, outside the timing",
            "- compile: the same function, `torch.compile(fullgraph=True, dynamic=False)`, default mode"
            + (", and mode max-autotune-no-cudagraphs" if args.max_autotune else "")
            + ("" if not uncompiled else f"; not compiled for {uncompiled} shapes after --budget-s {args.budget_s:.0f}")
            + (" (not run: --no-compile)" if args.no_compile else ""),
            f"- {liger[2]}",
            f"- speedup: the fastest peer's time over normgen's; geometric mean over {'all problems' if not partial else f'the {len(all_speedups)} problems every peer ran ({partial} where some peer did not are left out)'}"
            f" {geo(all_speedups):.2f}x, normgen fastest on {sum(s >= 1 for s in all_speedups)} of {len(all_speedups)}"
            + (f"; with plain launches {geo(plain_speedups):.2f}x, fastest on {sum(s >= 1 for s in plain_speedups)} of {len(plain_speedups)}" if plain_speedups else ""),
            "- y vs eager: normgen's y (and launched plainly, where timed) within twice the verify tolerance of eager's (first 256 rows of the first input copy)",
            f"- total run time: {time.time() - started:.0f} s" if done else
            f"- NOT FINISHED: {measured} of {shapes} shapes measured after {time.time() - started:.0f} s (the log is rewritten after each shape)",
        ]
        for spec, spec_lines, speedups in tables:
            plain = f" (plain launches: {geo(speedups['normgen plain']):.2f}x)" if speedups.get("normgen plain") else ""
            lines += ["", f"## {spec.key}", "", f"Geometric mean speedup over the best peer: {geo(speedups['normgen']):.2f}x{plain}.", ""] + spec_lines
        write_log(args.out_md, lines)

    for spec in specs:
        results = []
        sections.append((spec, results))
        for hidden in hiddens:
            for rows in row_counts:
                compile_ok = not args.no_compile and time.time() - started < args.budget_s
                uncompiled += not args.no_compile and not compile_ok
                torch._dynamo.reset()
                res = bench_problem(ng, spec, hidden, rows, args, liger, compile_ok, l2_bytes, gen)
                if res is not None and not compile_ok and not args.no_compile:
                    res["compile"] = "skipped: --budget-s"
                results.append((hidden, rows, res))
                print(f"{spec.key} h{hidden} r{rows}: {res} ({time.time() - started:.0f} s)", file=sys.stderr)
                write_report(done=False)
    write_report(done=True)


if __name__ == "__main__":
    main()
