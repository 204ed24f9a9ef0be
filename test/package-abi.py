"""Drives an emitted package's torch-free ctypes layer (python/normgen_torch/abi.py), no GPU:
    package-abi.py describe ABI_PY            -> JSON: FwdDesc fields (kind, offset, size), constants, specs
    package-abi.py calls ABI_PY LIB < cases   -> JSON: normgen_select through ctypes for each case,
                                                 and the errors normgen_forward raises for bad calls
Cases are the C harness's `select` arguments; the pointers are the harness's too."""

import ctypes
import importlib.util
import json
import sys


def load_abi(path):
    spec = importlib.util.spec_from_file_location("normgen_abi", path)
    abi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(abi)
    return abi


def describe(abi):
    kinds = {ctypes.c_int: "int", ctypes.c_int64: "int64_t", ctypes.c_float: "float", ctypes.c_void_p: "pointer"}
    fields = [
        {"name": n, "kind": kinds.get(t, t.__name__), "offset": getattr(abi.FwdDesc, n).offset, "size": ctypes.sizeof(t)}
        for n, t in abi.FwdDesc._fields_
    ]
    consts = {k: v for k, v in vars(abi).items() if k.isupper() and type(v) is int}
    return {"fields": fields, "size": ctypes.sizeof(abi.FwdDesc), "consts": consts, "specs": [s[0] for s in abi.SPECS]}


def harness_desc(abi, op, dtype, residual, hidden, rows, stride, align):
    """The descriptor package-harness.c builds for `select` with these arguments."""
    d = abi.FwdDesc()
    d.op = abi.LAYERNORM if op == "layernorm" else abi.RMSNORM
    d.dtype = abi.FP32 if dtype == "fp32" else abi.BF16
    d.weight_dtype = d.dtype
    d.has_bias = int(d.op == abi.LAYERNORM)
    d.residual_dtype = abi.NONE
    if residual == "same":
        d.residual_dtype = d.dtype
        d.residual, d.residual_out = 0x400000, 0x500000
    if d.has_bias:
        d.bias = 0x600000
    d.x, d.y, d.weight = 0x100000 + align % 16, 0x200000, 0x300000
    d.rows, d.hidden = rows, hidden
    d.x_stride = d.y_stride = d.residual_stride = d.residual_out_stride = stride
    d.eps = 1e-6
    return d


def error_of(abi, lib, d):
    try:
        abi.forward(d, lib)
    except abi.NormgenError as e:
        return {"status": e.status, "message": str(e), "runtime_error": isinstance(e, RuntimeError)}
    return None


def calls(abi, lib_path, cases):
    lib = abi.load(lib_path)
    selected = [list(abi.select(harness_desc(abi, *c), lib)) for c in cases]
    rows0 = harness_desc(abi, "rmsnorm", "bf16", "none", 4096, 0, 4096, 16)
    untuned = harness_desc(abi, "rmsnorm", "bf16", "none", 4096, 8, 4096, 16)
    untuned.weight_offset = 1  # (1 + w) was not tuned: not in the package
    return {"select": selected, "rows0": error_of(abi, lib, rows0), "untuned": error_of(abi, lib, untuned)}


if __name__ == "__main__":
    abi = load_abi(sys.argv[2])
    if sys.argv[1] == "describe":
        print(json.dumps(describe(abi)))
    else:
        print(json.dumps(calls(abi, sys.argv[3], json.load(sys.stdin))))
