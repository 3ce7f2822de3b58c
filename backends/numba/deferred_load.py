"""Loads read where their value is used, not copied into a tile first.

A tile load is normally a loop copying the argument's elements into a tile, and its
users read the tile: ``out = x + y`` is three loops (two copies and the store).  For a
memory-bound kernel the copies are most of the work: on the 1 M-element fp32 add at one
thread the three loops took 0.18-0.21 ms where one loop reading both arguments and
writing the output took 0.154 ms (numpy's add 0.148).  A load whose value cannot change
before it is read is instead bound as an expression, ``x_ptr[base + i] if mask else
other``, that its users inline into their own loops.

When it is safe (``deferrable``): after the load, its block has no control flow, no atomic
and no block store (a fused elementwise region is fine: it writes no memory), at most one
plain store, and a terminator that passes no values; every user is in the same block and
comes no later than the store; the offsets are affine (``lower_memory._Index``); the range
check is the default one (debug mode checks each read where it happens, so it keeps the
copy).  Everything that reads the expression then runs before the one store or inside
its loop.  Inside the store's loop, a lane's read could see an earlier lane's write if
the stored argument overlaps a loaded one, which the copy does not allow; the store
therefore tests, once per launch, that the two arrays' memory is disjoint
(``disjoint``), and otherwise copies the value into a tile first, as before.

The range check of a deferred load is unchanged: the span test, and where the span
leaves the argument a loop testing every active lane (with no copy in it).
"""
from __future__ import annotations

from npujit.ir.ops import CONTROL, Kind

from . import lower_scalar as ls
from . import range_check
from .range_check import checking
from .values import Nest, Val

_WRITES = (Kind.BLOCK_STORE, Kind.ATOMIC_RMW)


class Read:
    """The ``op`` of a deferred load's expression: the argument it reads."""

    def __init__(self, ptr: str):
        self.ptr = ptr


def deferrable(cg, op, index, shape) -> bool:
    """May the tile load ``op`` be read where it is used (see the module doc)?"""
    if (shape == () or index.base is None or checking(cg) == "debug"
            or cg.needed is not None or cg.options.get("record")):
        return False
    block = op.parent
    ops = block.ops
    at = next(k for k, o in enumerate(ops) if o is op)
    store = None
    for k, o in enumerate(ops[at + 1:], at + 1):
        if o.kind in _WRITES or o.kind in CONTROL:
            return False
        if o.regions and any(n.kind in _WRITES or n.kind in CONTROL or n.kind is Kind.STORE
                             for n in o.walk()):
            return False            # a fused elementwise region computes, writes nothing
        if o.kind is Kind.STORE:
            if store is not None:
                return False
            store = k
        if o.kind in (Kind.RETURN, Kind.YIELD) and o.operands:
            return False
    # every user reads the value before the store writes, or in its loop (a user after
    # it, e.g. a device_print, would see what the store wrote)
    position = {id(o): k for k, o in enumerate(ops)}
    last = len(ops) if store is None else store
    return all(user.parent is block and position[id(user)] <= last
               for user, _ in op.result.uses)


def bind(cg, op, ptr: str, index, mask: Val | None, other: Val | None, guard) -> None:
    """Check the load's range as the copy would, then bind its result as the read
    expression."""
    d = op.operand("ptr").type.dtype
    shape = tuple(op.result.type.shape)
    w = cg.w
    if guard is not None:           # a span test: lanes are tested where it fails
        walked = index.leaves + ([mask] if mask is not None else [])
        with w.block("if True:" if guard == "False" else f"if not {guard}:"):
            with Nest(w, shape, walked) as nest:
                at = index.at(nest)
                if mask is None:
                    range_check.lane(cg, op, ptr, at, "False")
                else:
                    with w.block(f"if {nest.at(mask)}:"):
                        range_check.lane(cg, op, ptr, at, "False")
    read = ls.decode(d, f"{ptr}[{index.base} + {{0}}]")
    args = [index.idx]
    if mask is not None:
        args += [mask, other if other is not None else Val.scalar(ls.zero(d), d, shape)]
        read = f"({read} if {{1}} else {{2}})"
    cg.bind(op.result, Val.expr(read, args, d, shape, op=Read(ptr)))


def sources(vals) -> set:
    """The arguments read by deferred loads inside ``vals`` (exprs walked once each)."""
    seen, out = set(), set()

    def walk(v):
        if v is None or v.kind != "expr" or id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v.op, Read):
            out.add(v.op.ptr)
        for a in v.args:
            walk(a)
    for v in vals:
        walk(v)
    return out


def disjoint(cg, ptr: str, reads: set) -> str:
    """A condition, computed once per launch, that the memory of argument ``ptr`` shares
    no byte with that of any argument in ``reads``."""
    if ptr in reads:
        return "False"
    known = cg.disjoint
    names = []
    for src in sorted(reads):
        name = known.get((ptr, src))
        if name is None:
            name = known[ptr, src] = cg.w.fresh("disjoint")
            a, b = f"{ptr}.ctypes.data", f"{src}.ctypes.data"
            cg.tiles.append(f"{name} = {a} + {ptr}.nbytes <= {b} or "
                            f"{b} + {src}.nbytes <= {a}")
        names.append(name)
    return " and ".join(names)
