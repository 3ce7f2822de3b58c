"""split-cores: the AIC / AIV split of a mixed Cube + Vector kernel on a separated part.

Placement puts every op on a pipe of one virtual core that has them all.  On a separated
part (910B-like, TINY) the Cube pipes (MTE1, CUBE, FIXP, MTE2 into L1) are the AIC's and
the Vector pipes (VECTOR, MTE3, MTE2 into UB) an AIV's, and the two share no on-chip
memory: a value crosses only through a GM workspace, ordered by cross-core flags
(docs/npu-facts.md §A2, CrossCoreSetFlag / CrossCoreWaitFlag).  Every op has a side: its
pipe's (``Pipe.side``), for MTE2 its scope's (``Scope.side``), none for SCALAR work (both
cores' scalar units run the control flow).

This step makes each crossing an op of its own.  A tile an op reads on one side that
lives on the other -- an L0C result read by the Vector unit, or a UB result a dot takes
as an operand -- gets one ``npu.handoff`` per value and direction, placed in the block
that defines the value right before the first op that reads it there; those readers read
the hand-off's result instead (readers on the value's own side keep the value):

====================  ======================  ==============================  ===========
direction             ``src_pipe`` (source)   ``pipe`` / ``scope`` (receiver)  path
====================  ======================  ==============================  ===========
Cube -> Vector        FIXP from L0C           MTE2 into UB                    L0C->GM->UB
Vector -> Cube        MTE3 from UB            MTE2 into L1                    UB->GM->L1
====================  ======================  ==============================  ===========

The later steps treat the hand-off like any transfer: allocate-buffers gives its result a
buffer on the receiving side (``num_stages`` slots inside a pipelined loop, so the staging
buffer counts against the budget at compile time); insert-sync orders its read on
``src_pipe`` and its write on ``pipe`` like any other access (``CUBE -> FIXP`` before it on
the AIC, ``MTE2 -> VECTOR`` after it on the AIV, and the slot-reuse flags back), with ids
from ``event_ids.py``'s allocator.  ``cross_flags`` are the hand-off's cross-core flag ids
from their own pool (``npujit.target.CROSS_FLAG_IDS``): the first orders "written to the
workspace" before "read from it"; inside a loop a second one runs back, so a workspace slot
(one per buffer slot, ``stages``) is not rewritten before the other side read it; a
loop's ids are taken again by the next loop after it (``_cross_flag_ids``).  The
simulator's recorder lowers the op to those copies and flags, each on its side
(``sim/lower.py``); the CPU tiers run it as the identity.

Example (abridged; ``NPUJIT_DUMP_IR=after:split-cores``)::

    %20 = "npu.handoff"(%19) {cross_flags = array<i64: 0, 1>, pipe = "MTE2", scope = "UB",
                              src_pipe = "FIXP"} : (tensor<32x32xf32>) -> tensor<32x32xf32>
"""
from __future__ import annotations

from npujit.errors import OutOfResources
from npujit.target import CROSS_FLAG_IDS, Pipe, Scope

from ..core import Block, Function, Op, ancestor_in, loop_carried
from ..ops import Kind
from .model import SIDES_ATTR, Positions, is_tile, outermost_loop, scheduled_ops

_STORES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)
# What crosses, by the scope the value lives in: (source pipe, receiving scope).
_CROSSING = {Scope.L0C: (Pipe.FIXP, Scope.UB), Scope.UB: (Pipe.MTE3, Scope.L1)}


def op_side(op: Op) -> str | None:
    """``"AIC"``, ``"AIV"`` or None (SCALAR work, both cores) for a placed op.

    Example::

        >>> op_side(load_into_l1)          # doctest: +SKIP
        'AIC'
    """
    pipe = op.attrs.get("pipe")
    if pipe is None or Pipe(pipe) is Pipe.SCALAR:
        return None
    pipe = Pipe(pipe)
    if pipe.side is not None:
        return pipe.side
    if pipe is Pipe.MTE3:                   # UB -> GM: the AIV's on a separated part
        return "AIV"
    scope = op.attrs.get("scope")
    return Scope(scope).side if scope is not None else None


def value_scopes(fn: Function) -> dict[int, Scope]:
    """The scope of every placed tile value (by ``id``), loop-carried values and the
    results of loops and ifs included (they share their init's or their yields')."""
    out: dict[int, Scope] = {}
    ops = list(scheduled_ops(fn.body))
    for op in ops:
        scope = op.attrs.get("scope")
        if scope is not None:
            for r in op.results:
                if is_tile(r):
                    out[id(r)] = Scope(scope)
    for op in reversed(ops):            # inner loops first: their results feed outer yields
        for init, arg, nxt, res in loop_carried(op):
            scope = out.get(id(init)) or out.get(id(nxt))
            if scope is not None:
                out[id(arg)] = out[id(res)] = scope
        if op.kind is Kind.IF:
            for i, res in enumerate(op.results):
                scope = next((out[id(r.terminator.operands[i])] for r in op.regions
                              if id(r.terminator.operands[i]) in out), None)
                if scope is not None:
                    out[id(res)] = scope
    return out


