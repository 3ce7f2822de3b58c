"""8-bit floats on the llvm backend (backends/llvm/halfprec.py): every one of the 256
codes of each format decodes, and f32 and f64 values (ties, subnormals, overflow, inf,
NaN) encode, to the bits ml_dtypes gives -- the independent oracle -- through GM arrays
of the format, as a kernel reads and writes them.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel

FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


@npu_kernel
def _convert(src_ptr, dst_ptr, n, BLOCK: nl.constexpr):
    i = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    m = i < n
    x = nl.load(src_ptr + i, mask=m)
    nl.store(dst_ptr + i, x.to(dst_ptr.dtype.element_ty), mask=m)


def _run(src, dst_dtype):
    dst = np.zeros(src.size, dst_dtype)
    _convert.with_options(backend="llvm")[(-(-src.size // 64),)](src, dst, src.size,
                                                                   BLOCK=64)
    return dst


def _values(wide):
    """Values around every code of the formats: each code's value, the midpoints between
    neighbours (ties round to even), just above and below them, overflow, inf and NaN."""
    codes = []
    for f8 in FORMATS.values():
        v = np.arange(256, dtype=np.uint8).view(f8).astype(np.float64)
        v = np.sort(v[np.isfinite(v)])
        mid = (v[1:] + v[:-1]) / 2
        codes += [v, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)]
    extra = np.array([0.0, -0.0, 1e-30, -1e-30, 448.0, 464.0, 480.0, 1e4, 57344.0, 61440.0,
                      65536.0, 1e30, np.inf, -np.inf, np.nan])
    return np.concatenate(codes + [extra]).astype(wide)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_code_decodes_as_ml_dtypes_does(fmt):
    f8 = FORMATS[fmt]
    codes = np.arange(256, dtype=np.uint8).view(f8)
    got = _run(codes, np.float32)
    want = codes.astype(np.float32)
    np.testing.assert_array_equal(got, want)          # NaN where want is NaN


@pytest.mark.parametrize("wide", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_encoding_rounds_to_the_bits_ml_dtypes_gives(fmt, wide):
    f8 = FORMATS[fmt]
    x = _values(wide)
    got = _run(x, f8).view(np.uint8)
    want = x.astype(f8).view(np.uint8)
    nan = np.isnan(x.astype(f8).astype(np.float32))
    np.testing.assert_array_equal(got[~nan], want[~nan])
    # a NaN may differ in its sign bit only, and must stay a NaN of the format
    assert np.isnan(got[nan].view(f8).astype(np.float32)).all()
