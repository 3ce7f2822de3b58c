"""index-checks (debug mode only): catch int32 index arithmetic that wraps around.

Integer arithmetic wraps (docs/semantics.md), so ``pid * 2**30 * 4`` is 0 in int32 and
the address it feeds is silently wrong.  In debug mode (``NPUJIT_DEBUG=1`` or
``debug=True``) this pass finds the ``add``/``sub``/``mul`` ops on int32 values that feed
a memory op's offsets (through casts, broadcasts, loops' carried values, ...), and after
each one recomputes it in int64 and asserts both agree::

    %r = "npu.mul"(%a, %b) : (i32, i32) -> i32
    %a64 = "npu.cast"(%a) {dtype = i64}        %b64 = "npu.cast"(%b) {dtype = i64}
    %w = "npu.mul"(%a64, %b64)                 %n = "npu.cast"(%r) {dtype = i64}
    "npu.assert"(%ok = "npu.cmp"(%w, %n) {predicate = "eq"}) {error = "overflow", ...}

Both tiers then raise ``IndexOverflowError`` with the kernel, line, program id and lane.
Run before the other passes (the checks are ordinary ops: fold/CSE/DCE/fusion apply).
Values read from memory (gathers through loaded indices) are not followed.

Outside debug mode the CPU tiers still check the *scalar* ones (``scalar_address_ops``:
a program id times a stride, a loop counter times a tile size), without IR asserts, so
the schedule, the simulation and the emitted Ascend C are unchanged: a scalar op runs
once per program or loop trip, so its check is free, and a wrapped scalar base is how
a whole tile lands back inside the argument, where the range check cannot see it
(``pid * 2**30 * 4`` is 0 for every program).  Tile arithmetic that wraps is left to
debug mode.

Example::

    >>> IndexChecks().run(fn)          # doctest: +SKIP
    True
"""
from __future__ import annotations

from ..builder import Builder
from ..core import Block, Function, Op
from ..ops import Kind
from ..slice import addressing, backward_slice
from ..types import int32, int64

_CHECKED = (Kind.ADD, Kind.SUB, Kind.MUL)
_DATA = (Kind.LOAD, Kind.BLOCK_LOAD, Kind.ATOMIC_RMW)
SYMBOL = {Kind.ADD: "+", Kind.SUB: "-", Kind.MUL: "*"}   # of the checked kinds
ADVICE = "cast an operand to nl.int64 first, e.g. pid.to(nl.int64) * BLOCK"


def _address_ops(fn: Function) -> list[Op]:
    """The int32 add/sub/mul ops whose results flow into some memory op's addressing."""
    roots = [v for op in fn.walk() for v in addressing(op)]
    ops, _ = backward_slice(roots, stop=_DATA)
    return [op for op in ops if op.kind in _CHECKED and op.result.type.dtype == int32]


def scalar_address_ops(fn: Function) -> list[Op]:
    """The rank-0 ops of ``_address_ops``: what the CPU tiers check outside debug mode."""
    return [op for op in _address_ops(fn) if not op.result.type.shape]


def overflow_template(op: Op) -> str:
    """The message of a scalar ``op`` that wrapped, after the kernel/line/program head,
    with ``%d`` for both operands, the exact result and the wrapped one."""
    return (f"int32 index arithmetic %d {SYMBOL[op.kind]} %d = %d overflowed (it wraps to "
            f"%d, and the address it feeds would be wrong); {ADVICE}")


class IndexChecks:
    """Insert an int64 re-computation and an overflow assert after each int32 add/sub/mul
    that feeds an address (see the module doc)."""

    name = "index-checks"

    def run(self, fn: Function, ctx=None) -> bool:
        ops = _address_ops(fn)
        for op in ops:
            self._check(op)
        return bool(ops)

    @staticmethod
    def _check(op: Op) -> None:
        block: Block = op.parent
        at = block.ops.index(op) + 1
        tail = Block()                         # build into a scratch block, then splice
        b = Builder(tail, loc=op.loc)
        wide = [b.op(Kind.CAST, [x], {"dtype": int64}) for x in op.operands]
        exact = b.op(op.kind, wide)
        got = b.op(Kind.CAST, [op.result], {"dtype": int64})
        ok = b.op(Kind.CMP, [exact, got], {"predicate": "eq"})
        b.create(Kind.ASSERT, [ok], {
            "error": "overflow",
            "message": f"int32 index arithmetic '{SYMBOL[op.kind]}' overflowed (the address "
                       f"would wrap around); {ADVICE}"})
        for i, new in enumerate(tail.ops):
            block.insert(at + i, new)
