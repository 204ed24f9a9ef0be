"""The package's bf16 LayerNorm at long rows, timed with programmatic launch on and off, in CUDA
graphs of 2, 3, 14 and 64 calls (k: every call's outputs kept alive, as bench_torch.py does):
does a long chain of programmatic launches run as fast as a short one?

    make -j"$(nproc)" -C out/normgen-sm90-h200
    python3 test/gpu/pdl-chain.py out/normgen-sm90-h200

Prints microseconds a call (median of 7 replays), each setting twice. Log: test/gpu/pdl-chain.md."""
import sys, torch
sys.path.insert(0, sys.argv[1] + "/python"); sys.path.insert(0, "test/gpu")
import normgen_torch as ng
from torch_common import time_graph, warm_up, make_inputs, package_specs

spec = [s for s in package_specs(sys.argv[1]) if s.key == "layernorm.bf16.w-same.bias"][0]
for rows, hidden in [(2048, 65536), (8192, 65536), (2048, 131072), (512, 65536)]:
    inp = make_inputs(spec, (rows, hidden), torch.Generator(device="cuda").manual_seed(7))
    call = lambda _: ng.layer_norm(inp["x"], inp["weight"], inp["bias"], eps=1e-5)
    for programmatic in (1, 0, 1, 0):
        ng.set_programmatic_launch(programmatic)
        warm_up(call, [None], 3)
        times = [f"{n}{'k' if keep else ''}:{time_graph(call, [None], n, 7, keep):.1f}" for n in (2, 3, 14, 64) for keep in (True, False)]
        print(f"{rows}x{hidden} pdl={programmatic} " + " ".join(times), flush=True)
    del inp
    torch.cuda.empty_cache()
