"""insert-sync: set/wait flags for every cross-pipe dependency, correct by construction.

Pipes run in order and in parallel; the only cross-pipe order is a flag (docs/npu-facts.md
§A1: ``SetFlag`` fires when the source pipe's earlier work is done, ``WaitFlag`` blocks
the destination pipe).  From the buffers each op reads and writes on its pipe(s):

* **producer -> consumer (RAW)**: a buffer written on pipe P and read on pipe C != P gets a
  ``P_C`` flag set after the writer and waited before the reader (TQue's EnQue/DeQue,
  §A7).  Both ends are lifted to the innermost block holding both: a wait for a value made
  outside a loop goes on the ``scf.for`` (before the loop), a set for a value made inside
  goes on the ``scf.for`` too (after the loop).  Inside a dot, MTE1 -> CUBE is ``MTE1_M``.
* **slot reuse (WAR)**: a buffer made in a loop body is rewritten every iteration.  Its
  readers on C set ``C_P`` after their last read; the writer on P waits ``C_P`` before
  writing.  The loop pre-sets one flag per slot and drains them after the loop, so
  iteration i waits for the reads of iteration i - N (TQue's FreeTensor/AllocTensor, §A7).
  A dot split into L0 K-chunks (``L0_BLOCK_K``) cycles its L0 slots chunk by chunk inside
  the op, so the flag releasing its slots is its own (set and waited by it), not merged
  with another dot's.  A one-slot flag the scalar unit sets is pre-set and drained
  around the outermost loop instead (``_presetting``): pre-set at every outer iteration,
  the scalar unit, running ahead, could set it again before the last drain.  Two buffers
  the allocator placed on the same bytes get the same kind of flag from the last access
  of the first to the writer of the second.  An accumulator carried by an inner loop and
  re-initialised in an outer loop's body (a persistent matmul's L0C) is such a buffer of
  the outer loop: its init waits for the previous tile's FixPipe read.
* **carried across iterations**: a loop-carried tile touched by two pipes (software
  prefetch: ``store(out, y); y = load(...)``) gets the read -> rewrite flag inside the
  body and a back-edge flag from the last access of iteration i to the first of i + 1,
  pre-set before the loop and drained after it (one slot: the iterations do not overlap).
* **GM through one pointer argument** is a pseudo-buffer (``gm_buffer``): a store then a
  load of the same argument gets a ``MTE3_MTE2`` (``FIX_MTE2``) flag, also across loops
  and on the back edge (conservatively per argument; a load then a store of one argument
  is ordered only through the data it computes).
* **a run of GM loads** in a loop body with ``num_stages >= 2`` (group-loads put a K
  step's loads together, ``load_order.py``) gets its flags set after the last load of the
  run (``_LoadRuns``): one ``MTE2_MTE1`` for a row tile and two weight tiles read by two
  dots, where a flag between two loads would hold the second back by a GM round trip.
* **a slot released by its data flag**: when the ids run out, a slot-reuse flag is
  dropped if the releasing pipe, at or after the release, sets a data flag the
  rewriting pipe waits for in the same iteration (``_released_by_data``: a masked load
  with a non-zero ``other``, whose slot the Vector fills).
* Flags into a buffer with N slots rotate over N ids (one per slot).  A flag implied by
  another one of the same pipes (set later, waited earlier: pipes are in order) is dropped.
* Event ids come from ``event_ids.py``: by liveness, an id passing to a later flag only
  when the earlier flag's last wait happens before the later one's first set in time
  (through the schedule's flags, or a reverse flag added for it), single flags merged when
  a pair runs out, so no set ever finds its 1-bit flag still set; else ``OutOfResources``
  at the line that needs the ids.

Guaranteed (tests/schedule/test_schedule_bugs.py, test_bundled_kernels_clean.py): with
carried buffers made right by ``carried.py``, every cross-pipe access pair of a buffer
(GM per pointer argument included) is ordered, and the schedule is valid on 1-bit flags.
Not covered (documented limits): two flags in one loop body never share an id; the
prefetch pattern runs with one slot (no overlap of its iterations); GM write-after-read
of one argument is not given a flag of its own; scalar-unit stalls on ``S`` flags are
recorded but cost nothing beyond the flag itself.

Example::

    %10 = "npu.load"(...) {pipe = "MTE2", set_flags = ["MTE2_V:0"], ...}
    %12 = "npu.add"(%10, %11) {pipe = "VECTOR", wait_flags = ["MTE2_V:0"], ...}
"""
from __future__ import annotations

