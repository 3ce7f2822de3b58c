"""Reductions and scans with a user combine function: ``reduce``, ``associative_scan``, and
what is built from them (``cumprod``, ``xor_sum``, ``cumsum(reverse=True)``).

The combine function is traced once, on scalars, into the op's region (``npu.reduce_combine``
/ ``npu.scan_combine`` in ``ir/ops.py``): its arguments are the accumulated values then the
next ones (one per input tile), and it returns the new accumulated values.  Every tier runs
it element by element along the axis, first to last (last to first with ``reverse``, where
the accumulated value is still the first argument), so a combine function that is
associative but not commutative gives Triton's answer.

Example (inside a kernel)::

    @triton.jit
    def first(a, b):
        return a

    z = nl.associative_scan(x, 0, first)          # every element becomes x[0]
    total = nl.reduce((x, w), 0, weighted_sum)    # tuples of tiles: one result each
"""
from __future__ import annotations

import inspect

from npujit.ir import Block, Kind
from npujit.ir import types as T
from npujit.ir.ops import reduce_result_dtype

from . import semantic as sem
from .core import builtin, tensor, unwrap_constexpr
from .tracing import current


def _tiles(input, what: str) -> tuple[list, bool]:
    """The input tiles (one shape) and whether the caller passed a tuple."""
    many = isinstance(input, (tuple, list))
    tiles = [sem.to_tensor(t) for t in (input if many else (input,))]
    if not tiles:
        raise sem.error(f"{what} needs at least one tile")
    for t in tiles:
        if t.ndim == 0:
            raise sem.error(f"{what} needs tiles, got a scalar; reduce or scan a tile")
    shape = tiles[0].shape
    if any(t.shape != shape for t in tiles):
        raise sem.error(f"{what}: the tiles must have one shape, got "
                        f"{', '.join(str(list(t.shape)) for t in tiles)}")
    return tiles, many


def _body(tiles: list, combine_fn, what: str) -> Block:
    """The combine function traced on scalars: block args (*acc, *next), yield *acc."""
    if not callable(combine_fn):
        raise sem.error(f"{what}: combine_fn must be a function (a @triton.jit or @nl.inline "
                        f"function of 2 x {len(tiles)} values), got {combine_fn!r}")
    if not _takes(combine_fn, 2 * len(tiles)):
        raise sem.error(f"{what}: the combine function must take {2 * len(tiles)} arguments "
                        f"(the accumulated then the next value of each of the {len(tiles)} "
                        "input tile(s))")
    builder = current().builder
    dtypes = [t.dtype for t in tiles]
    block = Block([T.tensor((), d) for d in dtypes] * 2)
    with builder.at(block):
        out = combine_fn(*[tensor(a) for a in block.args])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if len(outs) != len(tiles):
            raise sem.error(f"{what}: the combine function returned {len(outs)} value(s) for "
                            f"{len(tiles)} input tile(s); it must return one per input")
        vals = []
        for i, (o, d) in enumerate(zip(outs, dtypes)):
            o = sem.to_tensor(o, d)
            if o.shape != ():
                raise sem.error(f"{what}: the combine function's result #{i} is a tile "
                                f"{list(o.shape)}; it combines single elements (scalars)")
            vals.append(sem.cast(o, d))
        builder.create(Kind.YIELD, [v.handle for v in vals], {})
    return block


def _takes(fn, n: int) -> bool:
    """Whether ``fn`` (a ``@triton.jit`` / ``@nl.inline`` function or a plain one) can be
    called with ``n`` positional arguments."""
    try:
        inspect.signature(getattr(fn, "fn", fn)).bind(*range(n))
    except TypeError:
        return False
    except ValueError:       # no signature to read: let the call say
        pass
    return True


def _axis(tiles: list, axis, what: str):
    """``tiles`` flattened when ``axis`` is None, and the normalised axis."""
    axis = unwrap_constexpr(axis)
    if axis is None:
        return [sem.reshape(t, (t.numel,)) for t in tiles], 0
    return tiles, sem.normalize_axis(tiles[0], axis, what)


