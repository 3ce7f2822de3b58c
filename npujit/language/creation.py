"""Program ids and tile creation: ``program_id``, ``num_programs``, ``arange``, ``zeros``,
``full``, ``zeros_like``, ``full_like``, ``cdiv``."""
from __future__ import annotations

from npujit.ir import Kind
from npujit.ir import types as T

from . import semantic as sem
from .core import builtin, constexpr, tensor, unwrap_constexpr


def _const_int(x, what: str) -> int:
    x = unwrap_constexpr(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise sem.error(f"{what} must be a constant int (a literal or a constexpr parameter), "
                        f"got {x!r}")
    return x


def _shape(shape, what: str) -> tuple:
    if isinstance(shape, (int, constexpr)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise sem.error(f"{what}: shape must be a tuple of constant ints, got {shape!r}")
    out = tuple(_const_int(s, f"{what}: shape entry") for s in shape)
    if any(s <= 0 for s in out):
        raise sem.error(f"{what}: shape entries must be positive, got {list(out)}")
    return out


def _dtype(d, what: str) -> T.DType:
    d = unwrap_constexpr(d)
    if not isinstance(d, T.DType):
        raise sem.error(f"{what}: dtype must be an nl dtype such as nl.float32, got {d!r}")
    return d


@builtin
def program_id(axis: int) -> tensor:
    """The index of this program along grid ``axis`` (0, 1 or 2), an i32 scalar.

    Example::

        pid = nl.program_id(0)
    """
    axis = _const_int(axis, "program_id axis")
    if axis not in (0, 1, 2):
        raise ValueError(f"program_id axis must be 0, 1, or 2 but got {axis}: a grid has "
                         "at most three axes")
    return sem.emit(Kind.PROGRAM_ID, [], {"axis": axis})


@builtin
def num_programs(axis: int) -> tensor:
    """The number of programs along grid ``axis``, an i32 scalar.

    Example::

        n = nl.num_programs(0)
    """
    axis = _const_int(axis, "num_programs axis")
    if axis not in (0, 1, 2):
        raise ValueError(f"num_programs axis must be 0, 1, or 2 but got {axis}: a grid "
                         "has at most three axes")
    return sem.emit(Kind.NUM_PROGRAMS, [], {"axis": axis})


@builtin
def arange(start: int, end: int) -> tensor:
    """The i32 tile ``[start, start+1, ..., end-1]``; bounds are constants.

    Example::

        offs = pid * BLOCK + nl.arange(0, BLOCK)
    """
    start, end = _const_int(start, "arange start"), _const_int(end, "arange end")
    if end <= start:
        raise sem.error(f"arange needs end > start, got arange({start}, {end})")
    return sem.emit(Kind.ARANGE, [], {"start": start, "end": end})


@builtin
def full(shape, value, dtype) -> tensor:
    """A tile of ``shape`` filled with ``value`` (a number or a scalar tensor).

    Example::

        m = nl.full((BLOCK,), float("-inf"), nl.float32)
    """
    shape, dtype = _shape(shape, "full"), _dtype(dtype, "full")
    v = sem.cast(sem.to_tensor(value, dtype), dtype)
    if v.shape != ():
        raise sem.error(f"full: value must be a scalar, got a tile of shape {list(v.shape)}")
    return sem.broadcast_to(v, shape)


@builtin
def zeros(shape, dtype=T.float32) -> tensor:
    """A tile of zeros.

    Example::

        acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    """
    return full(shape, 0, dtype)


@builtin
def zeros_like(x: tensor) -> tensor:
    """Zeros with ``x``'s shape and dtype.

    Example::

        z = nl.zeros_like(x)
    """
    return full(x.shape, 0, x.dtype)


@builtin
def full_like(x: tensor, value) -> tensor:
    """``value`` with ``x``'s shape and dtype.

    Example::

        m = nl.full_like(x, -1.0)
    """
    return full(x.shape, value, x.dtype)


def cdiv(a, b):
    """Ceiling division ``(a + b - 1) // b`` on ints or tensors; usable in grids too.

    Example::

        grid = (nl.cdiv(n, BLOCK),)
    """
    a = unwrap_constexpr(a)
    b = unwrap_constexpr(b)
    return (a + b - 1) // b