from dataclasses import dataclass

from npujit.errors import OutOfResources

from ..core import Function, Op, ancestor_in, loop_carried, loop_init_index
from ..ops import LOOPS, Kind
from .event_ids import EventIds, PlannedFlag
from .model import (GM_LOADS, Positions, common_block, enclosing_loop, home_block,
                    is_folded_cast, is_tile, loop_stages, operand_stages,
                    scheduled_ops)


@dataclass(frozen=True)
class Access:
    """``op`` reads or writes ``buffer`` on ``pipe``."""

    op: Op
    pipe: str
    buffer: str
    write: bool


def value_buffers(fn: Function) -> dict[int, str]:
    """Buffer name of every tile value that has one (by ``id``), loop-carried values and
    loop results included.

    Example::

        >>> value_buffers(fn)[id(load_op.result)]   # doctest: +SKIP
        'UB.1'
    """
    out: dict[int, str] = {}
    ops = list(scheduled_ops(fn.body))
    for op in ops:
        tiles = [r for r in op.results if is_tile(r)]
        for r, name in zip(tiles, op.attrs.get("buffer", ())):
            out[id(r)] = name
    for op in reversed(ops):        # inner loops first: their results feed outer yields
        for init, arg, nxt, res in loop_carried(op):
            name = out.get(id(init)) or out.get(id(nxt))
            if name:
                out[id(arg)] = out[id(res)] = name
        if op.kind is Kind.IF:          # an if's result: the buffer both branches yield into
            for i, res in enumerate(op.results):
                name = next((out[id(r.terminator.operands[i])] for r in op.regions
                             if id(r.terminator.operands[i]) in out), None)
                if name:
                    out[id(res)] = name
    return out


def accesses(fn: Function, buffers: dict[int, str]) -> list[Access]:
    """Every buffer access of the scheduled ops, in program order."""
    out: list[Access] = []
    for op in scheduled_ops(fn.body):
        pipe = op.attrs.get("pipe")
        k = op.kind
        if k in LOOPS or k is Kind.IF:     # bounds / condition; the regions do the rest
            reads, writes = op.operands[:loop_init_index(op) if k in LOOPS else 1], ()
        elif k is Kind.DOT:
            a_l0, b_l0 = op.attrs["operand_buffers"]
            for v, l0 in zip(op.operands[:2], (a_l0, b_l0)):
                if id(v) in buffers:
                    out.append(Access(op, "MTE1", buffers[id(v)], False))
                out.append(Access(op, "MTE1", l0, True))
            out.append(Access(op, "CUBE", a_l0, False))
            out.append(Access(op, "CUBE", b_l0, False))
            reads, writes = op.operands[2:], op.results
        elif is_folded_cast(op):
            continue                            # converted on the way out: no access
        elif k is Kind.HANDOFF:                 # read on the sending core, written on ours
            if id(op.operands[0]) in buffers:
                out.append(Access(op, op.attrs["src_pipe"], buffers[id(op.operands[0])], False))
            reads, writes = (), op.results
        elif "operand_buffers" in op.attrs:     # coupled L0C store: VECTOR stages, MTE3 writes
            (ub,) = op.attrs["operand_buffers"]
            value = op.operands[2] if k is Kind.STORE else op.operands[-1]
            if id(value) in buffers:
                out.append(Access(op, "VECTOR", buffers[id(value)], False))
            out.append(Access(op, "VECTOR", ub, True))
            out.append(Access(op, pipe, ub, False))
            reads, writes = [v for v in op.operands if v is not value], ()
        else:
            reads, writes = op.operands, op.results
        for v in reads:
            if id(v) in buffers:
                out.append(Access(op, pipe, buffers[id(v)], False))
        for v in writes:
            if id(v) in buffers:
                out.append(Access(op, pipe, buffers[id(v)], True))
        if k in GM_LOADS or k in _GM_WRITES:
            out.append(Access(op, pipe, gm_buffer(op.operands[0]), k in _GM_WRITES))
    return out


