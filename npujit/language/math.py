"""Elementwise math: ``exp log sqrt rsqrt abs maximum minimum sigmoid tanh erf gelu silu``,
``exp2 log2 sin cos floor ceil``, ``where``, ``cast``, ``fma``, ``clamp``.

Integer inputs to float functions are computed as float32 (as numpy does).  16-bit floats
compute in f32 and round back after every op.
"""
from __future__ import annotations

import enum

from npujit.ir import Kind
from npujit.ir import types as T

from . import semantic as sem
from .core import builtin, tensor, unwrap_constexpr


def _unary(kind: Kind, doc: str):
    def fn(x):
        return sem.unary(kind, x)
    fn.__name__ = kind.value.split(".")[1]
    fn.__doc__ = doc
    return builtin(fn)


exp = _unary(Kind.EXP, "e**x.\n\nExample::\n\n    y = nl.exp(x - m[:, None])\n")
exp2 = _unary(Kind.EXP2, "2**x.\n\nExample::\n\n    y = nl.exp2(x)\n")
log = _unary(Kind.LOG, "Natural log.\n\nExample::\n\n    y = nl.log(x)\n")
log2 = _unary(Kind.LOG2, "Base-2 log.\n\nExample::\n\n    y = nl.log2(x)\n")
sqrt = _unary(Kind.SQRT, "Square root.\n\nExample::\n\n    y = nl.sqrt(var + eps)\n")
rsqrt = _unary(Kind.RSQRT, "1 / sqrt(x).\n\nExample::\n\n    inv = nl.rsqrt(var + eps)\n")
sin = _unary(Kind.SIN, "Sine.\n\nExample::\n\n    y = nl.sin(x)\n")
cos = _unary(Kind.COS, "Cosine.\n\nExample::\n\n    y = nl.cos(x)\n")
floor = _unary(Kind.FLOOR, "Round down (ints unchanged).\n\nExample::\n\n    y = nl.floor(x)\n")
ceil = _unary(Kind.CEIL, "Round up (ints unchanged).\n\nExample::\n\n    y = nl.ceil(x)\n")
abs = _unary(Kind.ABS, "Absolute value.\n\nExample::\n\n    y = nl.abs(x)\n")
sigmoid = _unary(Kind.SIGMOID, "1 / (1 + exp(-x)).\n\nExample::\n\n    g = nl.sigmoid(x)\n")
tanh = _unary(Kind.TANH, "Hyperbolic tangent.\n\nExample::\n\n    y = nl.tanh(x)\n")
erf = _unary(Kind.ERF, "The error function.\n\nExample::\n\n    y = nl.erf(x)\n")
silu = _unary(Kind.SILU, "x * sigmoid(x) (SiLU / swish).\n\nExample::\n\n    h = nl.silu(g) * u\n")


@builtin
def gelu(x, approximate: str = "none") -> tensor:
    """GELU: ``"none"`` is the exact erf form, ``"tanh"`` the tanh approximation (as torch).

    Example::

        y = nl.gelu(x, approximate="tanh")
    """
    if approximate not in ("none", "tanh"):
        raise sem.error(f"gelu approximate must be 'none' or 'tanh', got {approximate!r}")
    return sem.unary(Kind.GELU, x, {"approximate": approximate})


class PropagateNan(enum.Enum):
    """Triton's ``propagate_nan=`` of ``maximum``/``minimum``/``clamp``: ``NONE`` (the
    default, as in Triton) gives the other input when one is NaN (np.fmax), ``ALL`` gives
    NaN when either input is NaN (np.maximum).

    Example::

        y = nl.maximum(x, y, propagate_nan=nl.PropagateNan.ALL)
    """
    NONE = "none"
    ALL = "all"


def _extremum(kind: Kind, a, b, propagate_nan) -> tensor:
    propagate_nan = unwrap_constexpr(propagate_nan)
    if propagate_nan not in (None, PropagateNan.NONE, PropagateNan.ALL):
        raise sem.error(f"propagate_nan must be nl.PropagateNan.NONE or .ALL, got {propagate_nan!r}")
    a, b = sem.promote_pair(a, b)
    m = sem.binary(kind, a, b)     # npu.maximum / npu.minimum skip NaN (np.fmax / np.fmin)
    if propagate_nan is not PropagateNan.ALL or not a.dtype.is_float:
        return m
    # ALL: a NaN input gives NaN (np.maximum / np.minimum)
    return sem.where(sem.compare("ne", a, a), a, sem.where(sem.compare("ne", b, b), b, m))


