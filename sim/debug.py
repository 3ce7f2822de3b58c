"""Debug switches in the spirit of Pallas's interpret mode (``mosaic/interpret/params.py``).

At the instruction-stream level there is no data, only who touches which buffer slot and
how the pipes are ordered.  What each switch means here, and what is left to the numeric
side (the backend that actually moves bytes):

* ``detect_races``: a happens-before race detector over the multi-buffer slots named in
  ``Instr.reads`` / ``Instr.writes``.  Pipes are ordered only by program order on one pipe,
  ``set_flag`` -> the matching ``wait_flag`` (k-th set to k-th wait) and ``barrier("ALL")``;
  vector clocks over the core's pipes track that order.  A write to a slot whose previous
  reader (``WAR``: the missing slot-reuse wait) or writer (``WAW``) is not ordered before
  it, and a read not ordered after the slot's last write (``RAW``: the missing
  producer -> consumer wait), are races.  This depends on the stream only, not on timing,
  so it also finds races the timing happened to hide.
* GM regions: a GM copy that carries ``gm_region`` (``kernel.simulate`` tags every load and
  store with the pointer argument and the bytes it touches, ``sim/lower.py``) is also an
  access to those GM bytes, checked the same way: a store then a load of overlapping bytes
  in one program with no MTE3 -> MTE2 order between them is ``RAW`` (the load may read GM
  before the store landed), a load then an overlapping store ``WAR``, two stores ``WAW``.
  Regions overlap when they name the same argument and (see :func:`gm_overlap`) their
  element ranges or block boxes intersect; forms that cannot be compared overlap
  (conservative).  Copies without a region, or tagged ``ONCE`` (touched once in the
  launch), are not tracked.  Only accesses inside one program are checked.
* ``uninitialized="nan"``: Pallas poisons fresh buffers with NaN so reading one shows up.
  Here: every read of a slot no write was ordered before is reported (``UNINIT``): that
  is exactly the read that would see NaN.  Filling the buffers with NaN is the numeric
  backend's job.
* ``dma_execution_mode="on_wait"``: Pallas lands a DMA only when it is waited on.  Here a
  copy's destination becomes visible to other pipes at the ``wait_flag`` that matches the
  first ``set_flag`` its pipe issues after it; :func:`landing_points` computes that wait for
  every copy, GM stores included (``None`` when no such wait exists: the data never becomes
  visible within the program).  Reads before the landing are ``RAW`` races above, on a
  buffer slot or on a GM region.  Deferring the bytes to that wait is the
  numeric backend's job; the map is its input.
* ``check_flags``: reports, per program, sets never waited on at the end of the program
  (the next kernel would see a stale flag) and, when the engine counts sets
  (``one_bit_flags=False``; by default a lost set is already a ``FlagStillSetError``), a
  ``set_flag`` that fired while its flag was still set.

Example::

    >>> from npujit.sim.isa import CoreProgram, copy, vec, set_flag, wait_flag
    >>> prog = CoreProgram("AIV", [copy("GM_to_UB", 256, writes="x"),
    ...                            vec("add", 128, reads="x")])   # no MTE2 -> VECTOR flag
    >>> [r.kind for r in find_races(prog)]
    ['RAW']
"""
from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass

from .engine import pipe_spans
from .isa import CoreProgram, describe, flag_name
from .l2 import ONCE
from .queues import SET, SETD, WAIT

RACE_KINDS = ("RAW", "WAR", "WAW", "UNINIT")


@dataclass(frozen=True)
class DebugOptions:
    """Which checks :func:`npujit.sim.simulate` runs (all off by default: they cost time).

    Example::

        >>> DebugOptions(detect_races=True).detect_races
        True
    """

    detect_races: bool = False
    uninitialized: str | None = None        # None or "nan"
    dma_execution_mode: str = "eager"       # "eager" or "on_wait"
    check_flags: bool = False
    raise_on_race: bool = False

    def __post_init__(self):
        if self.uninitialized not in (None, "nan"):
            raise ValueError(f"uninitialized must be None or 'nan', got {self.uninitialized!r}")
        if self.dma_execution_mode not in ("eager", "on_wait"):
            raise ValueError("dma_execution_mode must be 'eager' or 'on_wait', "
                             f"got {self.dma_execution_mode!r}")

    @classmethod
    def full(cls, raise_on_race: bool = False) -> "DebugOptions":
        """Every check on: races, NaN-poisoned buffers, copies landing at their wait, flags
        (what the schedule tests, the fuzzer's checked tier and ``npujit simulate --check``
        run under).

        Example::

            >>> DebugOptions.full().dma_execution_mode
            'on_wait'
        """
        return cls(detect_races=True, uninitialized="nan", dma_execution_mode="on_wait",
                   check_flags=True, raise_on_race=raise_on_race)


