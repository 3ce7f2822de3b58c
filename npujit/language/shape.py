"""Shape manipulation: ``reshape``, ``expand_dims``, ``trans``/``permute``, ``broadcast_to``,
``broadcast``, ``view``, and Triton's ``join``/``split``/``interleave``/``cat`` (built from
a select between two stacked copies, so every element is moved exactly)."""
from __future__ import annotations

from npujit.ir import Kind

from . import semantic as sem
from .core import builtin, pointer, tensor, unwrap_constexpr


def _shape_args(shape: tuple) -> tuple:
    """A shape given as one tuple/list or as separate ints (Triton takes both)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(unwrap_constexpr(s) for s in shape)


@builtin
def reshape(x: tensor, *shape, can_reorder: bool = False) -> tensor:
    """Row-major reshape to ``shape`` (same number of elements), given as a tuple or as
    ints; ``can_reorder`` is accepted (the order is always kept).

    Example::

        y = nl.reshape(x, (BLOCK_M * BLOCK_N,))
    """
    return sem.reshape(sem.to_tensor(x), _shape_args(shape))


view = reshape


@builtin
def ravel(x: tensor, can_reorder: bool = False) -> tensor:
    """``x`` as a 1-D tile, row-major.

    Example::

        flat = nl.ravel(tile)            # (M, N) -> (M * N,)
    """
    x = sem.to_tensor(x)
    return sem.reshape(x, (x.numel,))


@builtin
def expand_dims(x: tensor, axis) -> tensor:
    """Insert a size-1 axis at ``axis`` (or at each axis of a tuple).

    Example::

        col = nl.expand_dims(rowmax, 1)   # (M,) -> (M, 1)
    """
    if isinstance(x, pointer):      # a pointer tile: its offsets get the axes
        return pointer(x.base, expand_dims(0 if x.offset is None else x.offset, axis))
    x = sem.to_tensor(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shape = list(x.shape)
    rank = len(shape) + len(axes)
    normalized = [_new_axis(a, rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"expand_dims: duplicate axes, normalized axes = {normalized}; "
                         "give each new axis its own position")
    for a in sorted(normalized):
        shape.insert(a, 1)
    return sem.reshape(x, tuple(shape))


def _new_axis(a, rank: int) -> int:
    """Axis ``a`` of ``expand_dims``'s result (rank ``rank``), counted from 0.  A value out
    of range is a ``ValueError``, as in Triton: the trace reports it at the user's line."""
    a = unwrap_constexpr(a)
    if isinstance(a, bool) or not isinstance(a, int):
        raise sem.error(f"expand_dims: an axis must be a constant int, got {a!r}")
    if not -rank <= a < rank:
        raise ValueError(f"expand_dims: invalid axis {a} for a result of rank {rank}: "
                         f"expected {-rank} <= axis < {rank}")
    return a % rank


@builtin
def trans(x: tensor, *dims) -> tensor:
    """Permute axes; with no ``dims``, swap the last two (a 2-D transpose).

    Example::

        bt = nl.trans(b)          # (K, N) -> (N, K)
    """
    x = sem.to_tensor(x)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if not dims:
        if x.ndim < 2:
            return x
        dims = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    if sorted(dims) != list(range(x.ndim)):
        raise sem.error(f"trans: {list(dims)} is not a permutation of the axes of a "
                        f"tile of shape {list(x.shape)}")
    if tuple(dims) == tuple(range(x.ndim)):
        return x
    return sem.emit(Kind.TRANS, [x], {"perm": tuple(dims)})


@builtin
def broadcast_to(x: tensor, *shape) -> tensor:
    """Broadcast ``x`` to ``shape`` (numpy rules), given as a tuple or as ints.

    Example::

        b = nl.broadcast_to(bias[None, :], (BLOCK_M, BLOCK_N))
    """
    return sem.broadcast_to(sem.to_tensor(x), _shape_args(shape))


@builtin
def permute(x: tensor, *dims) -> tensor:
    """Reorder the axes of ``x`` to ``dims`` (a permutation; Triton's ``tl.permute``).

    Example::

        y = nl.permute(x, (2, 0, 1))      # (A, B, C) -> (C, A, B)
    """
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if not dims:
        raise sem.error("permute needs the new order of the axes, e.g. nl.permute(x, (1, 0))")
    return trans(x, *dims)