_GM_WRITES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)


def gm_buffer(ptr) -> str:
    """The pseudo-buffer of GM accesses through one pointer argument: a store then a load
    of the same argument is ordered like a write then a read of a buffer (conservatively
    per argument: any two lanes may alias).

    Example::

        >>> gm_buffer(fn.args[0])      # doctest: +SKIP
        'GM:x_ptr'
    """
    return f"GM:{ptr.name or ptr.index}"


@dataclass(frozen=True)
class _Edge:
    block: object
    setter: Op
    waiter: Op
    src: str
    dst: str
    rotate: int


class InsertSync:
    """Sets ``set_flags``/``wait_flags`` (and ``pre_set_flags``/``post_wait_flags`` on
    loops) from the buffer accesses; see the module doc for the rules.

    Example::

        >>> InsertSync().run(fn, CompileContext(spec=ASCEND_910B_LIKE))     # doctest: +SKIP
        True
    """

    name = "insert-sync"

    def run(self, fn: Function, ctx) -> bool:
        spec = ctx.spec
        pos = Positions(fn)
        buffers = value_buffers(fn)
        acc = accesses(fn, buffers)
        stages, home = _buffer_facts(fn)
        by_buffer: dict[str, list[Access]] = {}
        for a in acc:
            by_buffer.setdefault(a.buffer, []).append(a)
        edges = set()
        for name, list_ in by_buffer.items():
            for w in (a for a in list_ if a.write):
                for r in (a for a in list_ if not a.write and a.pipe != w.pipe):
                    _add_edge(edges, w.op, r.op, w.pipe, r.pipe, pos,
                              stages.get(name, 1), home.get(name))
        carriers = _carriers(fn, buffers)
        for name in carriers[0]:        # a carried tile read, then rewritten on another pipe
            for r in (a for a in by_buffer.get(name, ()) if not a.write):
                for w in (a for a in by_buffer[name] if a.write and a.pipe != r.pipe):
                    _add_edge(edges, r.op, w.op, r.pipe, w.pipe, pos, 1, None)
        for a_name, b_name in _sharing_pairs(fn):
            for a in by_buffer.get(a_name, ()):
                for w in (x for x in by_buffer.get(b_name, ()) if x.write and x.pipe != a.pipe):
                    _add_edge(edges, a.op, w.op, a.pipe, w.pipe, pos, 1, None)
        kept = _prune(edges, pos)
        runs = _LoadRuns(kept)
        raw = runs.edges(kept, pos)
        slots = runs.loop_flags(_slot_reuse(by_buffer, stages, home, pos))
        back = _back_edges(by_buffer, carriers, pos)
        try:
            ids = _plan(fn, spec, pos, slots + back, raw)
        except OutOfResources:
            # Fewer flags only when the ids run out: a flag dropped can also be what
            # lets a later flag reuse an id, so the schedules that fit keep theirs.
            fewer = _released_by_data(slots, raw, pos)
            if len(fewer) == len(slots):
                raise
            ids = _plan(fn, spec, pos, fewer + back, raw)
        ids.write()
        return True


def _plan(fn: Function, spec, pos, loop_flags: list[tuple], raw: list[_Edge]) -> EventIds:
    """Event ids for the loop flags and the data flags (``OutOfResources`` when the
    part has too few)."""
    planned = [PlannedFlag(src, dst, n, [setter], [waiter], loop=_presetting(loop, src, n),
                           anchor=loop)
               for loop, setter, waiter, src, dst, n in loop_flags]
    for e in raw:
        anchor = e.block.parent_op if e.rotate > 1 else e.waiter
        planned.append(PlannedFlag(e.src, e.dst, e.rotate, [e.setter], [e.waiter],
                                   block=e.block, anchor=anchor))
    ids = EventIds(fn, spec, pos)
    ids.plan(planned)
    return ids


