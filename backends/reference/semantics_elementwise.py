"""Reference semantics of the elementwise ops: arithmetic, bitwise, shifts, math, cmp,
select and cast (docs/semantics.md, "Elementwise ops").

Every function here has the interpreter's signature ``(ctx, op, *operands) -> result``:
``ctx`` is the running program (unused by pure ops), ``op`` the IR op (for attributes)
and the operands are numpy arrays (0-d for scalars).  Operands of a binary op share one
shape and dtype (the front end inserts splat/broadcast/cast), so nothing here broadcasts
or promotes.

Example::

    >>> import numpy as np
    >>> from npujit.ir import Kind
    >>> SEMANTICS_ELEMENTWISE[Kind.IDIV](None, None, np.array([-7, 7], np.int32),
    ...                                  np.array([2, 0], np.int32))
    array([-3,  0], dtype=int32)
"""
from __future__ import annotations

import math

import numpy as np

from npujit.ir import Kind

from .numerics import BOOL, F32, arith, erf, float_to_int, fmax_num, fmin_num, is_float, widen


def _ufunc(f):
    """An op whose whole meaning is the numpy function ``f`` under the half-float rule."""
    def semantics(ctx, op, *xs):
        return arith(f, *xs)
    semantics.__name__ = getattr(f, "__name__", "elementwise")
    semantics.__doc__ = f"``{semantics.__name__}`` elementwise; half floats via f32."
    return semantics


# --- integer division family: C's (and Triton's) truncating division; the doc fixes ------
# --- x // 0 = 0 and x % 0 = 0 for ints --------------------------------------------------

def idiv(ctx, op, a, b):
    """C division on ints, truncating toward zero; a zero divisor gives 0 (INT_MIN // -1
    wraps)."""
    zero = b == 0
    safe = np.where(zero, np.ones_like(b), b)
    # a - fmod(a, b) is an exact multiple of b, so the floor division below is exact
    q = np.floor_divide(a - np.fmod(a, safe), safe)
    return np.where(zero, np.zeros_like(q), q)


def rem(ctx, op, a, b):
    """Remainder with the sign of the dividend (C fmod, np.fmod); ints: x % 0 = 0."""
    if is_float(a.dtype):
        return arith(np.fmod, a, b)
    zero = b == 0
    r = np.fmod(a, np.where(zero, np.ones_like(b), b))
    return np.where(zero, np.zeros_like(r), r)


# --- shifts: counts outside [0, bits) are defined, unlike C -------------------------------

def _shift_count(a, n):
    bits = a.dtype.itemsize * 8
    in_range = (n >= 0) & (n < bits)
    return in_range, np.where(in_range, n, np.zeros_like(n)), bits


def shl(ctx, op, a, n):
    """a << n, wrapping; a count outside [0, bits) gives 0."""
    in_range, count, _ = _shift_count(a, n)
    return np.where(in_range, np.left_shift(a, count), np.zeros_like(a))


def shr(ctx, op, a, n):
    """Arithmetic a >> n (logical on unsigned ints, as numpy's is); a count outside
    [0, bits) gives the sign fill (0 or -1; always 0 when unsigned)."""
    in_range, count, bits = _shift_count(a, n)
    sign_fill = np.right_shift(a, np.full_like(a, bits - 1))
    if a.dtype.kind == "u":
        sign_fill = np.zeros_like(a)
    return np.where(in_range, np.right_shift(a, count), sign_fill)


# --- float functions with a formula in the doc, computed step by step in the operand's
# --- precision (f32 for f32 and the halves, f64 for f64): constants are rounded to it ----

def _const(x, value: float):
    return x.dtype.type(value)


def _rsqrt(x):
    return _const(x, 1.0) / np.sqrt(x)


def _sigmoid(x):
    one = _const(x, 1.0)
    return one / (one + np.exp(-x))


def _silu(x):
    return x / (_const(x, 1.0) + np.exp(-x))


def _gelu_erf(x):
    return _const(x, 0.5) * x * (_const(x, 1.0) + erf(x / _const(x, math.sqrt(2.0))))


def _gelu_tanh(x):
    inner = _const(x, math.sqrt(2.0 / math.pi)) * (x + _const(x, 0.044715) * (x * x * x))
    return _const(x, 0.5) * x * (_const(x, 1.0) + np.tanh(inner))


