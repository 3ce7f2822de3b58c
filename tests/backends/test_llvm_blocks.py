"""Block loads and stores (``make_block_ptr``) on the llvm backend: the part of the block
inside its tensor is copied with no per-element test and the rest padded
(backends/llvm/lower_memory.py ``_valid_box``); the GM check looks at that part's
corners.  Oracle: the reference backend on the same kernel and inputs.
"""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.errors import OutOfBoundsError


@npu_kernel
def _tile_copy(x_ptr, out_ptr, M, N, sm, sn, r0, c0, BM: nl.constexpr, BN: nl.constexpr,
               CHECK: nl.constexpr, PAD: nl.constexpr):
    src = nl.make_block_ptr(x_ptr, shape=(M, N), strides=(sm, sn), offsets=(r0, c0),
                            block_shape=(BM, BN))
    if CHECK == 2:
        t = nl.load(src, boundary_check=(0, 1), padding_option=PAD)
    elif CHECK == 1:
        t = nl.load(src, boundary_check=(1,), padding_option=PAD)
    else:
        t = nl.load(src)
    dst = nl.make_block_ptr(out_ptr, shape=(M, N), strides=(N, 1), offsets=(r0, c0),
                            block_shape=(BM, BN))
    nl.store(dst, t + 1.0, boundary_check=(0, 1))
    whole = nl.make_block_ptr(out_ptr, shape=(BM, BN), strides=(BN, 1),
                              offsets=(0, 0), block_shape=(BM, BN))
    nl.store(nl.advance(whole, (0, 0)), t * 0.0 + t, boundary_check=())


def _both(m, n, strides, r0, c0, check, pad, transposed=False):
    rng = np.random.default_rng(m * 31 + n)
    x = rng.standard_normal(m * n).astype(np.float32)
    outs = {}
    for backend in ("reference", "llvm"):
        out = np.full(max(m * n, 4 * 8), -7.0, np.float32)
        _tile_copy.with_options(backend=backend)[(1,)](
            x, out, m, n, *strides, r0, c0, BM=4, BN=8, CHECK=check, PAD=pad)
        outs[backend] = out
    return outs


@pytest.mark.parametrize("m,n,r0,c0", [(4, 8, 0, 0), (6, 10, 2, 2), (3, 5, 0, 0),
                                       (6, 10, -2, -3), (6, 10, 5, 9), (6, 10, 7, 0),
                                       (6, 10, -4, 0)])
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_a_checked_block_pads_outside_and_copies_inside(m, n, r0, c0, pad):
    outs = _both(m, n, (n, 1), r0, c0, 2, pad)
    np.testing.assert_array_equal(outs["llvm"], outs["reference"])


def test_a_transposed_view_and_one_checked_axis():
    """Strides (1, M) read the array as its transpose; only the column axis checked, so
    the rows must stay inside (they do)."""
    m, n = 8, 6
    outs = _both(m, n, (1, m), 2, 3, 1, "zero")
    np.testing.assert_array_equal(outs["llvm"], outs["reference"])


def test_an_unchecked_block_past_the_end_is_an_error_naming_the_argument():
    x = np.zeros(4 * 8, np.float32)
    out = np.zeros(4 * 8, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"block addresses span \[8, 39\], outside "
                                               r"\[0, 32\) of argument 'x_ptr'"):
        _tile_copy.with_options(backend="llvm")[(1,)](
            x, out, 4, 8, 8, 1, 1, 0, BM=4, BN=8, CHECK=0, PAD="zero")