def _presetting(loop: Op, src: str, slots: int) -> Op:
    """The loop that pre-sets and drains a one-slot loop flag set on ``src``: the flag's
    own loop, but the outermost loop around it when the setter is the scalar unit.  A
    loop inside another one pre-sets its flag at every outer iteration, on the setting
    pipe, and the waiting pipe drains it after the inner loop; the scalar unit runs ahead
    of the pipes it feeds, so the next outer iteration's pre-set could find the last one
    not yet drained (a persistent matmul's ``S_V`` flag: ``FlagStillSetError`` in the
    simulator).  Pre-set once around the outermost loop, the flag's last set in one
    inner loop is what the first wait of the next takes, and nothing sets it twice."""
    if slots != 1 or src != "SCALAR":
        return loop
    while (outer := enclosing_loop(loop)) is not None:
        loop = outer
    return loop


def _buffer_facts(fn: Function) -> tuple[dict, dict]:
    """Slots of each buffer and the block its slots rotate in (the body holding its maker;
    for a loop-carried buffer the body holding its init's maker, so an accumulator zeroed
    per outer iteration waits for the previous tile's readers; None when no op makes it)."""
    stages, home = {}, {}
    carried = set()
    for op in scheduled_ops(fn.body):
        for _, _, nxt, _ in loop_carried(op):
            carried.add(id(nxt))
        for name in op.attrs.get("buffer", ()):
            stages[name] = op.attrs.get("stages", 1)
        for name in op.attrs.get("operand_buffers", ()):
            stages[name] = operand_stages(op)
            home[name] = home_block(op)
    for op in scheduled_ops(fn.body):
        tiles = [r for r in op.results if is_tile(r)]
        for r, name in zip(tiles, op.attrs.get("buffer", ())):
            if is_folded_cast(op):
                continue
            if id(r) in carried:
                # An accumulator: not rewritten per iteration of the loop that carries it,
                # but per iteration of a loop around its maker (its init, seen first).
                home.setdefault(name, None)
            elif name not in home:
                home[name] = home_block(op)
    return stages, home


def _add_edge(edges, w: Op, r: Op, src, dst, pos, stages, home) -> None:
    block = common_block(w, r)
    ws, rs = ancestor_in(w, block), ancestor_in(r, block)
    if ws is not rs and pos.start[id(ws)] >= pos.start[id(rs)]:
        return      # a loop-carried (back) edge, or the other order of a shared-bytes pair
    if ws is rs and ws is not w and ws is not r and ws.kind is Kind.IF:
        return      # the two branches of one if: never both in one run of it
    rotate = stages if stages > 1 and home is block else 1
    edges.add(_Edge(block, ws, rs, src, dst, rotate))


def _prune(edges, pos) -> list[_Edge]:
    """Drop an edge another edge of the same pipes and block implies (a later set, an
    earlier wait); order the rest deterministically."""
    def key(e):
        return (pos.start[id(e.setter)], pos.start[id(e.waiter)], e.src, e.dst, e.rotate)

    kept = []
    for e in sorted(edges, key=key):
        implied = any(f is not e and f.block is e.block and f.src == e.src and f.dst == e.dst
                      and f.rotate == e.rotate
                      and pos.start[id(f.setter)] >= pos.start[id(e.setter)]
                      and pos.start[id(f.waiter)] <= pos.start[id(e.waiter)]
                      and key(f) != key(e) for f in edges)
        if not implied:
            kept.append(e)
    return kept


