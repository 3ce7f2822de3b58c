"""``tl.extra.libdevice`` / ``tl.extra.cuda.libdevice`` (npujit/triton/libdevice.py) against
numpy, specials included: rounding modes exactly, log1p/expm1 near zero, pow's IEEE cases."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.triton.language.extra import libdevice
from npujit.triton.language.extra.cuda import libdevice as cuda_libdevice

UNARY = ["rint", "nearbyint", "round", "trunc", "log1p", "expm1", "tanh", "signbit", "isnan",
         "isinf", "log10", "exp10"]
X = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 1e-6, -1e-7, 3e-8,
              0.75, -7.25, 2.0 ** 23 + 1, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e30, 33.3,
              -0.7, 0.3, 9.5], np.float32)
BASE = np.array([2.0, -2.0, -2.0, -8.0, 0.0, -0.0, -0.0, 0.0, 1.0, -1.0, 0.5, 10.0, -np.inf,
                 np.inf, np.nan, 3.0, 1.7, -1.0], np.float32)
EXPO = np.array([3.0, 3.0, 2.0, 1 / 3, 3.0, 3.0, -3.0, -2.0, np.nan, np.inf, -1.5, 2.5, 0.5,
                 -1.0, 0.0, -2.0, 7.3, 0.5], np.float32)


@triton.jit
def _unary(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + 0 * N + i, libdevice.rint(x))
    tl.store(out_ptr + 1 * N + i, libdevice.nearbyint(x))
    tl.store(out_ptr + 2 * N + i, libdevice.round(x))
    tl.store(out_ptr + 3 * N + i, libdevice.trunc(x))
    tl.store(out_ptr + 4 * N + i, libdevice.log1p(x))
    tl.store(out_ptr + 5 * N + i, tl.extra.libdevice.expm1(x))
    tl.store(out_ptr + 6 * N + i, tl.extra.cuda.libdevice.tanh(x))
    tl.store(out_ptr + 7 * N + i, libdevice.signbit(x).to(tl.float32))
    tl.store(out_ptr + 8 * N + i, libdevice.isnan(x).to(tl.float32))
    tl.store(out_ptr + 9 * N + i, cuda_libdevice.isinf(x).to(tl.float32))
    tl.store(out_ptr + 10 * N + i, libdevice.log10(x))
    tl.store(out_ptr + 11 * N + i, libdevice.exp10(x * 0.01))


@triton.jit
def _binary(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    tl.store(out_ptr + i, libdevice.pow(x, y))
    tl.store(out_ptr + N + i, libdevice.copysign(y, x))


def _pad(a, n):
    return np.concatenate([a, np.ones(n - a.size, a.dtype)])


def test_unary_functions_match_numpy(backend):
    n = 32
    x = _pad(X, n)
    out = np.zeros(len(UNARY) * n, np.float32)
    _unary.with_options(backend=backend)[(1,)](x, out, N=n)
    got = dict(zip(UNARY, out.reshape(len(UNARY), n)))
    with np.errstate(all="ignore"):
        rint = np.rint(x)
        np.testing.assert_array_equal(got["rint"], rint)
        np.testing.assert_array_equal(got["nearbyint"], rint)
        np.testing.assert_array_equal(got["round"], np.where(np.isfinite(x), np.trunc(
            x + np.copysign(np.float32(0.5), x) * (np.abs(x - np.trunc(x)) >= 0.5)), x))
        np.testing.assert_array_equal(got["trunc"], np.trunc(x))
        np.testing.assert_allclose(got["log1p"], np.log1p(x.astype(np.float64)), rtol=4e-7)
        np.testing.assert_allclose(got["expm1"], np.expm1(x.astype(np.float64)), rtol=4e-7)
        np.testing.assert_allclose(got["tanh"], np.tanh(x.astype(np.float64)), rtol=4e-7,
                                   atol=1e-7)
        np.testing.assert_allclose(got["log10"], np.log10(x.astype(np.float64)), rtol=4e-7)
        np.testing.assert_allclose(got["exp10"], 10 ** (x.astype(np.float64) * np.float32(0.01)),
                                   rtol=2e-6)
    np.testing.assert_array_equal(got["signbit"], np.signbit(x))
    np.testing.assert_array_equal(got["isnan"], np.isnan(x))
    np.testing.assert_array_equal(got["isinf"], np.isinf(x))


def test_pow_and_copysign_match_numpy_with_the_special_cases(backend):
    n = 32
    x, y = _pad(BASE, n), _pad(EXPO, n)
    out = np.zeros(2 * n, np.float32)
    _binary.with_options(backend=backend)[(1,)](x, y, out, N=n)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(out[:n], want, rtol=2e-6)
    num = ~np.isnan(want)                           # a NaN's sign bit means nothing
    np.testing.assert_array_equal(np.signbit(out[:n][num]), np.signbit(want[num]))  # -0, -inf
    np.testing.assert_array_equal(out[n:], np.copysign(y, x))


def test_a_libdevice_name_not_provided_lists_those_that_are():
    with pytest.raises(AttributeError, match=r"libdevice.j0 is not provided by npujit; it has "
                                             r".*tanh"):
        libdevice.j0
