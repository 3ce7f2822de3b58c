"""The event-driven timing engine: in-order pipes, flags, barriers, shared HBM, waves.

Model (docs/npu-facts.md §S1):

* Integer cycles.  Each program's instructions are dealt, in issue order, to the FIFO of
  their pipe; a pipe runs its FIFO one instruction at a time.
* Pipes of a core are ordered only by flags and barriers.  ``set_flag`` runs on its source
  pipe after the pipe's earlier instructions and makes the flag visible when it ends;
  ``wait_flag`` blocks its pipe until a set is pending, then consumes it (the k-th wait
  takes the k-th set).  Flags are 1 bit as on hardware: a set that fires before the wait
  took the previous set raises :class:`FlagStillSetError` (checked when either side runs,
  so simulation order does not matter); ``one_bit_flags=False`` counts sets instead.
  A wait on the SCALAR pipe holds the issue of every later instruction: the compiler puts
  a ``GATE`` entry on each other pipe, opened when that wait completed.
  ``barrier("ALL")`` holds every pipe of the core until all have reached it;
  ``barrier(pipe)`` costs ``sync_cycles`` on that (already in-order) pipe.
* A copy touching GM occupies its pipe for its issue latency, then streams its bytes through
  the :class:`~npujit.sim.hbm.HBMServer` shared by all cores, capped by its port rate; its
  data lands ``hbm_latency`` later.  When the spec has an L2 and the launch's copies carry
  ``gm_region`` keys, the :class:`~npujit.sim.l2.MemorySystem` serves read hits and writes
  from the L2 instead (its own shared bandwidth, landing ``l2_latency`` later).  The pipe
  may issue the next copy meanwhile (DMA requests pipeline), but a ``set_flag`` or
  ``barrier`` on it, and the program's end, wait for every earlier copy to land.
* Programs are queued per core kind in launch order; a core takes the next one when all
  of its pipes are drained (waves).  With ``spec.overlap_fixpipe`` an AIC takes it when
  every pipe but the FixPipe has drained (a FixPipe that writes only GM), and the next
  program's Cube and FixPipe start once that FixPipe has drained L0C: the emitted Ascend
  C's ``WaitFlag<FIX_M>`` after each Fixpipe (backends/ascendc/emit_cube.py) orders the
  next program's Mmad the same way, and its loads run on meanwhile.  A launch with
  ``groups`` (a mixed AIC + AIV kernel) is queued by group instead, on AI core ``j``:
  AIC ``j`` and, in turn, one of its ``r = aiv_cores // aic_cores`` AIVs (the AI core's
  ``n``-th group on AIV ``j * r + n % r``, as CV-fusion kernels alternate tiles between
  AIV0 and AIV1); a group's two runs are partners for ``cross_set`` / ``cross_wait``
  flags.  Each AI core
  hands its groups' values over through a ring of ``spec.handoff_slots`` workspace
  slots, so it has at most that many groups in flight: the AIC takes the next group when
  it has drained its own run and fewer than ``handoff_slots`` of the core's groups are
  unfinished; an AIV runs its groups in order, each when it has drained the one before
  (docs/npu-facts.md §A2).

Speed: a pipe runs ahead through everything that does not touch HBM without any event,
since those instructions depend only on their own pipe and on flags whose set times are
already known (every local clock is >= the global clock).  Only GM copies (queued on the
HBM server's arrival heap) and cores becoming free (the engine's heap) are events, both
keyed (cycle, seq) so the order is deterministic.  The hot loop records one time per
wait, DMA-pipe set, barrier and GM copy; the rest of the timeline is rebuilt on demand
(:func:`pipe_spans`).

Example::

    >>> from npujit.target import TINY
    >>> from npujit.sim.isa import CoreProgram, Launch, copy, vec, set_flag, wait_flag
    >>> prog = CoreProgram("AIV", [copy("GM_to_UB", 6400), set_flag("MTE2", "VECTOR"),
    ...                            wait_flag("MTE2", "VECTOR"), vec("add", 3200, "f16")])
    >>> tl = run(Launch([prog]), TINY)
    >>> tl.cycles   # copy 110 + 100, set 1, wait 1, vec 10 + 25
    247
"""
from __future__ import annotations

import math
import random
from collections import deque
from heapq import heappop, heappush

import numpy as np

