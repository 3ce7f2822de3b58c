"""fuse-elementwise: group chains of elementwise tile ops into one ``npu.fused`` op.

A group is a set of elementwise ops of one block that work at one tile shape and feed each
other; splat/broadcast ops may join only as *feeders* (they widen an input from outside the
group to the group's shape).  The group becomes an ``npu.fused`` op whose operands are the
values it reads from outside, whose region's block arguments stand for those operands one
to one, and whose ``scf.yield`` gives the group values used outside; the fused op's results
replace those uses.

Where the fused op goes: at the group's last op.  That is valid when no op outside the
group uses a group value before that point, so groups grow in program order and a group is
*closed* (takes no more ops) as soon as an outside op uses one of its values.  The same rule
rules out cycles: an outside op between two group ops that reads the group has closed it.

Scalar (shape ``()``) arithmetic is not fused: it is index and loop-bound math that runs on
the Scalar pipe and that later passes want to see as plain ops.

Example::

    %2 = "npu.add"(%0, %1) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %3 = "npu.exp"(%2) : (tensor<64xf32>) -> tensor<64xf32>
    // after: %2 = "npu.fused"(%0, %1) ({ ^bb0(%a, %b): add; exp; "scf.yield"(exp) }) ...
"""
from __future__ import annotations

from ..core import Block, Function, Op, Value, ancestor_in
from ..ops import ELEMENTWISE, Kind
from ..types import TensorType

FEEDERS = frozenset({Kind.SPLAT, Kind.BROADCAST})


class _Group:
    __slots__ = ("shape", "ops", "open")

    def __init__(self, shape, op: Op):
        self.shape = shape
        self.ops = [op]
        self.open = True

    @property
    def fusible(self) -> bool:
        return len(self.ops) >= 2 and any(op.kind not in FEEDERS for op in self.ops)


def _tile_shape(op: Op):
    """The loop shape ``op`` would run at inside a group, or None when it cannot join."""
    if op.kind not in ELEMENTWISE or len(op.results) != 1 or op.regions:
        return None
    t = op.result.type
    return t.shape if isinstance(t, TensorType) and t.rank >= 1 else None


def find_groups(block: Block) -> list[_Group]:
    """Greedy, program-order grouping of ``block``'s elementwise ops (see module doc)."""
    group_of: dict[int, _Group] = {}   # id(op) -> its group
    defining: dict[int, Op] = {id(v): op for op in block.ops for v in op.results}
    groups: list[_Group] = []
    for op in block.ops:
        joined = None
        shape = _tile_shape(op)
        if shape is not None:
            if op.kind not in FEEDERS:
                for v in op.operands:
                    producer = defining.get(id(v))
                    g = group_of.get(id(producer)) if producer is not None else None
                    if g is None or not g.open or g.shape != shape or g is joined:
                        continue
                    if joined is None:
                        joined = g
                    else:  # the op links two open groups: merge them
                        joined.ops += g.ops
                        for member in g.ops:
                            group_of[id(member)] = joined
                        groups.remove(g)
            if joined is None:
                joined = _Group(shape, op)
                groups.append(joined)
            else:
                joined.ops.append(op)
            group_of[id(op)] = joined
        # Any other group this op reads (here or inside its regions) is now used from
        # outside before it ends, so it must end where it is.
        for inner in op.walk():
            for v in inner.operands:
                producer = defining.get(id(v))
                g = group_of.get(id(producer)) if producer is not None else None
                if g is not None and g is not joined:
                    g.open = False
    index = {id(op): i for i, op in enumerate(block.ops)}
    for g in groups:
        g.ops.sort(key=lambda o: index[id(o)])
    return [g for g in groups if g.fusible]


def _build_fused(group: _Group, block: Block) -> Op | None:
    """Move the group's ops into a new ``npu.fused`` op whose results replace theirs
    outside it."""
    members = {id(op) for op in group.ops}
    defined = {id(v) for op in group.ops for v in op.results}
    inputs: list[Value] = []
    for op in group.ops:
        for v in op.operands:
            if id(v) not in defined and all(v is not w for w in inputs):
                inputs.append(v)
    outputs = [v for op in group.ops for v in op.results
               if any(id(ancestor_in(u, block)) not in members for u in v.users)]
    if not outputs:
        return None  # nothing outside reads the group: dce's business, not ours
    region = Block([v.type for v in inputs])
    arg_of = {id(v): a for v, a in zip(inputs, region.args)}
    for op in group.ops:
        op.operands = [arg_of.get(id(v), v) for v in op.operands]
        region.append(op)
    region.append(Op(Kind.YIELD, outputs, []))
    fused = Op(Kind.FUSED, inputs, [v.type for v in outputs], {}, [region], loc=group.ops[-1].loc)
    for old, new in zip(outputs, fused.results):
        # Outside reads take the fused result; the region keeps its own internal values.
        for user, i in old.uses:
            if ancestor_in(user, region) is None:
                user.set_operand(i, new)
    return fused


class FuseElementwise:
    """Group elementwise tile ops into ``npu.fused`` ops (groups of two ops or more).

    Example::

        >>> from npujit.ir.parser import parse_function
        >>> fn = parse_function('''"func.func"() ({
        ... ^bb0(%x: !npu.ptr<f32>):
        ...   %0 = "npu.arange"() {end = 8 : i64, start = 0 : i64} : () -> tensor<8xi32>
        ...   %1 = "npu.load"(%x, %0) : (!npu.ptr<f32>, tensor<8xi32>) -> tensor<8xf32>
        ...   %2 = "npu.exp"(%1) : (tensor<8xf32>) -> tensor<8xf32>
        ...   %3 = "npu.neg"(%2) : (tensor<8xf32>) -> tensor<8xf32>
        ...   "npu.store"(%x, %0, %3) : (!npu.ptr<f32>, tensor<8xi32>, tensor<8xf32>) -> ()
        ...   "func.return"() : () -> ()
        ... }) {function_type = (!npu.ptr<f32>) -> (), sym_name = "k"} : () -> ()''')
        >>> FuseElementwise().run(fn), [op.kind.value for op in fn.body.ops]
        (True, ['npu.arange', 'npu.load', 'npu.fused', 'npu.store', 'func.return'])
    """

    name = "fuse-elementwise"

    def run(self, fn: Function, ctx=None) -> bool:
        return self._fuse_block(fn.body)

    def _fuse_block(self, block: Block) -> bool:
        changed = False
        for op in block.ops:
            if op.kind is not Kind.FUSED:  # a fused region is already one loop nest
                for region in op.regions:
                    changed |= self._fuse_block(region)
        groups = find_groups(block)
        if not groups:
            return changed
        placed: dict[int, Op] = {}   # id(last op of a group) -> the fused op
        moved: set[int] = set()
        for g in groups:
            fused = _build_fused(g, block)
            if fused is None:
                continue
            placed[id(g.ops[-1])] = fused
            moved.update(id(op) for op in g.ops)
        if not placed:
            return changed
        new_ops: list[Op] = []
        for op in block.ops:
            if id(op) in placed:
                op = placed[id(op)]
            elif id(op) in moved:
                continue
            new_ops.append(op)
        block.ops = []
        for op in new_ops:
            block.append(op)
        return True
