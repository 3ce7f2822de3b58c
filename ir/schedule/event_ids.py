"""Event ids for the schedule's flags, allocated by liveness and safe on 1-bit flags.

A hardware flag is one bit per ``(SRC_DST, id)`` (docs/npu-facts.md §A6): a set on a flag
that is still set is lost, and the wait that needed it hangs.  So an id may pass from one
flag to a later one of the same pipe pair only when every wait of the first is ordered
**in time** -- not just in program order -- before every set of the second.  That is a
happens-before question over the pipes: from the first flag's last wait (on ``dst``) to the
second flag's first set (on ``src``) there must be a chain of program order on one pipe and
flags the schedule itself sets and waits (e.g. the slot-release flag a loop drains after
its last iteration orders the loop's last Vector read before anything MTE2 does after it,
so two pipelined loops one after the other use the same ids, as Ascend C's queues free
theirs).  Flag edges inside a loop that holds neither end are not used (the loop may run
zero times), and two flags in one loop body never share (the next iteration would need
the reverse order too).

When no id is free, a single forward flag is **merged** into the latest flag of the same
pipes and block that still holds its id: one set after the later producer and one wait
before the earlier consumer cover both (pipes run in order), so ten tiles loaded up front
and reduced one by one use as many ids as there are, the last ones sharing one set.  A
flag that can neither get ids nor merge is ``OutOfResources`` at the line that needs it:
the loop (its ``num_stages``) for a rotating or loop flag, the consumer for a single one.

On a separated part (910B) the AIC <-> AIV hand-offs are ops of the IR
(``split_cores.py``): their flags (``CUBE -> FIXP`` before one, ``MTE2 -> VECTOR`` after
it, ...) are flags like any other here; their cross-core flags are not event ids.

Example::

    >>> alloc = EventIds(fn, spec, pos)                   # doctest: +SKIP
    >>> alloc.plan(flags); alloc.write()                  # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass

from npujit.errors import OutOfResources

from ..core import Function, Op
from ..ops import CONTROL
from .model import Flag, Positions, add_flag, enclosing_loop

# Phases of one program position: waits before an op, its own inner flags, sets after it.
_WAIT, _INNER, _SET = 0, 1, 2


@dataclass(eq=False)
class PlannedFlag:
    """A flag before it has ids: ``count`` ids rotating per iteration, the ops whose
    ``set_flags``/``wait_flags`` carry it, and for a loop flag the loop that pre-sets and
    drains it.  ``block`` is where a single flag's ends were lifted to (merging needs the
    same block); ``anchor`` is the op an error names."""

    src: str
    dst: str
    count: int
    setters: list
    waiters: list
    loop: Op | None = None
    block: object = None
    anchor: Op | None = None
    first: int | None = None

    def merge(self, other: "PlannedFlag", pos: Positions) -> bool:
        """Take ``other`` (a later single flag of the same pipes) into this one when one
        set after the later producer and one wait before the earlier consumer still run
        forward; returns whether it did."""
        if (self.loop is not None or other.loop is not None or self.count != 1
                or other.count != 1 or self.block is not other.block):
            return False
        setter = max(self.setters + other.setters, key=lambda op: pos.start[id(op)])
        waiter = min(self.waiters + other.waiters, key=lambda op: pos.start[id(op)])
        if pos.start[id(setter)] >= pos.start[id(waiter)]:
            return False
        self.setters, self.waiters = [setter], [waiter]
        return True


class EventIds:
    """Gives every planned flag its ids (see the module doc) and writes the attributes."""

    def __init__(self, fn: Function, spec, pos: Positions):
        self.fn, self.spec, self.pos = fn, spec, pos
        self.flags: list[PlannedFlag] = []

    # --- where sets and waits happen --------------------------------------------------
    def _site(self, op: Op, phase: int, after: bool) -> tuple[int, tuple]:
        """(position, loops that must run for it) of a set/wait carried by ``op``."""
        if op.kind in CONTROL:
            at = self.pos.end[id(op)] if after else self.pos.start[id(op)]
            return at * 3 + phase, _loops(op)
        return self.pos.start[id(op)] * 3 + phase, _loops(op)

    def _pairs(self, f: PlannedFlag):
        """(set position, set loops, wait position, wait loops) of each set and the wait
        that takes it, forward in program order (back edges of loops are left out)."""
        if f.loop is not None:
            pre = self._site(f.loop, _INNER, after=False)
            post = self._site(f.loop, _INNER, after=True)
            for w in f.waiters:
                yield pre, self._site(w, _WAIT, after=False)
            for s in f.setters:
                yield self._site(s, _SET, after=True), post
            return
        for s in f.setters:
            for w in f.waiters:
                if s is w:
                    site = self._site(s, _INNER, after=False)
                    yield site, site
                else:
                    yield self._site(s, _SET, after=True), self._site(w, _WAIT, after=False)

    def _first_set(self, f: PlannedFlag):
        return min((p[0] for p in self._pairs(f)), key=lambda s: s[0])

    def _last_wait(self, f: PlannedFlag):
        return max((p[1] for p in self._pairs(f)), key=lambda s: s[0])

    def _ordered(self, a_pipe, a_site, b_pipe, b_site) -> bool:
        """Whether pipe ``a_pipe`` at ``a_site`` happens before ``b_pipe`` at ``b_site``
        through program order and the planned flags (see the module doc)."""
        allowed = set(a_site[1]) | set(b_site[1])
        reach = {a_pipe: a_site[0]}
        changed = True
        while changed:
            changed = False
            for f in self.flags:
                if f.src not in reach:
                    continue
                for (sp, sl), (wp, wl) in self._pairs(f):
                    if (sp >= reach[f.src] and wp <= b_site[0] and wp < reach.get(f.dst, 1 << 62)
                            and set(sl) <= allowed and set(wl) <= allowed):
                        reach[f.dst] = wp
                        changed = True
        return b_pipe in reach and reach[b_pipe] <= b_site[0]

    def _free_after(self, holder: PlannedFlag, f: PlannedFlag, ordered: bool = True) -> bool:
        """Whether ``f`` may take an id ``holder`` had: in program order after it, not in
        one loop body with it, and (``ordered``) its first set after the holder's last wait
        in time."""
        last, first = self._last_wait(holder), self._first_set(f)
        if last[0] >= first[0]:
            return False
        inner = {id(x) for x in _loops_of(holder)} & {id(x) for x in _loops_of(f)}
        if inner:
            return False
        return not ordered or self._ordered(holder.dst, last, f.src, first)

    # --- allocation ---------------------------------------------------------------------
    def plan(self, flags: list[PlannedFlag]) -> None:
        """Give ids to ``flags`` (merging single flags when a pair runs out)."""
        self.flags = list(flags)
        holders: dict[tuple, list] = {}          # (src, dst) -> latest holder per id
        order = sorted(self.flags, key=lambda f: (self._first_set(f)[0], f.loop is None))
        self.holders = holders
        for f in order:
            if f not in self.flags:               # merged into an earlier flag
                continue
            if self._take(f, reverse=True):
                continue
            target = self._merge_target(f, holders[(f.src, f.dst)])
            if target is None:
                self._fail(f)
            self.flags.remove(f)

    def _take(self, f: PlannedFlag, reverse: bool) -> bool:
        """Give ``f`` the lowest free run of ids; with ``reverse``, an id whose last holder
        is only ordered before ``f`` in program order may be taken by adding a reverse
        flag from the holder's last wait to ``f``'s first set (which needs an id itself)."""
        n_ids = self.spec.event_ids
        mine = self.holders.setdefault((f.src, f.dst), [None] * n_ids)
        free = [h is None or self._free_after(h, f) for h in mine]
        for i in range(n_ids - f.count + 1):
            if all(free[i:i + f.count]):
                f.first = i
                mine[i:i + f.count] = [f] * f.count
                return True
        if not reverse:
            return False
        for i in range(n_ids - f.count + 1):
            held = {id(h): h for h in mine[i:i + f.count] if h is not None}
            if all(self._free_after(h, f, ordered=False) for h in held.values()):
                added = [self._reverse_flag(h, f) for h in held.values()
                         if not self._free_after(h, f)]
                if all(r is not None for r in added):
                    f.first = i
                    mine[i:i + f.count] = [f] * f.count
                    return True
                for r in added:
                    if r is not None:
                        self._drop(r)
        return False

    def _reverse_flag(self, holder: PlannedFlag, f: PlannedFlag) -> PlannedFlag | None:
        """A flag ``holder.dst -> f.src`` set after the holder's last wait and waited before
        ``f``'s first set, so that set can no longer find the flag still set."""
        setter = holder.loop if holder.loop is not None else max(
            holder.waiters, key=lambda op: self.pos.end[id(op)])
        waiter = f.loop if f.loop is not None else min(
            f.setters, key=lambda op: self.pos.start[id(op)])
        r = PlannedFlag(holder.dst, f.src, 1, [setter], [waiter], anchor=waiter)
        if setter is waiter or self._first_set(r)[0] >= self._last_wait(r)[0]:
            return None
        self.flags.append(r)
        if self._take(r, reverse=False):
            return r
        self.flags.remove(r)
        return None

    def _drop(self, r: PlannedFlag) -> None:
        self.flags.remove(r)
        mine = self.holders[(r.src, r.dst)]
        mine[:] = [None if h is r else h for h in mine]

    def _merge_target(self, f: PlannedFlag, mine: list) -> PlannedFlag | None:
        latest = sorted({id(h): h for h in mine if isinstance(h, PlannedFlag)}.values(),
                        key=lambda h: -self._first_set(h)[0])
        for h in latest:
            if h.merge(f, self.pos):
                return h
        return None

    def write(self) -> None:
        """Put every planned flag into its ops' attributes."""
        for f in self.flags:
            flag = Flag(f.src, f.dst, f.first, f.count)
            if f.loop is not None:
                add_flag(f.loop, "pre_set_flags", flag)
            for w in f.waiters:
                add_flag(w, "wait_flags", flag)
            for s in f.setters:
                add_flag(s, "set_flags", flag)
            if f.loop is not None:
                add_flag(f.loop, "post_wait_flags", flag)

    def _fail(self, f: PlannedFlag):
        where = f.anchor or (f.loop if f.loop is not None else f.waiters[0])
        what = (f"{f.count} rotating ids (one per buffer slot: the loop's num_stages)"
                if f.count > 1 else "one more id")
        raise OutOfResources(
            f"the schedule needs more than the {self.spec.event_ids} event ids for "
            f"HardEvent::{Flag(f.src, f.dst, 0).event} on {self.spec.name}: this line needs "
            f"{what} while the others are still in use; use fewer num_stages or fewer "
            f"tiles live at once", where.loc, self.fn.name,
            reason=f"needs more than the {self.spec.event_ids} event ids of {self.spec.name} for "
                   f"HardEvent::{Flag(f.src, f.dst, 0).event} ({what})")


def _loops(op: Op) -> tuple:
    """Ids of the loops and ``scf.if`` ops around ``op`` (not ``op`` itself): the regions
    that may not run, so flags inside them order nothing outside."""
    out = []
    block = op.parent
    while block is not None and block.parent_op is not None:
        if block.parent_op.kind in CONTROL:
            out.append(id(block.parent_op))
        block = block.parent_op.parent
    return tuple(out)


def _loops_of(f: PlannedFlag) -> list:
    """The loops every end of ``f`` runs in (a loop flag: its loop and the ones around)."""
    ops = ([f.loop] if f.loop is not None else []) + f.setters + f.waiters
    common = None
    for op in ops:
        mine = []
        loop = f.loop if op is f.loop else enclosing_loop(op)
        while loop is not None:
            mine.append(loop)
            loop = enclosing_loop(loop)
        common = mine if common is None else [x for x in common if x in mine]
    return common or []
