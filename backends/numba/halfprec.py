"""fp16 / bf16 at the bit level, as numba-compilable scalar functions.

numba has no float16 type, so the backend keeps a half tile as float32 values that are
exactly representable in the half type, stores halves in memory as ``uint16`` bit
patterns, and converts with the functions here:

* ``f16_bits_to_f32`` / ``bf16_bits_to_f32`` decode a 16-bit pattern (exact);
* ``f32_to_f16_bits`` / ``f32_to_bf16_bits`` encode with round-to-nearest-even, bit for
  bit what ``numpy.astype(np.float16)`` / ``astype(ml_dtypes.bfloat16)`` give (numpy's
  software algorithm: subnormals, overflow to inf, NaN keeps its sign and top payload
  bits; bf16 NaN becomes sign | 0x7fc0 as ml_dtypes does);
* ``round_f16`` / ``round_bf16`` round a float32 to the nearest half value, still as a
  float32: what every op on half values applies to its f32 result.

They are plain Python on numpy scalars, so ``NUMBA_DISABLE_JIT=1`` runs them unchanged.

Example::

    >>> from npujit.backends.numba.halfprec import round_f16, f32_to_f16_bits
    >>> float(round_f16(np.float32(1.0 + 2.0 ** -11)))    # a tie: rounds to even
    1.0
    >>> hex(int(f32_to_f16_bits(np.float32(65504.0))))
    '0x7bff'
"""
from __future__ import annotations

import numpy as np
from numba import njit

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
    sign = (h & 0x8000) << 16
    exp = (h >> 10) & 0x1F
    man = h & 0x3FF
    if exp == 0:
        # zero or subnormal: man * 2**-24 is exact in float32
        v = np.float32(man) * np.float32(5.960464477539063e-08)
        return -v if sign else v
    if exp == 0x1F:
        return bits_f32(sign | 0x7F800000 | (man << 13))
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13))


@njit(**_JIT)
def f32_to_f16_bits(x):
    """Encode a float32 as fp16 bits (uint16), round to nearest even (numpy's algorithm)."""
    f = f32_bits(x)
    h_sgn = (f & 0x80000000) >> 16
    f_exp = f & 0x7F800000
    if f_exp >= 0x47800000:
        if f_exp == 0x7F800000:
            f_sig = f & 0x007FFFFF
            if f_sig != 0:
                ret = 0x7C00 + (f_sig >> 13)
                if ret == 0x7C00:  # keep it a NaN when the payload's top bits are 0
                    ret += 1
                return np.uint16(h_sgn + ret)
        return np.uint16(h_sgn + 0x7C00)  # inf, or overflow to inf
    if f_exp <= 0x38000000:
        if f_exp < 0x33000000:
            return np.uint16(h_sgn)  # underflows to signed zero
        e = f_exp >> 23
        f_sig = (0x00800000 + (f & 0x007FFFFF)) >> (113 - e)
        # round half to even; the shift may have dropped up to 11 low bits of f
        if (f_sig & 0x3FFF) != 0x1000 or (f & 0x7FF) != 0:
            f_sig += 0x1000
        return np.uint16(h_sgn + (f_sig >> 13))
    h_exp = (f_exp - 0x38000000) >> 13
    f_sig = f & 0x007FFFFF
    if (f_sig & 0x3FFF) != 0x1000:
        f_sig += 0x1000
    # a carry out of the significand bumps the exponent (to inf at the top): correct
    return np.uint16(h_sgn + ((f_sig >> 13) + h_exp))


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
