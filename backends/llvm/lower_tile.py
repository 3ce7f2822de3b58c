"""Lowering of the tile ops: elementwise ops and ``npu.fused`` regions as one loop nest,
the shape ops as views, ``arange``, and the reductions.

An elementwise op (alone, or every op of a fused region) runs per element inside one
loop nest over its shape: the operands' current elements are loaded once per element,
the ops' LLVM instructions follow (backends/llvm/elementwise.py) and each result the
nest hands out is stored to a tile of its own.

Reductions follow backends/reference/semantics_reduce.py: floats accumulate in f32 (f64
for f64), ``sum``/``prod`` of small ints in i32, ``max``/``min`` of floats ignore NaN
(NaN only for a lane of NaNs), ``argmax``/``argmin`` give the first extreme, or the
first NaN when a lane has one.

Example::

    >>> LOWERINGS[Kind.TRANS]                                     # doctest: +ELLIPSIS
    <function trans at ...>
"""
from __future__ import annotations

from npujit.ir import Kind
from npujit.ir.ops import ELEMENTWISE, reduce_result_dtype
from npujit.ir.types import float32

from . import elementwise
from .ir_text import compute_type, literal
from .values import Index, Scalar, Tile, load_element, nest, store_element


# --- elementwise -------------------------------------------------------------------------

def elements(cg, shape, ops, inputs: dict, outputs: list) -> None:
    """Run ``ops`` per element of ``shape``: ``inputs`` binds values from outside
    (``id(value) -> Scalar | Tile``, else ``cg.val``), ``outputs`` is a list of
    ``(value, Tile)`` stored at the end of each element."""
    w = cg.w

    def outside(v):
        got = inputs.get(id(v))
        return got if got is not None else cg.val(v)

    tiles = [t for _, t in outputs]
    for op in ops:
        for v in op.operands:
            src = inputs.get(id(v)) or cg.env.get(id(v))
            if isinstance(src, Tile):
                tiles.append(src.broadcast_to(shape) if op.kind is Kind.BROADCAST else src)
    with nest(w, shape, tiles) as index:
        elem: dict = {}

        def get(v):
            r = elem.get(id(v))
            if r is None:
                src = outside(v)
                r = src.ref if isinstance(src, Scalar) else load_element(w, src, index)
                elem[id(v)] = r
            return r

        for op in ops:
            if op.kind is Kind.SPLAT:
                elem[id(op.result)] = get(op.operands[0])
            elif op.kind is Kind.BROADCAST:
                src = outside(op.operands[0])
                elem[id(op.result)] = src.ref if isinstance(src, Scalar) else \
                    load_element(w, src.broadcast_to(shape), index)
            else:
                elem[id(op.result)] = cg.scalar_op(op, [get(v) for v in op.operands])
        for v, tile in outputs:
            store_element(w, tile, index, get(v))


def elementwise_op(cg, op) -> None:
    """One elementwise op outside a fused region."""
    t = op.result.type
    if not t.shape:
        cg.bind(op.result, Scalar(cg.scalar_op(op, [cg.val(v).ref for v in op.operands]),
                                  t.dtype))
        return
    out = cg.new_tile(t.shape, t.dtype)
    elements(cg, t.shape, [op], {}, [(op.result, out)])
    cg.bind(op.result, out)


def fused(cg, op) -> None:
    """A fused region: its ops per element in one nest; each yielded value to a tile."""
    body = op.body
    *ops, term = body.ops
    inputs = {id(a): cg.val(v) for a, v in zip(body.args, op.operands)}
    shape = op.results[0].type.shape
    outs = [(v, cg.new_tile(r.type.shape, r.type.dtype))
            for v, r in zip(term.operands, op.results)]
    elements(cg, shape, ops, inputs, outs)
    for r, (_, tile) in zip(op.results, outs):
        cg.bind(r, tile)


# --- shape -------------------------------------------------------------------------------

def splat(cg, op) -> None:
    src = cg.val(op.operands[0])
    t = op.result.type
    slot = cg.new_tile((1,), t.dtype)
    store_element(cg.w, slot, _first(), src.ref)
    cg.bind(op.result, Tile(slot.ptr, tuple(t.shape), (0,) * len(t.shape), t.dtype))


def _first() -> Index:
    return Index(flat="0")


def broadcast(cg, op) -> None:
    src = cg.val(op.operands[0])
    shape = tuple(op.result.type.shape)
    if isinstance(src, Scalar):
        splat(cg, op)
        return
    cg.bind(op.result, src.broadcast_to(shape))


def reshape(cg, op) -> None:
    src = cg.val(op.operands[0])
    shape = tuple(op.result.type.shape)
    if isinstance(src, Scalar):
        slot = cg.new_tile((1,), src.dtype)
        store_element(cg.w, slot, _first(), src.ref)
        cg.bind(op.result, slot.reshaped(shape))
        return
    if not src.contiguous:
        src = cg.materialise(src)
    if not shape:
        cg.bind(op.result, Scalar(load_element(cg.w, src, _first()), src.dtype))
        return
    cg.bind(op.result, src.reshaped(shape))


