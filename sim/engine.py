"""The event-driven timing engine: in-order pipes, flags, barriers, shared HBM, waves.

Model (simulator-and-moe.md §1.3):

* Integer cycles.  Each program's instructions are dealt, in issue order, to the FIFO of
  their pipe; a pipe runs its FIFO one instruction at a time.
* Pipes of a core are ordered only by flags and barriers.  ``set_flag`` runs on its source
  pipe after the pipe's earlier instructions and makes the flag visible when it ends;
  ``wait_flag`` blocks its pipe until a set is pending, then consumes it.  Flags count
  (the k-th wait consumes the k-th set); the report flags streams that would lose a set on
  hardware's 1-bit flags.  ``barrier("ALL")`` holds every pipe of the core until all have
  reached it; ``barrier(pipe)`` costs ``sync_cycles`` on that (already in-order) pipe.
* A copy touching GM occupies its pipe for its issue latency, then streams its bytes through
  the :class:`~npujit.sim.hbm.HBMServer` shared by all cores, capped by its port rate; its
  data lands ``hbm_latency`` later.  When the spec has an L2 and the launch's copies carry
  ``gm_region`` keys, the :class:`~npujit.sim.l2.MemorySystem` serves read hits and writes
  from the L2 instead (its own shared bandwidth, landing ``l2_latency`` later).  The pipe
  may issue the next copy meanwhile (DMA requests pipeline), but a ``set_flag`` or
  ``barrier`` on it, and the program's end, wait for every earlier copy to land.
* Programs are queued per core kind in launch order; a core takes the next one when all
  of its pipes are drained (waves).  A launch with ``groups`` (a mixed AIC + AIV kernel)
  is queued by group instead: a group starts on AI core ``j`` (AIC ``j`` and AIV
  ``j * aiv_cores // aic_cores``) when both are free, and its two runs are partners for
  ``cross_set`` / ``cross_wait`` flags.

Speed: a pipe runs ahead through everything that does not touch HBM without any event,
since those instructions depend only on their own pipe and on flags whose set times are
already known (every local clock is >= the global clock).  Only GM copies (queued on the
HBM server's arrival heap) and cores becoming free (the engine's heap) are events, both
keyed (cycle, seq) so the order is deterministic.  The hot loop records one time per
wait, DMA-pipe set, barrier and GM copy; the rest of the timeline is rebuilt on demand
(:func:`pipe_spans`).

Example::

    >>> from npujit.sim.spec import TINY
    >>> from npujit.sim.isa import CoreProgram, Launch, copy, vec, set_flag, wait_flag
    >>> prog = CoreProgram("AIV", [copy("GM_to_UB", 6400), set_flag("MTE2", "VECTOR"),
    ...                            wait_flag("MTE2", "VECTOR"), vec("add", 3200, "f16")])
    >>> tl = run(Launch([prog]), TINY)
    >>> tl.cycles   # copy 110 + 100, set 1, wait 1, vec 10 + 25
    247
"""
from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush

import numpy as np

from typing import NamedTuple

from .cost import copy_occupancy, copy_terms, instr_cycles
from .hbm import INF, HBMServer
from .l2 import ONCE, MemorySystem
from .isa import KINDS, CoreProgram, Instr, Launch, describe, flag_name
from .spec import NPUSpec, SpecError, path_scopes

# Queue entry codes.  An entry is (code, a, cost, moved bytes, port rate, gm):
#   LOCAL: a = cycles     GM: a = issue latency before HBM, cost = uncontended occupancy,
#   gm = None or (is_write, region key) for the L2
#   SET/WAIT: a = flag index.  SETD is a SET on a pipe that runs GM copies: it also waits
#   for their data to land.  CSET (cross_set) waits like SETD, then sets the flag on the
#   group partner's run; a cross_wait is a WAIT on the run's own flag.
LOCAL, GM, SET, WAIT, BARRIER, SETD, CSET = range(7)


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


class ProgramError(SpecError):
    """An instruction does not fit the spec (unknown path, pipe the core lacks, bad event id)."""


