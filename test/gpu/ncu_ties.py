"""One launch each of the package's kernel and torch.compile's, per shape, for ncu to profile side by side.

Where both sit at the copy roofline and torch.compile stays a few tenths of a percent ahead
(test/gpu/roofline-chains.md), ncu's counters say whether the package's kernel moves more bytes
(its second pass over the row missing L1 or L2) or moves the same bytes more slowly. Only the
launches between cudaProfilerStart and cudaProfilerStop are profiled (warm-up and torch.compile's
own autotuning are not):

    ncu --profile-from-start off --clock-control none --metrics ... \\
      python3 test/gpu/ncu_ties.py PKG_DIR [--shapes rmsnorm.fp32.w-same:4096x32768,...]
"""

import argparse

import torch

from chain_length import parse_shapes, specs_for_shapes
from torch_common import call_normgen, call_torch, import_binding, make_inputs, peer_params

EPS = 1e-6
DEFAULT_SHAPES = "rmsnorm.bf16.w-same:8192x32768,layernorm.fp32.w-same.bias:4096x32768,rmsnorm.fp32.w-same:4096x32768,rmsnorm.bf16.w-same:16384x32768"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pkg_dir")
    parser.add_argument("--shapes", type=parse_shapes, default=DEFAULT_SHAPES)
    args = parser.parse_args()

    ng = import_binding(args.pkg_dir)
    specs = specs_for_shapes(parser, args.pkg_dir, args.shapes)
    gen = torch.Generator(device="cuda").manual_seed(7)
    for key, hidden, rows in args.shapes:
        spec = specs[key]
        inp = make_inputs(spec, (rows, hidden), gen)
        inp["peer_w"], inp["peer_b"] = peer_params(spec, inp)
        impls = {
            "normgen": lambda: call_normgen(ng, spec, inp, EPS),
            "compile": torch.compile(lambda: call_torch(spec, inp, EPS, inp["peer_w"], inp["peer_b"]), fullgraph=True, dynamic=False),
        }
        for fn in impls.values():  # compile, load and warm up outside the profiled range
            for _ in range(3):
                fn()
        torch.cuda.synchronize()
        # The order of the profiled launches, to match ncu's report to shapes and implementations.
        print(f"profiled: {key} {hidden} x {rows}: {', '.join(impls)}", flush=True)
        torch.cuda.cudart().cudaProfilerStart()
        for fn in impls.values():
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        del inp, impls
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