def trans(cg, op) -> None:
    cg.bind(op.result, cg.val(op.operands[0]).permuted(tuple(op.attrs["perm"])))


def arange(cg, op) -> None:
    t = op.result.type
    out = cg.new_tile(t.shape, t.dtype)
    w = cg.w
    with nest(w, t.shape, [out]) as index:
        v = w.op("add i64", index.flat, str(int(op.attrs["start"])))
        store_element(w, out, index, w.assign(f"trunc i64 {v} to i32"))
    cg.bind(op.result, out)


# --- reductions --------------------------------------------------------------------------

def reduce(cg, op) -> None:
    """``npu.reduce`` {kind, axis}: loops over the kept axes, an inner loop over ``axis``."""
    w = cg.w
    src = cg.val(op.operands[0])
    kind, axis = op.attrs["kind"], op.attrs["axis"]
    rt = op.result.type
    n = src.shape[axis]
    kept = [d for d in range(len(src.shape)) if d != axis]
    out = cg.new_tile(rt.shape, rt.dtype) if rt.shape else None
    loops = [w.loop(f"i64 {src.shape[d]}", f"r{d}") for d in kept]
    idx = {}
    for d, cm in zip(kept, loops):
        idx[d] = cm.__enter__()
    result = _fold(cg, src, kind, axis, n, idx, rt.dtype)
    if out is None:
        cg.bind(op.result, Scalar(result, rt.dtype))
        return
    store_element(w, out, Index(axes=[idx[d] for d in kept]), result)
    for cm in reversed(loops):
        cm.__exit__(None, None, None)
    cg.bind(op.result, out)


def _element_along(cg, src: Tile, idx: dict, axis: int, j: str) -> str:
    axes = [idx[d] if d != axis else j for d in range(len(src.shape))]
    return load_element(cg.w, src, Index(axes=axes))


def _fold(cg, src: Tile, kind: str, axis: int, n: int, idx: dict, out_dtype) -> str:
    """The reduction of one lane of ``src`` along ``axis`` (an SSA value)."""
    w = cg.w
    d = src.dtype
    if kind in ("sum", "prod"):
        acc_dt = d if d.itemsize == 8 and d.is_float else (float32 if d.is_float else
                                                           reduce_result_dtype(kind, d))
        t = compute_type(acc_dt)
        acc = w.alloca(t, "acc")
        w.store(t, literal(0 if kind == "sum" else 1, acc_dt), acc)
        with w.loop(f"i64 {n}", "k") as j:
            x = elementwise.cast(w, _element_along(cg, src, idx, axis, j), d, acc_dt)
            a = w.load(t, acc)
            op = ("fadd" if kind == "sum" else "fmul") if acc_dt.is_float else \
                ("add" if kind == "sum" else "mul")
            w.store(t, w.op(f"{op} {t}", a, x), acc)
        return elementwise.cast(w, w.load(t, acc), acc_dt, out_dtype)
    t = compute_type(d)
    first = _element_along(cg, src, idx, axis, "0")
    best = w.alloca(t, "best")
    w.store(t, first, best)
    if kind in ("max", "min"):
        kid = Kind.MAXIMUM if kind == "max" else Kind.MINIMUM
        with w.loop(f"i64 {n}", "k") as j:
            x = _element_along(cg, src, idx, axis, j)
            b = w.load(t, best)
            w.store(t, elementwise.apply_kind(w, kid, {}, [b, x], [d, d], d), best)
        return w.load(t, best)
    # argmax / argmin: the first extreme; a NaN lane gives its first NaN
    at = w.alloca("i32", "at")
    w.store("i32", "0", at)
    nan = w.alloca("i1", "nan")
    w.store("i1", w.op(f"fcmp uno {t}", first, first) if d.is_float else "false", nan)
    with w.loop(f"i64 {n}", "k") as j:
        x = _element_along(cg, src, idx, axis, j)
        b = w.load(t, best)
        seen = w.load("i1", nan)
        pred = "gt" if kind == "argmax" else "lt"
        better = elementwise.apply_kind(w, Kind.CMP, {"predicate": pred}, [x, b], [d, d], None)
        if d.is_float:
            is_nan = w.op(f"fcmp uno {t}", x, x)
            better = w.op("or i1", better, is_nan)
            w.store("i1", w.op("or i1", seen, is_nan), nan)
        take = w.op("and i1", better, w.op("xor i1", seen, "true"))
        w.store(t, w.op("select i1", take, f"{t} {x}", f"{t} {b}"), best)
        j32 = w.assign(f"trunc i64 {j} to i32")
        w.store("i32", w.op("select i1", take, f"i32 {j32}", f"i32 {w.load('i32', at)}"), at)
    return w.load("i32", at)


LOWERINGS = {
    Kind.FUSED: fused,
    Kind.SPLAT: splat,
    Kind.BROADCAST: broadcast,
    Kind.RESHAPE: reshape,
    Kind.TRANS: trans,
    Kind.ARANGE: arange,
    Kind.REDUCE: reduce,
}
for _kind in ELEMENTWISE:
    LOWERINGS.setdefault(_kind, elementwise_op)
