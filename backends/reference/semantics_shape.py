"""Reference semantics of the shape ops: splat, broadcast, reshape, trans — as numpy
(docs/semantics.md, "Shape ops") — and of the AIC <-> AIV hand-off (the identity).

Results may be numpy views of their operand: the interpreter treats every value as
immutable, so sharing memory between values is safe.

Example::

    >>> import numpy as np
    >>> from npujit.ir import Kind
    >>> class Op: attrs = {"shape": (2, 3)}
    >>> SEMANTICS_SHAPE[Kind.SPLAT](None, Op, np.array(7, np.int8))
    array([[7, 7, 7],
           [7, 7, 7]], dtype=int8)
"""
from __future__ import annotations

import numpy as np

from npujit.ir import Kind


def splat(ctx, op, x):
    """A tile of ``shape`` filled with the scalar ``x``."""
    return np.full(tuple(op.attrs["shape"]), x, dtype=x.dtype)


def broadcast(ctx, op, x):
    """Size-1 dims stretched to ``shape`` (same rank)."""
    return np.broadcast_to(x, tuple(op.attrs["shape"]))


def reshape(ctx, op, x):
    """Row-major reshape to ``shape``."""
    return np.reshape(x, tuple(op.attrs["shape"]))


def trans(ctx, op, x):
    """Axes permuted by ``perm`` (result axis i is operand axis perm[i])."""
    return np.transpose(x, tuple(op.attrs["perm"]))


def handoff(ctx, op, x):
    """The value itself: an AIC <-> AIV hand-off moves a tile, it does not change it."""
    return x


SEMANTICS_SHAPE = {
    Kind.HANDOFF: handoff,
    Kind.SPLAT: splat,
    Kind.BROADCAST: broadcast,
    Kind.RESHAPE: reshape,
    Kind.TRANS: trans,
}
