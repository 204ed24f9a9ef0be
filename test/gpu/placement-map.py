"""The package's kernel at bf16 LayerNorm 32768 x 16384 and fp32 LayerNorm 32768 x 8192 (x made as
bench_torch.py makes it) with weight and bias moved over a grid of offsets inside one 2 MiB-aligned
buffer, and again with x shifted by one 32 KiB row: does the time follow where weight and bias lie?
Events around 5 calls, median of 5.

    make -j"$(nproc)" -C out/normgen-sm90-h200
    python3 test/gpu/placement-map.py out/normgen-sm90-h200

Log: test/gpu/placement.md."""
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, "test/gpu")
from torch_common import Spec, call_normgen, import_binding, make_inputs, time_events, warm_up  # noqa: E402

ng = import_binding(sys.argv[1])
OFFSETS_KIB = list(range(0, 256, 32))


def timed(spec, inputs):
    """us a call: two calls to warm up, then events around 5 eager calls, median of 5."""
    call = lambda inp: call_normgen(ng, spec, inp, 1e-5)
    warm_up(call, [inputs])
    return time_events(call, [inputs], 5, 5)


def placed(buffer, kib, like):
    """A copy of `like` at `kib` KiB into `buffer`."""
    t = buffer[kib << 10 : (kib << 10) + like.numel() * like.element_size()].view(like.dtype)
    t.copy_(like)
    return t


for key, rows, hidden in [("layernorm.bf16.w-same.bias", 32768, 16384), ("layernorm.fp32.w-same.bias", 32768, 8192)]:
    spec = Spec.parse(key)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    bench = make_inputs(spec, (rows, hidden), gen)
    mib2 = 2 << 20
    print(f"== {key} {rows} x {hidden}: x at {bench['x'].data_ptr() % mib2} B mod 2 MiB, the benchmark's weight at "
          f"{bench['weight'].data_ptr() % mib2 >> 10} KiB and bias at {bench['bias'].data_ptr() % mib2 >> 10} KiB mod 2 MiB: "
          f"{timed(spec, bench):.1f} us", flush=True)
    buffer = torch.empty(4 << 20, dtype=torch.uint8, device="cuda")
    row_kib = hidden * bench["x"].element_size() >> 10
    shifted = torch.empty(rows * hidden * bench["x"].element_size() + (row_kib << 10), dtype=torch.uint8, device="cuda")
    for name, x in [("x as made", bench["x"]), ("x one row (32 KiB) further", placed(shifted, row_kib, bench["x"]).view(rows, hidden))]:
        print(f"  {name}; us by bias offset (rows) and weight offset (columns), KiB: " + " ".join(f"{o:>5}" for o in OFFSETS_KIB), flush=True)
        for ob in OFFSETS_KIB:
            cells = []
            for ow in OFFSETS_KIB:
                if abs(ow - ob) < row_kib:
                    cells.append("    -")
                    continue
                w, b = placed(buffer, ow, bench["weight"]), placed(buffer, ob, bench["bias"])
                cells.append(f"{timed(spec, dict(bench, x=x, weight=w, bias=b)):5.0f}")
            print(f"    bias {ob:>4}: " + " ".join(cells), flush=True)
    del bench, buffer, shifted
