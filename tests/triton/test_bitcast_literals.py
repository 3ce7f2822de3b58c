"""``x.to(dtype, bitcast=True)`` / ``tl.cast(..., bitcast=True)`` read the same bits as
another dtype (numpy's ``view`` is the oracle, specials included), on the reference tier
and numba; Python numbers in a kernel have Triton's constexpr ``.dtype`` and ``.to()``."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.errors import CompilationError

N = 8


@triton.jit
def _bitcasts(f_ptr, i_ptr, h_ptr, b_ptr, of_ptr, oi_ptr, oh_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    f = tl.load(f_ptr + o)
    h = tl.load(h_ptr + o)
    tl.store(oi_ptr + o, f.to(tl.int32, bitcast=True))
    tl.store(of_ptr + o, tl.cast(tl.load(i_ptr + o), tl.float32, bitcast=True))
    tl.store(oh_ptr + o, h.to(tl.int16, bitcast=True))
    tl.store(oh_ptr + N + o, tl.load(b_ptr + o).cast(tl.int16, bitcast=True))
    tl.store(h_ptr + o, (h.to(tl.int16, bitcast=True) + 1).to(tl.float16, bitcast=True))
    tl.store(b_ptr + o, h.to(tl.bfloat16, bitcast=True))


def test_bitcast_reads_the_same_bits(backend):
    f = np.array([1.0, -0.0, np.inf, np.nan, 1e-40, -3.5, 2.0**-126, 123.456], np.float32)
    i = f.view(np.int32)[::-1].copy()
    h = np.array([1.0, -0.0, np.inf, np.nan, 6e-8, -3.5, 65504, 0.1], np.float16)
    b = (h.astype(np.float32) * 3).astype(ml_dtypes.bfloat16)
    of, oi, oh = np.zeros(N, np.float32), np.zeros(N, np.int32), np.zeros(2 * N, np.int16)
    h2, b2 = h.copy(), b.copy()
    _bitcasts.with_options(backend=backend)[(1,)](f, i, h2, b2, of, oi, oh, N=N)
    np.testing.assert_array_equal(oi, f.view(np.int32))
    np.testing.assert_array_equal(of.view(np.int32), i)
    np.testing.assert_array_equal(oh[:N], h.view(np.int16))
    np.testing.assert_array_equal(oh[N:], b.view(np.int16))
    np.testing.assert_array_equal(h2.view(np.int16), h.view(np.int16) + 1)
    np.testing.assert_array_equal(b2.view(np.int16), h.view(np.int16))


@triton.jit
def _bad_bitcast(x_ptr, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), tl.load(x_ptr + tl.arange(0, N)).to(tl.int16, bitcast=True))


def test_bitcast_between_widths_is_refused_with_the_widths():
    with pytest.raises(CompilationError, match="bitcast from f32 to i16 needs two dtypes of one "
                                               "bit width.*32 and 16 bits"):
        _bad_bitcast.with_options(backend="reference")[(1,)](np.zeros(4, np.float32), N=4)


@triton.jit
def _literals(o_ptr, i_ptr, C: tl.constexpr):
    value = 1
    x = tl.full([4], value=value, dtype=value.dtype)               # i32, as Triton's
    tl.store(i_ptr + tl.arange(0, 4), x + (2).to(tl.int32) + C.to(tl.int32))
    tl.store(o_ptr, (3).to(tl.float32) / 2 + C.to(tl.float32))    # f32 division: 1.5
    tl.static_assert((2**40).dtype == tl.int64 and (1.5).dtype == tl.float32)
    tl.static_assert(True.dtype == tl.int1)


def test_python_numbers_have_constexpr_dtype_and_to():
    o, i = np.zeros(1, np.float32), np.zeros(4, np.int32)
    _literals.with_options(backend="reference")[(1,)](o, i, C=5)
    assert o[0] == 6.5
    np.testing.assert_array_equal(i, [8, 8, 8, 8])
