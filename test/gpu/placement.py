"""The package's bf16 LayerNorm 16384 x 32768 (its reload kernel) timed as bench_torch.py times it, with
x made in different ways: is the kernel slower in the benchmark because of the values or of where x lies?

    make -j"$(nproc)" -C out/normgen-sm90-h200
    python3 test/gpu/placement.py out/normgen-sm90-h200 MODE     # MODE: words joined by '+'

plain: x = randn (fp32) cast to bf16; pad: a 1 GiB tensor allocated before x; gen: x made as
bench_torch.py makes it (make_inputs, seeded CUDA generator); gen+into: plain x's values copied
into that allocation; gen+clone: gen's values in a fresh allocation; compile: torch.compile's
kernel warmed up first; fc: ours warmed up before it. Prints the addresses of x and y, three
graph timings (3 calls a graph, median of 7 replays) and three with events (us per call).
Log: test/gpu/placement.md."""
import sys, torch
sys.path.insert(0, sys.argv[1] + "/python"); sys.path.insert(0, "test/gpu")
import normgen_torch as ng
from torch_common import time_graph, time_events, warm_up
mode = sys.argv[2]
rows, hidden = 32768, 16384
pad = None
if "pad" in mode:  # a 1 GiB tensor allocated first
    pad = torch.empty(rows, hidden, device="cuda", dtype=torch.bfloat16)
x = torch.randn(rows, hidden, device="cuda").to(torch.bfloat16)
if "gen" in mode:  # bench_torch.py's inputs (only x is used)
    from torch_common import make_inputs, package_specs
    spec = [s for s in package_specs(sys.argv[1]) if s.key == "layernorm.bf16.w-same.bias"][0]
    inp = make_inputs(spec, (rows, hidden), torch.Generator(device="cuda").manual_seed(7))
    if "into" in mode:  # the plain values copied into the generator's allocation
        inp["x"].copy_(x)
    x = inp["x"]
    if "clone" in mode:  # the same values in a fresh allocation
        x = x.clone(); del inp; torch.cuda.empty_cache()
w = torch.randn(hidden, device="cuda").to(torch.bfloat16); b = torch.randn(hidden, device="cuda").to(torch.bfloat16)
f = lambda _: ng.layer_norm(x, w, b, eps=1e-5)
if "fc" in mode:
    warm_up(f, [None], 2)
if "compile" in mode:
    c = torch.compile(lambda _: torch.nn.functional.layer_norm(x, (hidden,), w, b, 1e-5), fullgraph=True, dynamic=False)
    warm_up(c, [None], 2)
warm_up(f, [None], 2)
y = f(None)
print(f"{mode:22s} x {x.data_ptr():#x} y {y.data_ptr():#x} graph", [round(time_graph(f, [None], 3, 7, False), 1) for _ in range(3)],
      "events", [round(time_events(f, [None], 3, 7), 1) for _ in range(3)], flush=True)
