"""The package's PyTorch binding on a GPU, as a consumer uses it: held-out shapes (not tuned)
for every kernel spec in the package against a float64 reference, torch.compile with
fullgraph=True, CUDA graph capture, chains of calls with programmatic dependent launch, and
the errors bad calls must raise.

    make -j"$(nproc)" -C out/normgen-sm90-h200        # the library; this script builds nothing
    python3 test/gpu/torch_consumer.py out/normgen-sm90-h200 test/gpu/torch_consumer.md

Writes a markdown log (date, card, command, one row per case) and exits 1 on any failure."""

import argparse
import sys
import traceback

import torch
import torch._dynamo

from torch_common import (call_normgen, call_torch, describe, dispatch_entries, import_binding, log_header, make_inputs, package_specs, peer_params, read_dispatch,
                          write_log)

HIDDEN = [2880, 5376, 7169, 1000, 4095]
ROWS = [1, 3, 777, 10000]
EPS = 1e-5
# |got - ref| <= atol + rtol * |ref|: the tolerances of `normgen verify` (one output ulp of
# rounding for 16-bit outputs, fp32 accumulation over long rows for fp32).
TOLERANCE = {"fp32": (1e-5, 1e-5), "fp16": (1e-5, 1e-3), "bf16": (1e-5, 8e-3)}
STATS_TOLERANCE = (1e-5, 1e-5)
TOL_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


def reference(spec, inp, eps):
    """float64 forward from the same inputs; x + residual is rounded to the residual's dtype first, as the kernels do."""
    s = inp["x"].double()
    out = {}
    if inp["residual"] is not None:
        out["residual_out"] = (s + inp["residual"].double()).to(inp["residual"].dtype).double()
        s = out["residual_out"]
    mean = s.mean(-1, keepdim=True) if spec.op == "layernorm" else torch.zeros_like(s[..., :1])
    rstd = torch.rsqrt(((s - mean) ** 2).mean(-1, keepdim=True) + eps)
    y = (s - mean) * rstd
    if inp["weight"] is not None:
        w = inp["weight"].double()
        y = y * (1 + w if spec.offset else w)
    if inp["bias"] is not None:
        y = y + inp["bias"].double()
    out["y"] = y
    if spec.stats:
        out["rstd"] = rstd.squeeze(-1)
        if spec.op == "layernorm":
            out["mean"] = mean.squeeze(-1)
    return out


def error_ratio(got, ref, tol):
    """(max |got - ref|, max of |got - ref| / (atol + rtol |ref|)); NaN or a shape mismatch gives inf."""
    if got is None or tuple(got.shape) != tuple(ref.shape):
        return float("inf"), float("inf")
    if got.numel() == 0:
        return 0.0, 0.0
    err = (got.double() - ref).abs()
    ratio = err / (tol[0] + tol[1] * ref.abs())
    bad = ~torch.isfinite(err)
    if bad.any():
        return float("inf"), float("inf")
    return err.max().item(), ratio.max().item()


def layouts(spec, hidden, rows, gen):
    """(label, inputs) for the plain case; strided, 3-D and misaligned (+1 element) views are added for rows 777."""
    plain = make_inputs(spec, (rows, hidden), gen)
    cases = [("contiguous", plain)]
    if rows != 777:
        return cases
    strided = make_inputs(spec, (rows, hidden + 64), gen)
    for k in ("x", "residual"):
        if strided[k] is not None:
            strided[k] = strided[k][:, :hidden]
    strided["weight"], strided["bias"] = plain["weight"], plain["bias"]
    cases.append(("rows strided (+64)", strided))
    cases.append(("3-D (3, 259, h)", {k: (v.view(3, 259, hidden) if k in ("x", "residual") and v is not None else v) for k, v in plain.items()}))
    shifted = make_inputs(spec, (rows * hidden + 1,), gen)
    for k in ("x", "residual"):
        if shifted[k] is not None:
            shifted[k] = shifted[k][1:].view(rows, hidden)
    shifted["weight"], shifted["bias"] = plain["weight"], plain["bias"]
    cases.append(("misaligned (+1 element)", shifted))
    return cases