def combine_op(kind: Kind, tiles: list, axis: int, combine_fn, what: str, attrs=None):
    """Emit ``kind`` over ``tiles`` along ``axis`` with ``combine_fn`` as its region;
    returns the result tensors."""
    body = _body(tiles, combine_fn, what)
    ctx = current()
    op = ctx.builder.create(kind, [t.handle for t in tiles], {"axis": axis, **(attrs or {})},
                            regions=[body], loc=ctx.loc())
    return [tensor(r) for r in op.results]


@builtin
def reduce(input, axis, combine_fn, keep_dims: bool = False):
    """Reduce ``input`` (a tile, or a tuple of tiles of one shape) along ``axis`` (all axes
    when None) with ``combine_fn``; a tuple gives a tuple.

    Example::

        @triton.jit
        def add(a, b):
            return a + b

        s = nl.reduce(x, 1, add)          # (M, N) -> (M,)
    """
    tiles, many = _tiles(input, "reduce")
    shape = tiles[0].shape
    tiles, axis_n = _axis(tiles, axis, "reduce")
    outs = combine_op(Kind.REDUCE_COMBINE, tiles, axis_n, combine_fn, "reduce")
    if keep_dims:
        kept = (1,) * len(shape) if axis is None else shape[:axis_n] + (1,) + shape[axis_n + 1:]
        outs = [sem.reshape(o, kept) for o in outs]
    return tuple(outs) if many else outs[0]


@builtin
def associative_scan(input, axis, combine_fn, reverse: bool = False):
    """Inclusive scan of ``input`` (a tile, or a tuple of tiles of one shape) along
    ``axis`` with ``combine_fn``, last to first when ``reverse``; a tuple gives a tuple.

    Example::

        @triton.jit
        def running_max(a, b):
            return nl.maximum(a, b)

        m = nl.associative_scan(x, 0, running_max)
    """
    tiles, many = _tiles(input, "associative_scan")
    axis = unwrap_constexpr(axis)
    axis = sem.normalize_axis(tiles[0], axis, "associative_scan")
    outs = combine_op(Kind.SCAN_COMBINE, tiles, axis, combine_fn, "associative_scan",
                      {"reverse": bool(reverse)})
    return tuple(outs) if many else outs[0]