from .hbm import INF, HBMServer
from .isa import Launch, describe, flag_name
from .l2 import MemorySystem
from .queues import (CSET, GATE, GM, LOCAL, OPEN, SET, SETD, WAIT, Compiled, Compiler,
                     ProgramError, distinct_programs)
from npujit.target import NPUSpec


class DeadlockError(RuntimeError):
    """Every pipe that can run has drained, yet some pipe still waits on a flag or barrier.

    ``blocked`` lists one dict per blocked pipe: core, program, pipe, instr index, flag;
    ``core``, ``program``, ``pipe`` and ``flag`` repeat the first of them.

    Example::

        >>> from npujit.sim import simulate, TINY, CoreProgram, wait_flag
        >>> try:
        ...     simulate(CoreProgram("AIV", [wait_flag("MTE2", "VECTOR", 1)]), TINY)
        ... except DeadlockError as e:
        ...     print(e.pipe, e.flag)
        VECTOR ('MTE2', 'VECTOR', 1)
    """

    def __init__(self, message: str, blocked: list[dict]):
        super().__init__(message)
        self.blocked = blocked
        first = blocked[0]
        self.core, self.program, self.pipe, self.flag = (first["core"], first["program"],
                                                         first["pipe"], first["flag"])


class FlagStillSetError(RuntimeError):
    """A ``set_flag`` fired while its flag was still set (1-bit hardware flags: the set is
    lost, and the wait meant to take it would hang).  Raised with 1-bit flags, the default
    of :func:`npujit.sim.simulate`.

    Attributes: ``core``, ``program``, ``flag`` (src, dst, id), ``set_pipe``,
    ``wait_pipe``, ``cycle`` (when the second set fired) and ``taken`` (when the wait took
    the earlier set).

    Example::

        >>> from npujit.sim import simulate, TINY, CoreProgram, set_flag, wait_flag, vec
        >>> prog = CoreProgram("AIV", [vec("add", 2560),   # VECTOR is busy: both sets land
        ...                            set_flag("MTE2", "VECTOR"), set_flag("MTE2", "VECTOR"),
        ...                            wait_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR")])
        >>> try:
        ...     simulate(prog, TINY)
        ... except FlagStillSetError as e:
        ...     print(e.set_pipe, e.wait_pipe, e.cycle, e.taken)
        MTE2 VECTOR 2 30
    """

    def __init__(self, message: str, core: str, program: int, flag: tuple, cycle: int,
                 taken: int):
        super().__init__(message)
        self.core, self.program, self.flag = core, program, flag
        self.set_pipe, self.wait_pipe = flag[0], flag[1]
        self.cycle, self.taken = cycle, taken


class PipeRun:
    """One pipe of one program run: its queue, position, clock and recorded times.

    A pipe is busy while it executes an instruction or has a GM copy in flight; it is idle
    while it waits on a flag or barrier with nothing in flight.  So its busy cycles are
    ``end - start - idle``, with ``idle`` counted where it waits.
    """

    __slots__ = ("name", "q", "i", "n", "t", "start", "end", "marks", "core", "idle", "done",
                 "landing")

    def __init__(self, name: str, q: list, t: int, core: "CoreRun", landing: int = 0):
        self.name, self.q, self.i, self.n = name, q, 0, len(q)
        self.t = self.start = self.end = t
        self.done = t        # when the data of every GM copy issued so far has landed
        self.marks = []      # start of each WAIT/SETD/BARRIER, end of each GM copy, in order
        self.core = core
        self.idle = 0        # cycles spent waiting with nothing in flight
        self.landing = landing   # cycles until the current GM copy lands (the memory sets it)

    def delay(self, t: int) -> None:
        """Start this (not yet started) pipe at cycle ``t`` if that is later."""
        if t > self.t:
            self.t = self.start = self.end = self.done = t

    @property
    def busy(self) -> int:
        """Busy cycles of this pipe in this run."""
        return self.end - self.start - self.idle


# The pipes that write or read L0C on a separated part's AIC: with ``overlap_fixpipe`` they
# wait for the last program's FixPipe to drain before the next program's start on the core.
_L0C_PIPES = ("CUBE", "FIXP")


def fixpipe_overlaps(spec: NPUSpec, comp: Compiled) -> bool:
    """Whether the next program on the core may start while this program's FixPipe
    drains (``spec.overlap_fixpipe``): only when the FixPipe writes GM alone -- one that
    writes L1 feeds this program's own later work."""
    return spec.overlap_fixpipe and "L0C_to_L1" not in comp.bytes_by_path