class RaceError(RuntimeError):
    """Raised by ``simulate`` when ``DebugOptions(raise_on_race=True)`` finds races."""

    def __init__(self, races: list["Race"]):
        super().__init__("data races in the instruction stream:\n" +
                         "\n".join(f"  {r}" for r in races[:20]))
        self.races = races


@dataclass(frozen=True)
class Race:
    """Two unordered accesses to one buffer slot (``first`` issued before ``second``).

    ``first`` / ``second`` are ``(pipe, instr index)``; for ``UNINIT`` ``first`` is None.
    """

    kind: str
    buffer: str
    slot: int
    first: tuple | None
    second: tuple
    program: int = 0
    text: str = ""

    def __str__(self) -> str:
        return self.text


def _pipe_queues(program: CoreProgram) -> dict[str, list[int]]:
    """Instruction indices per pipe in issue order; a full barrier goes to every pipe used."""
    pipes = sorted({ins.pipe for ins in program.instrs if ins.pipe != "ALL"})
    queues = {p: [] for p in pipes}
    for n, ins in enumerate(program.instrs):
        if ins.pipe == "ALL":
            for q in queues.values():
                q.append(n)
        else:
            queues[ins.pipe].append(n)
    return queues


def _replay(program: CoreProgram, visit) -> None:
    """Run the program's pipes in an order that respects flags and barriers (no timing),
    calling ``visit(pipe, index, clock)`` for each instruction with the pipe's vector clock
    (a dict pipe -> count of that pipe's instructions ordered before, inclusive).

    Among the pipes that can proceed, the one whose next instruction comes first in issue
    order goes first, so the replay reads like the program text and a race is named from
    the access the programmer wrote later (a missing slot-reuse wait shows as WAR).

    A ``wait_flag`` on the SCALAR pipe holds the issue of every later instruction (as in
    the engine), so those follow everything the scalar wait follows."""
    queues = _pipe_queues(program)
    pipes = list(queues)
    clock = {p: dict.fromkeys(pipes, 0) for p in pipes}
    pos = dict.fromkeys(pipes, 0)
    pending: dict[tuple, deque] = {}
    waiting: dict[tuple, str] = {}
    at_barrier: set = set()
    instrs = program.instrs
    ready = [(q[0], p) for p, q in queues.items() if q]
    heapq.heapify(ready)
    scalar_waits = [n for n, ins in enumerate(instrs)
                    if ins.kind == "wait_flag" and ins.pipe == "SCALAR"]
    gate_clock: dict[int, dict] = {}      # scalar wait -> the SCALAR clock after it
    gated: dict[int, list] = {}           # scalar wait -> pipes held until it completes

    def step(p):
        pos[p] += 1
        if pos[p] < len(queues[p]):
            heapq.heappush(ready, (queues[p][pos[p]], p))

    while ready:
        n, p = heapq.heappop(ready)
        ins = instrs[n]
        vc = clock[p]
        if ins.pipe == "ALL":
            at_barrier.add(p)
            if len(at_barrier) < len(pipes):
                continue            # blocked until every pipe arrives
            # Everyone arrived: each pipe now follows everything before the barrier.
            joined = {k: max(clock[x][k] for x in pipes) for k in pipes}
            for x in pipes:
                clock[x].update(joined)
                clock[x][x] += 1
                visit(x, n, clock[x])
                step(x)
            at_barrier.clear()
            continue
        g = bisect.bisect_left(scalar_waits, n) - 1     # the last scalar wait before n
        if g >= 0 and p != "SCALAR":
            w = scalar_waits[g]
            if w not in gate_clock:
                gated.setdefault(w, []).append(p)           # resumed when it completes
                continue
            for k, v in gate_clock[w].items():
                if v > vc[k]:
                    vc[k] = v
        if ins.kind == "wait_flag":
            d = pending.get(ins.flag)
            if not d:
                waiting[ins.flag] = p   # resumed by the matching set
                continue
            for k, v in d.popleft().items():
                if v > vc[k]:
                    vc[k] = v
        vc[p] += 1
        visit(p, n, vc)
        if p == "SCALAR" and ins.kind == "wait_flag":
            gate_clock[n] = dict(vc)
            for q in gated.pop(n, ()):
                heapq.heappush(ready, (queues[q][pos[q]], q))
        if ins.kind == "set_flag":
            pending.setdefault(ins.flag, deque()).append(dict(vc))
            w = waiting.pop(ins.flag, None)
            if w is not None:
                heapq.heappush(ready, (queues[w][pos[w]], w))
        step(p)