def check_case(ng, spec, label, inp, eps):
    """Returns a result row: max errors of every output against float64, torch's error for information, pass."""
    ref = reference(spec, inp, eps)
    got = call_normgen(ng, spec, inp, eps)
    y_err, y_ratio = error_ratio(got.get("y"), ref["y"], TOLERANCE[spec.dtype])
    others = {}
    for name in ref:
        if name != "y":
            tol = STATS_TOLERANCE if name in ("mean", "rstd") else TOLERANCE[TOL_NAMES[inp["residual"].dtype]]
            others[name] = error_ratio(got.get(name), ref[name], tol)[1]
    ok = y_ratio <= 1 and all(r <= 1 for r in others.values()) and got["y"].dtype == inp["x"].dtype
    try:
        w, b = peer_params(spec, inp)
        ty, _ = call_torch(spec, inp, eps, w, b)
        torch_err = f"{error_ratio(ty, ref['y'], TOLERANCE[spec.dtype])[0]:.3g}"
        diff = f"{(ty.double() - got['y'].double()).abs().max().item():.3g}"
    except Exception as e:  # information only
        torch_err, diff = f"n/a ({type(e).__name__})", "n/a"
    other_text = ", ".join(f"{n} {r:.2f}" for n, r in others.items()) or "-"
    shape = "x".join(str(d) for d in inp["x"].shape)
    return [spec.key, shape, label, f"{y_err:.3g}", f"{y_ratio:.2f}", other_text, torch_err, diff, "pass" if ok else "FAIL"], ok


def held_out(ng, specs, gen):
    header = ["spec", "shape", "layout", "max abs err y", "max err/allowed y", "err/allowed of other outputs", "torch F.* max abs err y (info)", "max abs normgen - torch (info)", "result"]
    rows, failures = [], 0
    for spec in specs:
        for hidden in HIDDEN:
            for nrows in ROWS:
                for label, inp in layouts(spec, hidden, nrows, gen):
                    try:
                        row, ok = check_case(ng, spec, label, inp, EPS)
                    except Exception as e:
                        traceback.print_exc()
                        row, ok = [spec.key, f"{nrows}x{hidden}", label, "-", "-", "-", "-", "-", f"FAIL: {describe(e)}"], False
                    rows.append(row)
                    failures += not ok
        print(f"{spec.key}: {len(rows)} cases so far, {failures} failures", file=sys.stderr)
    return header, rows, failures


def compiled_checks(ng, specs, gen):
    """A small function around each spec's op, compiled with fullgraph=True, matches eager."""
    header = ["spec", "shape", "max abs compiled - eager", "result"]
    rows, failures = [], 0
    for spec in specs:
        inp = make_inputs(spec, (2, 333, 4096), gen)

        def fn(x, weight, bias, residual):
            out = call_normgen(ng, spec, {"x": x, "weight": weight, "bias": bias, "residual": residual}, EPS)
            return {k: v * 2 for k, v in out.items()}

        try:
            torch._dynamo.reset()
            eager = fn(inp["x"], inp["weight"], inp["bias"], inp["residual"])
            compiled = torch.compile(fn, fullgraph=True, dynamic=False)(inp["x"], inp["weight"], inp["bias"], inp["residual"])
            diff = max((compiled[k].double() - eager[k].double()).abs().max().item() for k in eager)
            ok = set(compiled) == set(eager) and diff <= TOLERANCE[spec.dtype][0]
            rows.append([spec.key, "2x333x4096", f"{diff:.3g}", "pass" if ok else "FAIL"])
        except Exception as e:
            ok = False
            rows.append([spec.key, "2x333x4096", "-", f"FAIL: {describe(e)}"])
            traceback.print_exc()
        failures += not ok
    return header, rows, failures


def graph_checks(ng, specs, gen):
    """One call per spec captured in a CUDA graph and replayed on new inputs matches eager."""
    header = ["spec", "shape", "max abs replay - eager", "result"]
    rows, failures = [], 0
    for spec in specs:
        inp = make_inputs(spec, (1000, 8192), gen)
        static = {k: (v.clone() if v is not None else None) for k, v in inp.items()}
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                call_normgen(ng, spec, static, EPS)  # warm up outside the capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = call_normgen(ng, spec, static, EPS)
            fresh = make_inputs(spec, (1000, 8192), gen)
            for k, v in fresh.items():
                if v is not None and k in ("x", "residual"):
                    static[k].copy_(v)
            graph.replay()
            eager = call_normgen(ng, spec, static, EPS)
            torch.cuda.synchronize()
            diff = max((out[k].double() - eager[k].double()).abs().max().item() for k in eager)
            ok = diff == 0
            rows.append([spec.key, "1000x8192", f"{diff:.3g}", "pass" if ok else "FAIL"])
        except Exception as e:
            ok = False
            rows.append([spec.key, "1000x8192", "-", f"FAIL: {describe(e)}"])
            traceback.print_exc()
        failures += not ok
    return header, rows, failures


def chain(ng, spec, first, calls):
    """Each call's y fed to the next as x (its residual_out as the residual): a call that started
    reading before the previous one finished writing would differ. [(inputs, outputs)] per call."""
    inp, steps = dict(first), []
    for _ in range(calls):
        out = call_normgen(ng, spec, inp, EPS)
        steps.append((inp, out))
        inp = {**inp, "x": out["y"], "residual": out.get("residual_out", inp["residual"])}
    return steps