class CoreRun:
    """One program running on one physical core: flag state, barrier state, its pipes."""

    __slots__ = ("core", "program", "compiled", "start", "end", "pend", "waiter", "pipes",
                 "left", "bar_n", "bar_t", "bar_wait", "partner", "ai_core", "ring", "taken",
                 "gates", "gate_wait", "tail", "body_left", "body_end", "held")

    def __init__(self, core: str, program: int, compiled: Compiled, start: int, nflags: int,
                 landing: int = 0):
        self.core, self.program, self.compiled = core, program, compiled
        self.start = self.end = start
        self.pend = [deque() for _ in range(nflags)]   # pending set times per flag
        self.waiter = [None] * nflags                  # the pipe blocked on each flag
        self.taken = [-1] * nflags     # when a wait last took each flag (1-bit check)
        self.gates = [-1] * compiled.gates   # when each scalar wait completed (-1: not yet)
        self.gate_wait: dict[int, list] = {}  # gate -> pipes blocked on it
        self.pipes = [PipeRun(name, q, start, self, landing)
                      for name, q in zip(compiled.pipes, compiled.queues)]
        self.left = len(self.pipes)
        self.bar_n, self.bar_t, self.bar_wait = 0, 0, []
        self.partner = None     # the other run of a mixed launch's group (cross flags)
        self.ai_core = -1       # the AI core a grouped run belongs to
        self.ring = -1          # its hand-off slot: ai_core * handoff_slots + position
        self.tail = None        # the FixPipe run the core's next program may overlap
        self.body_left = self.left   # pipes left but the tail: the core is free at 0
        self.body_end = start
        self.held = []          # the next program's pipes waiting for the tail to drain

    def delay(self, t: int) -> None:
        """Start this (not yet started) run at cycle ``t`` instead."""
        self.start = self.end = t
        for ps in self.pipes:
            ps.delay(t)


class Timeline:
    """What a run produced: every program run, the HBM server, the flag numbering."""

    def __init__(self, spec, launch, runs, core_names, compiled, hbm, flag_keys):
        self.spec, self.launch, self.runs = spec, launch, runs
        self.core_names = core_names      # physical cores, e.g. ["AIC 0", ..., "AIV 47"]
        self.compiled = compiled          # per program index
        self.hbm = hbm
        self.flag_keys = flag_keys        # flag index -> (src, dst, id)
        # A write-back L2 may still be flushing to HBM after the last program ended.
        self.cycles = max(max((r.end for r in runs), default=0),
                          math.ceil(getattr(hbm, "drained", 0)))

    def distinct(self) -> tuple:
        """``queues.distinct_programs(self.compiled)``: the distinct compiled programs and
        each program's number among them (the engine knows them; else computed once)."""
        got = getattr(self, "_distinct", None)
        if got is None:
            got = self._distinct = distinct_programs(self.compiled)
        return got

    def program_rows(self) -> list[tuple]:
        """Per run, in start order: (program, core name, start, end, Compiled, busy cycles
        per pipe name): what the report sums (the compiled engine's timeline gives the
        same rows without building run objects)."""
        return [(r.program, r.core, r.start, r.end, r.compiled,
                 {ps.name: ps.busy for ps in r.pipes}) for r in self.runs]

    def busy_totals(self) -> tuple:
        """From :meth:`program_rows`: busy cycles per physical core and pipe, programs per
        core, and per physical core kind the block time and busy cycles per pipe (what
        the report's ratios divide)."""
        rows = self.program_rows()
        core_busy: dict[str, dict[str, int]] = {}
        per_core_programs: dict[str, int] = {}
        kind_time: dict[str, int] = {}
        kind_busy: dict[str, dict[str, int]] = {}
        for _, core, start, end, comp, busy in rows:
            cb = core_busy.setdefault(core, {})
            for p, b in busy.items():
                cb[p] = cb.get(p, 0) + b
            per_core_programs[core] = per_core_programs.get(core, 0) + 1
            phys = self.spec.core_kind_for(comp.program.core)
            kind_time[phys] = kind_time.get(phys, 0) + end - start
            kb = kind_busy.setdefault(phys, {})
            for p, b in busy.items():
                kb[p] = kb.get(p, 0) + b
        return core_busy, per_core_programs, kind_time, kind_busy


