"""cse: common subexpression elimination of pure ops.

Two pure ops with the same kind, operands, attributes and result types compute the same
values, so the later one is dropped and its uses point at the earlier one.  ``npu.add``,
``npu.mul``, ``npu.and``, ``npu.or`` and ``npu.xor`` match with their operands swapped
(``maximum``/``minimum`` do not: which of -0.0/+0.0 or which NaN comes out may depend on
the order).  Scoping follows dominance: an op in a loop body may be replaced by an
equal op before the loop, never the other way round, and ``npu.fused`` regions (which see
only their own block arguments) start from an empty table.  Ops with regions are not
merged themselves.

Example::

    %2 = "npu.add"(%0, %1) : (f32, f32) -> f32
    %3 = "npu.add"(%1, %0) : (f32, f32) -> f32      // uses of %3 now use %2
"""
from __future__ import annotations

import struct

from ..core import Block, Function, Op
from ..ops import Kind


def freeze_attr(value):
    """A hashable key for an attribute value that tells apart what prints differently
    (``0.0`` from ``-0.0``, ``True`` from ``1``) and equates NaNs with equal bits."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(freeze_attr(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, freeze_attr(v)) for k, v in value.items())))
    return (type(value).__name__, value)


def op_key(op: Op):
    """What makes two pure ops interchangeable."""
    operands = [id(v) for v in op.operands]
    if op.info.swappable:
        operands.sort()
    return (op.kind, tuple(operands), freeze_attr(op.attrs), tuple(v.type for v in op.results))


class CSE:
    """Common subexpression elimination, scoped by region.

    Example::

        >>> from npujit.ir.parser import parse_function
        >>> fn = parse_function('''"func.func"() ({
        ... ^bb0:
        ...   %0 = "npu.program_id"() {axis = 0 : i64} : () -> i32
        ...   %1 = "npu.program_id"() {axis = 0 : i64} : () -> i32
        ...   "npu.print"(%0, %1) {prefix = ""} : (i32, i32) -> ()
        ...   "func.return"() : () -> ()
        ... }) {function_type = () -> (), sym_name = "k"} : () -> ()''')
        >>> CSE().run(fn), len(fn.body.ops)
        (True, 3)
    """

    name = "cse"

    def run(self, fn: Function, ctx=None) -> bool:
        return self._cse_block(fn.body, [{}])

    def _cse_block(self, block: Block, scopes: list[dict]) -> bool:
        changed = False
        scopes = scopes + [{}]
        new_ops: list[Op] = []
        for op in block.ops:
            for region in op.regions:
                # A fused region is isolated from above: it may not use outer values.
                changed |= self._cse_block(region, [] if op.kind is Kind.FUSED else scopes)
            if not op.info.pure or op.regions or not op.results:
                new_ops.append(op)
                continue
            key = op_key(op)
            earlier = next((s[key] for s in reversed(scopes) if key in s), None)
            if earlier is None:
                scopes[-1][key] = op
                new_ops.append(op)
                continue
            for old, new in zip(op.results, earlier.results):
                old.replace_all_uses_with(new)
            op.drop_uses()
            op.parent = None
            changed = True
        block.ops = new_ops
        return changed
