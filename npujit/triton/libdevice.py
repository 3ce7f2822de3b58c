"""``tl.extra.libdevice`` (and ``tl.extra.cuda.libdevice``): the CUDA math library's names
that Triton kernels call, on npujit's language.

Each is the language's own op where one exists (``tanh``, ``exp``, ``erf``...) or a few
of them otherwise, written so the result stays correctly rounded or within a few ulp:
``rint``/``nearbyint`` (half to even) and ``round`` (half away from zero) from ``floor``
and the exact remainder ``x - floor(x)``, ``log1p``/``expm1`` with Kahan's correction,
``pow`` as ``exp2(y * log2|x|)`` with IEEE's special cases (a negative base takes an
integer exponent's sign; relative error a few ulp, growing with ``|y log2 x|``).  The
predicates (``isnan``, ``isinf``, ``signbit``, ``isfinited``) return int32 0/1, as
libdevice's do.  A libdevice name not here is an ``AttributeError`` listing those that are.

Example (inside a kernel)::

    from npujit.triton.language.extra import libdevice
    y = 0.5 * x * (1 + libdevice.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
"""
from __future__ import annotations

import math as _math
import sys
import types

import npujit.language as nl
from npujit.ir import types as T
from npujit.language import semantic as sem
from npujit.language.core import builtin

_EXACT_INT = 2.0 ** 23          # f32 values this large are integers already


def _f(x):
    x = sem.to_tensor(x)
    return x if x.dtype.is_float else x.to(nl.float32)


def _int32(cond):
    return nl.where(cond, 1, 0).to(nl.int32)


def _trunc(x):
    x = _f(x)
    return nl.where(x < 0, nl.ceil(x), nl.floor(x))


def _rint(x):
    """Round half to even: ``floor(x)``, up when the exact remainder is over a half, or a
    half on an odd floor."""
    x = _f(x)
    f = nl.floor(x)
    d = x - f                                       # exact below 2**23
    odd = (f - 2.0 * nl.floor(f * 0.5)) != 0
    up = (d > 0.5) | ((d == 0.5) & odd)
    return nl.where(nl.abs(x) >= _EXACT_INT, x, f + nl.where(up, 1.0, 0.0).to(x.dtype))


def _round(x):
    """Round half away from zero."""
    x = _f(x)
    t = _trunc(x)
    away = nl.abs(x - t) >= 0.5
    step = nl.where(x < 0, -1.0, 1.0).to(x.dtype)
    return nl.where(nl.abs(x) >= _EXACT_INT, x, t + nl.where(away, step, 0.0).to(x.dtype))


def _log1p(x):
    """``log(1 + x)`` accurate for small ``x``: ``log(u) * x / (u - 1)`` with ``u = 1 + x``."""
    x = _f(x)
    u = 1.0 + x
    d = u - 1.0
    fixed = nl.log(u) * (x / nl.where(d == 0, 1.0, d))
    return nl.where(d == 0, x, nl.where(u == float("inf"), u, fixed))


def _expm1(x):
    """``exp(x) - 1`` accurate for small ``x``: ``(u - 1) * x / log(u)`` with ``u = e**x``."""
    x = _f(x)
    u = nl.exp(x)
    lu = nl.log(u)
    plain = u - 1.0
    fixed = plain * (x / nl.where(lu == 0, 1.0, lu))
    return nl.where(u == 1.0, x, nl.where((plain == -1.0) | (nl.abs(x) > 0.5), plain, fixed))


def _signbit(x):
    x = _f(x)
    bits = T.int16 if x.dtype.itemsize == 2 else T.int32 if x.dtype.itemsize == 4 else T.int64
    return _int32(sem.bitcast(x, bits) < 0)


def _copysign(x, y):
    x, y = _f(x), _f(y)
    return nl.where(_signbit(y) != 0, -nl.abs(x), nl.abs(x))


