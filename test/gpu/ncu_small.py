"""One launch each of the package's op launched plainly and of torch.compile's kernel on small
shapes, between cudaProfilerStart and cudaProfilerStop, for ncu: where a plain launch of ours
trails torch.compile's in the benchmark's graphs, whether the kernel itself takes longer (ncu's
duration) or the launch around it does.

    make -j"$(nproc)" -C out/normgen-sm90-h100-80gb-hbm3
    ncu --profile-from-start off --metrics gpu__time_duration.sum,... \\
        python3 test/gpu/ncu_small.py out/normgen-sm90-h100-80gb-hbm3 rmsnorm.bf16.w-same.res-same:1024x32 ...

Prints the order of the profiled launches (shape, then implementation) to match ncu's kernels."""

import sys

import torch

from torch_common import Spec, call_normgen_plain, call_torch, import_binding, make_inputs, peer_params, warm_up

EPS = 1e-5


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: ncu_small.py PKG_DIR SPEC:HIDDENxROWS ...")
    ng = import_binding(sys.argv[1])
    gen = torch.Generator(device="cuda").manual_seed(7)
    profiled = []
    for arg in sys.argv[2:]:
        key, shape = arg.split(":")
        hidden, rows = (int(v) for v in shape.split("x"))
        spec = Spec.parse(key)
        inp = make_inputs(spec, (rows, hidden), gen)
        w, b = peer_params(spec, inp)
        impls = {
            "normgen plain": lambda inp=inp, spec=spec: call_normgen_plain(ng, spec, inp, EPS),
            "compile": torch.compile(lambda inp=inp, spec=spec, w=w, b=b: call_torch(spec, inp, EPS, w, b), fullgraph=True, dynamic=False),
        }
        for name, fn in impls.items():
            warm_up(lambda _: fn(), [None], calls=3)
            torch.cuda.cudart().cudaProfilerStart()
            fn()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            profiled.append(f"{arg} {name}")
    print("profiled, in order:")
    for line in profiled:
        print("  " + line)


if __name__ == "__main__":
    main()
