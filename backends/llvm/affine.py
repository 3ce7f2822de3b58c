"""Affine integer tiles: ``value[i_0, .., i_r-1] = base + sum_d stride_d * i_d``.

An offset tile built from ``arange``, splats and scalar arithmetic (``pid * BLOCK +
arange``, ``rows[:, None] * stride + cols[None, :]``) is affine in the lane index, so
the lowest and highest offset of its lanes are at two corners of the box, found without
a pass over the lanes (lower_memory._span).  Lazy values (values.Lazy) carry their form
in ``affine``: ``(base, strides)``, i64 operands written where the lazy value is made,
one stride per axis.

The form is exact: it is the value's integer arithmetic carried out in i64.  The tile
itself is computed in its own type (i32 wraps); where the two differ the offsets are
outside what an i32 reaches, and the range check, which compares the exact form with
the argument's length, scans the lanes instead (a tile's values equal the exact ones
modulo 2**32, so exact values inside the argument are the tile's values).

Example::

    >>> from npujit.ir import Kind
    >>> w = Writer()
    >>> combine(w, Kind.ADD, ("%b", ("1",)), ("%p", ("0",)))
    ('%v.1', ('1',))
"""
from __future__ import annotations

from npujit.ir import Kind

from .ir_text import Writer


def _add(w: Writer, a: str, b: str) -> str:
    if a == "0":
        return b
    if b == "0":
        return a
    return w.op("add i64", a, b)


def _mul(w: Writer, a: str, b: str) -> str:
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    return w.op("mul i64", a, b)


def uniform(form) -> bool:
    return form is not None and all(s == "0" for s in form[1])


def combine(w: Writer, kind: Kind, a, b):
    """The form of ``a <kind> b`` (ADD, SUB; MUL when one side is uniform), or None."""
    if a is None or b is None or len(a[1]) != len(b[1]):
        return None
    if kind is Kind.ADD:
        return _add(w, a[0], b[0]), tuple(_add(w, x, y) for x, y in zip(a[1], b[1]))
    if kind is Kind.SUB:
        neg = (w.op("sub i64", "0", b[0]) if b[0] != "0" else "0",
               tuple(w.op("sub i64", "0", s) if s != "0" else "0" for s in b[1]))
        return combine(w, Kind.ADD, a, neg)
    if kind is Kind.MUL:
        if uniform(b):
            a, b = b, a
        if not uniform(a):
            return None
        c = a[0]
        return _mul(w, b[0], c), tuple(_mul(w, s, c) for s in b[1])
    return None


def broadcast(form, shape_from, shape_to):
    """The form of a broadcast view (stretched axes, and leading new ones, stride 0)."""
    if form is None:
        return None
    lead = len(shape_to) - len(shape_from)
    strides = ["0"] * lead + [("0" if n == 1 else s) for s, n in zip(form[1], shape_from)]
    return form[0], tuple(strides)


def reshape(w: Writer, form, shape_from, shape_to):
    """The form after a row-major reshape: from one axis (or axes of size 1 apart from
    one), else None."""
    if form is None:
        return None
    kept = [s for s, n in zip(form[1], shape_from) if n != 1]
    if len(kept) > 1:
        return None
    s = kept[0] if kept else "0"
    from npujit.ir.types import row_major
    return form[0], tuple(_mul(w, s, str(r)) for r in row_major(shape_to))


def permute(form, perm):
    if form is None:
        return None
    return form[0], tuple(form[1][p] for p in perm)


def extremes(w: Writer, form, shape) -> tuple:
    """``(lo, hi)``: the smallest and largest value over the tile (i64 operands).  An
    extent of ``shape`` may be an i64 operand (at least 1) instead of an int."""
    lo = hi = form[0]
    for s, n in zip(form[1], shape):
        if s == "0" or n == 1:
            continue
        span = _mul(w, s, str(n - 1) if isinstance(n, int) else w.op("sub i64", n, "1"))
        neg = w.op("icmp slt i64", span, "0")
        lo = _add(w, lo, w.op("select i1", neg, f"i64 {span}", "i64 0"))
        hi = _add(w, hi, w.op("select i1", neg, "i64 0", f"i64 {span}"))
    return lo, hi