def _pow(x, y):
    """``x ** y`` with IEEE pow's special cases."""
    x = _f(x)
    y = _f(y)
    y = y if y.dtype == x.dtype else y.to(x.dtype)
    ax = nl.abs(x)
    mag = nl.exp2(y * nl.log2(ax))
    y_int = nl.floor(y) == y
    y_odd = y_int & ((y - 2.0 * nl.floor(y * 0.5)) != 0) & (nl.abs(y) < 2.0 ** 24)
    neg = x < 0
    signed = nl.where(neg & y_odd, -mag, mag)
    zero = x == 0                 # exp2(y * -inf): 0 or inf, the sign of an odd power kept
    signed = nl.where(zero & y_odd, _copysign(mag, x), signed)
    out = nl.where(neg & ~y_int & (ax != float("inf")), float("nan"), signed)
    one = (y == 0) | (x == 1.0) | ((ax == 1.0) & (nl.abs(y) == float("inf")))
    return nl.where(one, 1.0, out).to(x.dtype)


_FUNCTIONS = {
    # the language's own ops
    "exp": nl.exp, "exp2": nl.exp2, "log": nl.log, "log2": nl.log2, "sqrt": nl.sqrt,
    "rsqrt": nl.rsqrt, "sin": nl.sin, "cos": nl.cos, "tanh": nl.tanh, "erf": nl.erf,
    "floor": nl.floor, "ceil": nl.ceil, "fabs": nl.abs, "abs": nl.abs, "fma": nl.fma,
    "fmax": nl.maximum, "fmin": nl.minimum, "fast_expf": nl.exp, "fast_logf": nl.log,
    "fast_log2f": nl.log2, "fast_exp2f": nl.exp2, "fast_sinf": nl.sin, "fast_cosf": nl.cos,
    "sqrt_rn": nl.sqrt, "exp2f": nl.exp2,
    # a few ops
    "trunc": _trunc, "rint": _rint, "nearbyint": _rint, "round": _round, "log1p": _log1p,
    "expm1": _expm1, "pow": _pow, "powf": _pow, "powi": _pow, "fast_powf": _pow,
    "signbit": _signbit, "copysign": _copysign,
    "isnan": lambda x: _int32(_f(x) != _f(x)),
    "isinf": lambda x: _int32(nl.abs(_f(x)) == float("inf")),
    "isfinited": lambda x: _int32(nl.abs(_f(x)) < float("inf")),
    "tan": lambda x: nl.sin(_f(x)) / nl.cos(_f(x)),
    "log10": lambda x: nl.log2(_f(x)) * (_math.log10(2.0)),
    "exp10": lambda x: nl.exp2(_f(x) * _math.log2(10.0)),
    "rcp_rn": lambda x: 1.0 / _f(x),
    "div_rn": lambda x, y: _f(x) / y, "fast_dividef": lambda x, y: _f(x) / y,
    "sigmoid": nl.sigmoid,
}


def _named(name, fn):
    """``fn`` as ``libdevice.<name>``: outside a kernel, an error naming it."""
    def call(*args):
        return fn(*args)
    call.__name__ = call.__qualname__ = f"extra.libdevice.{name}"
    call.__doc__ = f"libdevice.{name}: see npujit/triton/libdevice.py"
    return builtin(call)


libdevice = types.ModuleType("npujit.triton.language.extra.libdevice",
                             "libdevice's math functions on npujit (npujit/triton/libdevice.py)")
for _name, _fn in _FUNCTIONS.items():
    setattr(libdevice, _name, _named(_name, _fn))


def _missing(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"libdevice.{name} is not provided by npujit; it has "
                         f"{', '.join(sorted(_FUNCTIONS))}")


libdevice.__getattr__ = _missing

cuda = types.ModuleType("npujit.triton.language.extra.cuda", "tl.extra.cuda: its libdevice")
cuda.libdevice = libdevice
extra = types.ModuleType("npujit.triton.language.extra",
                         "tl.extra: libdevice (and cuda.libdevice), npujit/triton/libdevice.py")
extra.libdevice = libdevice
extra.cuda = cuda
extra.__path__ = []             # importable as a package: from ...extra import libdevice

for _mod, _name in ((extra, "extra"), (cuda, "extra.cuda"), (libdevice, "extra.libdevice")):
    sys.modules[f"npujit.triton.language.{_name}"] = _mod
sys.modules["npujit.triton.language.extra.cuda.libdevice"] = libdevice
