"""The buffer of a loop-carried value: one buffer, one live value at a time.

The allocator gives the values of one loop-carried variable (init, block argument,
yielded value, loop result) one buffer, as an accumulator lives in one place.  That is
only right when at every point at most one of them is live and every one of them is
written into the buffer by an op.  Three patterns break it, each fixed here by a copy
on the Vector unit (an ``npu.splat`` of a 0-d value -- Ascend's ``Duplicate`` -- or an
``npu.broadcast`` to the same shape -- ``DataCopy`` UB -> UB):

* **an init that writes nothing**: ``s = 0.0`` is a scalar constant with no buffer, so the
  first iteration would read whatever the buffer held.  A fill of the constant into the
  carried buffer is inserted before the loop;
* **an init that stays live**: the value is also used elsewhere at or after the loop
  (after CSE ``acc = nl.zeros(...)`` and a masked load's ``other=0.0`` are one zero tile;
  two accumulators -- a gate and an up projection in L0C -- may start from one zero
  tile), so the first write of the carried buffer would change it.  The loop gets its
  own splat (a splat init is cloned, in UB or L0C) or a copy;
* **a block argument read after the next value is made**: ``m_new = max(m, x)`` then
  ``exp(m - m_new)`` reads ``m`` after ``m_new`` was written over it.  The next value is
  made in its own buffer and copied into the carried one just before the yield (also
  when the yielded value is not made in the loop body, or is yielded twice).

An L0C accumulator is rewritten only for a shared zero init (the Cube accumulates in
place; its zero init is ``Mmad``'s ``cmatrixInitVal``).  :func:`carried_conflicts`
finds what is still broken (``verify-schedule`` refuses it); :func:`own_carried_buffers`
(the first part of ``allocate-buffers``) inserts the copies.

Example::

    >>> own_carried_buffers(fn)          # doctest: +SKIP
    True
"""
from __future__ import annotations

from npujit.target import Pipe, Scope

from ..core import (Function, Op, Value, ancestor_in, loop_arg_index, loop_carried,
                    loop_init_index, loop_yield_index)
from ..ops import LOOPS, Kind
from .model import Positions, clone_op, is_tile


def _carried(fn: Function):
    """(loop, j, init, arg, next, result) for every tile-typed carried variable."""
    for loop in [op for op in fn.walk() if op.kind in LOOPS]:
        for j, (init, arg, nxt, res) in enumerate(loop_carried(loop)):
            if is_tile(arg):
                yield loop, j, init, arg, nxt, res


def _scope(v: Value, seen=None):
    """The scope of the buffer a value is written into, following carried variables."""
    seen = set() if seen is None else seen
    if id(v) in seen:
        return None
    seen.add(id(v))
    op = v.op
    if op is not None and op.kind is Kind.IF:
        return next(filter(None, (_scope(r.terminator.operands[v.index], seen)
                                  for r in op.regions)), None)
    if op is None or op.kind in LOOPS:
        loop = op if op is not None else v.owner.parent_op
        if loop is None or loop.kind not in LOOPS:
            return None
        i = v.index if op is not None else v.index - loop_arg_index(loop)
        if i < 0:
            return None                     # scf.for's induction variable
        init, _, nxt, _ = loop_carried(loop)[i]
        return _scope(init, seen) or _scope(nxt, seen)
    return op.attrs.get("scope")


def _problems(fn: Function):
    """(loop, j, what) for each carried UB variable whose buffer would hold two live values
    or start unwritten; ``what`` is ``"init"`` or ``"next"`` (the side that needs a copy)."""
    pos = Positions(fn)
    for loop, j, init, arg, nxt, res in _carried(fn):
        scope = _scope(nxt) or _scope(init)
        if scope not in (Scope.UB, Scope.L0C):
            continue
        if scope is Scope.L0C and (init.op is None or init.op.kind is not Kind.SPLAT):
            continue            # an L0C chain is fixed only by a fresh zero init
        if _scope(init) is None:
            if scope is Scope.UB:
                yield loop, j, "init", "starts from a value that writes no buffer"
        else:
            for user, i in init.uses:
                if user is loop and i == loop_init_index(loop) + j:
                    continue
                carried_use = user.kind in LOOPS or user.kind is Kind.YIELD
                if carried_use or pos.start[id(user)] >= pos.start[id(loop)]:
                    yield loop, j, "init", "starts from a value that is used elsewhere too"
                    break
        if nxt is arg or scope is not Scope.UB:
            continue
        body = loop.body
        maker = ancestor_in(nxt.op, body) if nxt.op is not None else None
        term = body.terminator
        if maker is None or sum(v is nxt for v in term.operands[loop_yield_index(loop):]) > 1:
            yield loop, j, "next", "yields a value made outside the loop body or yielded twice"
            continue
        for user, _ in arg.uses:
            at = ancestor_in(user, body)
            if at is not None and at is not term and pos.start[id(at)] > pos.start[id(maker)]:
                yield loop, j, "next", "reads the carried value after the next one is made"
                break