def data_reads(op: Op) -> list[int]:
    """Operand positions whose data the op's own side reads: a dot's a, b (MTE1) and
    accumulator, every tile of a Vector op, a store's value.  Addresses and masks are the
    scalar unit's (DataCopy parameters, docs/npu-facts.md §A6): they never cross."""
    pipe = op.attrs.get("pipe")
    if op.kind is Kind.DOT:
        return list(range(len(op.operands)))
    if op.kind in _STORES:
        return [op.info.operand_index("value", len(op.operands))]
    if pipe is not None and Pipe(pipe) is Pipe.VECTOR:
        return [i for i, v in enumerate(op.operands) if is_tile(v)]
    return []


class SplitCores:
    """Inserts an ``npu.handoff`` for every value read on the other core's side (see the
    module doc) and records the function's ``npu.sides``; runs only on a separated part.

    Example::

        >>> SplitCores().run(fn, CompileContext(spec=ASCEND_910B_LIKE))   # doctest: +SKIP
        True
    """

    name = "split-cores"

    def run(self, fn: Function, ctx) -> bool:
        fn.attrs.pop(SIDES_ATTR, None)
        if ctx.spec is None or ctx.spec.arch != "separated":
            return False
        scopes = value_scopes(fn)
        crossings: dict[tuple, list] = {}      # (value id, receiving side) -> reads
        values: dict[int, object] = {}
        sides = set()
        for op in scheduled_ops(fn.body):
            side = op_side(op)
            if side is None:
                continue
            sides.add(side)
            for i in data_reads(op):
                v = op.operands[i]
                scope = scopes.get(id(v))
                if v.op is not None and v.op.kind is Kind.SPLAT:
                    continue    # a constant: carried.py gives the other side its own fill
                if scope in _CROSSING and scope.side != side:
                    crossings.setdefault((id(v), side), []).append((op, i))
                    values[id(v)] = v
        if sides == {"AIC", "AIV"}:
            fn.attrs[SIDES_ATTR] = ["AIC", "AIV"]
        if not crossings:
            return False
        pos = Positions(fn)
        made = [_hand_off(values[vid], scopes[vid], reads, pos)
                for (vid, side), reads in crossings.items()]
        _cross_flag_ids(made, fn)
        return True


def _cross_flag_ids(handoffs: list, fn: Function) -> None:
    """``cross_flags`` of each hand-off from the ``CROSS_FLAG_IDS`` pool.  A hand-off
    outside loops keeps its id for the whole kernel (nothing tells the sender that the
    receiver took it).  One in a loop has two, live only in its outermost loop: after
    the loop the sender's post-loop waits took the receiver's last "slot read" flags,
    so both cores are done with both ids, and the next loop one after it takes them
    again (causal flash attention's two KV loops each hand over S and P)."""
    free = list(range(CROSS_FLAG_IDS))
    by_loop: dict[int, list] = {}
    for h in handoffs:
        loop = outermost_loop(h)
        if loop is None:
            h.attrs["cross_flags"] = [_take(free, 1, h, fn)[0]]
        else:
            by_loop.setdefault(id(loop), []).append(h)
    for group in by_loop.values():
        pool = list(free)
        for h in group:
            h.attrs["cross_flags"] = _take(pool, 2, h, fn)


def _take(pool: list, n: int, h: Op, fn: Function) -> list:
    if len(pool) < n:
        raise OutOfResources(
            f"at {h.loc} in kernel '{fn.name}': the AIC <-> AIV hand-offs need more "
            f"than the {CROSS_FLAG_IDS} cross-core flag ids; hand fewer tiles between the "
            "Cube and the Vector core (or split the kernel in two)")
    taken = pool[:n]
    del pool[:n]
    return taken


def _hand_off(v, scope: Scope, reads: list, pos: Positions) -> Op:
    """Insert the hand-off of ``v`` before the first of ``reads`` in ``v``'s block and
    make those reads read it."""
    block: Block = v.owner if v.op is None else v.op.parent
    first = min((ancestor_in(op, block) for op, _ in reads), key=lambda o: pos.start[id(o)])
    src_pipe, into = _CROSSING[scope]
    h = Op(Kind.HANDOFF, [v], [v.type], {"pipe": Pipe.MTE2, "scope": into,
                                         "src_pipe": src_pipe}, loc=first.loc)
    block.insert(block.ops.index(first), h)
    for op, i in reads:
        op.set_operand(i, h.result)
    return h