def gm_overlap(a, b) -> bool:
    """Whether two ``gm_region`` keys may touch common GM bytes: the same pointer argument
    and intersecting element ranges ``(arg, first, last, count)`` (pointer lanes) or
    intersecting boxes ``(arg, ((lo, hi), ...))`` of one rank (block pointers over the
    argument's shape); the AIC <-> AIV hand-off workspace's slots ``("workspace", pid,
    slot)`` are disjoint; other pairs of one argument overlap unless equal keys say so.

    Example::

        >>> gm_overlap(("ws", 0, 127, 128), ("ws", 64, 191, 128))
        True
        >>> gm_overlap(("ws", 0, 127, 128), ("ws", 128, 255, 128))
        False
        >>> gm_overlap(("a", ((0, 64), (0, 32))), ("a", ((0, 64), (32, 64))))
        False
    """
    if a == b:
        return True
    arg_a = a[0] if isinstance(a, tuple) and a else a
    arg_b = b[0] if isinstance(b, tuple) and b else b
    if arg_a != arg_b:
        return False
    if len(a) == 4 and len(b) == 4:
        return a[1] <= b[2] and b[1] <= a[2]
    if len(a) == 2 and len(b) == 2 and len(a[1]) == len(b[1]):
        return all(lo1 < hi2 and lo2 < hi1 for (lo1, hi1), (lo2, hi2) in zip(a[1], b[1]))
    if arg_a == "workspace" and len(a) == len(b) == 3:
        return a[1] == b[1] and a[2] == b[2]
    return True


def _gm_accesses(ins) -> tuple:
    """(is_write, region) of a GM copy with a trackable region, else ()."""
    r = ins.gm_region
    if ins.kind != "copy" or r is None or r == ONCE or not isinstance(r, tuple) or not r:
        return ()
    src, _, dst = ins.path.partition("_to_")
    return ((dst == "GM", r),) if "GM" in (src, dst) else ()


def find_races(program: CoreProgram, *, uninitialized: bool = True,
               program_index: int = 0) -> list[Race]:
    """Happens-before races over the buffer slots of one program (see the module docstring).

    Example::

        >>> from npujit.sim.patterns import vector_pipeline
        >>> find_races(vector_pipeline(8, 4096, stages=2))
        []
    """
    instrs = program.instrs
    last_write: dict[tuple, tuple] = {}          # slot -> (pipe, epoch, index)
    reads: dict[tuple, dict] = {}                # slot -> {pipe: (epoch, index)}
    gm_writes: dict = {}     # arg -> {region: (pipe, epoch, index)}
    gm_reads: dict = {}      # arg -> {region: {pipe: (epoch, index)}}
    races: list[Race] = []
    seen: set = set()

    def report(kind, slot, first, second, region=None):
        key = (kind, slot, first[0] if first else None, second[0])
        if key in seen:
            return
        seen.add(key)
        a = f"{first[0]} instr {first[1]} ({describe(instrs[first[1]])})" if first else None
        b = f"{second[0]} instr {second[1]} ({describe(instrs[second[1]])})"
        what = {
            "RAW": f"reads it before the write by {a} is ordered before it "
                   "(missing wait on the producer's flag)",
            "WAR": f"overwrites it before the read by {a} is ordered before it "
                   "(missing slot-reuse wait)",
            "WAW": f"overwrites it before the write by {a} is ordered before it",
            "UNINIT": "reads it before anything wrote it "
                      "(a NaN-poisoned buffer would show NaN here)",
        }[kind]
        where = f"{slot[0]}[{slot[1]}]"
        if region is not None:
            where = f"GM region {region!r}"
            what += f" (a GM {'store' if kind != 'WAR' else 'load'} needs a {first[0]} -> " \
                    f"{second[0]} flag before this access)"
        text = f"{kind} on {where} in program {program_index}: {b} {what}"
        races.append(Race(kind, slot[0], slot[1], first, second, program_index, text))

    def visit(pipe, n, vc):
        ins = instrs[n]
        for slot in ins.reads:
            w = last_write.get(slot)
            if w is None:
                if uninitialized:
                    report("UNINIT", slot, None, (pipe, n))
            elif w[0] != pipe and w[1] > vc[w[0]]:
                report("RAW", slot, (w[0], w[2]), (pipe, n))
            reads.setdefault(slot, {})[pipe] = (vc[pipe], n)
        for slot in ins.writes:
            w = last_write.get(slot)
            if w is not None and w[0] != pipe and w[1] > vc[w[0]]:
                report("WAW", slot, (w[0], w[2]), (pipe, n))
            for q, (epoch, idx) in reads.get(slot, {}).items():
                if q != pipe and epoch > vc[q]:
                    report("WAR", slot, (q, idx), (pipe, n))
            last_write[slot] = (pipe, vc[pipe], n)
            reads[slot] = {}
        for is_write, region in _gm_accesses(ins):
            gm_access(pipe, n, vc, is_write, region)

    def gm_access(pipe, n, vc, is_write, region):
        arg = region[0]
        slot = (f"GM {arg}", 0)
        writes, rd = gm_writes.setdefault(arg, {}), gm_reads.setdefault(arg, {})
        for r2, w in writes.items():
            if w[0] != pipe and w[1] > vc[w[0]] and gm_overlap(region, r2):
                report("WAW" if is_write else "RAW", slot, (w[0], w[2]), (pipe, n), region)
        if is_write:
            for r2, by_pipe in rd.items():
                for q, (epoch, idx) in by_pipe.items():
                    if q != pipe and epoch > vc[q] and gm_overlap(region, r2):
                        report("WAR", slot, (q, idx), (pipe, n), region)
            writes[region] = (pipe, vc[pipe], n)
            rd.pop(region, None)
        else:
            rd.setdefault(region, {})[pipe] = (vc[pipe], n)

    _replay(program, visit)
    return races


