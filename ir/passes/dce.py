"""dce: dead code elimination.

A pure op none of whose results is used is removed, in every block, and removing it can
make its operands' producers dead too (one backward sweep catches whole chains).  A loop-
carried value of ``scf.for`` is removed when nothing reads it except the computation of its
own next value: its result is unused and its block argument only flows (through pure ops)
into its own position of the ``scf.yield``.

Example::

    %0 = "npu.program_id"() {axis = 0 : i64} : () -> i32
    %1 = "npu.add"(%0, %0) : (i32, i32) -> i32      // unused: both ops go
"""
from __future__ import annotations

from ..core import Block, Function, Op, Value
from ..ops import Kind


class DCE:
    """Dead code elimination, including unused loop-carried values.

    Example::

        >>> from npujit.ir.parser import parse_function
        >>> fn = parse_function('''"func.func"() ({
        ... ^bb0:
        ...   %0 = "npu.program_id"() {axis = 0 : i64} : () -> i32
        ...   "func.return"() : () -> ()
        ... }) {function_type = () -> (), sym_name = "k"} : () -> ()''')
        >>> DCE().run(fn), len(fn.body.ops)
        (True, 1)
    """

    name = "dce"

    def run(self, fn: Function, ctx=None) -> bool:
        changed = False
        while True:
            swept = self._sweep(fn.body)
            carried = self._drop_dead_carried(fn.body)
            changed |= swept or carried
            if not carried:  # dropping a carried value can kill more ops: sweep again
                return changed

    def _sweep(self, block: Block) -> bool:
        # Backwards: when an op is reached, every user of its results (later in the block
        # or inside a later op's region) has already been removed if it was dead, and a
        # removed op's reads are gone from its operands' use lists.
        changed = False
        kept: list[Op] = []
        for op in reversed(block.ops):
            for region in op.regions:
                changed |= self._sweep(region)
            if op.info.pure and not any(v.uses for v in op.results):
                op.drop_uses()
                op.parent = None
                changed = True
                continue
            kept.append(op)
        block.ops = kept[::-1]
        return changed

    def _drop_dead_carried(self, block: Block) -> bool:
        changed = False
        for op in block.ops:
            for region in op.regions:
                changed |= self._drop_dead_carried(region)
            if op.kind is Kind.FOR:
                changed |= self._drop_loop_values(op)
        return changed

    def _drop_loop_values(self, loop: Op) -> bool:
        body = loop.regions[0]
        if not body.ops or body.ops[-1].kind is not Kind.YIELD:
            return False  # malformed; the verifier says so
        yield_op = body.ops[-1]
        dead = [j for j in range(len(loop.results))
                if not loop.results[j].uses
                and _only_feeds_own_yield(body, body.args[1 + j], yield_op, j)]
        if not dead:
            return False
        keep = [j for j in range(len(loop.results)) if j not in dead]
        loop.operands = [*loop.operands[:3], *(loop.operands[3 + j] for j in keep)]
        loop.results = [loop.results[j] for j in keep]
        body.args = body.args[:1] + [body.args[1 + j] for j in keep]
        yield_op.operands = [yield_op.operands[j] for j in keep]
        for i, v in enumerate(loop.results):
            v.index = i
        for i, v in enumerate(body.args):
            v.index = i
        return True


def _only_feeds_own_yield(body: Block, arg: Value, yield_op: Op, j: int) -> bool:
    """Whether everything computed from ``arg`` only ends up as operand ``j`` of
    ``yield_op``: the forward slice of ``arg`` holds only pure ops."""
    tainted = {id(arg)}
    for op in body.walk():
        hits = [i for i, v in enumerate(op.operands) if id(v) in tainted]
        if not hits:
            continue
        if op is yield_op:
            if hits != [j]:
                return False
            continue
        if not op.info.pure or op.info.terminator:
            return False
        # A pure op with a region is npu.fused, whose region sees only its own block
        # arguments: tainting its results covers whatever it computes from ``arg``.
        tainted.update(id(v) for v in op.results)
    return True
