"""Affine offsets: an integer tile whose element ``i`` is ``base + Σ_d coefs[d]·i_d``.

Memory ops turn such offsets into ``base + i`` (``lower_memory._Index``), so LLVM sees
contiguous or constant-stride accesses, and the range check proves a whole tile in
bounds with one comparison (``range_check.tile``); ``row_gather.py`` splits gathered
rows into a row start plus affine columns.
"""
from __future__ import annotations

import re

from npujit.ir.ops import Kind

from .values import Val

_INT_LITERAL = re.compile(r"^i(?:8|16|32|64)\((-?\d+)\)$")


def _literal(v: Val):
    m = _INT_LITERAL.match(v.name) if v.kind == "scalar" else None
    return int(m.group(1)) if m else None


def affine(v: Val):
    """``(base, coefs)`` when element ``i`` of the integer tile ``v`` is
    ``base + Σ_d coefs[d]·i_d`` with ``base`` a loop-invariant int64 expression and
    ``coefs`` constants (sums, differences, casts and constant multiples of scalars and
    aranges); None otherwise.  The sum is taken in int64: it differs from the offsets'
    own wrapping arithmetic only where that wraps, and a wrapped offset is out of bounds."""
    n = len(v.shape)
    if not v.dtype.is_int:
        return None
    if v.kind == "scalar":
        return f"i64({v.name})", (0,) * n
    if v.kind == "iota":
        return v.name, v.strides
    if v.kind != "expr":
        return None
    if v.op is Kind.CAST:
        return affine(v.args[0]) if v.args[0].dtype.is_int else None
    if v.op in (Kind.ADD, Kind.SUB):
        a, b = affine(v.args[0]), affine(v.args[1])
        if a is None or b is None:
            return None
        sign = 1 if v.op is Kind.ADD else -1
        coefs = tuple(x + sign * y for x, y in zip(a[1], b[1]))
        if b[0] == "0":
            return a[0], coefs
        if a[0] == "0" and sign > 0:
            return b[0], coefs
        return f"{a[0]} {'+' if sign > 0 else '-'} ({b[0]})", coefs
    if v.op is Kind.MUL:
        for x, y in (v.args, v.args[::-1]):
            c, ax = _literal(y), affine(x)
            if c is not None and ax is not None:
                return f"({ax[0]}) * {c}", tuple(c * k for k in ax[1])
        a, b = affine(v.args[0]), affine(v.args[1])
        if a is not None and b is not None and not any(a[1]) and not any(b[1]):
            return f"({a[0]}) * ({b[0]})", (0,) * n
    return None