class Compiled:
    """One program dealt into per-pipe queues of entries, with its static totals.

    ``pipe_work`` is each pipe's standalone cost sum, or for a pipe with GM copies at least
    their occupancy plus one landing latency (what the roofline uses);
    ``positions[p]`` the program index of each entry of pipe ``p``'s queue.
    """

    __slots__ = ("program", "kind", "pipes", "queues", "positions", "pipe_work",
                 "bytes_by_path", "hbm_read", "hbm_write", "cube_flops", "vector_elems",
                 "gm_latency_min", "instr_count", "read_regions", "written_regions",
                 "hbm_floor")


class _InstrInfo(NamedTuple):
    """What compiling one distinct instruction yields: its pipe and queue entry, and what
    it adds to the program's totals."""

    pipe: int            # index into the core kind's pipes; -1 for barrier("ALL")
    entry: tuple         # the queue entry the engine runs
    path: str | None     # copy path, for bytes per path
    nbytes: int          # bytes the copy asked for
    moved: int           # bytes moved after alignment
    direction: int       # +1 reads GM, -1 writes GM, 0 on-core
    flops: int
    elems: int
    region: object       # the copy's gm_region (None: unknown, never an L2 hit)


class _KindCache(dict):
    """Instruction -> uid for one core kind; a miss validates the instruction and records
    its info, so equal instructions share one uid however many times they appear."""

    def __init__(self, compiler: "Compiler", kind: str):
        super().__init__()
        self.compiler, self.kind = compiler, kind
        self.pipes = compiler.spec.pipes[compiler.spec.core_kind_for(kind)]
        self.infos: list[_InstrInfo] = []
        self.by_id: dict[int, int] = {}   # id(instr) -> uid: a cheap first look-up

    def __missing__(self, ins):
        if not isinstance(ins, Instr):
            raise ProgramError(f"{ins!r} is not an Instr")
        uid = len(self.infos)
        self.infos.append(self.compiler._info(ins, self.kind, self.pipes))
        self[ins] = uid
        self.by_id[id(ins)] = uid
        return uid