class _LoadRuns:
    """Where a flag set after a GM load in a multi-buffered loop is set: after the last
    GM load of the run of loads it starts (group-loads, ``load_order.py``, made the
    run).  ``load x; load g; load u`` read by MTE1 get one ``MTE2_MTE1`` flag set after
    ``u``, as a hand-written kernel's one ``SetFlag``
    after loading A and B; a slot another pipe may rewrite is released there too.  A set
    waits until the loads before it have landed (docs/npu-facts.md §A1) and the loading
    pipe is in order, so a flag between two loads holds the next load back by a GM round
    trip; with several slots the loads run a stage ahead of their reader, which the later
    set does not slow.  A run ends at a loop or branch, at an op of the loading pipe that
    is not a GM load, or that waits for a flag of this iteration or from the other core
    (such a wait could need the reader's pipe past the set it now waits for: a deadlock).
    Sets and waits stay paired and ordered as before: a set only moves later on its own
    pipe."""

    def __init__(self, kept: list[_Edge]):
        self.waiting = {id(e.waiter) for e in kept}

    def setter(self, op: Op, before: Op | None = None) -> Op:
        """The op to set ``op``'s flag after; ``before``: the flag's waiter in the same
        block, which the set does not pass (group-loads, load_order.py, puts a loop's
        loads ahead of their readers)."""
        block = op.parent
        if (op.kind not in GM_LOADS or op.attrs.get("pipe") != "MTE2" or block is None
                or block.parent_op is None or block.parent_op.kind not in LOOPS
                or loop_stages(op) < 2):
            return op
        last = op
        for nxt in block.ops[block.ops.index(op) + 1:]:
            if nxt is before or nxt.kind in LOOPS or nxt.kind is Kind.IF:
                break
            if nxt.attrs.get("pipe") != "MTE2":
                continue
            if (nxt.kind not in GM_LOADS or id(nxt) in self.waiting
                    or "cross_flags" in nxt.attrs):
                break
            last = nxt
        return last

    def edges(self, kept: list[_Edge], pos) -> list[_Edge]:
        moved = {_Edge(e.block, self.setter(e.setter, e.waiter), e.waiter, e.src, e.dst,
                       e.rotate)
                 if e.setter.parent is e.block else e for e in kept}
        return _prune(moved, pos)

    def loop_flags(self, flags: list[tuple]) -> list[tuple]:
        return [(loop, self.setter(setter) if setter.parent is loop.body else setter,
                 waiter, src, dst, n) for loop, setter, waiter, src, dst, n in flags]


def _released_by_data(flags: list[tuple], raw: list[_Edge], pos) -> list[tuple]:
    """The slot-reuse flags not implied by a data flag: a slot released on ``src`` to a
    rewrite on ``dst`` needs no flag of its own when, in the same iteration, an op on
    ``src`` at or after the release sets a data flag that ``dst`` waits for in that
    iteration.  ``dst`` is in order, so its rewrite of the slot ``n >= 1`` iterations
    later comes after that wait, which came after the release.  (A masked load with a
    non-zero ``other``: the Vector fills the slot, MTE2 loads into it and tells the
    Vector its data is there; the release back to the next fill was a second MTE2_V
    flag, and at 3 stages the two needed more ids than the part has.)  Also when the data
    flag is set earlier in the iteration but waited at or before the rewrite: the rewrite
    comes ``n`` iterations later, after that wait, whose set ``src`` made after every op of
    the release's iteration (the Vector's fill of a load's slot, set before its last read
    of the slot, released that read for the load ``n`` iterations on).  Used only when
    the ids run out with every flag: a dropped flag can also be what lets a later flag
    reuse an id (``event_ids.py`` orders ids by the schedule's flags), so the schedules
    that fit keep all of theirs."""
    kept = []
    for flag in flags:
        loop, setter, waiter, src, dst, _ = flag
        if not any(e.block is loop.body and e.src == src and e.dst == dst
                   and (pos.start[id(e.setter)] >= pos.start[id(setter)]
                        or pos.start[id(e.waiter)] <= pos.start[id(waiter)]) for e in raw):
            kept.append(flag)
    return kept


def _slot_reuse(by_buffer, stages, home, pos):
    """(loop, setter, waiter, src, dst, slots) per loop and pipe pair: the last reader on
    ``src`` releases a slot, the first writer on ``dst`` waits for it (merged per loop:
    pipes are in order, so the last release covers the earlier ones)."""
    merged: dict[tuple, list] = {}
    for name, list_ in by_buffer.items():
        block = home.get(name)
        if block is None or block.parent_op is None or block.parent_op.kind not in LOOPS:
            continue
        loop = block.parent_op
        n = stages.get(name, 1)
        for w in (a for a in list_ if a.write):
            wa = ancestor_in(w.op, block)
            # A dot split into L0 K-chunks cycles its L0 slots chunk by chunk inside one
            # op (sim/lower.py _emit_chunked_dot): its slot flag is its own, set and waited
            # by it, never merged with another op's.
            own = id(w.op) if _chunked_operand(w.op, name) else None
            for r in (a for a in list_ if a.pipe != w.pipe):
                ra = ancestor_in(r.op, block)
                if ra is None or wa is None:
                    continue
                _merge(merged, loop, ra, wa, r.pipe, w.pipe, n, pos, own)
    return _loop_flags(merged, pos)