@builtin
def maximum(a, b, propagate_nan=None) -> tensor:
    """Elementwise max, as Triton's: a NaN input gives the other input, NaN only when both
    are (np.fmax); ``propagate_nan=nl.PropagateNan.ALL`` gives NaN when either is
    (np.maximum).  None means ``NONE``.

    Example::

        y = nl.maximum(x, 0.0)   # ReLU
    """
    return _extremum(Kind.MAXIMUM, a, b, propagate_nan)


@builtin
def minimum(a, b, propagate_nan=None) -> tensor:
    """Elementwise min: a NaN input gives the other input (np.fmin, Triton's default);
    ``propagate_nan=nl.PropagateNan.ALL`` gives NaN when either is (np.minimum).

    Example::

        y = nl.minimum(x, 6.0)
    """
    return _extremum(Kind.MINIMUM, a, b, propagate_nan)


@builtin
def clamp(x, lo, hi, propagate_nan=None) -> tensor:
    """``minimum(maximum(x, lo), hi)``, with ``propagate_nan`` on both: by default a NaN
    ``x`` gives ``lo`` (Triton's clamp does not propagate NaN unless asked to).

    Example::

        y = nl.clamp(x, -1.0, 1.0)
    """
    return _extremum(Kind.MINIMUM, _extremum(Kind.MAXIMUM, x, lo, propagate_nan), hi,
                     propagate_nan)


@builtin
def fma(a, b, c) -> tensor:
    """``a * b + c`` (two rounded ops, not a fused multiply-add).

    Example::

        y = nl.fma(x, w, b)
    """
    return sem.binary(Kind.ADD, sem.binary(Kind.MUL, a, b), c)


@builtin
def where(cond, a, b) -> tensor:
    """``a`` where ``cond`` holds, else ``b``; all three broadcast together.

    Example::

        y = nl.where(x > 0, x, 0.01 * x)
    """
    return sem.where(cond, a, b)


@builtin
def cast(x, dtype, bitcast: bool = False, fp_downcast_rounding=None) -> tensor:
    """``x.to(dtype)``; ``bitcast=True`` reads the same bits as ``dtype`` (one bit width).
    ``fp_downcast_rounding``: None or "rtne" (round to nearest even, every float cast's
    default), or "rtz" (toward zero) for an f32 or f64 tile cast to f16 or bf16, as Triton.

    Example::

        h = nl.cast(acc, nl.float16, fp_downcast_rounding="rtz")
    """
    return sem.to_tensor(x).to(dtype, fp_downcast_rounding, bitcast)


def toward_zero(x: tensor, dtype: T.DType) -> tensor:
    """``x`` (f32 or f64) cast to f16 or bf16 rounding toward zero: the nearest-even result,
    one step nearer zero where it landed farther from zero than ``x`` (its bits as an
    int16 less one: a finite magnitude's next below, an overflow's infinity the largest
    finite value).  NaN stays NaN."""
    if not (x.dtype in (T.float32, T.float64) and dtype in (T.float16, T.bfloat16)):
        raise sem.error(f"fp_downcast_rounding='rtz' casts an f32 or f64 tile to float16 or "
                        f"bfloat16 (as Triton's), not {x.dtype} to {dtype}")
    r = sem.cast(x, dtype)
    far = abs(sem.cast(r, x.dtype)) > abs(x)
    stepped = sem.bitcast(sem.bitcast(r, T.int16) - 1, dtype)
    return where(far, stepped, r)


@builtin
def umulhi(a, b) -> tensor:
    """The high 32 bits of the 64-bit product of two 32-bit integer tiles, the factors taken
    as unsigned (Triton's ``tl.umulhi``).

    Example::

        hi = nl.umulhi(x, y)            # x, y: int32
    """
    a, b = sem.to_tensor(a), sem.to_tensor(b)
    if a.dtype != b.dtype or a.dtype not in (T.int32, T.uint32):
        raise sem.error(f"umulhi takes two int32 or two uint32 tiles, got {a.dtype} and {b.dtype}")
    low32 = (1 << 32) - 1  # zero-extend: the factors are unsigned
    wide_a = sem.binary(Kind.AND, sem.cast(a, T.int64), low32)
    wide_b = sem.binary(Kind.AND, sem.cast(b, T.int64), low32)
    product = sem.binary(Kind.MUL, wide_a, wide_b)  # wraps mod 2**64: the bits above 64 go
    return sem.cast(sem.binary(Kind.SHR, product, 32), a.dtype)