class Compiler:
    """Turns programs into :class:`Compiled` queues, caching per distinct instruction.

    Instructions are tuples, so equal instructions share one cache entry however many
    programs repeat them; each new one is validated against the spec.  Programs that reuse
    the same Instr objects (a loop body emitted once per slot) hit a cheaper id look-up.
    """

    def __init__(self, spec: NPUSpec):
        self.spec = spec
        self.flag_index: dict[tuple, int] = {}
        self._caches: dict[str, _KindCache] = {}
        # Pipes that run GM copies: their set_flags wait for the copies' data to land.
        self.dma_pipes = {p.pipe for name, p in spec.paths.items() if "GM" in path_scopes(name)}
        self.has_regions = False    # some GM copy carries a gm_region (the L2 can hit)
        self.has_cross = False      # some program uses cross-core flags

    def _info(self, ins: Instr, kind: str, pipes: tuple) -> _InstrInfo:
        """Validate one instruction against the spec and build its :class:`_InstrInfo`."""
        spec = self.spec

        def fail(msg: str):
            raise ProgramError(f"({describe(ins)}): {msg}")

        if ins.kind not in KINDS:
            fail(f"unknown instruction kind {ins.kind!r}; kinds are {KINDS}")
        if ins.pipe == "ALL" and ins.kind == "barrier":
            pidx = -1
        elif ins.pipe in pipes:
            pidx = pipes.index(ins.pipe)
        else:
            fail(f"{kind} cores of {spec.name} have no pipe {ins.pipe}; they have {pipes}")
        try:
            cost = instr_cycles(ins, spec)
        except SpecError as e:
            fail(str(e))
        path = None
        moved = 0
        direction = 0   # +1 reads GM, -1 writes GM
        if ins.kind == "copy":
            path = ins.path
            src, dst = path_scopes(path)
            if spec.paths[path].pipe != ins.pipe:
                fail(f"{spec.name} runs {path} on {spec.paths[path].pipe}, not {ins.pipe}")
            for sc in (src, dst):
                if sc != "GM" and sc not in spec.scopes[spec.core_kind_for(kind)]:
                    fail(f"{kind} cores of {spec.name} have no {sc}")
            issue, _, moved, rate, touches_gm = copy_terms(path, ins.nbytes, spec)
            if touches_gm:
                direction = 1 if src == "GM" else -1
                gm = None
                if ins.gm_region is not None:
                    gm = (direction < 0, ins.gm_region)
                    self.has_regions = True
                entry = (GM, issue, copy_occupancy(path, ins.nbytes, spec), moved, float(rate),
                         gm)
            else:
                entry = (LOCAL, cost, cost, None, None, None)
        elif ins.kind in ("cross_set", "cross_wait"):
            fidx = self.flag_index.setdefault(ins.flag, len(self.flag_index))
            entry = (CSET if ins.kind == "cross_set" else WAIT, fidx, cost, None, None, None)
            self.has_cross = True
        elif ins.kind in ("set_flag", "wait_flag"):
            src, dst, eid = ins.flag
            for p in (src, dst):
                if p not in pipes:
                    fail(f"flag names pipe {p}, which {kind} cores of {spec.name} lack")
            if not 0 <= eid < spec.event_ids:
                fail(f"event id {eid} out of range: {spec.name} has ids 0..{spec.event_ids - 1} "
                     "per pipe pair")
            if ins.pipe != (src if ins.kind == "set_flag" else dst):
                fail("set_flag runs on the flag's source pipe, wait_flag on its destination")
            fidx = self.flag_index.setdefault(ins.flag, len(self.flag_index))
            if ins.kind == "wait_flag":
                code = WAIT
            else:
                code = SETD if ins.pipe in self.dma_pipes else SET
            entry = (code, fidx, cost, None, None, None)
        elif ins.kind == "barrier" and pidx < 0:
            entry = (BARRIER, 0, cost, None, None, None)
        else:
            entry = (LOCAL, cost, cost, None, None, None)
        flops = ins.flops if ins.kind == "mmad" else 0
        elems = ins.elems if ins.kind == "vec" else 0
        region = ins.gm_region if direction else None
        return _InstrInfo(pidx, entry, path, ins.nbytes if path else 0, moved, direction,
                          flops, elems, region)

    def _uids(self, cache: _KindCache, instrs: list, index: int) -> np.ndarray:
        """The uid of every instruction: by object id when the program reuses known Instr
        objects (cheap), else by value (hashes the tuple)."""
        n = len(instrs)
        if n and id(instrs[0]) in cache.by_id:
            uids = list(map(cache.by_id.get, map(id, instrs)))
            if None not in uids:
                return np.array(uids, dtype=np.int64)
        try:
            return np.fromiter(map(cache.__getitem__, instrs), dtype=np.int64, count=n)
        except ProgramError as e:
            bad = next(i for i, ins in enumerate(instrs)
                       if not isinstance(ins, Instr) or ins not in cache)
            raise ProgramError(f"program {index} instr {bad} {e}") from None

    def compile(self, program: CoreProgram, index: int = 0) -> Compiled:
        """Deal a program's instructions to its pipes and total its static costs.

        Example::

            >>> from npujit.sim.spec import TINY
            >>> from npujit.sim.isa import CoreProgram, vec, scalar
            >>> c = Compiler(TINY).compile(CoreProgram("AIV", [vec("add", 128), scalar(5)]))
            >>> c.pipes, c.pipe_work
            (('SCALAR', 'VECTOR'), {'SCALAR': 5, 'VECTOR': 11})
        """
        kind = program.core
        cache = self._caches.get(kind)
        if cache is None:
            cache = self._caches[kind] = _KindCache(self, kind)
        pipes = cache.pipes
        uids = self._uids(cache, program.instrs, index)
        infos = cache.infos
        pipe_of = np.array([info.pipe for info in infos], dtype=np.int64)
        entries = [info.entry for info in infos]
        counts = np.bincount(uids, minlength=len(infos))
        per_instr_pipe = pipe_of[uids]
        c = Compiled()
        c.pipes, c.queues, c.positions = [], [], []
        c.pipe_work = {}
        for p, name in enumerate(pipes):
            pos = np.flatnonzero((per_instr_pipe == p) | (per_instr_pipe < 0))
            if not len(pos):
                continue
            c.pipes.append(name)
            c.queues.append(list(map(entries.__getitem__, uids[pos].tolist())))
            c.positions.append(pos)
        c.pipes = tuple(c.pipes)
        # Totals over distinct instructions times their counts.
        work = dict.fromkeys(pipes, 0)
        gm_work = dict.fromkeys(pipes, 0)
        cached_pipes = set()     # pipes with GM copies the L2 may serve
        bytes_by_path: dict[str, int] = {}
        read_regions: dict = {}
        written_regions = set()
        hbm_read = hbm_write = flops = elems = floor = 0
        lat_min = INF
        l2 = self.spec.l2_bytes > 0
        for uid in np.flatnonzero(counts).tolist():
            n = int(counts[uid])
            pidx, entry, path, nbytes, moved, direction, fl, el, region = infos[uid]
            if pidx < 0:
                for name in pipes:
                    work[name] += n * entry[2]
                continue
            name = pipes[pidx]
            work[name] += n * entry[2]
            if path is not None:
                bytes_by_path[path] = bytes_by_path.get(path, 0) + n * nbytes
            if direction:
                gm_work[name] += n * entry[2]
                lat_min = min(lat_min, entry[1])
                if direction > 0:
                    hbm_read += n * moved
                    if l2 and region is not None and region != ONCE:
                        read_regions[region] = min(read_regions.get(region, moved), moved)
                        cached_pipes.add(name)
                    else:
                        floor += n * moved
                else:
                    hbm_write += n * moved
                    floor += n * moved
                    if l2 and region is not None:
                        if region != ONCE:
                            written_regions.add(region)
                        cached_pipes.add(name)    # a write lands in the L2
            flops += n * fl
            elems += n * el
        c.program, c.kind = program, kind
        spec = self.spec
        # A pipe with GM copies ends no earlier than its last copy's data lands (other work
        # on the pipe may overlap that landing); an L2 hit lands sooner.
        landing = {name: min(spec.hbm_latency_cycles, spec.l2_latency_cycles)
                   if name in cached_pipes else spec.hbm_latency_cycles for name in pipes}
        c.pipe_work = {name: max(work[name], gm_work[name] + landing[name]) if gm_work[name]
                       else work[name] for name in c.pipes}
        c.read_regions = read_regions
        c.written_regions = frozenset(written_regions)
        c.hbm_floor = floor
        c.bytes_by_path = bytes_by_path
        c.hbm_read, c.hbm_write = hbm_read, hbm_write
        c.cube_flops, c.vector_elems = flops, elems
        c.gm_latency_min = lat_min
        c.instr_count = len(program.instrs)
        return c


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

    @property
    def busy(self) -> int:
        """Busy cycles of this pipe in this run."""
        return self.end - self.start - self.idle