def tuned_release(pkg_dir, spec, rows, hidden):
    """How the package's table launches this exact shape: released "late" (after the wait), at "exit", at the "start", or "untuned"."""
    for e in dispatch_entries(pkg_dir):
        if e["spec"] == spec.key and e["rows"] == rows and e["hidden"] == hidden:
            return e.get("release", "start")
    return "untuned"


def plain_runs_another_kernel(pkg_dir, spec, rows, hidden):
    """Whether the current GPU's table has a plain-launch winner of its own for this exact shape."""
    tables = read_dispatch(pkg_dir)["tables"]
    name = torch.cuda.get_device_name()
    table = next((t for t in tables if t["device"] == name), tables[0])
    tuned = next((e for e in table["entries"] if (e["spec"], e["rows"], e["hidden"]) == (spec.key, rows, hidden)), None)
    plain = next((e for e in table.get("plain", {}).get("entries", []) if (e["spec"], e["rows"], e["hidden"]) == (spec.key, rows, hidden)), None)
    return tuned is not None and plain is not None and plain["variantId"] != tuned["variantId"]


def wrong_calls(spec, steps):
    """Calls of a chain whose outputs are not within tolerance of float64 from that call's own inputs."""
    wrong = 0
    for inp, out in steps:
        ref = reference(spec, inp, EPS)
        ratios = [error_ratio(out.get("y"), ref["y"], TOLERANCE[spec.dtype])[1]]
        if "residual_out" in ref:
            ratios.append(error_ratio(out.get("residual_out"), ref["residual_out"], TOLERANCE[TOL_NAMES[inp["residual"].dtype]])[1])
        wrong += any(r > 1 for r in ratios)
    return wrong


# 2048 x 4096: a long kernel; 32 x 4096: short ones, which the H200 table launches released
# after their wait (test/gpu/release-choice.md), so that both release points are chained.
CHAIN_SHAPES = ((2048, 4096), (32, 4096))


def chain_checks(ng, pkg_dir, specs, gen, calls=32):
    """Chains of kernels with programmatic dependent launch (eager and in a CUDA graph) against
    the same chain launched plainly: bitwise equal. Where a plain launch runs another kernel
    (the plain-launch table's winner), each call's outputs against float64 from its own inputs
    instead: a call that read its input before the previous call finished writing it fails."""
    header = ["spec", "shape", "tuned release", "calls", "package default", "compared with", "eager: calls differing", "CUDA graph: calls differing", "result"]
    rows, failures = [], 0
    for spec in specs:
        for shape in CHAIN_SHAPES:
            label, release = f"{shape[0]}x{shape[1]}", tuned_release(pkg_dir, spec, *shape)
            another = plain_runs_another_kernel(pkg_dir, spec, *shape)
            first = make_inputs(spec, shape, gen)
            before = ng.set_programmatic_launch(False)
            try:
                plain = [out["y"] for _, out in chain(ng, spec, first, calls)]
                ng.set_programmatic_launch(True)
                eager = chain(ng, spec, first, calls)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    chain(ng, spec, first, 2)  # warm up outside the capture
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    captured = chain(ng, spec, first, calls)
                graph.replay()
                torch.cuda.synchronize()
                bitwise = lambda steps: sum(not torch.equal(out["y"], y) for (_, out), y in zip(steps, plain))
                differ = (lambda steps: wrong_calls(spec, steps)) if another else bitwise
                d_eager, d_graph = differ(eager), differ(captured)
                ok = d_eager == 0 and d_graph == 0
                compared = "float64, per call (plain launch: another kernel)" if another else "plain launches, bitwise"
                rows.append([spec.key, label, release, calls, "on" if before else "off (NORMGEN_PDL=0)", compared, d_eager, d_graph, "pass" if ok else "FAIL"])
            except Exception as e:
                ok = False
                rows.append([spec.key, label, release, calls, "-", "-", "-", "-", f"FAIL: {describe(e)}"])
                traceback.print_exc()
            finally:
                ng.set_programmatic_launch(before)
            failures += not ok
    return header, rows, failures


def unsupported_call(ng, x):
    """A call whose spec the package lacks (fp16 RMSNorm, else one with stats), or None when it has them all."""
    have = {s[0] for s in ng.SPECS}
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        key = f"rmsnorm.{TOL_NAMES[dtype]}.w-none"
        if key not in have:
            return key, lambda: ng.rms_norm(x.to(dtype))
    return None


