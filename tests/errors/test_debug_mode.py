"""Debug mode (``NPUJIT_DEBUG=1`` / ``debug=True``) on both tiers: out-of-bounds accesses,
``nl.device_assert`` and int32 index overflow raise one error type with one message that
names the kernel, the op's source line, the program id and the offset or lane."""
from __future__ import annotations

import re

import numpy as np
import pytest

import npujit.language as nl
from npujit import (DeviceAssertionError, IndexOverflowError, OutOfBoundsError,
                    npu_kernel)

BACKENDS = ["reference", "llvm", "numba"]
HERE = re.escape(__file__.replace("\\", "/"))


def _line(fn, text: str) -> int:
    """The file line of the first source line of ``fn`` containing ``text``."""
    import inspect
    lines, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    return first + next(i for i, t in enumerate(lines) if text in t)


@npu_kernel
def shifted_copy(x_ptr, out_ptr, n, LOAD_SHIFT: nl.constexpr, STORE_SHIFT: nl.constexpr,
                 BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    v = nl.load(x_ptr + offs + LOAD_SHIFT, mask=offs < n)
    nl.store(out_ptr + offs + STORE_SHIFT, v, mask=offs < n)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shifts,op,arg,pid,offset", [
    ((1, 0), "npu.load", "x_ptr", 1, 16), ((0, -1), "npu.store", "out_ptr", 0, -1)])
def test_out_of_bounds_access_names_kernel_line_program_offset(backend, shifts, op, arg,
                                                               pid, offset):
    k = shifted_copy.with_options(backend=backend, debug=True)
    x = np.arange(16, dtype=np.float32)
    line = _line(shifted_copy, "nl.load(x_ptr" if op == "npu.load" else "nl.store(out_ptr")
    with pytest.raises(OutOfBoundsError, match=(
            rf"kernel 'shifted_copy', {op} at {HERE}:{line}, program \({pid}, 0, 0\): "
            rf".*offset {offset}, outside \[0, 16\) of argument '{arg}'")):
        k[(2,)](x, np.zeros(16, np.float32), 16, LOAD_SHIFT=shifts[0],
                STORE_SHIFT=shifts[1], BLOCK=8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_masked_off_lanes_never_touch_memory_in_debug_mode(backend):
    k = shifted_copy.with_options(backend=backend, debug=True)
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    k[(4,)](x, out, 10, LOAD_SHIFT=0, STORE_SHIFT=0, BLOCK=8)     # lanes 10..31 are off the end and masked
    np.testing.assert_array_equal(out, x)


@npu_kernel
def block_rows(x_ptr, out_ptr, M, N, ROW0: nl.constexpr):
    b = nl.make_block_ptr(x_ptr, shape=(M, N), strides=(N, 1), offsets=(ROW0, 0),
                          block_shape=(4, 4))
    v = nl.load(b, boundary_check=(1,))
    nl.store(out_ptr + nl.arange(0, 4)[:, None] * 4 + nl.arange(0, 4)[None, :], v)


@pytest.mark.parametrize("backend", BACKENDS)
def test_block_coordinate_outside_an_unchecked_axis(backend):
    k = block_rows.with_options(backend=backend, debug=True)
    line = _line(block_rows, "nl.load(b")
    with pytest.raises(OutOfBoundsError, match=(
            rf"kernel 'block_rows', npu.block_load at {HERE}:{line}, program \(0, 0, 0\): "
            r"block coordinate 4 on axis 0 is outside the declared shape \[0, 4\)")):
        k[(1,)](np.zeros((4, 4), np.float32), np.zeros(16, np.float32), 4, 4, ROW0=1)


@npu_kernel
def checked_scale(x_ptr, n, LIMIT: nl.constexpr, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    v = nl.load(x_ptr + offs, mask=offs < n, other=0.0)
    nl.device_assert(v < LIMIT, "value over the limit")
    rows = nl.reshape(v, (2, BLOCK // 2))
    nl.device_assert(rows >= 0.0, "negative value")
    nl.store(x_ptr + offs, v * 2.0, mask=offs < n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_device_assert_fires_in_debug_mode_only(backend):
    x = np.arange(16, dtype=np.float32)
    checked_scale.with_options(backend=backend)[(2,)](x, 16, LIMIT=10.0, BLOCK=8)
    np.testing.assert_array_equal(x, 2 * np.arange(16, dtype=np.float32))   # no check
    x = np.arange(16, dtype=np.float32)
    k = checked_scale.with_options(backend=backend, debug=True)
    line = _line(checked_scale, "v < LIMIT")
    with pytest.raises(DeviceAssertionError, match=(
            rf"kernel 'checked_scale', device_assert at {HERE}:{line}, program \(1, 0, 0\): "
            r"lane \(2,\): value over the limit")):
        k[(2,)](x, 16, LIMIT=10.0, BLOCK=8)
    x = np.arange(16, dtype=np.float32)
    x[13] = -1.0                              # program 1, row 1, column 1
    with pytest.raises(DeviceAssertionError, match=r"program \(1, 0, 0\): lane \(1, 1\): "
                                                   r"negative value"):
        k[(2,)](x, 16, LIMIT=100.0, BLOCK=8)


@npu_kernel
def far_rows(x_ptr, n, ROW: nl.constexpr, WIDE: nl.constexpr):
    pid = nl.program_id(0)
    if WIDE:
        pid = pid.to(nl.int64)
    offs = pid * ROW * 4 + nl.arange(0, 4)
    nl.store(x_ptr + offs, nl.full((4,), 1.0, nl.float32), mask=offs < n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_int32_index_overflow_is_caught_and_int64_fixes_it(backend):
    k = far_rows.with_options(backend=backend, debug=True)
    x = np.zeros(8, np.float32)
    line = _line(far_rows, "offs = pid * ROW")
    # program 1: 1 * 2**30 * 4 wraps to 0 in int32 and would overwrite x[0:4]
    with pytest.raises(IndexOverflowError, match=(
            rf"kernel 'far_rows', index arithmetic at {HERE}:{line}, program \(1, 0, 0\): "
            r".*overflowed.*cast an operand to nl.int64")):
        k[(2,)](x, 8, ROW=1 << 30, WIDE=False)
    x[:] = 0
    k[(2,)](x, 8, ROW=1 << 30, WIDE=True)     # int64: program 1 lies past the end, masked
    np.testing.assert_array_equal(x, [1, 1, 1, 1, 0, 0, 0, 0])