class Engine:
    """Runs a launch; see :func:`run`."""

    def __init__(self, launch: Launch, spec: NPUSpec, record_hbm: bool = True,
                 one_bit_flags: bool = True, start_jitter: int = 0, seed: int = 0):
        self.spec = spec
        self.launch = launch
        if not isinstance(start_jitter, int) or start_jitter < 0:
            raise ValueError(f"start_jitter must be an int >= 0 (cycles), got {start_jitter!r}")
        rng = random.Random(seed)
        # Per physical core: when it takes its first program (0 without jitter).
        self.jitter = {name: rng.randint(0, start_jitter) if start_jitter else 0
                       for name in [f"{k} {j}" for k, n in spec.core_counts.items()
                                    for j in range(n)]}
        self.compiler = Compiler(spec)
        programs = launch.programs
        distinct, number = distinct_programs(programs)
        first = np.full(len(distinct), len(programs), dtype=np.int64)
        np.minimum.at(first, number, np.arange(len(programs), dtype=np.int64))
        compiled = self.compiler.compile_all(distinct, first.tolist())
        self.distinct = (compiled, number)      # as queues.distinct_programs(self.compiled)
        self.compiled = [compiled[d] for d in number.tolist()]
        self.heap: list = []         # (cycle, seq, CoreRun): cores becoming free
        self.seq = 0
        self.work: list = []
        if spec.l2_bytes and self.compiler.has_regions:
            self.hbm = MemorySystem(spec.hbm_bytes_per_cycle, spec.l2_bytes_per_cycle,
                                    spec.l2_bytes, spec.hbm_latency_cycles,
                                    spec.l2_latency_cycles, record=record_hbm)
        else:
            self.hbm = HBMServer(spec.hbm_bytes_per_cycle, record=record_hbm)
        self.arrivals = self.hbm.arrivals
        self.landing = spec.hbm_latency_cycles
        self.runs: list[CoreRun] = []
        self.last_run: dict[str, CoreRun] = {}    # physical core -> its latest run
        # Program queues per physical core kind, and the physical cores.
        self.queues: dict[str, deque] = {k: deque() for k in spec.core_counts}
        kinds = list(spec.core_counts)
        kind = np.array([kinds.index(spec.core_kind_for(p.core)) for p in distinct],
                        dtype=np.int64)[number] if len(number) else number
        for k, name in enumerate(kinds):
            self.queues[name].extend(np.flatnonzero(kind == k).tolist())
        self.core_names = [f"{k} {j}" for k, n in spec.core_counts.items() for j in range(n)]
        for k, q in self.queues.items():
            if q and spec.core_counts[k] == 0:
                raise ProgramError(f"launch has {k} programs but {spec.name} has no {k} cores")
        self.groups = deque(launch.groups or ())
        if launch.groups is not None:
            if spec.arch != "separated" or spec.aiv_cores < spec.aic_cores:
                raise ProgramError(f"a grouped (mixed AIC + AIV) launch needs a separated part "
                                   f"with at least one AIV per AIC; {spec.name} is {spec.arch} "
                                   f"with {spec.aic_cores} AIC, {spec.aiv_cores} AIV")
        elif self.compiler.has_cross:
            raise ProgramError("cross-core flags (cross_set/cross_wait) need a Launch with "
                               "groups pairing each AIC program with its AIV partner")
        # Per flag index: is it a 1-bit flag?  Cross-core flags count on hardware too.
        keys = sorted(self.compiler.flag_index, key=self.compiler.flag_index.get)
        self.one_bit = [one_bit_flags and key[0] != "CROSS" for key in keys]

    # -- the hot loop ----------------------------------------------------------------------
    def _run_pipe(self, ps: PipeRun, copied: int = -1) -> None:
        """Advance one pipe as far as it can go without the global clock.  ``copied`` >= 0
        resumes it from the GM copy it waits on, whose transfer finished in that cycle."""
        q, n, i, t, marks, core = ps.q, ps.n, ps.i, ps.t, ps.marks, ps.core
        pend, waiter = core.pend, core.waiter
        if copied >= 0:
            # Never faster than the standalone cost (float noise in the fluid server).
            end = t + q[i][2]
            t = copied if copied > end else end
            marks.append(t)
            if t + ps.landing > ps.done:
                ps.done = t + ps.landing
            i += 1
        while i < n:
            code, a, cost, moved, rate, gm = q[i]
            if code == WAIT:
                pending = pend[a]
                if not pending:
                    waiter[a] = ps
                    ps.i = i
                    ps.t = t
                    return
                ts = pending.popleft()
                if ts > t:
                    if ts > ps.done:   # idle unless a copy is still landing meanwhile
                        ps.idle += ts - (ps.done if ps.done > t else t)
                    t = ts
                marks.append(t)
                core.taken[a] = t
                if pending and pending[0] < t and self.one_bit[a]:
                    raise self._still_set(core, a, pending[0], t)
                t += cost
            elif code == LOCAL:
                t += a
            elif code == SETD:    # (kept apart from SET: one test fewer in the hot loop)
                if ps.done > t:
                    t = ps.done
                marks.append(t)
                t += cost
                if t < core.taken[a] and self.one_bit[a]:
                    raise self._still_set(core, a, t, core.taken[a])
                pend[a].append(t)
                w = waiter[a]
                if w is not None:
                    waiter[a] = None
                    self.work.append(w)
            elif code == SET:
                t += cost
                if t < core.taken[a] and self.one_bit[a]:
                    raise self._still_set(core, a, t, core.taken[a])
                pend[a].append(t)
                w = waiter[a]
                if w is not None:
                    waiter[a] = None
                    self.work.append(w)
            elif code == GM:
                ps.i = i
                ps.t = t
                self.seq += 1
                heappush(self.arrivals, (t + a, self.seq, moved, rate, ps, gm))
                return
            elif code == GATE:   # the scalar unit issues nothing past an open scalar wait
                gt = core.gates[a]
                if gt < 0:
                    core.gate_wait.setdefault(a, []).append(ps)
                    ps.i = i
                    ps.t = t
                    return
                if gt > t:
                    if gt > ps.done:
                        ps.idle += gt - (ps.done if ps.done > t else t)
                    t = gt
                marks.append(t)
            elif code == OPEN:   # the scalar wait before it completed: open its gate
                core.gates[a] = t
                self.work.extend(core.gate_wait.pop(a, ()))
            elif code == CSET:
                if ps.done > t:
                    t = ps.done
                marks.append(t)
                t += cost
                other = core.partner
                other.pend[a].append(t)
                w = other.waiter[a]
                if w is not None:
                    other.waiter[a] = None
                    self.work.append(w)
            else:  # BARRIER (ALL)
                if ps.done > t:
                    t = ps.done
                core.bar_n += 1
                if t > core.bar_t:
                    core.bar_t = t
                if core.bar_n < len(core.pipes):
                    core.bar_wait.append(ps)
                    ps.i = i
                    ps.t = t
                    return
                release = core.bar_t
                for w in core.bar_wait:
                    w.idle += release - w.t
                    w.marks.append(release)
                    w.t = release + cost
                    w.i += 1
                    self.work.append(w)
                core.bar_n, core.bar_t, core.bar_wait = 0, 0, []
                ps.idle += release - t
                marks.append(release)
                t = release + cost
            i += 1
        ps.i = i
        ps.t = t
        core.left -= 1
        if ps.done > t:
            t = ps.done
        ps.end = t
        if t > core.end:
            core.end = t
        if ps is core.tail:     # L0C is free: the next program's Cube and FixPipe go on
            for w in core.held:
                w.delay(t)
                self.work.append(w)
            core.held = []
            return
        core.body_left -= 1
        if t > core.body_end:
            core.body_end = t
        if core.body_left == 0:
            self.seq += 1
            heappush(self.heap, (core.body_end, self.seq, core))

    def _still_set(self, core: CoreRun, a: int, cycle: int, taken: int) -> FlagStillSetError:
        flag = next(k for k, v in self.compiler.flag_index.items() if v == a)
        name = core.compiled.program.name
        label = f" {name!r}" if name else ""
        return FlagStillSetError(
            f"set_flag {flag_name(flag)} on pipe {flag[0]} at cycle {cycle} found the flag "
            f"still set: the wait_flag on pipe {flag[1]} took the previous set only at cycle "
            f"{taken} (core {core.core}, program {core.program}{label}).  Hardware flags are "
            f"1 bit, so this set would be lost and a later wait would hang.  Give the two "
            f"sets different event ids, or wait before setting again; streams written for "
            f"counting flags can pass one_bit_flags=False to simulate().",
            core.core, core.program, flag, cycle, taken)

    def _drain(self) -> None:
        work = self.work
        while work:
            self._run_pipe(work.pop())

    def _start(self, core: str, program: int, t: int) -> None:
        self._go([self._new_run(core, program, t)], t)

    def _new_run(self, core: str, program: int, t: int) -> CoreRun:
        comp = self.compiled[program]
        run = CoreRun(core, program, comp, t, len(self.compiler.flag_index), self.landing)
        if fixpipe_overlaps(self.spec, comp):
            for ps in run.pipes:
                if ps.name == "FIXP":
                    run.tail = ps
                    run.body_left -= 1
        self.runs.append(run)
        return run

    def _go(self, runs: list, t: int) -> None:
        for run in runs:
            if not run.body_left:
                self.seq += 1
                heappush(self.heap, (t, self.seq, run))
            prev = self.last_run.get(run.core)
            self.last_run[run.core] = run
            pipes = run.pipes
            tail = prev.tail if prev is not None else None
            if tail is not None:
                # The last program's FixPipe may still read L0C: this one's Cube (writing
                # L0C) and FixPipe start when it has drained.
                drained = tail.i >= tail.n
                pipes = []
                for ps in run.pipes:
                    if ps.name not in _L0C_PIPES:
                        pipes.append(ps)
                    elif drained:
                        ps.delay(tail.end)
                        pipes.append(ps)
                    else:
                        prev.held.append(ps)
            # Reverse so the LIFO worklist runs pipes in the spec's order.
            self.work.extend(reversed(pipes))
        self._drain()

    def _start_group(self, j: int, t: int) -> None:
        """Start the next group on AI core ``j``: both runs exist (and know each other)
        before either pipe runs.  The core's AIVs take its groups in turn; the AIV run
        waits in ``aiv_next`` while its AIV still runs an earlier group."""
        aic, aiv = self.groups.popleft()
        spec = self.spec
        ratio = spec.aiv_cores // spec.aic_cores
        n = self.started[j]
        k = f"AIV {j * ratio + n % ratio}"
        a = self._new_run(f"AIC {j}", aic, t)
        v = self._new_run(k, aiv, t)
        a.partner, v.partner = v, a
        a.ai_core = v.ai_core = j
        a.ring = v.ring = j * spec.handoff_slots + n % spec.handoff_slots
        self.started[j] = n + 1
        self.in_flight[j] += 1
        self.aic_busy[j] = True
        if self.aiv_run.get(k) is None:
            self.aiv_run[k] = v
            self._go([a, v], t)
        else:
            self.aiv_next.setdefault(k, deque()).append(v)
            self._go([a], t)

    def _group_done(self, run: "CoreRun", t: int) -> None:
        """A grouped run drained at cycle ``t``: its cores' next runs start."""
        j, k = run.ai_core, run.core
        if run is self.aiv_run.get(k):
            self.in_flight[j] -= 1
            self.aiv_run[k] = None
            if self.aiv_next.get(k):
                v = self.aiv_run[k] = self.aiv_next[k].popleft()
                v.delay(t)
                self._go([v], t)
        else:
            self.aic_busy[j] = False
        if (not self.aic_busy[j] and self.in_flight[j] < self.spec.handoff_slots
                and self.groups):
            self._start_group(j, t)

    def run(self) -> Timeline:
        """Simulate to completion and return the :class:`Timeline`.

        Example::

            >>> from npujit.target import TINY
            >>> from npujit.sim.isa import CoreProgram, Launch, scalar
            >>> Engine(Launch([CoreProgram("AIC", [scalar(7)])]), TINY).run().cycles
            7
        """
        spec = self.spec
        grouped = self.launch.groups is not None
        if grouped:
            n = spec.aic_cores
            self.started, self.in_flight, self.aic_busy = [0] * n, [0] * n, [False] * n
            # per AIV (core name): the group it runs, and the groups waiting for it
            self.aiv_run: dict = {}
            self.aiv_next: dict = {}
            for j in range(spec.aic_cores):
                if self.groups:
                    self._start_group(j, self.jitter[f"AIC {j}"])
        idle = {k: deque() for k in self.queues}
        for name in self.core_names:
            idle[name.split()[0]].append(name)
        for kind, q in self.queues.items():
            while q and idle[kind] and not grouped:
                name = idle[kind].popleft()
                self._start(name, q.popleft(), self.jitter[name])
        heap, hbm, work, run_pipe = self.heap, self.hbm, self.work, self._run_pipe
        hbm_next, hbm_pop = hbm.next_completion, hbm.pop_finished
        ceil = math.ceil
        while True:
            # GM copies enter HBM through its arrival queue; the global heap only holds
            # cores becoming free.  A finish and a core freeing in one cycle: finish first.
            tc = heap[0][0] if heap else INF
            tf = hbm_next(tc)
            if tc < tf:
                _, _, done_run = heappop(heap)
                if grouped:
                    self._group_done(done_run, tc)
                    continue
                q = self.queues[spec.core_kind_for(done_run.compiled.kind)]
                if q:   # the core takes the next program of its kind
                    self._start(done_run.core, q.popleft(), tc)
                continue
            if tf == INF:
                break
            finished = ceil(tf)
            for ps in hbm_pop(tf):
                run_pipe(ps, finished)
                while work:
                    run_pipe(work.pop())
        stuck = [r for r in self.runs if r.left > 0]
        if stuck:
            raise self._deadlock(stuck)
        if isinstance(hbm, MemorySystem):   # the write-back L2's dirty bytes go to HBM
            hbm.drain(max((r.end for r in self.runs), default=0))
        timeline = Timeline(spec, self.launch, self.runs, self.core_names, self.compiled, hbm,
                            {v: k for k, v in self.compiler.flag_index.items()})
        timeline._distinct = self.distinct
        return timeline

    def _deadlock(self, stuck: list[CoreRun]) -> DeadlockError:
        keys = {v: k for k, v in self.compiler.flag_index.items()}
        blocked, lines = [], []
        for run in stuck:
            comp = run.compiled
            pos = comp.positions
            for p, ps in enumerate(run.pipes):
                if ps.i >= ps.n:
                    continue
                code, a = ps.q[ps.i][:2]
                idx = int(pos[p][ps.i])
                ins = comp.program.instrs[idx]
                flag = keys[a] if code == WAIT else None
                if flag is not None:
                    why = (f"waits on flag {flag_name(flag)} that no pending set_flag "
                           f"will ever set")
                elif code == GATE:
                    why = ("cannot issue: the scalar unit is held by the SCALAR wait_flag "
                           "at this instr")
                else:
                    arrived = [w.name for w in run.bar_wait]
                    why = f"waits at barrier(ALL); arrived: {arrived or 'none'}"
                label = f"{comp.program.name!r} " if comp.program.name else ""
                lines.append(f"  core {run.core}, program {run.program} {label}: pipe {ps.name} "
                             f"{why} (instr {idx}: {describe(ins)}, cycle {ps.t})")
                blocked.append({"core": run.core, "program": run.program, "pipe": ps.name,
                                "instr": idx, "flag": flag, "cycle": ps.t})
        msg = "deadlock: every runnable pipe drained but these pipes are still blocked:\n"
        return DeadlockError(msg + "\n".join(lines), blocked)


