"""Reference semantics of reductions, scans, sort, topk and gather (docs/semantics.md,
"Reductions, scans, selection").

Accumulation rules: floats accumulate in f32 (f64 in f64) and round once to the input dtype; i1, i8
and i16 sums/products widen to i32; i32/i64 wrap in their own type (numpy would widen
them to i64 by default, so the accumulator dtype is always passed explicitly).

Example::

    >>> import numpy as np
    >>> from npujit.ir import Kind
    >>> class Op: attrs = {"kind": "argmax", "axis": 0}
    >>> SEMANTICS_REDUCE[Kind.REDUCE](None, Op, np.array([1.0, np.nan, 5.0], np.float32))
    array(1, dtype=int32)
"""
from __future__ import annotations

import numpy as np

from npujit.errors import OutOfBoundsError
from npujit.ir import Kind
from npujit.ir.ops import reduce_result_dtype
from npujit.ir.types import dtype_of_numpy

from .numerics import F32, I32, is_float, widen


def _accumulator(x: np.ndarray, kind: str) -> np.dtype:
    """The dtype sum/prod/scan accumulate in: f32 for floats (f64 for f64), else the result
    dtype."""
    if x.dtype == np.float64:
        return x.dtype
    if is_float(x.dtype):
        return F32
    return reduce_result_dtype(kind, dtype_of_numpy(x.dtype)).np


def _arg_extreme(x: np.ndarray, axis: int, find) -> np.ndarray:
    """Index of the first extreme along ``axis``; if the lane has a NaN, the first NaN."""
    x = widen(x)
    idx = find(x, axis=axis)
    if is_float(x.dtype):
        nan = np.isnan(x)
        idx = np.where(nan.any(axis=axis), np.argmax(nan, axis=axis), idx)
    return np.asarray(idx).astype(I32)


def reduce(ctx, op, x):
    """Remove ``axis`` by sum / prod / max / min / argmax / argmin."""
    kind, axis = op.attrs["kind"], op.attrs["axis"]
    if kind in ("sum", "prod"):
        f = np.sum if kind == "sum" else np.prod
        acc = _accumulator(x, kind)
        out_dtype = x.dtype if is_float(x.dtype) else acc
        return np.asarray(f(x.astype(acc), axis=axis, dtype=acc)).astype(out_dtype)
    if kind in ("max", "min"):
        # NaN-ignoring, as Triton's (a fold of maximum): NaN only for a lane of NaNs
        f = np.fmax if kind == "max" else np.fmin
        return np.asarray(f.reduce(widen(x), axis=axis)).astype(x.dtype)
    return _arg_extreme(x, axis, np.argmax if kind == "argmax" else np.argmin)


def scan(ctx, op, x):
    """Inclusive prefix sum along ``axis``: each output is the unrounded f32 (or widened
    int) running sum, converted to the result dtype."""
    acc = _accumulator(x, "sum")
    out_dtype = x.dtype if is_float(x.dtype) else acc
    return np.cumsum(x.astype(acc), axis=op.attrs["axis"], dtype=acc).astype(out_dtype)


def sort(ctx, op, x):
    """Ascending (NaN last, equal values keep their order); descending is the exact
    reverse of ascending along the axis."""
    axis = op.attrs["axis"]
    # Stable, so which of -0.0 and 0.0 comes first is defined (their input order).
    out = np.sort(widen(x), axis=axis, kind="stable").astype(x.dtype)
    return np.flip(out, axis=axis) if op.attrs.get("descending", False) else out


def _descending_key(x: np.ndarray) -> np.ndarray:
    """A key whose ascending order is ``x``'s descending order, for non-NaN values.

    Negation would overflow INT_MIN, so ints (and bools) use bitwise not (~x = -x - 1,
    strictly decreasing).
    """
    if is_float(x.dtype):
        return np.where(np.isnan(x), 0, -x)     # NaN lanes are ordered by the NaN key
    return np.invert(x)


def topk(ctx, op, x):
    """The k largest along ``axis``, largest first; ties go to the lower index first; NaN
    ranks above every number.  Returns (values, i32 indices)."""
    k, axis = op.attrs["k"], op.attrs["axis"]
    last = np.moveaxis(widen(x), axis, -1)
    not_nan = ~np.isnan(last) if is_float(last.dtype) else np.ones(last.shape, bool)
    # lexsort is stable and sorts by its last key first: NaNs (not_nan False) first,
    # then larger values first; equal keys keep index order, so ties go to the lower index.
    order = np.lexsort((_descending_key(last), not_nan), axis=-1)[..., :k]
    values = np.take_along_axis(np.moveaxis(x, axis, -1), order, axis=-1)
    return np.moveaxis(values, -1, axis), np.moveaxis(order.astype(I32), -1, axis)


