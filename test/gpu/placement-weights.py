"""The package's bf16 LayerNorm 16384 x 32768 timed as bench_torch.py times it (make_inputs, `measure`:
a CUDA graph of 3 calls, median of 7 replays), then with x, or weight and bias, moved to fresh
allocations (the same values): which of the three buffers' placement makes the benchmark's case slow?

    make -j"$(nproc)" -C out/normgen-sm90-h200
    python3 test/gpu/placement-weights.py out/normgen-sm90-h200

Log: test/gpu/placement.md."""
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, "test/gpu")
from torch_common import Spec, call_normgen, import_binding, make_inputs, measure  # noqa: E402

ng = import_binding(sys.argv[1])
spec = Spec.parse("layernorm.bf16.w-same.bias")
gen = torch.Generator(device="cuda")
gen.manual_seed(1)
bench = make_inputs(spec, (32768, 16384), gen)


def timed(inputs):
    return round(measure(lambda inp: call_normgen(ng, spec, inp, 1e-5), [inputs], 3, 7, False)[0], 2)


cases = {
    "benchmark's inputs": bench,
    "x cloned": dict(bench, x=bench["x"].clone()),
    "weight and bias cloned": dict(bench, weight=bench["weight"].clone(), bias=bench["bias"].clone()),
    "a fresh x (randn, no generator)": dict(bench, x=torch.randn(32768, 16384, device="cuda").to(torch.bfloat16)),
}
for name, inputs in cases.items():
    print(f"{name}: {timed(inputs)} us", flush=True)
