"""Shape manipulation: ``reshape``, ``expand_dims``, ``trans``/``permute``, ``broadcast_to``,
``broadcast``, ``view``."""
from __future__ import annotations

from npujit.ir import Kind

from . import semantic as sem
from .core import builtin, tensor


@builtin
def reshape(x: tensor, shape) -> tensor:
    """Row-major reshape to ``shape`` (same number of elements).

    Example::

        y = nl.reshape(x, (BLOCK_M * BLOCK_N,))
    """
    return sem.reshape(sem.to_tensor(x), tuple(shape))


view = reshape


@builtin
def expand_dims(x: tensor, axis) -> tensor:
    """Insert a size-1 axis at ``axis`` (or at each axis of a tuple).

    Example::

        col = nl.expand_dims(rowmax, 1)   # (M,) -> (M, 1)
    """
    x = sem.to_tensor(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shape = list(x.shape)
    rank = len(shape) + len(axes)
    for a in sorted(a % rank if isinstance(a, int) and -rank <= a < rank else
                    _bad_axis(a, rank) for a in axes):
        shape.insert(a, 1)
    return sem.reshape(x, tuple(shape))


def _bad_axis(a, rank):
    raise sem.error(f"expand_dims: axis {a!r} out of range for the result rank {rank}")


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
def broadcast_to(x: tensor, shape) -> tensor:
    """Broadcast ``x`` to ``shape`` (numpy rules).

    Example::

        b = nl.broadcast_to(bias[None, :], (BLOCK_M, BLOCK_N))
    """
    return sem.broadcast_to(sem.to_tensor(x), tuple(shape))


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
