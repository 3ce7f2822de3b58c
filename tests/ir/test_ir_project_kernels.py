"""The project's kernels as traced by the front end: their IR text reads back exactly, and
every pass keeps it valid (the verifier runs after each one)."""
import pytest

from npujit.ir import parse_function, print_function, verify
from npujit.ir.pipeline import run_passes

from ir_samples import project_launches


@pytest.mark.parametrize("name", ["add", "layernorm", "rmsnorm", "softmax", "matmul"])
def test_traced_kernel_round_trips_and_passes_verify(name):
    kernel, args, meta = project_launches()[name]
    artifacts = kernel.inspect(*args, **meta)
    traced = artifacts["trace"]
    fn = parse_function(traced)
    assert print_function(fn, locs=True) == traced
    verify(fn)
    run_passes(fn, verify=True, dump="")
    assert print_function(fn) == artifacts["ir"]  # the passes are deterministic


def test_softmax_gets_fused():
    kernel, args, meta = project_launches()["softmax"]
    assert '"npu.fused"' in kernel.inspect(*args, **meta)["ir"]
