"""Bounds checks respect masks exactly as the reference interpreter does, for every access
form (scalar, tile, block pointer, gather, atomic), on both backends, in the default mode
(numba: a range check of the active lanes) and in debug mode (every element):

* a masked-off lane (or a block element outside a checked axis) never counts, whatever
  its offset: the launch succeeds and gives numpy's answer;
* an active lane outside its argument raises ``OutOfBoundsError`` naming the argument.

Each kernel takes the bound ``n`` at run time, so one compile serves both launches.
"""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import OutOfBoundsError, npu_kernel

B = 8


@npu_kernel
def scalar_load(x_ptr, out_ptr, n):
    pid = nl.program_id(0)
    v = nl.load(x_ptr + pid, mask=pid < n, other=0)
    nl.store(out_ptr + pid, v)


@npu_kernel
def tile_copy(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=offs < n, other=0.0), mask=offs < n)


@npu_kernel
def block_copy(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    src = nl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(pid * BLOCK,),
                            block_shape=(BLOCK,))
    nl.store(out_ptr + pid * BLOCK + nl.arange(0, BLOCK), nl.load(src, boundary_check=(0,)))


@npu_kernel
def gather(x_ptr, idx_ptr, out_ptr, n, BLOCK: nl.constexpr):
    lanes = nl.arange(0, BLOCK)
    idx = nl.load(idx_ptr + lanes)
    nl.store(out_ptr + lanes, nl.load(x_ptr + idx, mask=idx < n, other=-1.0))


@npu_kernel
def atomic_count(out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.atomic_add(out_ptr + offs, nl.full((BLOCK,), 1.0, nl.float32), mask=offs < n)


def _scalar(k, n_active):
    x = np.arange(1, 6, dtype=np.float32)                 # 5 elements, grid of 8
    out = np.full(8, 7.0, np.float32)
    k[(8,)](x, out, n_active)
    return out, np.concatenate([x, np.zeros(3, np.float32)])


def _tile(k, n_active):
    x = np.arange(1, 13, dtype=np.float32)                # 12 elements, 2 tiles of 8
    out = np.zeros(16, np.float32)
    k[(2,)](x, out, n_active, BLOCK=B)
    return out, np.concatenate([x, np.zeros(4, np.float32)])


def _block(k, n_active):
    x = np.arange(1, 13, dtype=np.float32)
    out = np.full(16, 7.0, np.float32)
    k[(2,)](x, out, n_active, BLOCK=B)
    return out, np.concatenate([x, np.zeros(4, np.float32)])     # padding is zero


def _gather(k, n_active):
    x = np.arange(1, 13, dtype=np.float32)
    idx = np.array([3, 0, 11, 1000, -5 + 2**31, 2, 12, 7], np.int32)   # 3 lanes off the end
    out = np.zeros(B, np.float32)
    k[(1,)](x, idx, out, n_active, BLOCK=B)
    want = np.where(idx < 12, x[np.clip(idx, 0, 11)], -1.0).astype(np.float32)
    return out, want


def _atomic(k, n_active):
    out = np.zeros(12, np.float32)
    k[(2,)](out, n_active, BLOCK=B)
    return out, np.ones(12, np.float32)


FORMS = {
    "scalar": (scalar_load, _scalar, "x_ptr", 5),
    "tile": (tile_copy, _tile, "x_ptr", 12),
    "block-pointer": (block_copy, _block, "x_ptr", 12),
    "gather": (gather, _gather, "x_ptr", 12),
    "atomic": (atomic_count, _atomic, "out_ptr", 12),
}


@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
@pytest.mark.parametrize("backend", ["reference", "numba"])
@pytest.mark.parametrize("form", list(FORMS))
def test_masked_off_lanes_are_never_checked_and_active_ones_are(form, backend, debug):
    kernel, launch, arg, size = FORMS[form]
    k = kernel.with_options(backend=backend, debug=debug)
    out, want = launch(k, size)                     # the mask keeps every lane inside
    np.testing.assert_array_equal(out, want)
    with pytest.raises(OutOfBoundsError, match=rf"outside \[0, {size}\) of argument '{arg}'"):
        launch(k, 10**6)                            # the mask lets lanes past the end
