"""Per-pipe queues: a ``CoreProgram``'s instruction stream compiled for the timing engine.

``Compiler(spec).compile(program)`` validates each distinct instruction against the spec
(paths, pipes the core has, event ids), deals the program's instructions to the FIFOs of
their pipes as queue entries (the codes below, which the engine's hot loop runs), and
totals the program's static costs: per-pipe work, bytes per path, HBM reads and writes,
GM regions for the L2, Cube FLOPs and Vector elements (what the roofline and the report
use).  Equal instructions share one cache entry however many programs repeat them.

Example::

    >>> from npujit.target import TINY
    >>> from npujit.sim.isa import CoreProgram, vec, scalar
    >>> Compiler(TINY).compile(CoreProgram("AIV", [vec("add", 128), scalar(5)])).pipes
    ('SCALAR', 'VECTOR')
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .cost import copy_occupancy, copy_terms, instr_cycles
from .hbm import INF
from .isa import KINDS, CoreProgram, Instr, describe
from .l2 import ONCE
from npujit.target import NPUSpec, SpecError, path_scopes

# Queue entry codes.  An entry is (code, a, cost, moved bytes, port rate, gm):
#   LOCAL: a = cycles     GM: a = issue latency before HBM, cost = uncontended occupancy,
#   gm = None or (is_write, region key) for the L2
#   SET/WAIT: a = flag index.  SETD is a SET on a pipe that runs GM copies: it also waits
#   for their data to land.  CSET (cross_set) waits like SETD, then sets the flag on the
#   group partner's run; a cross_wait is a WAIT on the run's own flag.
#   OPEN: a = g, right after the g-th WAIT on the SCALAR pipe (a scalar wait): the scalar
#   unit issues every instruction, so nothing after that wait in program order issues
#   before it completed.  GATE: a = g, on every other pipe before its first instruction
#   after that scalar wait; it holds the pipe until the OPEN ran.
LOCAL, GM, SET, WAIT, BARRIER, SETD, CSET, OPEN, GATE = range(9)


class ProgramError(SpecError):
    """An instruction does not fit the spec (unknown path, pipe the core lacks, bad event id)."""


class Compiled:
    """One program dealt into per-pipe queues of entries, with its static totals.

    ``pipe_work`` is each pipe's standalone cost sum, or for a pipe with GM copies at least
    their occupancy plus one landing latency (what the roofline uses);
    ``positions[p]`` the program index of each entry of pipe ``p``'s queue (a ``GATE``
    entry: the index of its scalar wait); ``gates`` the number of scalar waits;
    ``entry_ids[p]`` the row of each entry in the compiler's ``entries`` (the compiled
    engine's table, sim/fastpath.py).
    """

    __slots__ = ("program", "kind", "pipes", "queues", "positions", "entry_ids", "pipe_work",
                 "bytes_by_path", "hbm_read", "hbm_write", "cube_flops", "vector_elems",
                 "gm_latency_min", "instr_count", "read_regions", "written_regions",
                 "hbm_floor", "gates")


def _gated(q: list, pos: np.ndarray, ids: np.ndarray, scalar_waits: np.ndarray,
           is_scalar: bool, entry_id):
    """A pipe's queue with the scalar waits' issue gates: on the SCALAR pipe an OPEN entry
    follows each scalar wait; on any other pipe a GATE entry goes before the first
    instruction issued after a scalar wait (only the latest one counts: the scalar pipe is
    in order).  Returns the new queue, positions and entry ids (``entry_id(entry)`` gives
    a gate entry its id)."""
    gate_of = np.searchsorted(scalar_waits, pos, side="left") - 1   # last wait before
    out, out_pos, out_ids = [], [], []
    last = -1
    for entry, x, e, g in zip(q, pos.tolist(), ids.tolist(), gate_of.tolist()):
        if not is_scalar and g > last:
            gate = (GATE, g, 0, None, None, None)
            out.append(gate)
            out_pos.append(int(scalar_waits[g]))
            out_ids.append(entry_id(gate))
            last = g
        out.append(entry)
        out_pos.append(x)
        out_ids.append(e)
        if is_scalar and g + 1 < len(scalar_waits) and scalar_waits[g + 1] == x:
            gate = (OPEN, g + 1, 0, None, None, None)
            out.append(gate)
            out_pos.append(x)
            out_ids.append(entry_id(gate))
    return out, np.array(out_pos, dtype=np.int64), np.array(out_ids, dtype=np.int64)


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
        self.alive: list = []             # every Instr object by_id knows, kept alive
        self.entry_ids: list[int] = []    # uid -> row of its entry in compiler.entries

    def __missing__(self, ins):
        if not isinstance(ins, Instr):
            raise ProgramError(f"{ins!r} is not an Instr")
        uid = len(self.infos)
        info = self.compiler._info(ins, self.kind, self.pipes)
        self.infos.append(info)
        self.entry_ids.append(self.compiler.entry_id(info.entry))
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
        # Every distinct queue entry of the launch, in first-seen order (gate entries once
        # per gate number): the rows of the compiled engine's entry table.
        self.entries: list[tuple] = []
        self._gate_ids: dict[tuple, int] = {}

    def entry_id(self, entry: tuple) -> int:
        """The row of a new instruction's queue entry in ``entries`` (a gate entry: the
        row of that gate, shared by every program)."""
        if entry[0] == GATE or entry[0] == OPEN:
            row = self._gate_ids.get(entry)
            if row is None:
                row = self._gate_ids[entry] = len(self.entries)
                self.entries.append(entry)
            return row
        self.entries.append(entry)
        return len(self.entries) - 1

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
            burst = ins.burst_bytes
            issue, _, moved, rate, touches_gm = copy_terms(path, ins.nbytes, spec, burst)
            if touches_gm:
                direction = 1 if src == "GM" else -1
                gm = None
                if ins.gm_region is not None:
                    gm = (direction < 0, ins.gm_region)
                    self.has_regions = True
                entry = (GM, issue, copy_occupancy(path, ins.nbytes, spec, burst), moved,
                         float(rate), gm)
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
        objects (cheap; the cache keeps them alive, so an id is never reused), else by
        value (hashes the tuple) for the ones not seen before."""
        by_id = cache.by_id
        uids = list(map(by_id.get, map(id, instrs)))
        if None not in uids:
            return np.array(uids, dtype=np.int64)
        try:
            get, alive = cache.__getitem__, cache.alive
            if 4 * uids.count(None) > len(uids):
                # Mostly objects not seen before (a recorder that builds every instruction
                # afresh): look all of them up by value in one C-level pass.
                uids = list(map(get, instrs))
                by_id.update(zip(map(id, instrs), uids))
                alive.extend(instrs)      # keeps every id(ins) from being reused
                return np.array(uids, dtype=np.int64)
            for j, u in enumerate(uids):
                if u is None:
                    ins = instrs[j]
                    u = uids[j] = by_id[id(ins)] = get(ins)
                    alive.append(ins)     # keeps id(ins) from being reused
            return np.array(uids, dtype=np.int64)
        except ProgramError as e:
            bad = next(i for i, ins in enumerate(instrs)
                       if not isinstance(ins, Instr) or ins not in cache)
            raise ProgramError(f"program {index} instr {bad} {e}") from None

    def compile(self, program: CoreProgram, index: int = 0) -> Compiled:
        """Deal a program's instructions to its pipes and total its static costs.

        Example::

            >>> from npujit.target import TINY
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
        # Work on the program's distinct instructions (local numbers), not on every one
        # the cache has seen: a launch of many programs that differ in their GM regions
        # would otherwise cost quadratic time.
        distinct, local, counts = np.unique(self._uids(cache, program.instrs, index),
                                            return_inverse=True, return_counts=True)
        infos = [cache.infos[u] for u in distinct.tolist()]
        pipe_of = np.array([info.pipe for info in infos], dtype=np.int64)
        entries = [info.entry for info in infos]
        uids = local.reshape(-1)
        ids = np.array([cache.entry_ids[u] for u in distinct.tolist()], dtype=np.int64)[uids]
        per_instr_pipe = pipe_of[uids]
        c = Compiled()
        c.pipes, c.queues, c.positions, c.entry_ids = [], [], [], []
        c.pipe_work = {}
        scalar_waits = np.empty(0, dtype=np.int64)
        if "SCALAR" in pipes:
            s = pipes.index("SCALAR")
            is_wait = np.array([info.entry[0] == WAIT and info.pipe == s for info in infos],
                               dtype=bool)
            scalar_waits = np.flatnonzero(is_wait[uids])
        c.gates = len(scalar_waits)
        for p, name in enumerate(pipes):
            pos = np.flatnonzero((per_instr_pipe == p) | (per_instr_pipe < 0))
            if not len(pos):
                continue
            c.pipes.append(name)
            q = list(map(entries.__getitem__, uids[pos].tolist()))
            qids = ids[pos]
            if c.gates:
                q, pos, qids = _gated(q, pos, qids, scalar_waits, name == "SCALAR",
                                      self.entry_id)
            c.queues.append(q)
            c.positions.append(pos)
            c.entry_ids.append(qids)
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
        for info, n in zip(infos, counts.tolist()):
            pidx, entry, path, nbytes, moved, direction, fl, el, region = info
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
