"""Tiles in their scheduled buffers (backends/reference/scheduled.py): every bundled kernel
is still right when its tiles live at the offsets and slots the allocator chose, fresh
buffers are NaN and copies land only at their wait; and a broken schedule -- a missing
wait, two live buffers overlapping -- now gives a wrong answer instead of passing."""
import numpy as np
import pytest

from npujit.backends.reference.backend import run_buffered
from npujit.ir import parse_function
from npujit.kernels import numpy_reference as ref
from npujit.kernels.elementwise import add_kernel
from npujit.kernels.elementwise import add_stream_kernel as stream_add_kernel
from npujit.kernels.layernorm import layernorm_kernel, rmsnorm_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910_LIKE



def _scheduled(kernel, args, meta, spec=None):
    """A private copy of the kernel's scheduled IR (printed and parsed back, so tests may
    edit it) and its runtime arguments."""
    opts = {"backend": "reference"} if spec is None else {"backend": "reference", "spec": spec}
    k = kernel.with_options(**opts)
    c = k.compile(*args, **meta)
    rt = c.signature.runtime_args(c.sigs, c.runtime_index, c.signature.bind(args, meta))
    return parse_function(c.ir_text), rt


RNG = np.random.default_rng(3)


def _stream(n=1000, per=256, block=64, stages=2):
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    fn, rt = _scheduled(stream_add_kernel, (x, y, out, n, per),
                        {"BLOCK": block, "NUM_STAGES": stages})
    return fn, rt, out, x + y, (-(-n // per),)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_streaming_add_through_its_buffers(stages):
    fn, rt, out, want, grid = _stream(stages=stages)
    run_buffered(fn, grid, rt)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("spec", [None, ASCEND_910_LIKE], ids=["910b", "910"])
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_matmul_through_its_buffers(stages, spec):
    a = RNG.random((64, 48)).astype(np.float16)
    b = RNG.random((48, 40)).astype(np.float16)
    c = np.zeros((64, 40), np.float32)
    fn, rt = _scheduled(matmul_kernel, (a, b, c, 64, 40, 48, 48, 1, 40, 1, 40, 1),
                        {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "NUM_STAGES": stages},
                        spec)
    run_buffered(fn, (2, 2), rt)
    np.testing.assert_allclose(c, ref.matmul_f32(a, b), rtol=1e-5, atol=1e-5)


def test_vector_kernels_through_their_buffers():
    x = RNG.standard_normal(3000).astype(np.float16)
    y = RNG.standard_normal(3000).astype(np.float16)
    out = np.zeros_like(x)
    fn, rt = _scheduled(add_kernel, (x, y, out, 3000), {"BLOCK": 1024})
    run_buffered(fn, (3,), rt)
    np.testing.assert_array_equal(out, x + y)

    s = RNG.standard_normal((5, 100)).astype(np.float32)
    out = np.zeros_like(s)
    fn, rt = _scheduled(softmax_kernel, (s, out, 100, 100, 100), {"BLOCK": 128})
    run_buffered(fn, (5,), rt)
    np.testing.assert_allclose(out, ref.softmax(s), rtol=1e-5, atol=1e-7)

    w = RNG.standard_normal(100).astype(np.float32)
    bias = RNG.standard_normal(100).astype(np.float32)
    out = np.zeros_like(s)
    fn, rt = _scheduled(layernorm_kernel, (s, w, bias, out, 100, 1e-5), {"BLOCK": 128})
    run_buffered(fn, (5,), rt)
    np.testing.assert_allclose(out, ref.layernorm(s, w, bias), rtol=1e-4, atol=1e-5)
    out = np.zeros_like(s)
    fn, rt = _scheduled(rmsnorm_kernel, (s, w, out, 100, 1e-6), {"BLOCK": 128})
    run_buffered(fn, (5,), rt)
    np.testing.assert_allclose(out, ref.rmsnorm(s, w), rtol=1e-4, atol=1e-5)


def _ops(fn, kind):
    return [op for op in fn.walk() if op.kind.value == kind]


def test_a_missing_wait_reads_poison():
    fn, rt, out, want, grid = _stream(stages=2)
    add = _ops(fn, "npu.add")
    tile_add = next(op for op in add if "wait_flags" in op.attrs)
    assert any(str(f).startswith("MTE2_V") for f in tile_add.attrs["wait_flags"])
    tile_add.attrs["wait_flags"] = [f for f in tile_add.attrs["wait_flags"]
                                    if not str(f).startswith("MTE2_V")]
    run_buffered(fn, grid, list(rt), on_wait=False)     # copies land at once: still right
    np.testing.assert_array_equal(out, want)
    out[:] = 0
    run_buffered(fn, grid, rt)                         # land at the wait: there is none
    assert np.isnan(out).any()


def test_overlapping_live_buffers_give_wrong_numbers():
    fn, rt, out, want, grid = _stream(stages=2)
    x_load, y_load = _ops(fn, "npu.load")[:2]
    assert x_load.attrs["scope"] == y_load.attrs["scope"] == "UB"
    assert list(x_load.attrs["offset"]) != list(y_load.attrs["offset"])
    y_load.attrs["offset"] = list(x_load.attrs["offset"])   # the allocator's mistake
    run_buffered(fn, grid, rt)
    assert not np.array_equal(out, want)
    np.testing.assert_array_equal(out, rt[1] + rt[1])   # y landed on x's slot: y + y


def test_simulate_debug_switches_apply_to_the_numbers():
    """kernel.simulate with NaN-poisoned buffers and copies landing at their wait runs the
    buffered execution: still right, and the report is the plain run's."""
    from npujit.sim import DebugOptions
    a = RNG.random((64, 48)).astype(np.float16)
    b = RNG.random((48, 40)).astype(np.float16)
    meta = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "NUM_STAGES": 2}
    cycles = []
    for debug in (None, DebugOptions(uninitialized="nan", dma_execution_mode="on_wait")):
        c = np.zeros((64, 40), np.float32)
        r = matmul_kernel.simulate(a, b, c, 64, 40, 48, 48, 1, 40, 1, 40, 1, grid=(2, 2),
                                   debug=debug, **meta)
        np.testing.assert_allclose(c, ref.matmul_f32(a, b), rtol=1e-5, atol=1e-5)
        cycles.append(r.cycles)
    assert cycles[0] == cycles[1] > 0