def error_cases(ng, specs, gen):
    """Bad calls raise the documented exception with a sentence; rows 0 returns empty outputs."""
    spec = specs[0]
    inp = make_inputs(spec, (4, 256), gen)
    x, w = inp["x"], inp["weight"]
    other16 = torch.float16 if x.dtype != torch.float16 else torch.bfloat16
    call = lambda **kw: (lambda: call_normgen(ng, spec, {**inp, **kw}, EPS))
    cases = [
        ("x on the CPU", ValueError, call(x=x.cpu())),
        ("x float64", TypeError, call(x=x.double())),
        ("x int32", TypeError, call(x=x.to(torch.int32))),
        ("last dimension strided", ValueError, call(x=torch.cat([x, x], -1)[:, ::2])),
        ("hidden 0", ValueError, call(x=x[:, :0], weight=None if w is None else w[:0])),
        ("weight of another 16-bit dtype", TypeError, call(weight=torch.ones(256, device=x.device, dtype=other16))),
        ("weight of the wrong length", ValueError, call(weight=torch.ones(255, device=x.device, dtype=x.dtype))),
        ("residual of another shape", ValueError, lambda: ng.rms_norm(x, None, residual=x[:2])),
        ("weight_offset without a weight", ValueError, lambda: ng.rms_norm(x, None, weight_offset=True)),
        ("C status (rows -1 straight to normgen_forward)", RuntimeError, lambda: ng.abi.forward(ng.abi.FwdDesc(rows=-1, hidden=8), ng.library)),
    ]
    missing = unsupported_call(ng, x)
    if missing:
        cases.append((f"spec not in the package ({missing[0]})", NotImplementedError, missing[1]))
    header = ["case", "expected", "raised", "message", "result"]
    rows, failures = [], 0
    for name, expected, fn in cases:
        try:
            fn()
            raised, message, ok = "nothing", "", False
        except Exception as e:
            raised, message, ok = type(e).__name__, describe(e, 400).split(": ", 1)[1], isinstance(e, expected)
        rows.append([name, expected.__name__, raised, message, "pass" if ok else "FAIL"])
        failures += not ok
    for shape in ((0, 256), (2, 0, 256)):  # rows 0: empty outputs of x's shape, nothing launched
        try:
            y = call_normgen(ng, spec, {**make_inputs(spec, shape, gen)}, EPS)["y"]
            ok = tuple(y.shape) == shape and y.dtype == x.dtype
            rows.append([f"rows 0, x {shape}", "empty y", f"y {tuple(y.shape)}", "", "pass" if ok else "FAIL"])
        except Exception as e:
            ok = False
            rows.append([f"rows 0, x {shape}", "empty y", type(e).__name__, describe(e), "FAIL"])
        failures += not ok
    return header, rows, failures


def table(header, rows):
    cell = lambda c: str(c).replace("|", "\\|")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pkg_dir")
    parser.add_argument("out_md")
    args = parser.parse_args()
    ng = import_binding(args.pkg_dir)
    specs = package_specs(args.pkg_dir)
    gen = torch.Generator(device="cuda").manual_seed(1234)
    sections = [
        ("Held-out shapes against float64", held_out(ng, specs, gen)),
        ("torch.compile(fullgraph=True, dynamic=False) against eager", compiled_checks(ng, specs, gen)),
        ("CUDA graph capture: a replay on new inputs against eager (bitwise)", graph_checks(ng, specs, gen)),
        ("Programmatic dependent launch: chained calls against plain launches (bitwise; where a plain launch runs another kernel, each call against float64)", chain_checks(ng, args.pkg_dir, specs, gen)),
        ("Bad calls", error_cases(ng, specs, gen)),
    ]
    total = sum(len(r) for _, (_, r, _) in sections)
    failures = sum(f for _, (_, _, f) in sections)
    lines = log_header("normgen PyTorch binding on held-out shapes", ng) + [
        f"- specs: {', '.join(s.key for s in specs)} (from dispatch.json)",
        f"- held-out shapes: hidden {HIDDEN} x rows {ROWS}, random inputs, eps {EPS}; rows 777 also strided, 3-D and misaligned",
        "- pass: max |got - ref| <= atol + rtol |ref| against float64 computed in torch from the same inputs"
        " (x + residual rounded to its dtype first); (atol, rtol): "
        + ", ".join(f"{k} {v}" for k, v in TOLERANCE.items()) + f", mean/rstd {STATS_TOLERANCE}."
        " err/allowed <= 1 passes. torch's F.rms_norm / F.layer_norm columns are information only.",
        f"- result: {total} checks, {failures} failures",
    ]
    for title, (header, rows, _) in sections:
        lines += ["", f"## {title}", ""] + table(header, rows)
    write_log(args.out_md, lines)
    print(f"{total} checks, {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
