"""dot-accumulate: ``acc + dot(a, b)`` becomes ``dot(a, b, acc)``, so the Cube accumulates.

Triton's matmul is written ``acc += nl.dot(a, b)``: traced, that is a dot with no
accumulator whose result an ``npu.add`` on the Vector adds to ``acc``.  On the NPU that
costs an L0C -> UB move and a Vector add per K step, and on a separated part (910B) the
Cube result would have to cross to the Vector core through GM inside the loop.  The dot's
reference semantics are ``acc + a @ b`` in the result type (``backends/reference/
semantics_cube.py``), exactly the add's, so when the dot's result feeds nothing but that
add, the add folds into the dot and ``acc`` stays in L0C (as with ``nl.dot(a, b, acc)``).

The accumulator must be one the Cube can hold in L0C: a value carried from the last
step, a dot's result, a fill.  An accumulator the Vector computes each step -- flash
attention's ``acc = acc * alpha[:, None]`` before ``tl.dot(p, v, acc)``, or
``acc * 0.5 + tl.dot(a, b)`` -- cannot reach L0C on the Ascend parts (no path from UB
into L0C; on the 910B-like part the Vector is another core): there the add is kept, or
made from a dot written with that accumulator, ``dot(a, b, c) -> c + dot(a, b)``, so the
dot's fresh result crosses to the Vector (split-cores' hand-off) and the sum stays there.
The same reference semantics, so the CPU tiers give the same numbers.

Example::

    %2 = "npu.dot"(%a, %b) : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf32>
    %3 = "npu.add"(%acc, %2) : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    // after: %3 = "npu.dot"(%a, %b, %acc) : (...) -> tensor<16x16xf32>
"""
from __future__ import annotations

from ..core import Block, Function, Op
from ..ops import ELEMENTWISE, Kind


def vector_made(v) -> bool:
    """Is ``v`` computed by elementwise (Vector) work, so no L0C accumulator?"""
    op = v.op
    return op is not None and (op.kind in ELEMENTWISE or op.kind is Kind.FUSED) \
        and op.kind not in (Kind.SPLAT, Kind.BROADCAST)


class DotAccumulate:
    """Folds ``add(acc, dot(a, b))`` (either operand order) into ``dot(a, b, acc)``.

    Example::

        >>> from npujit.ir.parser import parse_function
        >>> fn = parse_function('''"func.func"() ({
        ... ^bb0(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>):
        ...   %0 = "npu.dot"(%a, %b) : (tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<16x16xf32>
        ...   %1 = "npu.add"(%c, %0) : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
        ...   "npu.print"(%1) {prefix = ""} : (tensor<16x16xf32>) -> ()
        ...   "func.return"() : () -> ()
        ... }) {function_type = (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> (),
        ...     sym_name = "k"} : () -> ()''')
        >>> DotAccumulate().run(fn), [op.kind.value for op in fn.body.ops]
        (True, ['npu.dot', 'npu.print', 'func.return'])
    """

    name = "dot-accumulate"

    def run(self, fn: Function, ctx=None) -> bool:
        return self._block(fn.body)

    def _block(self, block: Block) -> bool:
        changed = False
        for op in list(block.ops):
            for region in op.regions:
                changed |= self._block(region)
            if op.kind is Kind.ADD:
                changed |= self._fold(block, op)
            elif op.kind is Kind.DOT and len(op.operands) == 3 and vector_made(op.operands[2]):
                self._unfold(block, op)
                changed = True
        return changed

    @staticmethod
    def _unfold(block: Block, dot: Op) -> None:
        """``dot(a, b, c)`` -> ``c + dot(a, b)`` (``c`` made on the Vector)."""
        a, b, acc = dot.operands
        fresh = Op(Kind.DOT, [a, b], [dot.result.type], dict(dot.attrs), loc=dot.loc)
        block.insert(block.ops.index(dot), fresh)
        add = Op(Kind.ADD, [acc, fresh.result], [dot.result.type], loc=dot.loc)
        block.insert(block.ops.index(dot), add)
        dot.result.replace_all_uses_with(add.result)
        dot.erase()

    @staticmethod
    def _fold(block: Block, add: Op) -> bool:
        for i, d in enumerate(add.operands):
            dot = d.op
            if (dot is None or dot.kind is not Kind.DOT or dot.parent is not block
                    or len(dot.operands) != 2 or len(d.uses) != 1):
                continue
            acc = add.operands[1 - i]
            if acc.type != d.type or add.result.type != d.type or vector_made(acc):
                continue
            # The dot moves to the add's place: its operands are defined before the dot,
            # the accumulator before the add, so both are defined there.
            block.ops.remove(dot)
            block.ops[block.ops.index(add)] = dot
            dot.operands = (*dot.operands, acc)
            add.result.replace_all_uses_with(dot.result)
            add.drop_uses()
            add.parent = None
            return True
        return False
