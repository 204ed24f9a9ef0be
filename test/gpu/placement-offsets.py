"""The package's kernels at 32768 rows through the C ABI (events around 10 calls, median of 7), with y
placed at offsets of 1.0-2.0 GiB after x inside one allocation, then in its own: does y's place
relative to x change the time? Log: test/gpu/placement.md.

    make -j"$(nproc)" -C out/normgen-sm90-h200
    python3 test/gpu/placement-offsets.py out/normgen-sm90-h200"""
import sys, statistics, torch
sys.path.insert(0, sys.argv[1] + "/python")
import normgen_torch as ng
from normgen_torch import abi
torch.manual_seed(0)
dev = torch.device("cuda")

def timed(fn, n=10, reps=7):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(n): fn()
        b.record(); torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1000 / n)
    return statistics.median(out)

def case(op, dtype, rows, hidden):
    esz = torch.tensor([], dtype=dtype).element_size()
    nbytes = rows * hidden * esz
    big = torch.empty(2 * nbytes + (1 << 30), dtype=torch.uint8, device=dev)
    w = torch.randn(hidden, device=dev).to(dtype); b = torch.randn(hidden, device=dev).to(dtype)
    def view(off):
        return big[off:off + nbytes].view(dtype).view(rows, hidden)
    view(0).copy_(torch.randn(rows, hidden, device=dev).to(dtype))
    opc = abi.LAYERNORM if op == "ln" else abi.RMSNORM
    def launcher(x, y):
        desc = abi.FwdDesc(op=opc, dtype={torch.bfloat16: abi.BF16, torch.float32: abi.FP32}[dtype], weight_dtype={torch.bfloat16: abi.BF16, torch.float32: abi.FP32}[dtype],
            has_bias=int(op == "ln"), weight_offset=0, residual_dtype=-1, write_stats=0,
            x=x.data_ptr(), residual=None, weight=w.data_ptr(), bias=b.data_ptr() if op == "ln" else None,
            y=y.data_ptr(), residual_out=None, mean=None, rstd=None, rows=rows, hidden=hidden,
            x_stride=hidden, residual_stride=hidden, y_stride=hidden, residual_out_stride=hidden, eps=1e-5,
            stream=torch.cuda.current_stream().cuda_stream)
        return desc
    x = view(0)
    print(f"{op} {dtype} {rows}x{hidden}: variant {abi.select(launcher(x, x), ng.library)}", flush=True)
    gb = 2 * nbytes / 1e9
    for doff in [0, 64 << 20, 128 << 20, 256 << 20, 384 << 20, 512 << 20, 768 << 20, 1 << 30]:
        y = view(nbytes + doff)
        d = launcher(x, y)
        us = timed(lambda: abi.forward(d, ng.library))
        print(f"  y = x + {nbytes >> 20} MiB + {doff:>9}: {us:8.2f} us {gb / us * 1e6:6.0f} GB/s", flush=True)
    y2 = torch.empty_like(x)
    d = launcher(x, y2)
    us = timed(lambda: abi.forward(d, ng.library))
    print(f"  y separate torch.empty (addr diff {y2.data_ptr() - x.data_ptr()}): {us:8.2f} us", flush=True)
    del big, y2

src = torch.empty(1 << 28, device=dev); dst = torch.empty_like(src)
us = timed(lambda: dst.copy_(src))
print(f"copy: {2 * 4 * (1 << 28) / us / 1e3:.0f} GB/s"); del src, dst
for args in [("ln", torch.bfloat16, 32768, 16384), ("rms", torch.bfloat16, 32768, 16384), ("ln", torch.float32, 32768, 8192)]:
    case(*args)
