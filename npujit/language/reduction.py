"""Reductions, scans and selection along an axis: ``sum max min argmax argmin prod``,
``cumsum``, ``sort``, ``topk``, ``softmax``, ``histogram``.

Float sums accumulate in f32 and round once to the input dtype; small ints widen to i32.
"""
from __future__ import annotations

import builtins

from npujit.ir import Kind
from npujit.ir import types as T

from . import semantic as sem
from .core import builtin, tensor, unwrap_constexpr


def _reduce(kind: str, x, axis, keep_dims: bool, what: str) -> tensor:
    x = sem.to_tensor(x)
    axis = unwrap_constexpr(axis)
    if x.ndim == 0:
        raise sem.error(f"{what} needs a tile, got a scalar")
    if axis is None:
        flat = sem.reshape(x, (x.numel,))
        out = sem.emit(Kind.REDUCE, [flat], {"kind": kind, "axis": 0})
        return sem.reshape(out, (1,) * x.ndim) if keep_dims else out
    axis = sem.normalize_axis(x, axis, what)
    if x.dtype.is_bool and kind in ("max", "min"):
        x = sem.cast(x, T.int32)
    out = sem.emit(Kind.REDUCE, [x], {"kind": kind, "axis": axis})
    if keep_dims:
        out = sem.reshape(out, x.shape[:axis] + (1,) + x.shape[axis + 1:])
    return out


@builtin
def sum(x, axis=None, keep_dims: bool = False, dtype=None) -> tensor:
    """Sum along ``axis`` (all axes when None).  With ``dtype`` (Triton's keyword) the tile
    is cast to it first and the sum is of that dtype: ints wrap at its width, a bool sum
    is the parity (i1 addition is xor).

    Example::

        row_sum = nl.sum(e, axis=1)
    """
    dtype = unwrap_constexpr(dtype)
    if dtype is None:
        return _reduce("sum", x, axis, keep_dims, "sum")
    x = sem.cast(sem.to_tensor(x), dtype)
    if dtype.is_bool:
        from .combine import xor_sum
        return xor_sum(x, axis, keep_dims)
    return sem.cast(_reduce("sum", x, axis, keep_dims, "sum"), dtype)


@builtin
def prod(x, axis=None, keep_dims: bool = False) -> tensor:
    """Product along ``axis``.

    Example::

        p = nl.prod(x, axis=0)
    """
    return _reduce("prod", x, axis, keep_dims, "prod")


def _with_index(kind: str, x, axis, keep_dims: bool):
    """``max``/``min`` with ``return_indices``: the value at the returned index, so a lane
    with a NaN gives NaN and the index of its first NaN (as argmax does)."""
    x = sem.to_tensor(x)
    v = _reduce(kind, x, axis, keep_dims, kind)
    i = _reduce("arg" + kind, x, axis, keep_dims, kind)
    if x.dtype.is_float:
        has_nan = _reduce("max", sem.compare("ne", x, x), axis, keep_dims, kind)
        v = sem.where(sem.compare("ne", has_nan, 0), sem.constant(float("nan"), x.dtype), v)
    return v, i


@builtin
def max(x, axis=None, return_indices: bool = False,
        return_indices_tie_break_left: bool = True, keep_dims: bool = False):
    """Maximum along ``axis``; NaN is skipped, as in Triton (np.fmax: a lane gives NaN
    only when all of it is NaN).  With ``return_indices`` also the argmax (the first
    index of a tie, which also satisfies Triton's unspecified
    ``return_indices_tie_break_left=False``), and the value is the one at that index: NaN
    when the lane has a NaN, as argmax points at the first NaN.

    Example::

        m = nl.max(x, axis=1)
    """
    if return_indices:
        return _with_index("max", x, axis, keep_dims)
    return _reduce("max", x, axis, keep_dims, "max")


@builtin
def min(x, axis=None, return_indices: bool = False,
        return_indices_tie_break_left: bool = True, keep_dims: bool = False):
    """Minimum along ``axis``; NaN is skipped (np.fmin).  With ``return_indices`` also the
    argmin (the first index of a tie, whatever ``return_indices_tie_break_left`` says),
    and the value at it (NaN when the lane has a NaN).

    Example::

        lo = nl.min(x, axis=0)
    """
    if return_indices:
        return _with_index("min", x, axis, keep_dims)
    return _reduce("min", x, axis, keep_dims, "min")


@builtin
def argmax(x, axis, tie_break_left: bool = True, keep_dims: bool = False) -> tensor:
    """i32 index of the first maximum along ``axis`` (the first NaN if any).

    Example::

        best = nl.argmax(logits, axis=1)
    """
    return _reduce("argmax", x, axis, keep_dims, "argmax")


@builtin
def argmin(x, axis, tie_break_left: bool = True, keep_dims: bool = False) -> tensor:
    """i32 index of the first minimum along ``axis``.

    Example::

        i = nl.argmin(d, axis=0)
    """
    return _reduce("argmin", x, axis, keep_dims, "argmin")


@builtin
def cumsum(x, axis: int = 0, reverse: bool = False) -> tensor:
    """Inclusive prefix sum along ``axis`` (from the last element when ``reverse``).

    Example::

        offsets = nl.cumsum(counts, axis=0) - counts
    """
    x = sem.to_tensor(x)
    if x.ndim == 0:
        raise sem.error("cumsum needs a tile, got a scalar")
    axis = unwrap_constexpr(axis)
    axis = sem.normalize_axis(x, axis, "cumsum")
    if reverse:
        from .combine import reverse_cumsum
        return reverse_cumsum(x, axis)
    return sem.emit(Kind.SCAN, [x], {"kind": "sum", "axis": axis})