@builtin
def map_elementwise(scalar_fn, *args, pack: int = 1):
    """``scalar_fn`` applied to each element of the tiles ``args`` (broadcast to one
    shape), as Triton's ``tl.map_elementwise``: the function takes scalars and may branch
    on them (``if x < y: return -1``); it returns one value or a tuple, and each becomes a
    tile of the common shape.  With ``pack=p`` it takes ``p`` consecutive elements of each
    tile (all of the first tile's, then the second's) and returns ``p`` values per result.

    Example::

        @nl.inline
        def clipped_ratio(a, b):
            if b == 0:
                return 0.0
            return min(a / b, 1.0)

        r = nl.map_elementwise(clipped_ratio, x, y)
    """
    pack = unwrap_constexpr(pack)
    if not callable(scalar_fn):
        raise sem.error(f"map_elementwise: scalar_fn must be a function, got {scalar_fn!r}")
    if not args:
        raise sem.error("map_elementwise needs at least one tile")
    tiles = [sem.to_tensor(a) for a in args]
    shape = tiles[0].shape
    for t in tiles[1:]:
        shape = sem.broadcast_shapes(shape, t.shape)
    n = 1
    for s in shape:
        n *= s
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1 or n % pack:
        raise sem.error(f"map_elementwise: pack must be a positive int dividing the "
                        f"{n} elements, got {pack!r}")
    tiles = [sem.broadcast_to(t, shape) for t in tiles]
    if not _takes(scalar_fn, pack * len(tiles)):
        raise sem.error(f"map_elementwise: the function must take {pack * len(tiles)} "
                        f"arguments ({pack} element(s) of each of the {len(tiles)} tiles)")
    builder = current().builder
    block = Block([T.tensor((), t.dtype) for t in tiles for _ in range(pack)])
    with builder.at(block):
        out = scalar_fn(*[tensor(a) for a in block.args])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) % pack:
            raise sem.error(f"map_elementwise: with pack={pack} the function must return a "
                            f"multiple of {pack} values, got {len(outs)}")
        vals = [sem.to_tensor(o) for o in outs]
        for i, v in enumerate(vals):
            if v.shape != ():
                raise sem.error(f"map_elementwise: the function's result #{i} is a tile "
                                f"{list(v.shape)}; it works on single elements (scalars)")
        # the p values of one result share a dtype: the promoted one
        dtypes = []
        for r in range(len(vals) // pack):
            group = vals[r * pack:(r + 1) * pack]
            d = group[0].dtype
            for v in group[1:]:
                d = T.promote(d, v.dtype)
            dtypes.append(d)
        vals = [sem.cast(v, dtypes[i // pack]) for i, v in enumerate(vals)]
        builder.create(Kind.YIELD, [v.handle for v in vals], {})
    ctx = current()
    op = ctx.builder.create(Kind.MAP_ELEMENTWISE, [t.handle for t in tiles],
                            {"dtypes": tuple(dtypes), "pack": pack}, regions=[block],
                            loc=ctx.loc())
    outs = [tensor(r) for r in op.results]
    return tuple(outs) if len(outs) > 1 else outs[0]


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _xor(a, b):
    return a ^ b


def reverse_cumsum(x: tensor, axis: int) -> tensor:
    """``cumsum(x, axis, reverse=True)`` with ``nl.cumsum``'s dtypes: small ints sum in
    i32, 16-bit floats in f32 rounded once at the end."""
    acc = reduce_result_dtype("sum", x.dtype)
    wide = sem.cast(x, T.float32 if x.dtype.is_narrow_float else acc)
    (out,) = combine_op(Kind.SCAN_COMBINE, [wide], axis, _add, "cumsum", {"reverse": True})
    return sem.cast(out, acc)


@builtin
def cumprod(x, axis: int = 0, reverse: bool = False) -> tensor:
    """Inclusive prefix product along ``axis`` (from the last element when ``reverse``);
    each product rounds to the tile's dtype, ints wrap.

    Example::

        p = nl.cumprod(x, axis=0)
    """
    x = sem.to_tensor(x)
    if x.ndim == 0:
        raise sem.error("cumprod needs a tile, got a scalar")
    if x.dtype.is_bool:
        x = sem.cast(x, T.int32)
    return associative_scan(x, axis, _mul, reverse=reverse)


def _or(a, b):
    return a | b


@builtin
def reduce_or(x, axis=None, keep_dims: bool = False) -> tensor:
    """Bitwise (bool: logical) or of the elements along ``axis`` (all axes when None).

    Example::

        any_hit = nl.reduce_or(hit, axis=0)
    """
    return _bitwise_reduce(x, axis, keep_dims, _or, "reduce_or")


@builtin
def xor_sum(x, axis=None, keep_dims: bool = False) -> tensor:
    """Bitwise xor of the elements along ``axis`` (all axes when None); integer or bool
    tiles.

    Example::

        parity = nl.xor_sum(bits, axis=0)
    """
    return _bitwise_reduce(x, axis, keep_dims, _xor, "xor_sum")


def _bitwise_reduce(x, axis, keep_dims: bool, combine_fn, what: str) -> tensor:
    x = sem.to_tensor(x)
    if x.dtype.is_float:
        raise sem.error(f"{what} needs an integer or bool tile, got {x.dtype}")
    return reduce(x, axis, combine_fn, keep_dims=keep_dims)
