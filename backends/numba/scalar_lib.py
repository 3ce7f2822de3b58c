"""Scalar helpers for elementwise ops whose semantics need more than one expression.

Generated kernels call them per element (``sl.idiv(a, b)``); LLVM inlines them.
Integer helpers take and return int64: the caller wraps the result to the op's width,
which gives the two's-complement answer for every width up to 64 bits.

Example::

    >>> from npujit.backends.numba import scalar_lib as sl
    >>> int(sl.idiv(np.int64(-7), np.int64(2))), int(sl.irem(np.int64(-7), np.int64(2)))
    (-3, -1)
"""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def idiv(a, b):
    """C division on int64, truncating toward zero; ``x // 0 == 0``; ``INT64_MIN // -1``
    wraps."""
    a = np.int64(a)
    b = np.int64(b)
    if b == 0:
        return np.int64(0)
    if b == -1:
        return np.int64(0) - a  # wraps for INT64_MIN instead of trapping
    q = a // b  # numba floors, like Python: step back toward zero when inexact
    if (a < 0) != (b < 0) and a % b != 0:
        q += 1
    return q


@njit(**_JIT)
def irem(a, b):
    """C remainder on int64 (sign of the dividend, like np.fmod); ``x % 0 == 0``."""
    a = np.int64(a)
    b = np.int64(b)
    if b == 0 or b == -1:
        return np.int64(0)
    r = a % b  # numba's floor modulo has the divisor's sign: move it to the dividend's
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@njit(**_JIT)
def float_to_int(x, below, above, lo, hi):
    """Saturating float -> int (docs/semantics.md, "Casts"): NaN -> 0, ``x`` truncated
    toward zero, values ``<= below`` -> ``lo`` and ``>= above`` -> ``hi``, where ``below``
    and ``above`` are the first floats outside the type's range (-2**(b-1) - 1 and
    2**(b-1); passed as f64 so that every f32 compares exactly).  Returns int64."""
    f = np.float64(x)
    if f != f:
        return np.int64(0)
    if f >= above:
        return np.int64(hi)
    if f <= below:
        return np.int64(lo)
    return np.int64(f)


