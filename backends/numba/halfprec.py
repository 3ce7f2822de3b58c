"""Floats narrower than f32 (fp16, bf16, fp8) at the bit level, as numba-compilable
scalar functions.

numba has no float16 type, so the backend keeps a half tile as float32 values that are
exactly representable in the half type, stores halves in memory as ``uint16`` bit
patterns (fp8s as ``uint8``), and converts with the functions here:

* ``f16_bits_to_f32`` / ``bf16_bits_to_f32`` decode a 16-bit pattern (exact);
* ``f32_to_f16_bits`` / ``f32_to_bf16_bits`` encode with round-to-nearest-even, bit for
  bit what ``numpy.astype(np.float16)`` / ``astype(ml_dtypes.bfloat16)`` give (numpy's
  software algorithm: subnormals, overflow to inf, NaN keeps its sign and top payload
  bits; bf16 NaN becomes sign | 0x7fc0 as ml_dtypes does);
* ``round_f16`` / ``round_bf16`` round a float32 to the nearest half value, still as a
  float32: what every op on half values applies to its f32 result;
* the same three for the fp8s, ``e4m3_*`` (float8e4nv, OCP E4M3FN) and ``e5m2_*``
  (float8e5, OCP E5M2): decoding reads a 256-entry table; encoding rounds to nearest even
  in f64 arithmetic and gives ml_dtypes' bits (E5M2: overflow to inf, NaN -> sign | 0x7e;
  E4M3FN has no inf: overflow and NaN -> sign | 0x7f).

They are plain Python on numpy scalars, so ``NUMBA_DISABLE_JIT=1`` runs them unchanged.

Example::

    >>> from npujit.backends.numba.halfprec import round_f16, f32_to_f16_bits
    >>> float(round_f16(np.float32(1.0 + 2.0 ** -11)))    # a tie: rounds to even
    1.0
    >>> hex(int(f32_to_f16_bits(np.float32(65504.0))))
    '0x7bff'
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from npujit.ir.types import FP8_FORMATS

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def f32_bits(x):
    """The IEEE bits of a float32, as an int64 (so later arithmetic stays signed)."""
    return np.int64(np.float32(x).view(np.uint32))


@njit(**_JIT)
def bits_f32(b):
    """The float32 whose IEEE bits are the low 32 bits of ``b``."""
    return np.uint32(b & 0xFFFFFFFF).view(np.float32)


@njit(**_JIT)
def f16_bits_to_f32(h):
    """Decode fp16 bits (any int type) to the float32 of the same value."""
    h = np.int64(h)
    em = h & 0x7FFF                       # exponent and mantissa
    bits = (em << 13) + 0x38000000        # rebias the exponent by 127 - 15
    bits = bits + 0x38000000 if em >= 0x7C00 else bits   # inf/NaN: exponent all ones
    v = bits_f32(bits)
    # zero and subnormals: em * 2**-24 is exact in float32
    v = np.float32(em) * np.float32(5.960464477539063e-08) if em < 0x0400 else v
    return bits_f32(f32_bits(v) | ((h & 0x8000) << 16))


_F16_DENORM_MAGIC = np.int64(((127 - 15) + (23 - 10) + 1) << 23)   # 0.5 as f32 bits


@njit(**_JIT)
def f32_to_f16_bits(x):
    """Encode a float32 as fp16 bits (uint16), round to nearest even; NaN keeps its sign
    and top payload bits (numpy's rule).  No branches, so loops using it vectorise."""
    f = f32_bits(x)
    sign = (f >> 16) & 0x8000
    a = f & 0x7FFFFFFF
    # normal results: rebias, then round the 13 dropped bits to nearest even
    normal = (a + ((15 - 127) << 23) + 0xFFF + ((a >> 13) & 1)) >> 13
    # subnormal results: adding 0.5 in float32 rounds (RNE) to a multiple of 2**-24
    sub = f32_bits(bits_f32(a) + bits_f32(_F16_DENORM_MAGIC)) - _F16_DENORM_MAGIC
    h = sub if a < (113 << 23) else normal
    h = 0x7C00 if a >= ((127 + 16) << 23) else h           # overflow (and inf)
    nan = 0x7C00 + max((a & 0x007FFFFF) >> 13, 1)
    h = nan if a > 0x7F800000 else h
    return np.uint16(h | sign)


@njit(**_JIT)
def round_f16(x):
    """The float32 holding ``x`` rounded to fp16 (RNE; overflow to inf; NaN stays NaN)."""
    return f16_bits_to_f32(f32_to_f16_bits(x))


@njit(**_JIT)
def bf16_bits_to_f32(h):
    """Decode bf16 bits (any int type) to float32: the bits are the top half of an f32."""
    return bits_f32((np.int64(h) & 0xFFFF) << 16)


@njit(**_JIT)
def f32_to_bf16_bits(x):
    """Encode a float32 as bf16 bits (uint16), RNE; NaN -> sign | 0x7fc0 (ml_dtypes)."""
    f = f32_bits(x)
    if (f & 0x7FFFFFFF) > 0x7F800000:
        return np.uint16(((f >> 16) & 0x8000) | 0x7FC0)
    return np.uint16((f + 0x7FFF + ((f >> 16) & 1)) >> 16)


@njit(**_JIT)
def round_bf16(x):
    """The float32 holding ``x`` rounded to bf16 (RNE; NaN stays NaN)."""
    f = f32_bits(x)
    if (f & 0x7FFFFFFF) > 0x7F800000:
        return bits_f32(((f >> 16) & 0x8000) << 16 | 0x7FC00000)
    return bits_f32(((f + 0x7FFF + ((f >> 16) & 1)) >> 16) << 16)


def _fp8_table(name: str) -> np.ndarray:
    """The float32 value of each of the 256 codes of fp8 format ``name``."""
    fmt = FP8_FORMATS[name]
    c = np.arange(256)
    e, m = (c >> fmt.mbits) & ((1 << fmt.ebits) - 1), c & ((1 << fmt.mbits) - 1)
    mag = np.where(e == 0, m * 2.0 ** (fmt.emin - fmt.mbits),
                   (1.0 + m / 2.0 ** fmt.mbits) * 2.0 ** (e - fmt.bias))
    if fmt.ieee:
        mag = np.where(e == (1 << fmt.ebits) - 1, np.where(m == 0, np.inf, np.nan), mag)
    else:
        mag = np.where(c & 0x7F == 0x7F, np.nan, mag)
    return np.where(c >> 7 == 1, -mag, mag).astype(np.float32)


_E4M3 = _fp8_table("f8E4M3FN")
_E5M2 = _fp8_table("f8E5M2")
_E4M3_FMT, _E5M2_FMT = FP8_FORMATS["f8E4M3FN"], FP8_FORMATS["f8E5M2"]


@njit(**_JIT)
def _round_fp8(x, mbits, emin, max_finite, overflow):
    """``x`` rounded to nearest even at ``mbits`` mantissa bits (subnormal below 2**emin),
    as an f64; a magnitude above ``max_finite`` (or inf) becomes ``overflow`` (inf or NaN)
    with x's sign.  Every step is exact in f64."""
    v = np.float64(x)
    a = abs(v)
    if a != a:
        return v
    if a == np.inf:
        r = overflow
    else:
        q = math.ldexp(1.0, max(math.frexp(a)[1] - 1, emin) - mbits)   # the ulp at a
        r = np.rint(a / q) * q
        if r > max_finite:
            r = overflow
    return math.copysign(r, v)


@njit(**_JIT)
def _fp8_bits(r, ebits, mbits, bias, nan_code):
    """The code of ``r``, a value of the format already (``_round_fp8``'s result)."""
    sign = 0x80 if math.copysign(1.0, r) < 0 else 0
    a = abs(r)
    if a != a:
        return np.uint8(sign | nan_code)
    if a == np.inf:
        return np.uint8(sign | (((1 << ebits) - 1) << mbits))
    if a < math.ldexp(1.0, 1 - bias):                       # zero and subnormals
        return np.uint8(sign | np.int64(a / math.ldexp(1.0, 1 - bias - mbits)))
    e = math.frexp(a)[1] - 1
    m = np.int64(a / math.ldexp(1.0, e - mbits)) - (1 << mbits)
    return np.uint8(sign | ((e + bias) << mbits) | m)


@njit(**_JIT)
def e4m3_bits_to_f32(b):
    """Decode float8e4nv (E4M3FN) bits (any int type) to float32."""
    return _E4M3[np.int64(b) & 0xFF]


@njit(**_JIT)
def round_e4m3(x):
    """The float32 holding ``x`` rounded to float8e4nv (RNE; |x| > 448 and NaN -> NaN)."""
    return np.float32(_round_fp8(x, 3, -6, 448.0, np.nan))


@njit(**_JIT)
def f32_to_e4m3_bits(x):
    """Encode a float as float8e4nv bits (uint8), RNE, as ml_dtypes does."""
    return _fp8_bits(_round_fp8(x, 3, -6, 448.0, np.nan), 4, 3, 7, 0x7F)


@njit(**_JIT)
def e5m2_bits_to_f32(b):
    """Decode float8e5 (E5M2) bits (any int type) to float32."""
    return _E5M2[np.int64(b) & 0xFF]


@njit(**_JIT)
def round_e5m2(x):
    """The float32 holding ``x`` rounded to float8e5 (RNE; overflow to inf)."""
    return np.float32(_round_fp8(x, 2, -14, 57344.0, np.inf))


@njit(**_JIT)
def f32_to_e5m2_bits(x):
    """Encode a float as float8e5 bits (uint8), RNE, as ml_dtypes does."""
    return _fp8_bits(_round_fp8(x, 2, -14, 57344.0, np.inf), 5, 2, 15, 0x7E)


# the constants above, spelled out for numba, are the formats' (checked at import)
assert (_E4M3_FMT.mbits, _E4M3_FMT.emin, _E4M3_FMT.max_finite) == (3, -6, 448.0)
assert (_E5M2_FMT.mbits, _E5M2_FMT.emin, _E5M2_FMT.max_finite) == (2, -14, 57344.0)
