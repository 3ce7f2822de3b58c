"""Whole-tile ops that call a numba helper: reduce, scan, sort, topk, dot.

The operand is made row-major contiguous (views are copied once), the tile is seen as
``(outer, n, inner)`` around the axis, and the helper writes the op's own tile.
Reducing a 1-D tile calls a ``line_*`` helper that returns the scalar directly.

Example (``m = max(x, axis=0)`` on a 1024-element f32 tile)::

    max_1 = f32(rl.line_max_f(load, 0, 1024))
"""
from __future__ import annotations

from npujit.ir.ops import Kind
from npujit.ir.types import numel

from . import lower_scalar as ls
from .values import Nest, Val

_RND = {"f16": 1, "bf16": 2, "f8E4M3FN": 3, "f8E5M2": 4}   # reduce_lib.round_to


def _split(shape, axis):
    """(outer, n, inner) of ``shape`` around ``axis``."""
    return numel(shape[:axis]), shape[axis], numel(shape[axis + 1:])


def _operand(cg, op, i=0):
    v = op.operands[i]
    return cg.materialise(cg.val(v), cg.hint(v))


def lower_reduce(cg, op) -> None:
    a = _operand(cg, op)
    src = op.operands[0].type
    d_in, d_out = src.dtype, op.result.type.dtype
    kind, axis = op.attrs["kind"], op.attrs["axis"]
    outer, n, inner = _split(src.shape, axis)
    sfx = "f" if d_in.is_float else "i"
    if d_in.name == "f64" and kind not in ("sum", "prod"):
        sfx = "g"   # max/min of any float width: the "f" helpers are f32 bit tricks
    rnd = _RND.get(d_in.name, 0)
    w = cg.w
    if op.result.type.shape == ():
        call = f"rl.line_{kind}_{sfx}({a.name}, 0, {n})"
        if sfx == "g":
            extreme = "extreme" if kind in ("max", "min") else "arg_extreme"
            call = f"rl.line_{extreme}_g({a.name}, 0, {n}, {kind in ('max', 'argmax')})"
        name = w.fresh(kind)
        w.line(f"{name} = {ls.result(d_out, call)}")
        cg.bind(op.result, Val.scalar(name, d_out))
        return
    out = cg.new_array(kind, op.result.type.shape, d_out)
    args = f"{a.name}, {outer}, {n}, {inner}, {out.name}"
    if kind in ("sum", "prod"):
        w.line(f"rl.{kind}_{sfx}({args}, {rnd})" if sfx == "f" else f"rl.{kind}_i({args})")
    elif kind in ("max", "min"):
        w.line(f"rl.extreme_{sfx}({args}, {kind == 'max'})")
    else:
        w.line(f"rl.arg_extreme_{sfx}({args}, {kind == 'argmax'})")
    cg.bind(op.result, out)


def lower_scan(cg, op) -> None:
    a = _operand(cg, op)
    src = op.operands[0].type
    outer, n, inner = _split(src.shape, op.attrs["axis"])
    out = cg.new_array("cumsum", src.shape, op.result.type.dtype)
    args = f"{a.name}, {outer}, {n}, {inner}, {out.name}"
    if src.dtype.is_float:
        cg.w.line(f"rl.cumsum_f({args}, {_RND.get(src.dtype.name, 0)})")
    else:
        cg.w.line(f"rl.cumsum_i({args})")
    cg.bind(op.result, out)


def lower_sort(cg, op) -> None:
    a = _operand(cg, op)
    src = op.operands[0].type
    outer, n, inner = _split(src.shape, op.attrs["axis"])
    out = cg.new_array("sort", src.shape, src.dtype)
    desc = bool(op.attrs.get("descending", False))
    cg.w.line(f"tl.sort({a.name}, {outer}, {n}, {inner}, {out.name}, {desc})")
    cg.bind(op.result, out)


def lower_topk(cg, op) -> None:
    a = _operand(cg, op)
    src = op.operands[0].type
    k = op.attrs["k"]
    outer, n, inner = _split(src.shape, op.attrs["axis"])
    vals = cg.new_array("topk_values", op.results[0].type.shape, src.dtype)
    idx = cg.new_array("topk_indices", op.results[1].type.shape, op.results[1].type.dtype)
    cg.w.line(f"tl.topk({a.name}, {outer}, {n}, {inner}, {k}, {vals.name}, {idx.name})")
    cg.bind(op.results[0], vals)
    cg.bind(op.results[1], idx)


