"""Scalar helpers for elementwise ops whose semantics need more than one expression.

Generated kernels call them per element (``sl.ifloordiv(a, b)``); LLVM inlines them.
Integer helpers take and return int64: the caller wraps the result to the op's width,
which gives the two's-complement answer for every width up to 64 bits.

Example::

    >>> from npujit.backends.numba import scalar_lib as sl
    >>> int(sl.ifloordiv(np.int64(-7), np.int64(2))), int(sl.irem(np.int64(-7), np.int64(2)))
    (-4, 1)
"""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def ifloordiv(a, b):
    """Python floor division on int64; ``x // 0 == 0``; ``INT64_MIN // -1`` wraps."""
    a = np.int64(a)
    b = np.int64(b)
    if b == 0:
        return np.int64(0)
    if b == -1:
        return np.int64(0) - a  # wraps for INT64_MIN instead of trapping
    q = a // b
    return q


@njit(**_JIT)
def irem(a, b):
    """Python floor modulo on int64 (sign of the divisor); ``x % 0 == 0``."""
    a = np.int64(a)
    b = np.int64(b)
    if b == 0 or b == -1:
        return np.int64(0)
    r = a % b
    return r


@njit(**_JIT)
def fmod_floor(a, b):
    """np.mod on float32: fmod, moved to the sign of the divisor; ``x mod 0`` is NaN."""
    a = np.float32(a)
    b = np.float32(b)
    mod = np.fmod(a, b)
    if b == 0:
        return mod
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod = np.float32(mod + b)
    else:
        mod = np.float32(np.copysign(np.float32(0), b))
    return mod


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
def fmaximum(a, b):
    """np.maximum on floats: NaN if either is NaN; on equal values ``b`` (numpy's choice,
    which decides the sign of max(-0.0, 0.0))."""
    return a if (a > b or a != a) else b


@njit(**_JIT)
def fminimum(a, b):
    """np.minimum on floats: NaN if either is NaN; on equal values ``b``."""
    return a if (a < b or a != a) else b
