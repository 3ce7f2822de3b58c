"""``npu.reduce_combine`` / ``npu.scan_combine``: the combine function's region as scalar
code inside a loop along the axis (the region's ops lower as the scalar statements they
are anywhere else).

The operands are made row-major contiguous and seen as ``(outer, n, inner)`` around the
axis; the accumulated values are plain scalars, the next ones are read from the tiles.

Example (``tl.associative_scan((x, i), 0, cummax)`` on 8 elements, the body elided)::

    for o in range(1):
        for j in range(1):
            base = o * 8 + j
            acc, acc_1 = load[base + 0], idx[base + 0]
            scan[base + 0] = acc ...
            for i in range(1, 8):
                nxt, nxt_1 = load[base + i * 1], idx[base + i * 1]
                gt = nxt > acc ...
                acc, acc_1 = select, select_1
                scan[base + i * 1] = acc ...
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from .lower_tile import _operand, _split
from .values import Val


def lower_combine(cg, op) -> None:
    scan = op.kind is Kind.SCAN_COMBINE
    srcs = [_operand(cg, op, i) for i in range(len(op.operands))]
    outer, n, inner = _split(op.operands[0].type.shape, op.attrs["axis"])
    outs = [cg.new_array("scan" if scan else "reduce", r.type.shape or (1,), r.type.dtype)
            for r in op.results]
    w = cg.w
    o, j, i, base = (w.fresh(h) for h in ("o", "j", "i", "base"))
    accs = [w.fresh("acc") for _ in srcs]
    nxts = [w.fresh("nxt") for _ in srcs]
    reverse = scan and op.attrs["reverse"]
    first = (n - 1) * inner if reverse else 0
    steps = f"range({n - 2}, -1, -1)" if reverse else f"range(1, {n})"
    body = op.body
    for arg, name in zip(body.args, accs + nxts):
        cg.bind(arg, Val.scalar(name, arg.type.dtype))

    def store(at: str) -> None:
        for out, acc in zip(outs, accs):
            w.line(f"{out.name}[{at}] = {acc}")

    with w.block(f"for {o} in range({outer}):"), w.block(f"for {j} in range({inner}):"):
        w.line(f"{base} = {o} * {n * inner} + {j}")
        w.line(f"{', '.join(accs)} = {', '.join(f'{s.name}[{base} + {first}]' for s in srcs)}")
        if scan:
            store(f"{base} + {first}")
        with w.block(f"for {i} in {steps}:"):
            w.line(f"{', '.join(nxts)} = "
                   f"{', '.join(f'{s.name}[{base} + {i} * {inner}]' for s in srcs)}")
            with cg.region():
                for inner_op in body.ops:
                    cg.lower_op(inner_op)
            ys = [cg.val(y).name for y in body.terminator.operands]
            w.line(f"{', '.join(accs)} = {', '.join(ys)}")
            if scan:
                store(f"{base} + {i} * {inner}")
        if not scan:
            store(f"{o} * {inner} + {j}")
    for r, out in zip(op.results, outs):
        if r.type.shape == ():
            name = w.fresh("reduce")
            w.line(f"{name} = {out.name}[0]")
            cg.bind(r, Val.scalar(name, r.type.dtype))
        else:
            cg.bind(r, out)


def lower_map(cg, op) -> None:
    """``npu.map_elementwise``: the function's region as scalar code in one loop over the
    groups of ``pack`` consecutive elements (the inputs made row-major contiguous)."""
    p = op.attrs.get("pack", 1)
    srcs = [_operand(cg, op, i) for i in range(len(op.operands))]
    outs = [cg.new_array("mapped", r.type.shape, r.type.dtype) for r in op.results]
    w = cg.w
    g = w.fresh("g")
    body = op.body
    names = [w.fresh("arg") for _ in body.args]
    for arg, name in zip(body.args, names):
        cg.bind(arg, Val.scalar(name, arg.type.dtype))
    total = 1
    for s in op.results[0].type.shape:
        total *= s
    reads = [f"{s.name}[{g} + {k}]" for s in srcs for k in range(p)]
    with w.block(f"for {g} in range(0, {total}, {p}):"):
        w.line(f"{', '.join(names)} = {', '.join(reads)}")
        with cg.region():
            for inner_op in body.ops:
                cg.lower_op(inner_op)
        ys = body.terminator.operands
        for r, out in enumerate(outs):
            for k in range(p):
                w.line(f"{out.name}[{g} + {k}] = {cg.val(ys[r * p + k]).name}")
    for r, out in zip(op.results, outs):
        cg.bind(r, out)


LOWERINGS = {Kind.REDUCE_COMBINE: lower_combine, Kind.SCAN_COMBINE: lower_combine,
             Kind.MAP_ELEMENTWISE: lower_map}
