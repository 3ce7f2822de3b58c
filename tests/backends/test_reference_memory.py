"""The reference interpreter's global-memory ops against expectations written from
docs/semantics.md: masked and out-of-bounds loads, stores, atomics, block pointers."""
from __future__ import annotations

import numpy as np
import pytest
from reference_support import F16, F32, bits_equal, new_kernel, offsets_of, run

from npujit.backends.reference import OutOfBoundsError
from npujit.ir import Kind, Loc
from npujit.ir import types as T

def masked_load_kernel(with_other: bool):
    fn, b = new_kernel("masked_load", [F32, np.int64, np.bool_, F32, F32])
    x, offs_p, mask_p, other_p, out = fn.args
    lanes = offsets_of(b, (4,))
    offs = b.op(Kind.LOAD, [offs_p, lanes])
    mask = b.op(Kind.LOAD, [mask_p, lanes])
    operands = [x, offs, mask] + ([b.op(Kind.LOAD, [other_p, lanes])] if with_other else [])
    b.create(Kind.STORE, [out, lanes, b.op(Kind.LOAD, operands)])
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("with_other", [True, False])
def test_masked_off_lanes_never_read_memory(with_other):
    mem = np.array([10, 11, 12, 13], F32)
    # Masked-off offsets are far out of range (would raise) or -1 (numpy would wrap to 13).
    offs = np.array([2, 10 ** 12, -1, 0], np.int64)
    mask = np.array([True, False, False, True])
    other = np.array([-1, -2, -3, -4], F32)
    out = np.zeros(4, F32)
    run(masked_load_kernel(with_other), (1,), [mem, offs, mask, other, out])
    fill = [-2, -3] if with_other else [0, 0]
    bits_equal(out, np.array([12, fill[0], fill[1], 10], F32))


def test_unmasked_out_of_bounds_names_kernel_line_program_and_offset():
    fn, b = new_kernel("oob_kernel", [F32, F32])
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    offs = b.op(Kind.ADD, [offsets_of(b, (4,)), b.op(Kind.SPLAT, [b.op(
        Kind.MUL, [pid, b.constant(4, T.int32)])], {"shape": (4,)})])
    x = b.op(Kind.LOAD, [fn.args[0], offs], loc=Loc("kern.py", 77))
    b.create(Kind.STORE, [fn.args[1], offs, x])
    b.create(Kind.RETURN, [])
    with pytest.raises(OutOfBoundsError) as err:
        run(fn, (3,), [np.zeros(10, F32), np.zeros(12, F32)])   # program 2 reads 8..11
    msg = str(err.value)
    for part in ("oob_kernel", "kern.py:77", "(2, 0, 0)", "offset 10", "'p0'"):
        assert part in msg, (part, msg)
    assert isinstance(err.value, IndexError)


def test_negative_offset_is_out_of_bounds():
    fn, b = new_kernel("neg", [np.int32])
    offs = b.op(Kind.SUB, [offsets_of(b, (2,)), b.op(Kind.SPLAT, [b.constant(1, T.int32)],
                                                     {"shape": (2,)})])
    b.create(Kind.STORE, [fn.args[0], offs, b.op(Kind.LOAD, [fn.args[0], offsets_of(b, (2,))])])
    b.create(Kind.RETURN, [])
    with pytest.raises(OutOfBoundsError, match="offset -1"):
        run(fn, (1,), [np.zeros(4, np.int32)])


def store_kernel(kind=Kind.STORE, dt=np.int32):
    """p0[offs] = value where mask (or atomic_add, storing the old values to p4)."""
    fn, b = new_kernel(kind.name.lower(), [dt, np.int64, dt, np.bool_, dt])
    mem, offs_p, val_p, mask_p, old_p = fn.args
    lanes = offsets_of(b, (4,))
    operands = [mem, b.op(Kind.LOAD, [offs_p, lanes]), b.op(Kind.LOAD, [val_p, lanes]),
                b.op(Kind.LOAD, [mask_p, lanes])]
    op = b.create(kind, operands)
    if kind is Kind.ATOMIC_RMW:
        b.create(Kind.STORE, [old_p, lanes, op.result])
    b.create(Kind.RETURN, [])
    return fn


def test_store_with_mask_and_duplicates_last_lane_wins():
    mem = np.zeros(4, np.int32)
    offs = np.array([1, 10 ** 9, 1, 3], np.int64)
    vals = np.array([5, 6, 7, 8], np.int32)
    mask = np.array([True, False, True, True])
    run(store_kernel(), (1,), [mem, offs, vals, mask, np.zeros(4, np.int32)])
    bits_equal(mem, np.array([0, 7, 0, 8], np.int32))