def gelu(ctx, op, x):
    """GELU, "none" = erf form, "tanh" = the tanh approximation, computed in f32."""
    form = _gelu_tanh if op.attrs.get("approximate", "none") == "tanh" else _gelu_erf
    return arith(form, x)


# --- comparisons, select, cast -----------------------------------------------------------

_PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}


def cmp(ctx, op, a, b):
    """IEEE comparison giving i1 (NaN compares false except ``ne``); halves compared as
    their exact f32 values."""
    return _PREDICATES[op.attrs["predicate"]](widen(a), widen(b))


def select(ctx, op, c, a, b):
    """where(c, a, b)."""
    return np.where(c, a, b)


def cast_array(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """Convert ``x`` to the storage dtype ``dst`` by the cast rules of docs/semantics.md.

    Example::

        >>> cast_array(np.array([-2.7, 0.5], np.float32), np.dtype(np.int32))
        array([-2,  0], dtype=int32)
    """
    src = x.dtype
    if dst == BOOL:
        return widen(x) != 0                    # anything -> i1 is x != 0 (NaN -> True)
    if is_float(src) and is_float(dst):
        return widen(x).astype(dst)             # f16 -> f32 is exact, so one RNE rounding
    if is_float(src):
        return float_to_int(x, dst)             # truncate toward zero, saturating
    if dst == np.float64:
        return x.astype(dst)                    # int / i1 -> f64: one RNE rounding
    if is_float(dst):
        return x.astype(F32).astype(dst)        # int / i1 -> float: via f32, RNE
    return x.astype(dst)                        # int -> int wraps; i1 -> int is 0 or 1


def cast(ctx, op, x):
    """Convert to ``op.attrs["dtype"]`` (see ``cast_array``)."""
    return cast_array(x, op.attrs["dtype"].np)


def bitcast(ctx, op, x):
    """The same bits read as ``op.attrs["dtype"]`` (one bit width; numpy's ``view``)."""
    return np.ascontiguousarray(x).view(op.attrs["dtype"].np)


SEMANTICS_ELEMENTWISE = {
    Kind.ADD: _ufunc(np.add),
    Kind.SUB: _ufunc(np.subtract),
    Kind.MUL: _ufunc(np.multiply),
    Kind.DIV: _ufunc(np.divide),
    Kind.IDIV: idiv,
    Kind.REM: rem,
    Kind.POW: _ufunc(np.power),
    Kind.MAXIMUM: _ufunc(fmax_num),         # NaN-ignoring, as Triton's default (np.fmax)
    Kind.MINIMUM: _ufunc(fmin_num),
    Kind.AND: _ufunc(np.bitwise_and),       # logical on bool arrays
    Kind.OR: _ufunc(np.bitwise_or),
    Kind.XOR: _ufunc(np.bitwise_xor),
    Kind.NOT: _ufunc(np.invert),
    Kind.SHL: shl,
    Kind.SHR: shr,
    Kind.CMP: cmp,
    Kind.SELECT: select,
    Kind.NEG: _ufunc(np.negative),          # ints wrap: -INT_MIN = INT_MIN
    Kind.ABS: _ufunc(np.abs),               # abs(INT_MIN) = INT_MIN
    Kind.EXP: _ufunc(np.exp),
    Kind.EXP2: _ufunc(np.exp2),
    Kind.LOG: _ufunc(np.log),
    Kind.LOG2: _ufunc(np.log2),
    Kind.SQRT: _ufunc(np.sqrt),
    Kind.RSQRT: _ufunc(_rsqrt),
    Kind.SIN: _ufunc(np.sin),
    Kind.COS: _ufunc(np.cos),
    Kind.FLOOR: _ufunc(np.floor),
    Kind.CEIL: _ufunc(np.ceil),
    Kind.TANH: _ufunc(np.tanh),
    Kind.ERF: _ufunc(erf),
    Kind.SIGMOID: _ufunc(_sigmoid),
    Kind.SILU: _ufunc(_silu),
    Kind.GELU: gelu,
    Kind.CAST: cast,
    Kind.BITCAST: bitcast,
}