@njit(**_JIT)
def udivide(a, b, remainder):
    """Unsigned ``a // b`` (or ``a % b`` when ``remainder``) on uint64, which holds every
    unsigned width; a zero divisor gives 0."""
    a = np.uint64(a)
    b = np.uint64(b)
    if b == 0:
        return np.uint64(0)
    return np.uint64(a % b) if remainder else np.uint64(a // b)


@njit(**_JIT)
def float_to_uint(x, above, hi):
    """Saturating float -> unsigned int: NaN and everything below 1 (after truncation
    toward zero: negatives too) give 0, values ``>= above`` (2**bits) give ``hi``.
    Returns uint64."""
    f = np.float64(x)
    if not f >= 1.0:  # NaN, negatives and [0, 1)
        return np.uint64(0)
    if f >= above:
        return np.uint64(hi)
    return np.uint64(f)


@njit(**_JIT)
def f64_to_f32_odd(x):
    """``x`` rounded to float32 toward zero, with the last bit set when inexact (round to
    odd): rounding that once more to a half float gives the correctly rounded half, where
    two nearest-even roundings could err on a tie."""
    f = np.float32(x)
    if np.float64(f) == x or x != x:
        return f
    bits = np.int64(np.float32(f).view(np.uint32))
    if abs(np.float64(f)) > abs(x):
        bits -= 1          # one step toward zero: the truncated value (also inf -> max)
    return np.uint32(bits | 1).view(np.float32)


@njit(**_JIT)
def fmod64(a, b):
    """C fmod on float64 (sign of the dividend, exact); ``x % 0`` and ``inf % y`` are NaN."""
    return np.float64(np.fmod(np.float64(a), np.float64(b)))


@njit(**_JIT)
def fmod32(a, b):
    """C fmod on float32 (sign of the dividend, exact); ``x % 0`` and ``inf % y`` are NaN."""
    return np.float32(np.fmod(np.float32(a), np.float32(b)))


@njit(**_JIT)
def shl(a, b, bits):
    """``a << b`` in int64; a count outside [0, bits) gives 0.  Caller wraps to ``bits``."""
    a = np.int64(a)
    b = np.int64(b)
    if b < 0 or b >= bits:
        return np.int64(0)
    return np.int64(a << b)


@njit(**_JIT)
def shr(a, b, bits):
    """Arithmetic ``a >> b``; a count outside [0, bits) gives the sign fill (0 or -1)."""
    a = np.int64(a)
    b = np.int64(b)
    if b < 0 or b >= bits:
        return np.int64(-1) if a < 0 else np.int64(0)
    return np.int64(a >> b)


@njit(**_JIT)
def ushift(a, b, bits, left):
    """Unsigned ``a << b`` (``left``) or logical ``a >> b`` in uint64; a count outside
    [0, bits) gives 0.  Caller wraps to ``bits``."""
    a = np.uint64(a)
    b = np.uint64(b)
    if b >= bits:
        return np.uint64(0)
    return np.uint64(a << b) if left else np.uint64(a >> b)


@njit(**_JIT)
def fmax_num(a, b):
    """np.fmax on floats (Triton's maximum): a NaN operand gives the other one, NaN only
    when both are; on equal values ``b`` (which decides the sign of max(-0.0, 0.0))."""
    return a if (a > b or b != b) else b


@njit(**_JIT)
def fmin_num(a, b):
    """np.fmin on floats: a NaN operand gives the other one; on equal values ``b``."""
    return a if (a < b or b != b) else b


# exp in float32 arithmetic only, so loops calling it vectorise (pip's llvmlite has no
# SVML: np.exp stays a scalar libm call).  Cody-Waite range reduction x = n*ln2 + r with
# |r| <= ln2/2, e^r = 1 + r + r^2 * P(r) with P a degree-4 minimax fit of (e^r - 1 - r)/r^2
# (relative error 3e-9 before rounding), and 2^n built from exponent bits as two factors,
# so subnormal results round once and n = 128 overflows to inf.  No branch and no select
# past the clamp: the clamp to [-104, 89] keeps n within [-150, 128], where the
# arithmetic itself gives inf above 88.7228 and 0 below -103.9721, and a NaN passes the
# clamp (both comparisons are false) and every step after it.  fastmath 'contract' lets
# LLVM fuse the multiply-adds of this function only (not of the kernel it is inlined
# into).  Largest error over every float32 input: 1.01 ulp of the correctly rounded
# result (docs/semantics.md; tests/backends/test_numba_ops.py checks a sweep and the
# edges).
_LOG2E = np.float32(1.4426950408889634)
_ROUNDER = np.float32(12582912.0)      # 1.5 * 2**23: adding it rounds to an integer (RNE)
_ROUNDER_BITS = np.int32(0x4B400000)   # its bits: the bits of n + _ROUNDER minus these are n
_LN2_HI = np.float32(0.693359375)      # few bits, so n * _LN2_HI is exact
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_P = (np.float32(1.3814539415761828e-3), np.float32(8.36874544620514e-3),
          np.float32(4.166838899254799e-2), np.float32(1.666652113199234e-1),
          np.float32(4.999999403953552e-1))
_EXP_LO = np.float32(-104.0)           # e^-104 rounds to 0
_EXP_HI = np.float32(89.0)             # e^89 overflows
_BIAS = np.int32(127)


@njit(**_JIT, fastmath={"contract"})
def exp_f32(x):
    """e**x for a float32 without branches (vectorisable); NaN -> NaN, inf -> inf, -inf -> 0."""
    x = np.float32(x)
    xc = _EXP_LO if x < _EXP_LO else x
    xc = _EXP_HI if xc > _EXP_HI else xc
    t = xc * _LOG2E + _ROUNDER
    n = t - _ROUNDER
    r = (xc - n * _LN2_HI) - n * _LN2_LO
    p4, p3, p2, p1, p0 = _EXP_P
    q = (((p4 * r + p3) * r + p2) * r + p1) * r + p0
    y = q * (r * r) + r                   # e^r - 1
    ni = np.float32(t).view(np.int32) - _ROUNDER_BITS
    n1 = ni >> 1
    s1 = np.int32((n1 + _BIAS) << 23).view(np.float32)
    s2 = np.int32((ni - n1 + _BIAS) << 23).view(np.float32)
    return (y * s1 + s1) * s2