@builtin
def sort(x, axis: int = -1, descending: bool = False) -> tensor:
    """Sorted values along ``axis`` (NaN last ascending; descending is the exact reverse).

    Example::

        s = nl.sort(x, descending=True)
    """
    x = sem.to_tensor(x)
    if x.ndim == 0:
        raise sem.error("sort needs a tile, got a scalar")
    axis = sem.normalize_axis(x, axis, "sort")
    return sem.emit(Kind.SORT, [x], {"axis": axis, "descending": bool(descending)})


@builtin
def topk(x, k: int, axis: int = -1):
    """The ``k`` largest values along ``axis`` and their i32 indices, largest first
    (ties: lower index first; NaN ranks highest).

    Example::

        w, idx = nl.topk(logits, 2, axis=1)
    """
    x = sem.to_tensor(x)
    k = unwrap_constexpr(k)
    if isinstance(k, bool) or not isinstance(k, int):
        raise sem.error(f"topk: k must be a constant int, got {k!r}")
    if x.ndim == 0:
        raise sem.error("topk needs a tile, got a scalar")
    axis = sem.normalize_axis(x, axis, "topk")
    if not 1 <= k <= x.shape[axis]:
        raise sem.error(f"topk: k={k} must be between 1 and the size of axis {axis} "
                        f"({x.shape[axis]}) of the tile {list(x.shape)}")
    return sem.emit(Kind.TOPK, [x], {"k": k, "axis": axis}, nresults=2)


@builtin
def gather(src, index, axis: int) -> tensor:
    """Elements of ``src`` picked along ``axis`` by the int tile ``index`` (Triton's
    ``tl.gather``, numpy's ``take_along_axis``): ``out[i][j] = src[index[i][j]][j]`` for
    ``axis=0``.  ``index`` has ``src``'s rank and its sizes on every other axis; the result
    has ``index``'s shape and ``src``'s dtype.  An index outside ``[0, src.shape[axis])``
    is an ``OutOfBoundsError`` naming the line.

    Example::

        picked = nl.gather(scores, ids, axis=1)      # [T, E], [T, K] -> [T, K]
    """
    src, index = sem.to_tensor(src), sem.to_tensor(index)
    axis = unwrap_constexpr(axis)
    if src.ndim == 0:
        raise sem.error("gather needs a source tile, got a scalar")
    if not index.dtype.is_int:
        raise sem.error(f"gather: index must be an int tile, got {index.dtype!r}")
    axis = sem.normalize_axis(src, axis, "gather")
    if index.ndim != src.ndim or any(a != b for d, (a, b) in
                                     enumerate(zip(index.shape, src.shape)) if d != axis):
        raise sem.error(f"gather: index shape {list(index.shape)} must have the source's rank "
                        f"and its sizes {list(src.shape)} on every axis but {axis}")
    return sem.emit(Kind.GATHER, [src, index], {"axis": axis})


@builtin
def histogram(x, num_bins, mask=None) -> tensor:
    """How many lanes of the 1-D int tile ``x`` hold each value ``0 .. num_bins - 1`` (bins
    of width 1 from 0, as Triton's ``tl.histogram``): an i32 tile ``[num_bins]``.  Values
    outside ``[0, num_bins)`` and lanes where ``mask`` is false are not counted.  It is a
    compare of every lane with every bin and a sum: ``len(x) * num_bins`` work.

    Example::

        counts = nl.histogram(expert_ids, NUM_EXPERTS)      # tokens per expert
    """
    from .creation import arange
    x = sem.to_tensor(x)
    num_bins = unwrap_constexpr(num_bins)
    if x.ndim != 1 or not x.dtype.is_int:
        raise sem.error(f"histogram needs a 1-D int tile, got {x.dtype} {list(x.shape)}")
    if isinstance(num_bins, bool) or not isinstance(num_bins, int) or num_bins <= 0:
        raise sem.error(f"histogram: num_bins must be a positive constant int, got {num_bins!r}")
    hit = x[:, None] == arange(0, num_bins)[None, :]
    if mask is not None:
        mask = sem.to_tensor(mask)
        hit = hit & (mask[:, None] if mask.ndim == 1 else mask)
    return _reduce("sum", sem.cast(hit, T.int32), 0, False, "histogram")


@builtin
def softmax(x, axis: int = -1) -> tensor:
    """Numerically stable softmax along ``axis``; 16-bit inputs compute in f32 and round once.

    Example::

        p = nl.softmax(scores, axis=1)
    """
    x = sem.to_tensor(x)
    dt = x.dtype
    if not dt.is_float:
        raise sem.error(f"softmax needs a float tile, got {dt}")
    xf = sem.cast(x, T.float32)
    axis = sem.normalize_axis(x, axis, "softmax")
    m = _reduce("max", xf, axis, True, "softmax")
    e = sem.unary(Kind.EXP, xf - m)
    s = _reduce("sum", e, axis, True, "softmax")
    return sem.cast(e / s, dt)


_ = builtins  # the module shadows sum/max/min on purpose, as Triton's language does
