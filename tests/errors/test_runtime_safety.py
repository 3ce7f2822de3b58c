"""The bad-input table for memory safety and integer widths (issue 11, items 4-8): each
reproducer, on both backends in their default mode, raises an error that names the
source line or the argument and says what to do -- none silent, none a crash.

A row is ``(id, launch(backend), error type, pattern)``; the pattern is searched in the
message.  Kernels take their bad values at run time where they can, so the table costs
one compile per kernel and backend.
"""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import npujit.language as nl
from npujit import IndexOverflowError, LaunchError, OutOfBoundsError, npu_kernel
from npujit.kernels.elementwise import add_kernel

HERE = re.escape(__file__.replace("\\", "/"))


def _line(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, t in enumerate(lines) if text in t)


@npu_kernel
def fill(out_ptr, shift, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK) + shift
    nl.store(out_ptr + offs, nl.full((BLOCK,), 1.0, nl.float32))


@npu_kernel
def far_programs(out_ptr, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * (1 << 30) + nl.arange(0, BLOCK)    # pid 1: far past the end
    nl.store(out_ptr + offs, nl.full((BLOCK,), 1.0, nl.float32))


@npu_kernel
def aliased_programs(out_ptr, ROW, BLOCK: nl.constexpr):
    base = nl.program_id(0) * ROW * 4       # int32: 2**30 * 4 wraps to 0, inside out_ptr
    nl.store(out_ptr + base + nl.arange(0, BLOCK), nl.full((BLOCK,), 1.0, nl.float32))


@npu_kernel
def copy_rows(x_ptr, out_ptr, stride_r, stride_c, R: nl.constexpr, C: nl.constexpr):
    r = nl.arange(0, R)[:, None]
    c = nl.arange(0, C)[None, :]
    nl.store(out_ptr + r * C + c, nl.load(x_ptr + r * stride_r + c * stride_c))


@npu_kernel
def gather(x_ptr, idx_ptr, out_ptr, BLOCK: nl.constexpr):
    lanes = nl.arange(0, BLOCK)
    nl.store(out_ptr + lanes, nl.load(x_ptr + nl.load(idx_ptr + lanes)))


@npu_kernel
def block_tile(x_ptr, out_ptr, rows, cols, BLOCK: nl.constexpr):
    src = nl.make_block_ptr(x_ptr, shape=(rows, cols), strides=(cols, 1), offsets=(0, 0),
                            block_shape=(BLOCK, BLOCK))
    tile = nl.load(src, boundary_check=(0, 1))
    lanes = nl.arange(0, BLOCK)
    nl.store(out_ptr + lanes[:, None] * BLOCK + lanes[None, :], tile)


def _oob(kernel, text: str, arg: str, size: int) -> str:
    """An out-of-bounds message: kernel, op line, the argument and its extent, a fix."""
    return (rf"kernel '{kernel.name}', npu\.\w+ at {HERE}:{_line(kernel, text)}, "
            rf"program .*outside \[0, {size}\) of argument '{arg}'; mask the")


def store_past_the_end(backend):
    parent = np.zeros(64, np.float32)           # `out` is a view: 24 floats follow it
    try:
        fill.with_options(backend=backend)[(2,)](parent[:40], 0, BLOCK=32)
    finally:
        assert not parent[40:].any(), "wrote past the end of the argument"


def store_far_away(backend):
    fill.with_options(backend=backend)[(1,)](np.zeros(40, np.float32), 10**9, BLOCK=32)


def store_at_a_negative_offset(backend):
    fill.with_options(backend=backend)[(1,)](np.zeros(40, np.float32), -5, BLOCK=32)


def int32_offsets_past_the_end(backend):
    far_programs.with_options(backend=backend)[(2,)](np.zeros(64, np.float32), BLOCK=16)


def int32_offsets_wrap_back_inside(backend):
    out = np.zeros(64, np.float32)
    aliased_programs.with_options(backend=backend)[(2,)](out, 1 << 30, BLOCK=16)


def numpy_byte_strides(backend):
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    copy_rows.with_options(backend=backend)[(1,)](x, np.zeros(16, np.float32),
                                                  x.strides[0], x.strides[1], R=4, C=4)


def gathered_index_out_of_range(backend):
    idx = np.array([0, 3, 99, 1], np.int32)
    gather.with_options(backend=backend)[(1,)](np.zeros(8, np.float32), idx,
                                               np.zeros(4, np.float32), BLOCK=4)


def block_shape_larger_than_the_array(backend):
    block_tile.with_options(backend=backend)[(1,)](np.zeros(12, np.float32),
                                                   np.zeros(16, np.float32), 4, 4, BLOCK=4)


def int8_array_past_int32_offsets(backend):
    """The bundled add on an int8 array of 2**31 + 8 elements, faked without memory: a
    zero-stride view.  The launch check runs before any program, so no element is read."""
    k = add_kernel.with_options(backend=backend)
    small = np.zeros(8, np.int8)
    # The compiled specialisation, fed the fake straight through its backend's run: the
    # launch layer would (rightly) refuse a zero-stride view before the backend saw it.
    c = k.compile(small, small, small, 8, BLOCK=8)
    big = np.lib.stride_tricks.as_strided(small, shape=(2**31 + 8,), strides=(0,))
    c.launch((1, 1, 1), [big, small, small, 8])


def int_argument_wider_than_64_bits(backend):
    fill.with_options(backend=backend)[(1,)](np.zeros(40, np.float32), 2**64, BLOCK=32)


ADD_LINE = _line(add_kernel, "x = nl.load(x_ptr")

TABLE = [
    ("store past the end of a view (item 4)", store_past_the_end, OutOfBoundsError,
     _oob(fill, "nl.store(", "out_ptr", 40)),
    ("store 10**9 elements past the end (item 4)", store_far_away, OutOfBoundsError,
     _oob(fill, "nl.store(", "out_ptr", 40)),
    ("negative offset (item 4)", store_at_a_negative_offset, OutOfBoundsError,
     _oob(fill, "nl.store(", "out_ptr", 40)),
    ("pid * 2**30 past the end (item 4)", int32_offsets_past_the_end, OutOfBoundsError,
     _oob(far_programs, "nl.store(", "out_ptr", 64)),
    ("pid * 2**30 * 4 wraps int32 back to 0 (item 4)", int32_offsets_wrap_back_inside,
     IndexOverflowError,
     rf"kernel 'aliased_programs', index arithmetic at {HERE}:"
     rf"{_line(aliased_programs, 'base = ')}, program \(1, 0, 0\): int32 index arithmetic "
     r"1073741824 \* 4 = 4294967296 overflowed \(it wraps to 0,.*cast an operand to "
     r"nl.int64"),
    ("numpy byte strides as element strides (item 4)", numpy_byte_strides, OutOfBoundsError,
     _oob(copy_rows, "nl.store(", "x_ptr", 16)),
    ("gathered index out of range (item 4)", gathered_index_out_of_range, OutOfBoundsError,
     _oob(gather, "nl.store(", "x_ptr", 8)),
    ("block shape larger than the array (item 4)", block_shape_larger_than_the_array,
     OutOfBoundsError, _oob(block_tile, "nl.load(src", "x_ptr", 12)),
    ("add on an int8 array of 2**31 + 8 elements (item 4)", int8_array_past_int32_offsets,
     LaunchError, rf"argument 'x_ptr' has 2147483656 elements, but kernel 'add_kernel' "
                  rf"addresses it with int32 offsets at .*elementwise.py:{ADD_LINE}, .*"
                  r"compute the offsets in int64"),
    ("int argument wider than 64 bits (item 7)", int_argument_wider_than_64_bits,
     LaunchError, r"argument 'shift': integer 18446744073709551616 does not fit in 64 bits"),
]


@pytest.mark.parametrize("backend", ["reference", "llvm", "numba"])
@pytest.mark.parametrize("launch,error,pattern", [pytest.param(*row[1:], id=row[0])
                                                  for row in TABLE])
def test_bad_input_raises_a_clear_error(launch, error, pattern, backend):
    with pytest.raises(error) as e:
        launch(backend)
    assert re.search(pattern, str(e.value)), str(e.value)


def test_the_numba_range_check_points_at_the_debug_mode():
    with pytest.raises(OutOfBoundsError, match=r"offsets span \[40, 71\], outside \[0, 40\) "
                                               r".*rerun with NPUJIT_DEBUG=1"):
        fill.with_options(backend="numba")[(1,)](np.zeros(40, np.float32), 40, BLOCK=32)


def test_turning_the_range_check_off_skips_it():
    # With the check off an in-bounds launch still runs; the out-of-bounds one is not
    # launched here (it would write outside the argument: that is what "off" means).
    out = np.zeros(64, np.float32)
    fill.with_options(backend="numba", bounds_check=False)[(2,)](out, 0, BLOCK=32)
    np.testing.assert_array_equal(out, np.ones(64, np.float32))
    assert "raise OutOfBoundsError" not in fill.with_options(
        backend="numba", bounds_check=False).inspect(out, 0, BLOCK=32)["backend"]


@npu_kernel
def strided_rows(x_ptr, out_ptr, n_rows, ROW, BLOCK: nl.constexpr):
    lanes = nl.arange(0, BLOCK)
    for r in nl.range(0, n_rows):
        start = r * ROW * 4                   # a loop counter times a stride: scalar int32
        nl.store(out_ptr + r * BLOCK + lanes, nl.load(x_ptr + start + lanes))


@pytest.mark.parametrize("backend", ["reference", "llvm", "numba"])
def test_scalar_index_wrap_is_caught_in_a_loop_without_changing_the_ir(backend):
    k = strided_rows.with_options(backend=backend)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    k[(1,)](x, out, 4, 4, BLOCK=8)           # rows 0, 16, 32, 48: no wrap, right values
    np.testing.assert_array_equal(out, np.concatenate([x[i:i + 8] for i in (0, 16, 32, 48)]))
    # ROW = 2**30: at r = 1 the start wraps to 0, inside x: silently row 0 again before
    with pytest.raises(IndexOverflowError, match=r"program \(0, 0, 0\): int32 index "
                                                 r"arithmetic 1073741824 \* 4 = 4294967296"):
        k[(1,)](x, out, 4, 2**30, BLOCK=8)
    # the check lives in the CPU tiers only: the IR (and so the schedule, the simulation
    # and the emitted Ascend C) has no assert in the default mode
    assert "npu.assert" not in k.ir(x, out, 4, 4, BLOCK=8)


def test_a_masked_access_runs_unchecked_when_its_span_is_inside():
    # The range check versions a masked affine access: one span test, then a loop with no
    # lane test (LLVM vectorises it) or, when the span leaves the argument, the checked loop.
    # The loads are read where the store uses them (backends/numba/deferred_load.py): each
    # keeps its span test, and its lanes are checked one by one only when the span leaves.
    x = np.zeros(64, np.float32)
    src = add_kernel.with_options(backend="numba").inspect(x, x, x, 64, BLOCK=32)["backend"]
    loops = re.findall(r"\n( *)if (inside\w*):\n((?:\1 .*\n)+)\1else:\n", src)
    assert len(loops) == 1, src                       # the store, reading both loads
    body = loops[0][2]
    assert "ck.out_of_bounds" not in body and "x_ptr[" in body and "y_ptr[" in body
    checks = re.findall(r"\n( *)if not (inside\w*):\n((?:\1 .*\n)+)", src)
    assert len(checks) == 2 and all("ck.out_of_bounds" in b for _, _, b in checks), src


@npu_kernel
def _scaled_programs(x_ptr, out_ptr, n, SCALE, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * SCALE + nl.arange(0, BLOCK)    # program id x an argument
    nl.store(out_ptr + offs, nl.load(x_ptr + nl.arange(0, BLOCK)), mask=offs < n)


@pytest.mark.parametrize("backend", ["reference", "llvm", "numba"])
def test_a_program_id_times_an_argument_that_wraps_names_the_first_wrapping_program(backend):
    # numba checks pid * SCALE once per launch (at the grid's corners), not per program;
    # when it wraps somewhere, the programs before the first wrapping one still run and
    # that one raises, as the per-program check and the reference interpreter do
    k = _scaled_programs.with_options(backend=backend)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(16, np.float32)
    k[(2,)](x, out, 16, 8, BLOCK=8)                      # no wrap: both programs store
    np.testing.assert_array_equal(out, np.concatenate([x, x]))
    out[:] = 0
    with pytest.raises(IndexOverflowError, match=r"program \(2, 0, 0\): int32 index "
                                                 r"arithmetic 2 \* 1073741824 = 2147483648 "
                                                 r"overflowed \(it wraps to -2147483648"):
        k[(4,)](x, out, 16, 2**30, BLOCK=8)              # program 1 is masked off
    np.testing.assert_array_equal(out[:8], x)            # program 0 ran before