class CoreRun:
    """One program running on one physical core: flag state, barrier state, its pipes."""

    __slots__ = ("core", "program", "compiled", "start", "end", "pend", "waiter", "pipes",
                 "left", "bar_n", "bar_t", "bar_wait", "partner", "ai_core")

    def __init__(self, core: str, program: int, compiled: Compiled, start: int, nflags: int,
                 landing: int = 0):
        self.core, self.program, self.compiled = core, program, compiled
        self.start = self.end = start
        self.pend = [deque() for _ in range(nflags)]   # pending set times per flag
        self.waiter = [None] * nflags                  # the pipe blocked on each flag
        self.pipes = [PipeRun(name, q, start, self, landing)
                      for name, q in zip(compiled.pipes, compiled.queues)]
        self.left = len(self.pipes)
        self.bar_n, self.bar_t, self.bar_wait = 0, 0, []
        self.partner = None     # the other run of a mixed launch's group (cross flags)
        self.ai_core = -1       # the AI core a grouped run belongs to


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


class Engine:
    """Runs a launch; see :func:`run`."""

    def __init__(self, launch: Launch, spec: NPUSpec, record_hbm: bool = True):
        self.spec = spec
        self.launch = launch
        self.compiler = Compiler(spec)
        by_id: dict[int, Compiled] = {}
        self.compiled = []
        for i, prog in enumerate(launch.programs):
            c = by_id.get(id(prog))
            if c is None:
                c = by_id[id(prog)] = self.compiler.compile(prog, i)
            self.compiled.append(c)
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
        # Program queues per physical core kind, and the physical cores.
        self.queues: dict[str, deque] = {k: deque() for k in spec.core_counts}
        for i, prog in enumerate(launch.programs):
            self.queues[spec.core_kind_for(prog.core)].append(i)
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
                t += cost
            elif code == LOCAL:
                t += a
            elif code == SETD:
                if ps.done > t:
                    t = ps.done
                marks.append(t)
                t += cost
                pend[a].append(t)
                w = waiter[a]
                if w is not None:
                    waiter[a] = None
                    self.work.append(w)
            elif code == SET:
                t += cost
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
        if core.left == 0:
            self.seq += 1
            heappush(self.heap, (core.end, self.seq, core))

    def _drain(self) -> None:
        work = self.work
        while work:
            self._run_pipe(work.pop())

    def _start(self, core: str, program: int, t: int) -> None:
        self._go([self._new_run(core, program, t)], t)

    def _new_run(self, core: str, program: int, t: int) -> CoreRun:
        run = CoreRun(core, program, self.compiled[program], t, len(self.compiler.flag_index),
                      self.landing)
        self.runs.append(run)
        return run

    def _go(self, runs: list, t: int) -> None:
        for run in runs:
            if not run.pipes:
                self.seq += 1
                heappush(self.heap, (t, self.seq, run))
            # Reverse so the LIFO worklist runs pipes in the spec's order.
            self.work.extend(reversed(run.pipes))
        self._drain()

    def _start_group(self, j: int, t: int) -> None:
        """Start the next group on AI core ``j``: both runs exist (and know each other)
        before either pipe runs."""
        aic, aiv = self.groups.popleft()
        spec = self.spec
        a = self._new_run(f"AIC {j}", aic, t)
        v = self._new_run(f"AIV {j * (spec.aiv_cores // spec.aic_cores)}", aiv, t)
        a.partner, v.partner = v, a
        a.ai_core = v.ai_core = j
        self.ai_left[j] = 2
        self._go([a, v], t)

    def run(self) -> Timeline:
        """Simulate to completion and return the :class:`Timeline`.

        Example::

            >>> from npujit.sim.spec import TINY
            >>> from npujit.sim.isa import CoreProgram, Launch, scalar
            >>> Engine(Launch([CoreProgram("AIC", [scalar(7)])]), TINY).run().cycles
            7
        """
        spec = self.spec
        grouped = self.launch.groups is not None
        if grouped:
            self.ai_left = [0] * spec.aic_cores
            for j in range(spec.aic_cores):
                if self.groups:
                    self._start_group(j, 0)
        idle = {k: deque() for k in self.queues}
        for name in self.core_names:
            idle[name.split()[0]].append(name)
        for kind, q in self.queues.items():
            while q and idle[kind] and not grouped:
                self._start(idle[kind].popleft(), q.popleft(), 0)
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
                if grouped:     # the AI core takes the next group when both runs are done
                    j = done_run.ai_core
                    self.ai_left[j] -= 1
                    if self.ai_left[j] == 0 and self.groups:
                        self._start_group(j, tc)
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
        return Timeline(spec, self.launch, self.runs, self.core_names, self.compiled, hbm,
                        {v: k for k, v in self.compiler.flag_index.items()})

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
                if code == WAIT:
                    why = (f"waits on flag {flag_name(flag)} that no pending set_flag "
                           f"will ever set")
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


def run(launch: Launch, spec: NPUSpec, record_hbm: bool = True) -> Timeline:
    """Simulate ``launch`` on ``spec`` and return the raw :class:`Timeline` (the report is
    built from it by :func:`npujit.sim.simulate`).

    Example::

        >>> from npujit.sim.spec import TINY
        >>> from npujit.sim.isa import CoreProgram, Launch, vec
        >>> run(Launch([CoreProgram("AIV", [vec("add", 256)])] * 3), TINY).cycles  # 2 cores
        24
    """
    return Engine(launch, spec, record_hbm).run()


def pipe_spans(ps: PipeRun) -> list[tuple[int, int]]:
    """(start, end) cycles of every queue entry of a pipe run, rebuilt from its marks.

    Example::

        >>> from npujit.sim.spec import TINY
        >>> from npujit.sim.isa import CoreProgram, Launch, vec
        >>> tl = run(Launch([CoreProgram("AIV", [vec("add", 256), vec("add", 256)])]), TINY)
        >>> pipe_spans(tl.runs[0].pipes[0])
        [(0, 12), (12, 24)]
    """
    t, j, marks = ps.start, 0, ps.marks
    out = []
    for code, a, cost, *_ in ps.q:
        if code == LOCAL or code == SET:
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
