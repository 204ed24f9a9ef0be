"""How the time per call of the package's kernels (and torch.compile's) depends on the graph's length.

bench_torch.py timed short kernels slower in graphs of 4096 calls than in graphs of 800 (and the tuner
faster still): this times a few shapes over graph lengths, with programmatic
launch on and off, each call writing fresh outputs (as the benchmark does) or one output buffer again
(fewer pages touched), to tell chain length from memory footprint.

    python3 test/gpu/chain_length.py PKG_DIR OUT_MD [--shapes rmsnorm.bf16.w-same:4096x32,...] [--calls 100,400,...]
"""

import argparse

import torch

from torch_common import (call_normgen, call_normgen_plain, call_torch, import_binding, input_copies, log_header, measure, package_specs,
                          positive_int, rotated_inputs, write_log)

EPS = 1e-6


def parse_shapes(text):
    """'spec:HIDDENxROWS,...' -> [(spec key, hidden, rows)]."""
    shapes = []
    for item in text.split(","):
        try:
            key, dims = item.split(":")
            hidden, rows = (positive_int(v) for v in dims.split("x"))
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(f"'{item}' is not SPEC:HIDDENxROWS with positive sizes") from None
        shapes.append((key, hidden, rows))
    return shapes


def specs_for_shapes(parser, pkg_dir, shapes):
    """The package's specs by key; an argument error naming any shape's spec the package lacks."""
    specs = {s.key: s for s in package_specs(pkg_dir)}
    unknown = sorted({key for key, _, _ in shapes} - specs.keys())
    if unknown:
        parser.error(f"the package has no spec {', '.join(unknown)} (it has {', '.join(sorted(specs))})")
    return specs


def parse_counts(text):
    return [positive_int(c) for c in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pkg_dir")
    parser.add_argument("out_md")
    parser.add_argument("--shapes", type=parse_shapes,
                        default="rmsnorm.bf16.w-same:4096x32,rmsnorm.bf16.w-same.res-same:4096x32,layernorm.bf16.w-same.bias:4096x32")
    parser.add_argument("--calls", type=parse_counts, default="100,200,400,800,1600,3200,4096")
    parser.add_argument("--repeats", type=positive_int, default=7)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    call_counts = args.calls

    ng = import_binding(args.pkg_dir)
    specs = specs_for_shapes(parser, args.pkg_dir, args.shapes)
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    gen = torch.Generator(device="cuda").manual_seed(7)
    lines = log_header("normgen: time per call (us) against the graph's length", ng)
    lines += ["", "| spec | hidden x rows | impl | outputs | " + " | ".join(f"{c} calls" for c in call_counts) + " |",
              "|---|---|---|---|" + "---|" * len(call_counts)]
    for key, hidden, rows in args.shapes:
        spec = specs[key]
        copies = input_copies(spec, rows, hidden, l2_bytes)
        inputs = rotated_inputs(spec, rows, hidden, copies, gen)

        impls = {
            "normgen": lambda inp: call_normgen(ng, spec, inp, EPS),
            "normgen plain": lambda inp: call_normgen_plain(ng, spec, inp, EPS),
        }
        if not args.no_compile:
            eager = lambda inp: call_torch(spec, inp, EPS, inp["peer_w"], inp["peer_b"])
            impls["compile"] = torch.compile(eager, fullgraph=True, dynamic=False)
        for name, fn in impls.items():
            for fresh in (True, False):
                cells = []
                for calls in call_counts:
                    us, _ = measure(fn, inputs, calls, args.repeats, keep_outputs=fresh)
                    cells.append(f"{us:.2f}")
                    torch.cuda.empty_cache()
                row = f"| {key} | {hidden} x {rows} | {name} | {'fresh' if fresh else 'reused'} | " + " | ".join(cells) + " |"
                print(row, flush=True)
                lines.append(row)
        lines.append(f"| | | ({copies} input copies) | | " + " | ".join("" for _ in call_counts) + " |")
        del inputs
        torch.cuda.empty_cache()
    write_log(args.out_md, lines)


if __name__ == "__main__":
    main()
