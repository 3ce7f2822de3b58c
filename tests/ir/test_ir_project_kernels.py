"""The project's kernels as traced by the front end: their IR text reads back exactly, and
every pass keeps it valid (the verifier runs after each one)."""
import numpy as np
import pytest

from npujit.ir import parse_function, print_function, verify
from npujit.ir.pipeline import run_passes
from npujit.kernels.elementwise import add_kernel
from npujit.kernels.layernorm import layernorm_kernel, rmsnorm_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel


def _launches():
    x = np.ones(100, np.float32)
    m = np.ones((4, 48), np.float16)
    w = np.ones(48, np.float16)
    a, b, c = np.ones((32, 16), np.float16), np.ones((16, 32), np.float16), np.zeros((32, 32), np.float32)
    return {
        "add": (add_kernel, (x, x, x.copy(), 100), {"BLOCK": 64}),
        "layernorm": (layernorm_kernel, (m, w, w, m.copy(), 48, 1e-5), {"BLOCK": 64}),
        "rmsnorm": (rmsnorm_kernel, (m, w, m.copy(), 48, 1e-6), {"BLOCK": 64}),
        "softmax": (softmax_kernel, (m, m.copy(), 48, 48, 48), {"BLOCK": 64}),
        "matmul": (matmul_kernel, (a, b, c, 32, 32, 16, 16, 1, 32, 1, 32, 1),
                   {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "NUM_STAGES": 2}),
    }


@pytest.mark.parametrize("name", ["add", "layernorm", "rmsnorm", "softmax", "matmul"])
def test_traced_kernel_round_trips_and_passes_verify(name):
    kernel, args, meta = _launches()[name]
    artifacts = kernel.inspect(*args, **meta)
    traced = artifacts["trace"]
    fn = parse_function(traced)
    assert print_function(fn, locs=True) == traced
    verify(fn)
    run_passes(fn, verify=True, dump="")
    assert print_function(fn) == artifacts["ir"]  # the passes are deterministic


def test_softmax_gets_fused():
    kernel, args, meta = _launches()["softmax"]
    assert '"npu.fused"' in kernel.inspect(*args, **meta)["ir"]