def _chunked_operand(op: Op, buffer: str) -> bool:
    """Whether ``buffer`` is an L0 operand buffer of a dot that ``L0_BLOCK_K`` chunks."""
    return (op.kind is Kind.DOT and "k_chunk" in op.attrs
            and buffer in op.attrs.get("operand_buffers", ()))


def _merge(merged: dict, loop, setter, waiter, src, dst, n, pos, own=None) -> None:
    """One loop flag per (loop, pipes, slots): the latest setter, the earliest waiter
    (pipes are in order, so they cover the others); ``own``: a flag kept apart for one
    op (a chunked dot's L0 slots)."""
    slot = merged.setdefault((id(loop), src, dst, n, own), [loop, setter, waiter, src, dst, n])
    if pos.start[id(setter)] > pos.start[id(slot[1])]:
        slot[1] = setter
    if pos.start[id(waiter)] < pos.start[id(slot[2])]:
        slot[2] = waiter


def _loop_flags(merged: dict, pos) -> list[tuple]:
    return [tuple(v) for _, v in sorted(merged.items(), key=lambda kv: (
        pos.start[id(kv[1][0])], kv[0][1:4], pos.start[id(kv[1][1])]))]


def _carriers(fn: Function, buffers: dict[int, str]) -> tuple[dict, list]:
    """The loops carrying each buffer, and all loops (which carry every GM pseudo-buffer)."""
    loops = [op for op in scheduled_ops(fn.body) if op.kind in LOOPS]
    out: dict[str, list] = {}
    for loop in loops:
        for _, arg, _, _ in loop_carried(loop):
            name = buffers.get(id(arg))
            if name is not None and loop not in out.setdefault(name, []):
                out[name].append(loop)
    return out, loops


def _back_edges(by_buffer, carriers: tuple[dict, list], pos):
    """(loop, setter, waiter, src, dst, 1) per loop and pipe pair for a buffer the loop
    carries from one iteration into the next (a carried tile, or GM through one pointer
    argument) that two pipes touch: an access of iteration i on ``src`` must finish before
    the access of iteration i + 1 on ``dst`` that comes earlier in the body.  The flag is
    set after the last such access on ``src`` and waited before the first on ``dst``; the
    loop pre-sets it for iteration 0 and drains it after the last (one slot: the iterations
    of a software-prefetch loop do not overlap)."""
    carried, loops = carriers
    merged: dict[tuple, list] = {}
    for name, list_ in by_buffer.items():
        gm = name.startswith("GM:")
        for loop in (loops if gm else carried.get(name, ())):
            body = loop.body
            inside = [(a, ancestor_in(a.op, body)) for a in list_]
            inside = [(a, at) for a, at in inside if at is not None]
            for x, xa in inside:
                for y, ya in inside:
                    wanted = (x.write and not y.write) if gm else (x.write or y.write)
                    if x.pipe == y.pipe or not wanted or pos.start[id(ya)] > pos.start[id(xa)]:
                        continue
                    _merge(merged, loop, xa, ya, x.pipe, y.pipe, 1, pos)
    return _loop_flags(merged, pos)


def _sharing_pairs(fn: Function) -> list[tuple[str, str]]:
    """Pairs of buffers of one scope whose bytes overlap (the allocator reused them)."""
    spans: dict[str, tuple[str, int, int]] = {}
    for op in scheduled_ops(fn.body):
        scope = op.attrs.get("scope")
        for name, off, size in zip(op.attrs.get("buffer", ()), op.attrs.get("offset", ()),
                                   op.attrs.get("bytes", ())):
            spans.setdefault(name, (scope, off, off + size * op.attrs.get("stages", 1)))
        if "operand_buffers" in op.attrs:
            n = operand_stages(op)
            for sc, name, off, size in zip(op.attrs["operand_scopes"],
                                           op.attrs["operand_buffers"],
                                           op.attrs["operand_offsets"], op.attrs["operand_bytes"]):
                spans.setdefault(name, (sc, off, off + size * n))
    names = sorted(spans)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            sa, sb = spans[a], spans[b]
            if sa[0] == sb[0] and sa[1] < sb[2] and sb[1] < sa[2]:
                out += [(a, b), (b, a)]
    return out
