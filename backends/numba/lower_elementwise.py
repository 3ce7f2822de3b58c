"""Elementwise ops and ``npu.fused`` regions: one loop nest computing scalar expressions.

A fused region becomes a single nest over its result shape ``S``.  Every region value
is evaluated at the current point of ``S``: an input of a smaller shape (a splat or a
broadcast, inside or outside the region) is read through stride-0 indexing, never
copied.  Region ops whose operands do not vary over ``S`` (scalars, constants) are
computed once before the nest.  Results are written to fresh arrays, except a result
that does not vary (it stays a lazy splat) or is an input passed through.

An unfused elementwise op is lowered as a region of one op, so it is one loop too.

Example (IR ``%e = npu.fused(%x, %m) { exp(x - splat(m)) }`` on 1024 f32)::

    fused = np.empty(1024, np.float32)
    for i in range(np.uint64(1024)):
        sub = np.float32(load[i] - reduce)
        exp = np.float32(np.exp(sub))
        fused[i] = exp
"""
from __future__ import annotations

from npujit.ir.ops import BINARY, ELEMENTWISE, UNARY, Kind

from . import lower_scalar as ls
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
    if k in (Kind.SPLAT, Kind.BROADCAST):
        return args[0]  # evaluated at the broadcast point already
    raise NotImplementedError(f"numba backend: {k.value} is not elementwise")


def _broadcastable(src, dst) -> bool:
    if src == () or src == dst:
        return True
    return len(src) == len(dst) and all(a in (1, b) for a, b in zip(src, dst))


def emit_region(cg, ops, inputs, yields, results) -> bool:
    """Lower elementwise ``ops`` as one nest.  ``inputs`` pairs the values the ops read
    from outside with their ``Val``s; ``yields[i]`` gives ``results[i]``.  Returns False
    (emitting nothing) when the ops are not one elementwise nest."""
    shape = tuple(results[0].type.shape) if results else ()
    if any(tuple(r.type.shape) != shape for r in results):
        return False
    if any(op.kind not in REGION_KINDS for op in ops):
        return False
    if not all(_broadcastable(val.shape, shape) for _, val in inputs):
        return False
    w = cg.w
    expr: dict[int, str] = {}          # value -> atom, for invariant values
    walked: dict[int, Val] = {}        # value -> broadcast input Val, read in the nest
    for value, val in inputs:
        b = val.broadcast_to(shape)
        if b.kind == "scalar":
            expr[id(value)] = b.name
        else:
            walked[id(value)] = b
    # ops whose operands are all invariant are computed once, before the nest
    variant: list = []
    for op in ops:
        if all(id(o) in expr for o in op.operands):
            r = op.result
            e = scalar_expr(op, [expr[id(o)] for o in op.operands])
            if op.kind in (Kind.CONSTANT, Kind.SPLAT, Kind.BROADCAST):
                expr[id(r)] = e
            else:
                name = w.fresh(cg.hint(r))
                w.line(f"{name} = {e}")
                expr[id(r)] = name
        else:
            variant.append(op)
    outs: list = []
    for y, r in zip(yields, results):
        if id(y) in expr:
            cg.bind(r, Val.scalar(expr[id(y)], r.type.dtype, shape))
        elif id(y) in walked:
            cg.bind(r, walked[id(y)])
        else:
            arr = cg.new_array(cg.hint(y), shape, r.type.dtype)
            cg.bind(r, arr)
            outs.append((y, arr))
    if not outs:
        return True
    yielded = {id(y) for y in yields}
    uses: dict[int, int] = {}
    for op in variant:
        for o in op.operands:
            uses[id(o)] = uses.get(id(o), 0) + 1
    for y in yields:
        uses[id(y)] = uses.get(id(y), 0) + 1
    with Nest(w, shape, list(walked.values())) as nest:
        local = dict(expr)
        for key, b in walked.items():
            local[key] = nest.at(b)
        for op in variant:
            r = op.result
            e = scalar_expr(op, [local[id(o)] for o in op.operands])
            if op.kind in (Kind.SPLAT, Kind.BROADCAST) or (uses.get(id(r), 0) == 1
                                                            and id(r) in yielded):
                local[id(r)] = e  # used once, by the store below: no temporary
                continue
            name = w.fresh(cg.hint(r))
            w.line(f"{name} = {e}")
            local[id(r)] = name
        for y, arr in outs:
            w.line(f"{arr.name}[{nest.out}] = {local[id(y)]}")
    return True


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


LOWERINGS = {k: lower_elementwise for k in (BINARY | UNARY | {Kind.CMP, Kind.SELECT, Kind.CAST})}
LOWERINGS[Kind.FUSED] = lower_fused
