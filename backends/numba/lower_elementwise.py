"""Elementwise ops and ``npu.fused`` regions: one loop nest computing scalar expressions.

A fused region becomes a single nest over its result shape ``S``.  Every region value
is evaluated at the current point of ``S``: an input of a smaller shape (a splat or a
broadcast, inside or outside the region) is read through stride-0 indexing, never
copied.  Region ops whose operands do not vary over ``S`` (scalars, constants) are
computed once before the nest.  Results are written to tiles, except a result that
does not vary (it stays a lazy splat), is an input passed through, or is worth
inlining into its readers (an ``expr`` Val: cheap integer/f32 arithmetic, or read once
in the same block, e.g. the ``e / s`` that only a store reads) -- that saves a loop
and a tile, and numba compile time grows with the number of loops.

An unfused elementwise op is lowered as a region of one op, so it is one loop at most.

Example (the softmax kernel's ``e = exp(x - splat(max))``, which a sum and a division
both read, so it is computed into a tile)::

    exp = np.empty(1024, f32)              # allocated once, before the program loop
    ...
    for i_2 in range(u64(1024)):
        sub = f32(load[i_2] - max_1)
        exp[i_2] = f32(sl.exp_f32(sub))
"""
from __future__ import annotations

import dataclasses

from npujit.ir.ops import BINARY, ELEMENTWISE, UNARY, Kind

from . import lower_scalar as ls
from . import range_check
from .values import Nest, Val

REGION_KINDS = ELEMENTWISE | {Kind.CONSTANT}


def scalar_expr(op, args: list) -> str:
    """The per-element expression of the elementwise ``op`` on operand atoms ``args``."""
    k = op.kind
    if k is Kind.CONSTANT:
        return ls.constant(op.attrs["value"], op.attrs["dtype"])
    d = op.operands[0].type.dtype
    if k in BINARY:
        return ls.binary(k, d, args[0], args[1])
    if k in UNARY:
        return ls.unary(k, op.attrs, d, args[0])
    if k is Kind.CMP:
        return ls.compare(op.attrs["predicate"], args[0], args[1])
    if k is Kind.SELECT:
        return ls.select(args[0], args[1], args[2])
    if k is Kind.CAST:
        return ls.cast(d, op.attrs["dtype"], args[0])
    if k is Kind.BITCAST:
        return ls.bitcast(d, op.attrs["dtype"], args[0])
    if k in (Kind.SPLAT, Kind.BROADCAST):
        return args[0]  # evaluated at the broadcast point already
    raise NotImplementedError(f"numba backend: {k.value} is not elementwise")


def _broadcastable(src, dst) -> bool:
    if src == () or src == dst:
        return True
    return len(src) == len(dst) and all(a in (1, b) for a, b in zip(src, dst))


def _cheap(op) -> bool:
    """Ops so cheap per element that recomputing them at every use beats a tile: integer
    and f32 add/sub/mul/compare/select/casts (no libm, no division, no half rounding)."""
    k = op.kind
    dts = [v.type.dtype for v in op.operands if hasattr(v.type, "dtype")] + [op.result.type.dtype]
    if any(d.is_narrow_float for d in dts):
        return False
    return k in _CHEAP_KINDS


def cheap_expr(v: Val) -> bool:
    """Whether the ``expr`` Val ``v`` is small and made only of ``_cheap`` ops, so its
    readers may recompute it wherever they are (as ``emit_region`` inlines such ops)."""
    if v.size > MAX_INLINE:
        return False

    def cheap(e) -> bool:
        if e.kind != "expr":
            return not e.dtype.is_narrow_float
        return (e.op in _CHEAP_KINDS and not e.dtype.is_narrow_float
                and all(cheap(a) for a in e.args))
    return cheap(v)


_CHEAP_KINDS = frozenset({Kind.ADD, Kind.SUB, Kind.MUL, Kind.AND, Kind.OR, Kind.XOR,
                          Kind.NOT, Kind.NEG, Kind.ABS, Kind.CMP, Kind.SELECT, Kind.CAST,
                          Kind.MAXIMUM, Kind.MINIMUM})
MAX_INLINE = 12   # largest expression (in ops) that is inlined instead of computed once