def landing_points(program: CoreProgram) -> dict[int, int | None]:
    """For every copy, the index of the ``wait_flag`` at which its data lands for other pipes
    (``dma_execution_mode="on_wait"``), or None when no wait ever picks it up.

    Example::

        >>> from npujit.sim.isa import CoreProgram, copy, vec, set_flag, wait_flag
        >>> p = CoreProgram("AIV", [copy("GM_to_UB", 256), set_flag("MTE2", "VECTOR"),
        ...                         wait_flag("MTE2", "VECTOR"), vec("add", 128)])
        >>> landing_points(p)
        {0: 2}
    """
    instrs = program.instrs
    # k-th set of a flag -> k-th wait of it.
    sets: dict[tuple, list[int]] = {}
    waits: dict[tuple, list[int]] = {}
    for n, ins in enumerate(instrs):
        if ins.kind == "set_flag":
            sets.setdefault(ins.flag, []).append(n)
        elif ins.kind == "wait_flag":
            waits.setdefault(ins.flag, []).append(n)
    wait_of_set = {}
    for flag, ss in sets.items():
        ws = waits.get(flag, [])
        for k, s in enumerate(ss):
            wait_of_set[s] = ws[k] if k < len(ws) else None
    # A pipe runs in order, so every set it issues after a copy covers the copy: the copy
    # lands at the earliest wait of any of those sets (as backends/reference/scheduled.py
    # lands the numbers).  One backward sweep keeps, per pipe, the earliest such wait.
    out: dict[int, int | None] = {}
    earliest: dict[str, int | None] = {}
    for n in range(len(instrs) - 1, -1, -1):
        ins = instrs[n]
        if ins.kind == "set_flag":
            w, best = wait_of_set[n], earliest.get(ins.pipe)
            if w is not None and (best is None or w < best):
                earliest[ins.pipe] = w
        elif ins.kind == "copy":
            out[n] = earliest.get(ins.pipe)
    return dict(sorted(out.items()))


def flag_issues(timeline) -> list[str]:
    """Streams that rely on counting flags: a set on a still-set flag, or sets left over at
    the end of a program (see ``check_flags`` in the module docstring).

    Example::

        >>> from npujit.target import TINY
        >>> from npujit.sim.engine import run
        >>> from npujit.sim.isa import CoreProgram, Launch, set_flag, wait_flag, vec
        >>> p = CoreProgram("AIV", [vec("add", 2560),   # Vector is busy while both sets fire
        ...                         set_flag("MTE2", "VECTOR"), set_flag("MTE2", "VECTOR"),
        ...                         wait_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR")])
        >>> flag_issues(run(Launch([p]), TINY, one_bit_flags=False))[0][:60]
        'program 0 on AIV 0: set_flag MTE2->VECTOR id 0 (HardEvent::M'
    """
    issues = []
    keys = timeline.flag_keys
    for run in timeline.runs:
        set_times: dict[int, list[int]] = {}
        wait_times: dict[int, list[int]] = {}
        for ps in run.pipes:
            for (code, a, *_), (s, e) in zip(ps.q, pipe_spans(ps)):
                if code == SET or code == SETD:
                    set_times.setdefault(a, []).append(e)
                elif code == WAIT:
                    wait_times.setdefault(a, []).append(s)
        where = f"program {run.program} on {run.core}"
        for f, ss in set_times.items():
            ws = wait_times.get(f, [])
            name = flag_name(keys[f])
            for k in range(1, min(len(ss), len(ws) + 1)):
                # Set k fired while set k-1 was still pending (wait k-1 had not taken it).
                if ss[k] < ws[k - 1]:
                    issues.append(f"{where}: set_flag {name} at cycle {ss[k]} found the flag "
                                  "still set (a 1-bit hardware flag would lose it)")
                    break
            if len(ss) > len(ws):
                issues.append(f"{where}: {len(ss) - len(ws)} set_flag {name} never waited on")
    return issues

