"""Buffers of ``scf.if`` results: each branch writes the result into one shared buffer.

A tile that an ``scf.if`` yields is one buffer whichever branch ran (the allocator joins
the result with both yielded values, ``allocate.py``), so each branch must *make* its
value into that buffer.  A branch that yields a value made elsewhere (before the ``if``,
or in the other branch's place: ``x`` left unchanged, a tile yielded for two results)
gets a Vector copy at its end, as ``carried.py`` does for loop-carried values.  A result
with no buffer in either branch (a scalar on the scalar unit) needs nothing.

A Cube accumulator (L0C) cannot be copied by the Vector unit, so an ``scf.if`` yielding
one is refused with an error naming the ``if`` (move the ``nl.dot`` out of the branch and
choose its input, or its result after the store, with ``nl.where``).

Example::

    %5 = "scf.if"(%c) ({ %6 = "npu.mul"(%x, %x) ...; "scf.yield"(%6) },
                      { %7 = "npu.broadcast"(%x) {pipe = "VECTOR", scope = "UB"};  // inserted
                        "scf.yield"(%7) })
"""
from __future__ import annotations

from npujit.errors import CompilationError
from npujit.target import Scope

from ..core import Function
from ..ops import Kind
from .carried import _copy, _scope
from .model import is_folded_cast


def _needs_copy(region, i: int, scope) -> bool:
    term = region.terminator
    v = term.operands[i]
    op = v.op
    return (op is None or op.parent is not region or op.attrs.get("scope") != scope
            or is_folded_cast(op) or op.kind is Kind.IF
            or sum(x is v for x in term.operands) > 1)


def own_branch_buffers(fn: Function) -> bool:
    """Insert the copies the module doc describes; returns whether it inserted any."""
    changed = False
    for op in [o for o in fn.walk() if o.kind is Kind.IF]:
        for i, res in enumerate(op.results):
            scope = _scope(res)
            if scope is None:
                continue
            if scope is Scope.L0C:
                raise CompilationError(
                    "an if on a run-time condition cannot yield a Cube accumulator (an "
                    "nl.dot result in L0C, or a value computed from one only in a branch) "
                    "yet: compute the dot and what follows from it outside the if, and pick "
                    "the result with nl.where(cond, a, b) instead of assigning it in a "
                    "branch", op.loc, fn.name)
            for region in op.regions:
                if _needs_copy(region, i, scope):
                    v = region.terminator.operands[i]
                    copy = _copy(v, op.loc)
                    region.insert(len(region.ops) - 1, copy)
                    region.terminator.set_operand(i, copy.result)
                    changed = True
    return changed