def emit_region(cg, ops, inputs, yields, results) -> bool:
    """Lower elementwise ``ops`` at one shape.  ``inputs`` pairs the values the ops read
    from outside with their ``Val``s; ``yields[i]`` gives ``results[i]``.

    Ops on scalars only are computed once, before any loop.  A result becomes an
    ``expr`` Val (no loop here: its readers inline it) when it is cheap, or when its
    single use is in this block; the others are computed in one nest, each op once per
    element.  Returns False (emitting nothing) when the ops are not one elementwise nest.
    """
    shape = tuple(results[0].type.shape) if results else ()
    if any(tuple(r.type.shape) != shape for r in results):
        return False
    if any(op.kind not in REGION_KINDS for op in ops):
        return False
    if not all(_broadcastable(val.shape, shape) for _, val in inputs):
        return False
    w = cg.w
    val: dict[int, Val] = {}      # region value -> its Val at the region's shape
    cheap: dict[int, bool] = {}
    for value, v in inputs:
        val[id(value)] = v.broadcast_to(shape)
        cheap[id(value)] = True
    variant = []
    for op in ops:
        r = op.result
        args = [val[id(o)] for o in op.operands]
        if op.kind in (Kind.SPLAT, Kind.BROADCAST):
            val[id(r)] = args[0].broadcast_to(shape)
            cheap[id(r)] = cheap[id(op.operands[0])]
        elif op.kind is Kind.CONSTANT or all(a.kind == "scalar" for a in args):
            e = scalar_expr(op, [a.name for a in args])
            if op.kind is not Kind.CONSTANT:  # invariant over the tile: compute it once
                name = w.fresh(cg.hint(r))
                w.line(f"{name} = {e}")
                e = name
                if id(op) in cg.wrap_checks:  # int32 address arithmetic that may wrap
                    range_check.wrap(cg, op, [a.name for a in args], name)
            val[id(r)] = Val.scalar(e, r.type.dtype, shape)
            cheap[id(r)] = True
        else:
            fmt = scalar_expr(op, ["{%d}" % k for k in range(len(args))])
            if fmt == "{0}":  # a cast that changes nothing at compute level (f16 -> f32)
                val[id(r)] = dataclasses.replace(args[0], dtype=r.type.dtype)
                cheap[id(r)] = cheap[id(op.operands[0])]
                continue
            val[id(r)] = Val.expr(fmt, args, r.type.dtype, shape, op.kind)
            cheap[id(r)] = _cheap(op) and all(cheap[id(o)] for o in op.operands)
            variant.append(op)
    outs = []
    for y, r in zip(yields, results):
        v = val[id(y)]
        if v.kind != "expr" or (v.size <= MAX_INLINE and cg.inline_ok(r, cheap[id(y)])):
            cg.bind(r, v)
        else:
            arr = cg.new_array(cg.hint(y), shape, r.type.dtype)
            cg.bind(r, arr)
            outs.append((y, arr))
    if outs:
        _emit_nest(cg, shape, variant, val, outs)
    return True


def _emit_nest(cg, shape, variant, val, outs) -> None:
    """One loop nest computing each variant op once per element (a temporary unless its
    only use is the store of a result) and storing the results in ``outs``."""
    w = cg.w
    yielded = {id(y) for y, _ in outs}
    # Only the ops the stored results need: a result inlined into its readers is computed
    # there, and its operands need not be walked by this nest (a scalar or tile read only
    # by it is not one of the nest's leaves).
    needed = set(yielded)
    for op in reversed(variant):
        if id(op.result) in needed:
            needed.update(id(o) for o in op.operands)
    variant = [op for op in variant if id(op.result) in needed]
    uses: dict[int, int] = {}
    for op in variant:
        for o in op.operands:
            uses[id(o)] = uses.get(id(o), 0) + 1
    for y, _ in outs:
        uses[id(y)] = uses.get(id(y), 0) + 1
    with Nest(w, shape, [val[id(y)] for y, _ in outs]) as nest:
        local: dict[int, str] = {}

        def atom(v) -> str:
            return local[id(v)] if id(v) in local else nest.at(val[id(v)])
        for op in variant:
            r = op.result
            e = scalar_expr(op, [atom(o) for o in op.operands])
            if uses.get(id(r), 0) == 1 and id(r) in yielded:
                local[id(r)] = e  # used once, by the store below: no temporary
                continue
            name = w.fresh(cg.hint(r))
            w.line(f"{name} = {e}")
            local[id(r)] = name
        for y, arr in outs:
            w.line(f"{arr.name}[{nest.out}] = {atom(y)}")


def lower_elementwise(cg, op) -> None:
    """One unfused elementwise op: a nest of its own (or a scalar statement)."""
    inputs = [(v, cg.val(v)) for v in op.operands]
    ok = emit_region(cg, [op], inputs, op.results, op.results)
    assert ok, op


def lower_fused(cg, op) -> None:
    """``npu.fused``: the region as one nest; anything else in it is lowered op by op."""
    body = op.body
    inputs = [(arg, cg.val(v)) for arg, v in zip(body.args, op.operands)]
    term = body.terminator
    ops = [o for o in body.ops if o is not term]
    yields = list(term.operands) if term is not None else []
    if emit_region(cg, ops, inputs, yields, op.results):
        return
    for arg, val in inputs:
        cg.bind(arg, val)
    for inner in ops:
        cg.lower_op(inner)
    for y, r in zip(yields, op.results):
        cg.bind(r, cg.val(y))


LOWERINGS = {k: lower_elementwise
             for k in (BINARY | UNARY | {Kind.CMP, Kind.SELECT, Kind.CAST, Kind.BITCAST})}
LOWERINGS[Kind.FUSED] = lower_fused