@builtin
def broadcast(a, b):
    """``a`` and ``b`` broadcast to their common shape (numpy rules), as a pair.

    Example::

        a2, b2 = nl.broadcast(row[None, :], col[:, None])
    """
    a, b = sem.to_tensor(a), sem.to_tensor(b)
    shape = sem.broadcast_shapes(a.shape, b.shape)
    return sem.broadcast_to(a, shape), sem.broadcast_to(b, shape)


def _arange_along(n: int, axis: int, rank: int) -> tensor:
    """``0..n-1`` (i32) laid along ``axis`` of a rank-``rank`` tile, size 1 elsewhere."""
    lanes = sem.emit(Kind.ARANGE, [], {"start": 0, "end": n})
    return sem.reshape(lanes, tuple(n if d == axis else 1 for d in range(rank)))


def _pick(a: tensor, b: tensor, axis: int, shape: tuple) -> tensor:
    """``a`` where the index along ``axis`` of ``shape`` (size 2) is 0, else ``b``."""
    first = sem.compare("eq", _arange_along(2, axis, len(shape)), 0)
    a, b = sem.promote_pair(a, b)
    return sem.where(sem.broadcast_to(first, shape), sem.broadcast_to(a, shape),
                     sem.broadcast_to(b, shape))


@builtin
def join(a, b) -> tensor:
    """Stack two tiles of one shape along a new last axis of size 2.

    Example::

        pairs = nl.join(re, im)          # (N,), (N,) -> (N, 2)
    """
    a, b = sem.to_tensor(a), sem.to_tensor(b)
    shape = sem.broadcast_shapes(a.shape, b.shape)
    r = len(shape)
    a, b = sem.reshape(sem.broadcast_to(a, shape), shape + (1,)), \
        sem.reshape(sem.broadcast_to(b, shape), shape + (1,))
    return _pick(a, b, r, shape + (2,))


@builtin
def interleave(a, b) -> tensor:
    """Interleave two tiles along their last axis: ``a0 b0 a1 b1 ...``.

    Example::

        z = nl.interleave(evens, odds)   # (N,), (N,) -> (2N,); two scalars -> (2,)
    """
    j = join(a, b)
    if j.ndim == 1:                      # two scalars: their join is already [a, b]
        return j
    return sem.reshape(j, j.shape[:-2] + (j.shape[-2] * 2,))


@builtin
def split(a):
    """The two halves of a tile whose last axis has size 2 (the inverse of ``join``).

    Example::

        re, im = nl.split(pairs)          # (N, 2) -> (N,), (N,)
    """
    a = sem.to_tensor(a)
    if not a.shape or a.shape[-1] != 2:
        raise sem.error(f"split needs a tile whose last axis has size 2, got shape {list(a.shape)}")
    from .reduction import max as _max   # a select then a max over two lanes, the other one
    d = a.dtype                          # NaN (which max skips) or the lowest int: exact
    low = sem.to_tensor(float("nan") if d.is_float else (False if d.is_bool else -(1 << (d.bits - 1))), d)
    picked = []
    for half in (0, 1):
        keep = sem.compare("eq", _arange_along(2, a.ndim - 1, a.ndim), half)
        x = sem.where(sem.broadcast_to(keep, a.shape), a, sem.broadcast_to(low, a.shape))
        picked.append(_max(x, axis=a.ndim - 1))
    return picked[0], picked[1]


@builtin
def cat(a, b, can_reorder: bool = False) -> tensor:
    """Concatenate two tiles of one shape along axis 0, in order (Triton's ``tl.cat``; the
    order it may change with ``can_reorder=True`` is kept here).

    Example::

        z = nl.cat(x, y)                 # (N,), (N,) -> (2N,)
    """
    a, b = sem.to_tensor(a), sem.to_tensor(b)
    if a.shape != b.shape or not a.shape:
        raise sem.error(f"cat needs two tiles of one shape, got {list(a.shape)} and {list(b.shape)}")
    shape = (2,) + tuple(a.shape)
    stacked = _pick(sem.reshape(a, (1,) + a.shape), sem.reshape(b, (1,) + b.shape), 0, shape)
    return sem.reshape(stacked, (2 * a.shape[0],) + tuple(a.shape[1:]))