def lower_gather(cg, op) -> None:
    """``out[o, j, i] = src[o, index[o, j, i], i]`` around the axis; an index outside
    ``[0, n)`` raises ``OutOfBoundsError`` naming the op, its line and the program (the
    reference's message)."""
    src, index = _operand(cg, op, 0), _operand(cg, op, 1)
    axis = op.attrs["axis"]
    outer, n, inner = _split(op.operands[0].type.shape, axis)
    _, m, _ = _split(op.operands[1].type.shape, axis)
    out = cg.new_array("gather", op.result.type.shape, op.result.type.dtype)
    w = cg.w
    where = str(op.loc).replace("\\", "/").replace('"', "'")
    template = (f"kernel '{cg.fn.name}', {op.kind.value} at {where}, program (%d, %d, %d): "
                f"gather index %d is outside [0, {n}) on axis {axis} of the source tile")
    o, j, i, ix = (w.fresh(s) for s in ("go", "gj", "gi", "gix"))
    with w.block(f"for {o} in range(u64({outer})):"):
        with w.block(f"for {j} in range(u64({m})):"):
            with w.block(f"for {i} in range(u64({inner})):"):
                w.line(f"{ix} = i64({index.name}[({o} * u64({m}) + {j}) * u64({inner}) + {i}])")
                with w.block(f"if {ix} < 0 or {ix} >= {n}:"):
                    w.line(f'raise OutOfBoundsError("{template}", pid0, pid1, pid2, {ix})')
                w.line(f"{out.name}[({o} * u64({m}) + {j}) * u64({inner}) + {i}] = "
                       f"{src.name}[({o} * u64({n}) + u64({ix})) * u64({inner}) + {i}]")
    cg.bind(op.result, out)


def _accumulates_in_place(cg, op, a, b) -> bool:
    """May ``dot`` add into its ``acc`` operand's own tile?  Yes when ``acc`` is a loop-
    carried tile (a slot only that block argument names) whose one use is this dot, and
    the operands are other tiles: then nothing reads the old value afterwards, and the
    loop's yield of the result finds it already in the slot (no copy in, none out)."""
    v = op.operands[2]
    parent = getattr(v.owner, "parent_op", None)
    if (v.op is not None or parent is None or parent.kind is not Kind.FOR or v.index == 0
            or cg.num_uses(v) != 1):
        return False
    acc = cg.val(v)
    return (acc.is_contiguous_array and acc.shape == tuple(op.result.type.shape)
            and acc.dtype == op.result.type.dtype and acc.name not in (a.name, b.name))


def lower_dot(cg, op) -> None:
    """``out = acc + a @ b``: the op's own tile gets ``acc`` (or zeros), then the helper
    adds ``a @ b`` into it in place (``acc`` itself is never written)."""
    a = _operand(cg, op, 0)
    b = _operand(cg, op, 1)
    *batch, m, k = op.operands[0].type.shape
    n = op.operands[1].type.shape[-1]
    rt = op.result.type
    w = cg.w
    fn = "cl.dot_i8" if op.operands[0].type.dtype.is_int else "cl.dot_f"

    def products(out: str) -> None:
        """``out += a @ b``, one helper call per batch index (slices of the flat tiles)."""
        in_place = cg.in_place.get(id(op.operands[1]))
        if in_place is not None:    # b is W.T, read where W is (lower_memory.read_in_place)
            ptr, flag, off, ld, rows = in_place
            with w.block(f"if {flag}:"):
                w.line(f"cl.dot_nt({a.name}, {ptr}, {off}, {ld}, {out}, {m}, {k}, {n}, {rows})")
            with w.block("else:"):
                w.line(f"{fn}({a.name}, {b.name}, {out}, {m}, {k}, {n})")
            return
        if not batch:
            w.line(f"{fn}({a.name}, {b.name}, {out}, {m}, {k}, {n})")
            return
        i = w.fresh("batch")
        with w.block(f"for {i} in range({numel(batch)}):"):
            w.line(f"{fn}({a.name}[{i} * {m * k}:({i} + 1) * {m * k}], "
                   f"{b.name}[{i} * {k * n}:({i} + 1) * {k * n}], "
                   f"{out}[{i} * {m * n}:({i} + 1) * {m * n}], {m}, {k}, {n})")

    if len(op.operands) == 3 and _accumulates_in_place(cg, op, a, b):
        # the K-loop accumulator: its old value dies here, so add into its own slot
        acc = cg.val(op.operands[2])
        products(acc.name)
        cg.bind(op.result, acc)
        return
    out = cg.new_array("dot", rt.shape, rt.dtype)
    if len(op.operands) == 3:
        acc = cg.val(op.operands[2])
        with Nest(w, rt.shape, [acc]) as nest:
            w.line(f"{out.name}[{nest.out}] = {nest.at(acc)}")
    else:
        w.line(f"{out.name}[:] = {ls.zero(rt.dtype)}")
    products(out.name)
    cg.bind(op.result, out)


LOWERINGS = {Kind.REDUCE: lower_reduce, Kind.SCAN: lower_scan, Kind.SORT: lower_sort,
             Kind.TOPK: lower_topk, Kind.GATHER: lower_gather, Kind.DOT: lower_dot}