def test_atomic_add_returns_old_values_lane_by_lane():
    mem = np.array([100, 200, 300], np.int32)
    offs = np.array([0, 0, -7, 2], np.int64)
    vals = np.array([1, 2, 3, 4], np.int32)
    mask = np.array([True, True, False, True])
    old = np.full(4, -1, np.int32)
    run(store_kernel(Kind.ATOMIC_RMW), (1,), [mem, offs, vals, mask, old])
    bits_equal(old, np.array([100, 101, 0, 300], np.int32))    # masked-off lane: 0
    bits_equal(mem, np.array([103, 200, 304], np.int32))


def test_atomic_add_rounds_each_f16_add_and_accumulates_across_programs():
    mem = np.array([2048, 0], F16)
    offs = np.array([0, 0, 1, 1], np.int64)
    vals = np.array([1, 1, 0.5, 0.25], F16)
    old = np.zeros(4, F16)
    run(store_kernel(Kind.ATOMIC_RMW, F16), (3,), [mem, offs, vals, np.ones(4, bool), old])
    # 2048 + 1 is a tie in f16 and rounds back to 2048 every time; 0.75 per program is exact
    bits_equal(mem, np.array([2048, 2.25], F16))
    bits_equal(old, np.array([2048, 2048, 1.5, 2.0], F16))    # the last program's view


def block_kernel(block_shape, boundary_check, padding, dt=F32, store=False):
    """Copy a block of a (shape, strides) matrix at (off0, off1) to/from a dense tile."""
    fn, b = new_kernel("block", [dt, dt], [T.scalar(T.int32)] * 6)
    src, dst = fn.args[:2]
    dims = fn.args[2:]                       # rows, cols, stride0, stride1, off0, off1
    attrs = {"block_shape": block_shape, "boundary_check": boundary_check, "padding": padding}
    tile_offs = offsets_of(b, block_shape)
    if store:
        tile = b.op(Kind.LOAD, [src, tile_offs])
        b.create(Kind.BLOCK_STORE, [dst, *dims, tile], attrs)
    else:
        tile = b.op(Kind.BLOCK_LOAD, [src, *dims], attrs)
        b.create(Kind.STORE, [dst, tile_offs, tile])
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("padding, pad", [("zero", 0.0), ("nan", np.nan)])
def test_block_load_pads_outside_checked_bounds(padding, pad):
    m = np.arange(12, dtype=F32)                     # a 3x4 row-major matrix
    out = np.zeros(4, F32)
    run(block_kernel((2, 2), (0, 1), padding), (1,), [m, out, 3, 4, 4, 1, 2, 3])
    bits_equal(out, np.array([11, pad, pad, pad], F32))     # rows 2..3, cols 3..4
    run(block_kernel((2, 2), (0, 1), padding), (1,), [m, out, 3, 4, 4, 1, -1, 0])
    bits_equal(out, np.array([pad, pad, 0, 1], F32))        # row -1 is padding, not read
    col = np.zeros(4, F32)                                   # transposed view via strides
    run(block_kernel((2, 2), (), padding), (1,), [m, col, 4, 3, 1, 4, 0, 1])
    bits_equal(col, np.array([4, 8, 5, 9], F32))


def test_block_load_unchecked_axis_must_be_in_bounds():
    m = np.arange(12, dtype=F32)
    with pytest.raises(OutOfBoundsError, match="axis 1"):
        run(block_kernel((2, 2), (0,), "zero"), (1,), [m, np.zeros(4, F32), 3, 4, 4, 1, 0, 3])


def test_block_inside_its_shape_but_beyond_memory_is_out_of_bounds():
    m = np.arange(6, dtype=F32)                    # the kernel claims a 3x4 matrix
    with pytest.raises(OutOfBoundsError, match="offset 9"):
        run(block_kernel((2, 2), (0, 1), "zero"), (1,), [m, np.zeros(4, F32), 3, 4, 4, 1, 2, 1])


def test_block_store_skips_elements_outside_checked_bounds():
    m = np.zeros(12, F32)
    tile = np.array([1, 2, 3, 4], F32)
    run(block_kernel((2, 2), (0, 1), "zero", store=True), (1,), [tile, m, 3, 4, 4, 1, 2, 3])
    want = np.zeros(12, F32)
    want[11] = 1
    bits_equal(m, want)


