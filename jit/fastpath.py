"""The warm launch path: a binder generated per kernel signature, and per-specialisation
argument plans, so a cached launch costs a few microseconds of Python.

The binder is a generated function with the kernel's own parameter list, so Python binds
positional and keyword arguments; it returns a cheap key (array dtype/rank/contiguity/alignment/writeability,
scalar types -- an int as ``int`` when it fits in 32 bits, ``WIDE_INT`` otherwise, as the
specialisation key types it i32 or i64 --, constexpr values) and the values in parameter
order.  Anything unusual
(a torch tensor, a bad argument, a first launch) takes the slow path in ``kernel.py``,
which validates with clear messages and fills the fast table.

Example::

    >>> bind = make_binder(["x_ptr", "n", "BLOCK"], {"BLOCK"}, {})
    >>> key, vals = bind(np.zeros(4, np.float32), 4, BLOCK=4)
"""
from __future__ import annotations

import numpy as np

SLOW = object()   # a key part that never matches: forces the slow path
WIDE_INT = object()   # the key part of an int outside int32 (an i64 argument)
_NODEFAULT = object()
_ndarray = np.ndarray


def array_key(a):
    """Key part of one runtime argument (numpy arrays and plain scalars only)."""
    t = type(a)
    if t is _ndarray:
        f = a.flags      # misaligned and read-only arrays get keys of their own (checked)
        return (a.dtype, a.ndim, f.c_contiguous, f.aligned, f.writeable)
    if t is int:
        return t if -2147483648 <= a <= 2147483647 else WIDE_INT
    if t is float or t is bool or a is None:
        return t
    return SLOW


def make_binder(params, constexpr_params, defaults):
    """A function ``bind(*args, **kwargs) -> (key, values)`` for this parameter list."""
    sig, parts = [], []
    env = {"_k": array_key, "_NODEF": _NODEFAULT}
    for i, p in enumerate(params):
        if p in defaults:
            env[f"_d{i}"] = defaults[p]
            sig.append(f"{p}=_d{i}")
        else:
            sig.append(p)
        parts.append(p if p in constexpr_params else f"_k({p})")
    src = (f"def bind({', '.join(sig)}):\n"
           f"    return {_tuple(parts)}, {_tuple(params)}\n")
    exec(compile(src, "<npujit binder>", "exec"), env)
    return env["bind"]


def _tuple(items) -> str:
    """Python source of a tuple of ``items`` (``()`` for none: a kernel with no parameters)."""
    return f"({', '.join(items)},)" if items else "()"


def _int64(v):
    if -9223372036854775808 <= v <= 9223372036854775807:
        return v
    raise OverflowError(f"integer {v} does not fit in 64 bits")


def make_plan(sigs, runtime_index):
    """Per runtime argument: its position and how to turn it into what backends take."""
    plan = []
    for i in runtime_index:
        s = sigs[i]
        if s[0] == "A":
            conv = _ravel if s[3] else None   # strided arrays go through binder.flat_view
        elif s[1] == "i64":
            conv = _int64
        elif s[1] == "i32":
            conv = int        # the key already says it fits
        elif s[1] == "i1":
            conv = bool
        else:
            conv = float
        plan.append((i, conv))
    return plan


def _ravel(a):
    return a.reshape(-1)