def run(launch: Launch, spec: NPUSpec, record_hbm: bool = True, one_bit_flags: bool = True,
        start_jitter: int = 0, seed: int = 0) -> Timeline:
    """Simulate ``launch`` on ``spec`` and return the raw :class:`Timeline` (the report is
    built from it by :func:`npujit.sim.simulate`; the options are its own).

    Example::

        >>> from npujit.target import TINY
        >>> from npujit.sim.isa import CoreProgram, Launch, vec
        >>> run(Launch([CoreProgram("AIV", [vec("add", 256)])] * 3), TINY).cycles  # 2 cores
        24
    """
    return Engine(launch, spec, record_hbm, one_bit_flags, start_jitter, seed).run()


def pipe_spans(ps: PipeRun) -> list[tuple[int, int]]:
    """(start, end) cycles of every queue entry of a pipe run, rebuilt from its marks.

    Example::

        >>> from npujit.target import TINY
        >>> from npujit.sim.isa import CoreProgram, Launch, vec
        >>> tl = run(Launch([CoreProgram("AIV", [vec("add", 256), vec("add", 256)])]), TINY)
        >>> pipe_spans(tl.runs[0].pipes[0])
        [(0, 12), (12, 24)]
    """
    t, j, marks = ps.start, 0, ps.marks
    out = []
    for code, a, cost, *_ in ps.q:
        if code == LOCAL or code == SET or code == OPEN:
            s = t
            t += cost
        elif code == GM:
            s = t
            t = marks[j]
            j += 1
        else:   # WAIT / SETD / BARRIER: the mark is when it could proceed
            s = marks[j]
            j += 1
            t = s + cost
        out.append((s, t))
    return out
