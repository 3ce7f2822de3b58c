"""group-loads: a multi-buffered loop's GM loads move up together, ahead of the work
that does not feed them.

A hand-written Cube loop loads every tile of a K step, then sets one ``MTE2_MTE1``
flag for all of them (docs/npu-facts.md §A1, a ``SetFlag`` fires once the copies before
it have landed).  Traced from ``gate = dot(x, load(g), gate); up = dot(x, load(u), up)``
the body reads ``load x; load g; dot; load u; dot``, and a flag after ``g`` for the first
dot holds ``u`` back on the in-order MTE2 pipe by a GM round trip every step.  This step
moves each GM load into L1 of a loop body with ``num_stages >= 2`` up past the ops before
it that it does not read and that touch no memory, so the body becomes ``load x; load g;
load u; dot; dot``, and insert-sync (``sync.py`` ``_LoadRuns``) sets one flag after the
run.  Loads into UB stay where they are: a Vector body's loads moved up would hold their
UB slots longer, and a kernel near the 192 KB budget could stop fitting.

What does not change: the order of the MTE2 pipe's own work (a load never passes another
MTE2 op), the order of a load and any store, branch or loop, and what each op computes
(the ops passed are pure), so every tier runs the same values.  It runs before
allocate-buffers, so buffer lifetimes are those of the new order.

Example (a body, before -> after)::

    %x = npu.load ...; %g = npu.block_load ...; %a = npu.dot(%x, %g, ...)
    %u = npu.block_load ...; %b = npu.dot(%x, %u, ...)
    ->
    %x = npu.load ...; %g = npu.block_load ...; %u = npu.block_load ...
    %a = npu.dot(%x, %g, ...); %b = npu.dot(%x, %u, ...)
"""
from __future__ import annotations

from ..core import Block, Function, Op
from ..ops import LOOPS, Kind
from .model import GM_LOADS, SIDES_ATTR, scheduled_ops
from .split_cores import op_side


class GroupLoads:
    """Moves the GM loads of each multi-buffered loop body up together (module doc).

    Example::

        >>> GroupLoads().run(fn, CompileContext(spec=ASCEND_910B_LIKE))   # doctest: +SKIP
        True
    """

    name = "group-loads"

    def run(self, fn: Function, ctx) -> bool:
        changed = False
        split = SIDES_ATTR in fn.attrs
        for op in list(scheduled_ops(fn.body)):
            if op.kind in LOOPS and int(op.attrs.get("num_stages", 1)) >= 2:
                changed |= _group(op.body, split)
        return changed


def _group(block: Block, split: bool) -> bool:
    ops = block.ops
    changed = False
    for i in range(len(ops)):
        load = ops[i]
        if (load.kind not in GM_LOADS or load.attrs.get("pipe") != "MTE2"
                or load.attrs.get("scope") != "L1"):
            continue
        j = i
        while j > 0 and _passable(ops[j - 1], load, split):
            j -= 1
        if j < i:
            ops.insert(j, ops.pop(i))
            changed = True
    return changed


def _passable(op: Op, load: Op, split: bool) -> bool:
    """Whether ``load`` may run before ``op``: ``op`` makes nothing the load reads, has no
    regions but a fused elementwise body (flash attention's softmax between the K and V
    loads), and is pure and not on the MTE2 pipe -- or, on a kernel split between the
    AIC and the AIV, is the other core's work or hand-off (in the other core's stream,
    so what it does is ordered only by flags; passing it too keeps a rescheduled kernel,
    whose hand-offs split-cores places anew, in the same order)."""
    if any(v.op is op for v in load.operands) or (op.regions and op.kind is not Kind.FUSED):
        return False
    side = op_side(op) if split else None
    if side is not None and side != op_side(load):
        return op.info.pure or op.kind is Kind.HANDOFF
    return op.info.pure and op.attrs.get("pipe") != "MTE2"