def gather(ctx, op, src, index):
    """``out[..., j, ...] = src[..., index[..., j, ...], ...]`` along ``axis`` (numpy's
    ``take_along_axis``); an index outside ``[0, src.shape[axis])`` is an error."""
    axis = op.attrs["axis"]
    n = src.shape[axis]
    ix = index.astype(np.int64)
    bad = (ix < 0) | (ix >= n)
    if bad.any():
        lane = tuple(int(i) for i in np.argwhere(bad)[0])
        raise OutOfBoundsError(f"kernel '{ctx.kernel}', {op.kind.value} at {op.loc}, program "
                               f"{ctx.pid}: gather index {int(ix[lane])} at lane {lane} is "
                               f"outside [0, {n}) on axis {axis} of the source tile")
    return np.take_along_axis(src, ix, axis=axis)


def _lanes(xs, axis: int) -> list:
    """Each input with ``axis`` last, as a (lanes, n) array."""
    return [np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis]) for x in xs]


def reduce_combine(ctx, op, *xs):
    """The combine function (the op's region) folded along ``axis``, first to last:
    ``acc = x[0]``, then ``acc = combine(*acc, *x[i])``; one result per input."""
    axis = op.attrs["axis"]
    lanes = _lanes(xs, axis)
    rows, n = lanes[0].shape
    outs = [np.empty(rows, x.dtype) for x in xs]
    for r in range(rows):
        acc = tuple(np.asarray(lane[r, 0]) for lane in lanes)
        for i in range(1, n):
            acc = ctx.run_block(op.body, (*acc, *(np.asarray(lane[r, i]) for lane in lanes)))
        for out, a in zip(outs, acc):
            out[r] = a
    shape = xs[0].shape[:axis] + xs[0].shape[axis + 1:]
    return tuple(out.reshape(shape) for out in outs)


def scan_combine(ctx, op, *xs):
    """Inclusive scan with the combine function along ``axis``: ``out[0] = x[0]``, then
    ``out[i] = combine(*out[i-1], *x[i])``; with ``reverse`` from the last element,
    ``out[i] = combine(*out[i+1], *x[i])`` (the accumulated value stays first)."""
    axis = op.attrs["axis"]
    lanes = _lanes(xs, axis)
    rows, n = lanes[0].shape
    outs = [np.empty_like(lane) for lane in lanes]
    order = range(n - 1, -1, -1) if op.attrs["reverse"] else range(n)
    for r in range(rows):
        acc = None
        for i in order:
            nxt = tuple(np.asarray(lane[r, i]) for lane in lanes)
            acc = nxt if acc is None else ctx.run_block(op.body, (*acc, *nxt))
            for out, a in zip(outs, acc):
                out[r, i] = a
    moved = np.moveaxis(xs[0], axis, -1).shape
    return tuple(np.moveaxis(out.reshape(moved), -1, axis) for out in outs)


def map_elementwise(ctx, op, *xs):
    """The function's region run on each group of ``pack`` consecutive elements (row-major)
    of the inputs in turn: the group's scalars of each input, then it yields ``pack``
    scalars of each result."""
    p = op.attrs.get("pack", 1)
    flat = [x.reshape(-1) for x in xs]
    outs = [np.empty(flat[0].size, r.type.dtype.np) for r in op.results]
    for g in range(0, flat[0].size, p):
        ys = ctx.run_block(op.body, tuple(np.asarray(x[g + k]) for x in flat for k in range(p)))
        for r, out in enumerate(outs):
            for k in range(p):
                out[g + k] = ys[r * p + k]
    return tuple(out.reshape(xs[0].shape) for out in outs)


SEMANTICS_REDUCE = {
    Kind.REDUCE: reduce,
    Kind.SCAN: scan,
    Kind.SORT: sort,
    Kind.TOPK: topk,
    Kind.GATHER: gather,
    Kind.REDUCE_COMBINE: reduce_combine,
    Kind.SCAN_COMBINE: scan_combine,
    Kind.MAP_ELEMENTWISE: map_elementwise,
}
