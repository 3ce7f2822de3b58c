"""How the reference interpreter computes numbers: storage dtypes and the half-float rule.

docs/semantics.md, "Half floats": every arithmetic op on f16/bf16 (and the fp8s) upcasts
its inputs to f32, computes in f32 and rounds the f32 result back to the narrow type
(round to nearest even, which is what numpy's and ml_dtypes' ``astype`` do).  f32 ops stay in f32 and
integer ops wrap in their own width (numpy's array arithmetic already does both; the
interpreter silences numpy's overflow warnings for the whole launch).  Float -> int
conversion saturates (``float_to_int``; docs/semantics.md, "Casts").

Example::

    >>> import numpy as np
    >>> one = np.array([1.0], np.float16)
    >>> tiny = np.array([2.0 ** -11], np.float16)   # half an f16 ulp at 1.0
    >>> arith(np.add, one, tiny)                   # a tie: rounds to even, stays 1.0
    array([1.], dtype=float16)
"""
from __future__ import annotations

import functools
import math

import numpy as np

from npujit.ir.types import ml_dtype_of_numpy

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
I32 = np.dtype(np.int32)
BOOL = np.dtype(np.bool_)


def _is_half(dt: np.dtype) -> bool:
    """f16, bf16 and the fp8s: the floats narrower than f32 (computed in f32).  ml_dtypes'
    types are recognised without importing it (~1 s of CPU): such an array means it is."""
    return dt == F16 or ml_dtype_of_numpy(dt) is not None


@functools.cache
def _erf_f32():
    """scipy's erf (it has a float32 loop), imported on first use (~0.2 s); math.erf per
    element without scipy."""
    try:
        from scipy.special import erf
        return erf
    except ImportError:  # pragma: no cover - scipy is a declared dependency
        erf_f64 = np.vectorize(math.erf, otypes=[np.float64])
        return lambda x: erf_f64(x).astype(np.asarray(x).dtype)


def is_float(dt: np.dtype) -> bool:
    """True for float storage dtypes (ml_dtypes' bf16 and fp8 E4M3FN have numpy kind 'V').

    Example::

        >>> is_float(np.dtype(np.float16)), is_float(np.dtype(np.int8))
        (True, False)
    """
    return dt.kind == "f" or ml_dtype_of_numpy(dt) is not None


def widen(x: np.ndarray) -> np.ndarray:
    """``x`` as f32 when it is a half float (exact), else ``x`` unchanged.

    Example::

        >>> widen(np.array([1.5], np.float16)).dtype
        dtype('float32')
    """
    return x.astype(F32) if _is_half(x.dtype) else x


def arith(f, *xs: np.ndarray) -> np.ndarray:
    """Apply the numpy function ``f`` to operands of one dtype the way every npujit
    arithmetic op does: half floats in f32 with one rounding back per call.

    Example::

        >>> arith(np.multiply, np.array([3], np.int8), np.array([100], np.int8))
        array([44], dtype=int8)
    """
    dt = xs[0].dtype
    if _is_half(dt):
        return np.asarray(f(*(x.astype(F32) for x in xs))).astype(dt)
    return f(*xs)


def fmax_num(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """npujit's ``maximum`` (Triton's): np.fmax, a NaN operand gives the other one, NaN
    only when both are; on equal values ``b``, on every path (np.fmax gives ``a`` for a
    single element), so the sign of max(-0.0, 0.0) is defined as on the other tiers.

    Example::

        >>> fmax_num(np.float32([np.nan, 1.0, np.nan]), np.float32([2.0, np.nan, np.nan]))
        array([ 2.,  1., nan], dtype=float32)
    """
    return np.where((a > b) | (b != b), a, b)


def fmin_num(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """npujit's ``minimum``: np.fmin, on equal values ``b`` (see ``fmax_num``).

    Example::

        >>> fmin_num(np.float32([np.nan, 1.0]), np.float32([2.0, np.nan]))
        array([2., 1.], dtype=float32)
    """
    return np.where((a < b) | (b != b), a, b)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of an f32 array, as f32.

    Example::

        >>> erf(np.array([0.0], np.float32))
        array([0.], dtype=float32)
    """
    return np.asarray(_erf_f32()(x), dtype=x.dtype)


def fits_int(value: int, dt: np.dtype) -> bool:
    """Whether the Python int ``value`` is representable in the integer dtype ``dt``.

    Example::

        >>> fits_int(200, np.dtype(np.int8)), fits_int(-128, np.dtype(np.int8))
        (False, True)
    """
    info = np.iinfo(dt)
    return info.min <= value <= info.max


def float_to_int(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """Saturating float -> int conversion (docs/semantics.md, "Casts"): truncate toward
    zero; NaN gives 0; +inf and values above the range give the type's maximum, -inf and
    values below it the minimum (0 for unsigned types, as Triton clamps negatives).
    Halves convert from their exact f32 value.

    Example::

        >>> x = np.array([np.nan, np.inf, -np.inf, 300.7, -2.9], np.float32)
        >>> float_to_int(x, np.dtype(np.int8))
        array([   0,  127, -128,  127,   -2], dtype=int8)
    """
    info = np.iinfo(dst)
    f = widen(x).astype(np.float64)         # exact: every f32 is an f64
    with np.errstate(invalid="ignore"):
        t = np.trunc(f)
        top = t >= float(info.max) + 1.0    # the first value above the range, exactly
        bottom = t < float(info.min)
        nan = np.isnan(f)
        out = np.where(top | bottom | nan, 0.0, t).astype(dst)
    out[top] = info.max
    out[bottom] = info.min
    return out
