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
  two accumulators may start from one zero tile), so the first write of the carried
  buffer would change it.  The loop gets a copy of it;
* **a block argument read after the next value is made**: ``m_new = max(m, x)`` then
  ``exp(m - m_new)`` reads ``m`` after ``m_new`` was written over it.  The next value is
  made in its own buffer and copied into the carried one just before the yield (also
  when the yielded value is not made in the loop body, or is yielded twice).

Only UB variables are rewritten (an L0C accumulator is the Cube's, and its zero init is
``Mmad``'s ``cmatrixInitVal``).  :func:`carried_conflicts` finds what is still broken
(``verify-schedule`` refuses it); :func:`own_carried_buffers` (the first part of
``allocate-buffers``) inserts the copies.

Example::

    >>> own_carried_buffers(fn)          # doctest: +SKIP
    True
"""
from __future__ import annotations

from npujit.target import Pipe, Scope

from ..core import Function, Op, Value
from ..ops import Kind
from .model import Positions, ancestor_in, is_tile


def _carried(fn: Function):
    """(loop, j, init, arg, next, result) for every tile-typed carried variable."""
    for loop in [op for op in fn.walk() if op.kind is Kind.FOR]:
        term = loop.body.terminator
        for j, (init, arg, nxt, res) in enumerate(zip(loop.operands[3:], loop.body.args[1:],
                                                      term.operands, loop.results)):
            if is_tile(arg):
                yield loop, j, init, arg, nxt, res


def _scope(v: Value, seen=None):
    """The scope of the buffer a value is written into, following carried variables."""
    seen = set() if seen is None else seen
    if id(v) in seen:
        return None
    seen.add(id(v))
    op = v.op
    if op is None or op.kind is Kind.FOR:
        loop = op if op is not None else v.owner.parent_op
        if loop is None or loop.kind is not Kind.FOR or (op is None and v.index == 0):
            return None
        i = v.index if op is not None else v.index - 1
        return (_scope(loop.operands[3 + i], seen)
                or _scope(loop.body.terminator.operands[i], seen))
    return op.attrs.get("scope")


def _uses(fn: Function) -> dict[int, list[tuple[Op, int]]]:
    out: dict[int, list] = {}
    for op in fn.walk():
        for i, v in enumerate(op.operands):
            out.setdefault(id(v), []).append((op, i))
    return out


def _problems(fn: Function):
    """(loop, j, what) for each carried UB variable whose buffer would hold two live values
    or start unwritten; ``what`` is ``"init"`` or ``"next"`` (the side that needs a copy)."""
    pos = Positions(fn)
    uses = _uses(fn)
    for loop, j, init, arg, nxt, res in _carried(fn):
        if _scope(nxt) != Scope.UB and _scope(init) != Scope.UB:
            continue
        if _scope(init) is None:
            yield loop, j, "init", "starts from a value that writes no buffer"
        else:
            for user, i in uses.get(id(init), ()):
                if user is loop and i == 3 + j:
                    continue
                carried_use = user.kind in (Kind.FOR, Kind.YIELD)
                if carried_use or pos.start[id(user)] >= pos.start[id(loop)]:
                    yield loop, j, "init", "starts from a value that is used elsewhere too"
                    break
        if nxt is arg:
            continue
        body = loop.body
        maker = ancestor_in(nxt.op, body) if nxt.op is not None else None
        term = body.terminator
        if maker is None or sum(v is nxt for v in term.operands) > 1:
            yield loop, j, "next", "yields a value made outside the loop body or yielded twice"
            continue
        for user, _ in uses.get(id(arg), ()):
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


def own_carried_buffers(fn: Function) -> bool:
    """Insert the copies the module doc describes; returns whether it inserted any."""
    changed = False
    while True:
        found = next(iter(_problems(fn)), None)
        if found is None:
            return changed
        loop, j, side, _ = found
        if side == "init":
            op = _copy(loop.operands[3 + j], loop.loc)
            block = loop.parent
            block.insert(block.ops.index(loop), op)
            loop.operands[3 + j] = op.result
        else:
            term = loop.body.terminator
            nxt = term.operands[j]
            op = _copy(nxt, nxt.op.loc if nxt.op is not None else loop.loc)
            loop.body.insert(len(loop.body.ops) - 1, op)
            term.operands[j] = op.result
        changed = True
