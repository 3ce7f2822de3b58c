"""The CPU twin enforces the device's rules: an emitted kernel edited by hand to break
one fails with an error that names what broke (the event, the queue, the memory)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.backends.ascendc import AscendCTwinKernel, TwinDeviceError
from npujit.kernels import matmul
from npujit.kernels.elementwise import add_kernel

from ascendc_support import TWIN, compiled


@npu_kernel
def copy_kernel(x_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs))


def _edited(kernel, old: str, new: str, regex: bool = False, **constexprs) -> AscendCTwinKernel:
    """The kernel's emitted source with one edit, built against the twin."""
    run = compiled(kernel, **constexprs).runnable()
    src = run.source
    edited = re.sub(old, new, src, count=1) if regex else src.replace(old, new, 1)
    assert edited != src, f"the emitted kernel has no {old!r}"
    return AscendCTwinKernel(run.fn, run.options, source=edited)


@pytest.fixture(scope="module")
def add_case():
    n = 1000
    x, y = np.ones(n, np.float32), np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    k = add_kernel.with_options(backend=TWIN, debug=False)
    k[(4,)](x, y, out, n, **ADD)
    assert (out == 2).all()
    return k, [x, y, out, n], ADD


MM = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, NUM_STAGES=2)
ADD = dict(BLOCK=256)


@pytest.fixture(scope="module")
def matmul_case():
    a = np.ones((32, 32), np.float16)
    b = np.ones((32, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    # a variant of its own (debug=False), so other tests' specialisations do not mix in
    k = matmul.matmul_kernel.with_options(backend=TWIN, debug=False)
    k[(1, 1)](a, b, c, 32, 32, 32, 32, 1, 32, 1, 32, 1, **MM)
    assert (c == 32).all()
    out = np.zeros(32 * 32, np.float32)
    return k, [a.ravel(), b.ravel(), out, 32, 32, 32, 32, 1, 32, 1, 32, 1], MM


def test_a_removed_wait_flag_fails_naming_the_event(matmul_case):
    k, args, cx = matmul_case
    broken = _edited(k, r"\n\s*AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>\([^;]*\);", "",
                     regex=True, **cx)
    with pytest.raises(TwinDeviceError, match=r"SetFlag<HardEvent::MTE2_MTE1>\(0\)"):
        broken((1, 1, 1), args)


def test_a_removed_set_flag_fails_naming_the_event(matmul_case):
    k, args, cx = matmul_case
    broken = _edited(k, "AscendC::SetFlag<AscendC::HardEvent::M_FIX>(0);", "", **cx)
    with pytest.raises(TwinDeviceError, match=r"WaitFlag<HardEvent::M_FIX>\(0\) with no matching SetFlag"):
        broken((1, 1, 1), args)


def test_a_transposing_load_data_of_floats_fails():
    # LoadData's ifTranspose transposes 16 x 16 fractals (2-byte types); a float B reaches
    # L0B through LoadDataWithTranspose, which the emitted code uses
    a, c = np.ones((32, 32), np.float32), np.zeros((32, 32), np.float32)
    k = matmul.matmul_kernel.with_options(backend=TWIN, debug=False)
    cx = dict(MM, BLOCK_K=32)
    k[(1, 1)](a, a, c, 32, 32, 32, 32, 1, 32, 1, 32, 1, **cx)
    assert (c == 32).all()
    broken = _edited(k, "AscendC::LoadData2DParams load;",
                     "AscendC::LoadData2DParams load;\nload.ifTranspose = true;", **cx)
    args = [a.ravel(), a.ravel(), c.ravel(), 32, 32, 32, 32, 1, 32, 1, 32, 1]
    with pytest.raises(TwinDeviceError, match="4-byte types transpose with LoadDataWithTranspose"):
        broken((1, 1, 1), args)


def test_a_buffer_over_the_ub_budget_fails(add_case):
    k, args, cx = add_case
    broken = _edited(k, r"pipe_\.InitBuffer\(xQue_, 1, \d+\)", "pipe_.InitBuffer(xQue_, 1, 200000)",
                     regex=True, **cx)
    with pytest.raises(TwinDeviceError, match=r"UB over budget: .*196608 B"):
        broken((4, 1, 1), args)


def test_a_missing_free_tensor_fails(add_case):
    k, args, cx = add_case
    broken = _edited(k, "xQue_.FreeTensor(x);", "", **cx)
    with pytest.raises(TwinDeviceError, match="missing FreeTensor"):
        broken((4, 1, 1), args)


def test_a_dequeue_from_an_empty_queue_fails(add_case):
    k, args, cx = add_case
    broken = _edited(k, "yQue_.EnQue(y);", "", **cx)
    with pytest.raises(TwinDeviceError, match="DeQue on an empty TQue"):
        broken((4, 1, 1), args)


def test_data_copy_granularity_and_gm_bounds():
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    k = copy_kernel.with_options(backend=TWIN)
    k[(2,)](x, out, BLOCK=64)
    np.testing.assert_array_equal(out, x)
    run = compiled(k, BLOCK=64).runnable()
    # 60 floats are 240 B: DataCopy moves whole 32 B blocks only
    broken = _edited(k, r"AscendC::DataCopy\((\w+), (\w+)\[([^\]]*)\], 64\);",
                     r"AscendC::DataCopy(\1, \2[\3], 60);", regex=True, BLOCK=64)
    with pytest.raises(TwinDeviceError, match="240 B, not a multiple of 32 B"):
        broken((2, 1, 1), [x, out])
    # a grid one program too large reads past the end of x: named, not a crash
    with pytest.raises(TwinDeviceError, match="outside every array argument"):
        run((3, 1, 1), [x, np.zeros(192, np.float32)])