def carried_conflicts(fn: Function) -> list[tuple[Op, str]]:
    """What :func:`own_carried_buffers` would fix: ``(loop, reason)`` per variable.

    Example::

        >>> carried_conflicts(fn)     # doctest: +SKIP
        []
    """
    return [(loop, f"loop-carried value #{j} {why}") for loop, j, _, why in _problems(fn)]


def _copy(value: Value, loc) -> Op:
    t = value.type
    kind = Kind.SPLAT if t.rank == 0 else Kind.BROADCAST
    return Op(kind, [value], [t], {"shape": tuple(t.shape), "pipe": Pipe.VECTOR,
                                   "scope": Scope.UB}, loc=loc)


def _unstrand_l0c_splats(fn: Function) -> None:
    """A zero splat placed in L0C as an accumulator's init that, once the accumulators
    have their own, feeds only Vector work (``maximum(acc + bias, 0.0)`` after CSE) goes
    back into the fused regions that read it (a scalar operand, as the fuser makes it) or
    becomes a Vector splat in UB: no L0C buffer to hand to the Vector unit."""
    for op in list(fn.walk()):
        if op.kind is Kind.SPLAT and op.attrs.get("scope") == Scope.L0C:
            users = op.result.uses
            if not users or any((u.kind in LOOPS and i >= loop_init_index(u)) or (u.kind is Kind.DOT
                                                                   and i == 2)
                                for u, i in users):
                continue
            rest = [(u, i) for u, i in users if u.kind is not Kind.FUSED]
            for u, i in users:
                if u.kind is Kind.FUSED:
                    _splat_inside(u, i, op)
            op.attrs["pipe"], op.attrs["scope"] = Pipe.VECTOR, Scope.UB
            if not rest:
                op.erase()


def _splat_inside(fused: Op, i: int, splat: Op) -> None:
    """Operand ``i`` of ``fused`` becomes the splat's scalar, splat inside the region (as
    the fuser puts its feeders)."""
    arg = fused.body.args[i]
    scalar = splat.operands[0]
    fused.set_operand(i, scalar)
    arg.type = scalar.type
    inner = Op(Kind.SPLAT, [arg], [splat.result.type], {"shape": splat.attrs["shape"]},
               loc=splat.loc)
    for user, j in arg.uses:
        if user is not inner:
            user.set_operand(j, inner.result)
    fused.body.insert(0, inner)


def own_carried_buffers(fn: Function) -> bool:
    """Insert the copies the module doc describes; returns whether it inserted any."""
    changed = False
    while True:
        found = next(iter(_problems(fn)), None)
        if found is None:
            if changed:
                _unstrand_l0c_splats(fn)
            return changed
        loop, j, side, _ = found
        if side == "init":
            init = loop.operands[loop_init_index(loop) + j]
            # another splat: a fill of a constant costs no more than a copy of it (an L0C
            # zero init is Mmad's cmatrixInitVal, no instruction)
            op = clone_op(init.op) if init.op is not None and init.op.kind is Kind.SPLAT \
                else _copy(init, loop.loc)
            block = loop.parent
            block.insert(block.ops.index(loop), op)
            loop.set_operand(loop_init_index(loop) + j, op.result)
        else:
            term = loop.body.terminator
            j += loop_yield_index(loop)
            nxt = term.operands[j]
            op = _copy(nxt, nxt.op.loc if nxt.op is not None else loop.loc)
            loop.body.insert(len(loop.body.ops) - 1, op)
            term.set_operand(j, op.result)
        changed = True
