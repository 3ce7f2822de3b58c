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

from itertools import repeat
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

    __slots__ = ("program", "kind", "pipes", "_queues", "_entries", "positions", "entry_ids",
                 "pipe_work", "bytes_by_path", "hbm_read", "hbm_write", "cube_flops",
                 "vector_elems", "gm_latency_min", "instr_count", "read_regions",
                 "written_regions", "hbm_floor", "gates")

    @property
    def queues(self) -> list:
        """Per pipe, its queue entries (tuples, what the Python engine runs): built from
        ``entry_ids`` when first asked for (the compiled engine reads only the ids)."""
        if self._queues is None:
            entries = self._entries
            self._queues = [[entries[e] for e in ids.tolist()] for ids in self.entry_ids]
        return self._queues


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


# Columns of a uid's numbers in _KindCache: its pipe (-1: barrier("ALL")), cost (entry[2]),
# issue latency of a GM copy, direction (+1 reads GM, -1 writes GM), moved and asked
# bytes, path number (-1: not a copy), FLOPs, elements, whether it is a scalar wait,
# region (0 none, 1 a key, 2 ONCE), and its row in the compiler's entries.
COL = dict.fromkeys(("PIPE", "COST", "ISSUE", "DIR", "MOVED", "NBYTES", "PATH", "FLOPS",
                     "ELEMS", "SWAIT", "REGION", "ROW"))
(C_PIPE, C_COST, C_ISSUE, C_DIR, C_MOVED, C_NBYTES, C_PATH, C_FLOPS, C_ELEMS, C_SWAIT,
 C_REGION, C_ROW) = range(len(COL))


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
        # id(shared stream) -> (the stream, kept alive; its uids; its placed positions)
        self.bases: dict[int, tuple] = {}
        self.entry_ids: list[int] = []    # uid -> row of its entry in compiler.entries
        # uid -> its numbers (columns ``COL``), for totals over a program's uids in numpy
        self._cols = np.zeros((64, len(COL)), dtype=np.int64)
        self.paths: dict[str, int] = {}   # copy path -> its number in the PATH column
        scalar = self.pipes.index("SCALAR") if "SCALAR" in self.pipes else -2
        self._scalar = scalar

    def __missing__(self, ins):
        if not isinstance(ins, Instr):
            raise ProgramError(f"{ins!r} is not an Instr")
        uid = len(self.infos)
        info = self.compiler._info(ins, self.kind, self.pipes)
        self.infos.append(info)
        row = self.compiler.entry_id(info.entry)
        self.entry_ids.append(row)
        if uid == len(self._cols):
            self._cols = np.concatenate([self._cols, np.zeros_like(self._cols)])
        entry, region = info.entry, info.region
        self._cols[uid] = (
            info.pipe, entry[2], entry[1] if info.direction else 0, info.direction,
            info.moved, info.nbytes,
            self.paths.setdefault(info.path, len(self.paths)) if info.path else -1,
            info.flops, info.elems, entry[0] == WAIT and info.pipe == self._scalar,
            0 if region is None else (2 if region == ONCE else 1), row)
        self[ins] = uid
        self.by_id[id(ins)] = uid
        return uid

    def columns(self, uids: np.ndarray) -> np.ndarray:
        """The ``COL`` numbers of ``uids``, one row each."""
        return self._cols[uids]

    def column(self, uids: np.ndarray, col: int) -> np.ndarray:
        """One ``COL`` number (``col``, e.g. ``C_PIPE``) of each of ``uids``."""
        return self._cols[uids, col]


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
        self._copy_infos: dict[tuple, _InstrInfo] = {}   # a copy without region -> its info

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
        if ins.kind == "copy" and ins.gm_region is not None:
            # Copies that differ only in their region cost alike: validate and cost the
            # copy once, then give each region its own L2 key.
            key = (kind, ins.pipe, ins.path, ins.nbytes, ins.burst_bytes)
            base = self._copy_infos.get(key)
            if base is None:
                try:
                    base = self._info(ins._replace(gm_region=None), kind, pipes)
                except ProgramError:
                    base = None       # validated below, with this copy in the message
                else:
                    self._copy_infos[key] = base
            if base is not None:
                if not base.direction:
                    return base
                self.has_regions = True
                return base._replace(entry=base.entry[:5] + ((base.direction < 0,
                                                                ins.gm_region),),
                                     region=ins.gm_region)
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

    def _program_uids(self, cache: _KindCache, program: CoreProgram, index: int):
        """:meth:`_uids` of a program's instructions; of a program placed from a shared
        stream (``CoreProgram.placed_from``), the stream's uids looked up once and only
        the placed positions per program."""
        if program.placed_from is None or \
                len(program.placed_from[0]) != len(program.instrs):   # not as placed
            return self._uids(cache, program.instrs, index)
        base, positions = program.placed_from
        got = cache.bases.get(id(base))
        if got is None:
            got = cache.bases[id(base)] = (base, self._uids(cache, base, index),
                                           np.array(positions, dtype=np.int64))
        _, uids, at = got
        uids = uids.copy()
        if len(positions):
            try:
                uids[at] = self._uids(cache, [program.instrs[p] for p in positions], index)
            except ProgramError:     # raised again naming the instruction's position
                return self._uids(cache, program.instrs, index)
        return uids

    def _uids(self, cache: _KindCache, instrs: list, index: int) -> np.ndarray:
        """The uid of every instruction: by object id when the program reuses known Instr
        objects (cheap; the cache keeps them alive, so an id is never reused), else by
        value (hashes the tuple) for the ones not seen before."""
        by_id = cache.by_id
        known = np.fromiter(map(by_id.get, map(id, instrs), repeat(-1)), np.int64, len(instrs))
        if not len(known) or known.min() >= 0:
            return known
        uids = [u if u >= 0 else None for u in known.tolist()]
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
        return self.compile_all([program], [index])[0]

    def compile_all(self, programs: list, indices: list | None = None) -> list[Compiled]:
        """:meth:`compile` every program of ``programs`` (``indices``: their numbers in the
        launch, for errors), in a few passes of numpy over all their instructions at once
        rather than a pass per program.

        Example::

            >>> from npujit.target import TINY
            >>> from npujit.sim.isa import CoreProgram, vec, scalar
            >>> a, b = Compiler(TINY).compile_all([CoreProgram("AIV", [vec("add", 128)]),
            ...                                    CoreProgram("AIV", [scalar(5)] * 2)])
            >>> a.pipe_work, b.pipe_work
            ({'VECTOR': 11}, {'SCALAR': 10})
        """
        indices = range(len(programs)) if indices is None else indices
        out: list = [None] * len(programs)
        by_kind: dict[str, list] = {}
        for j, prog in enumerate(programs):
            by_kind.setdefault(prog.core, []).append(j)
        for kind, js in by_kind.items():
            cache = self._caches.get(kind)
            if cache is None:
                cache = self._caches[kind] = _KindCache(self, kind)
            uids = [self._program_uids(cache, programs[j], indices[j]) for j in js]
            for j, c in zip(js, self._compile_kind(cache, [programs[j] for j in js], uids)):
                out[j] = c
        return out

    def _compile_kind(self, cache: _KindCache, programs: list, uid_lists: list) -> list:
        """The :class:`Compiled` of programs of one core kind from their instructions' uids."""
        kind, pipes, spec = cache.kind, cache.pipes, self.spec
        n, npipes = len(programs), len(pipes)
        lengths = np.array([len(u) for u in uid_lists], dtype=np.int64)
        U = np.concatenate(uid_lists) if n else np.empty(0, dtype=np.int64)
        P = np.repeat(np.arange(n, dtype=np.int64), lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        local = np.arange(len(U), dtype=np.int64) - starts[P]
        pipe = cache.column(U, C_PIPE)
        # Queues: every instruction to its pipe, a barrier("ALL") to every pipe; ordered by
        # (program, pipe, position).
        full = np.flatnonzero(pipe < 0)
        qi = np.flatnonzero(pipe >= 0)
        qpipe = pipe[qi]
        if len(full):
            qi = np.concatenate([qi, np.repeat(full, npipes)])
            qpipe = np.concatenate([qpipe, np.tile(np.arange(npipes, dtype=np.int64),
                                                   len(full))])
        slot = P[qi] * npipes + qpipe
        # qi is in program order but for the full barriers' copies appended at its end
        order = (np.lexsort((local[qi], slot)) if len(full) else
                 np.argsort(slot.astype(np.uint16) if n * npipes <= 1 << 16 else slot,
                            kind="stable"))
        qi, slot = qi[order], slot[order]
        qpos, qids = local[qi], cache.column(U[qi], C_ROW)
        bounds = np.searchsorted(slot, np.arange(n * npipes + 1, dtype=np.int64)).tolist()
        swait = cache.column(U, C_SWAIT).astype(bool)
        any_waits = bool(swait.any())
        # Totals per program over its distinct instructions times their counts.
        nu = len(cache.infos)
        if n * nu <= 4 * len(U) + (1 << 20):      # a count per (program, uid): no sort
            counts = np.bincount(P * nu + U, minlength=n * nu)
            key = np.flatnonzero(counts)
            counts = counts[key]
        else:
            key, counts = np.unique(P * nu + U, return_counts=True)
        prog_d, uid_d = key // nu, key % nu
        cols = cache.columns(uid_d)
        pipe_d, direction, region = cols[:, C_PIPE], cols[:, C_DIR], cols[:, C_REGION]
        cost_n = counts * cols[:, C_COST]
        moved_n = counts * cols[:, C_MOVED]

        def per_program(mask, weights) -> list:
            """Per program, the int sum of ``weights`` over its distinct rows in ``mask``."""
            return np.bincount(prog_d[mask], weights[mask], n).astype(np.int64).tolist()

        def per_pipe(mask, weights) -> np.ndarray:
            return np.bincount(prog_d[mask] * npipes + pipe_d[mask], weights[mask],
                               n * npipes).astype(np.int64).reshape(n, npipes)

        on, gm = pipe_d >= 0, direction != 0
        work = per_pipe(on, cost_n) + np.array(per_program(~on, cost_n))[:, None]
        gm_work = per_pipe(gm, cost_n)
        l2 = spec.l2_bytes > 0
        reads, writes = direction > 0, direction < 0
        keyed_reads = reads & (region == 1) if l2 else np.zeros_like(reads)
        keyed_writes = writes & (region == 1) if l2 else np.zeros_like(writes)
        hbm_read, hbm_write = per_program(reads, moved_n), per_program(writes, moved_n)
        floor = per_program((reads & ~keyed_reads) | (writes & ~keyed_writes), moved_n)
        flops = per_program(on | ~on, counts * cols[:, C_FLOPS])
        elems = per_program(on | ~on, counts * cols[:, C_ELEMS])
        big = np.iinfo(np.int64).max
        lat = np.full(n, big, dtype=np.int64)
        np.minimum.at(lat, prog_d[gm], cols[gm, C_ISSUE])
        cached = keyed_reads | (writes & (region > 0)) if l2 else keyed_reads
        cached_pipes = np.zeros(n * npipes, dtype=bool)
        cached_pipes[prog_d[cached] * npipes + pipe_d[cached]] = True
        cached_pipes = cached_pipes.reshape(n, npipes)
        landing_hbm = spec.hbm_latency_cycles
        landing_l2 = min(spec.hbm_latency_cycles, spec.l2_latency_cycles)
        pipe_work = np.where(gm_work > 0, np.maximum(
            work, gm_work + np.where(cached_pipes, landing_l2, landing_hbm)), work).tolist()
        # GM regions for the L2 (read: the least bytes any copy of a region moves).
        read_regions = [{} for _ in range(n)]
        written_regions = [{} for _ in range(n)]
        if l2:
            infos = cache.infos
            rows = np.flatnonzero(keyed_reads)
            rows = rows[np.lexsort((-cols[rows, C_MOVED], prog_d[rows]))]  # last = least
            rp = prog_d[rows]
            cut = np.searchsorted(rp, np.arange(n + 1)).tolist()
            region_of = [info.region for info in infos]
            rr = list(map(region_of.__getitem__, uid_d[rows].tolist()))
            rm = cols[rows, C_MOVED].tolist()
            for i in range(n):
                if cut[i] < cut[i + 1]:
                    read_regions[i] = dict(zip(rr[cut[i]:cut[i + 1]], rm[cut[i]:cut[i + 1]]))
            # written: the least bytes any write of a region moves (the L2 is write-back:
            # HBM sees a written region at least once, sim/roofline.py)
            rows = np.flatnonzero(keyed_writes)
            for i, u, m in zip(prog_d[rows].tolist(), uid_d[rows].tolist(),
                               cols[rows, C_MOVED].tolist()):
                w = written_regions[i]
                r = infos[u].region
                w[r] = min(w.get(r, m), m)
        # Bytes the copies asked for, per path (a path a copy names counts even at 0 bytes).
        names = list(cache.paths)
        copies = cols[:, C_PATH] >= 0
        nb = len(names)
        path_rows = prog_d[copies] * nb + cols[copies, C_PATH]
        asked = np.bincount(path_rows, (counts * cols[:, C_NBYTES])[copies],
                            n * nb).astype(np.int64).reshape(n, nb).tolist()
        named = np.zeros(n * nb, dtype=bool)
        named[path_rows] = True
        named = named.reshape(n, nb).tolist()
        out = []
        entries = self.entries
        for i, program in enumerate(programs):
            c = Compiled()
            c.program, c.kind = program, kind
            c._entries, c._queues = entries, None
            waits = (np.flatnonzero(swait[starts[i]:starts[i] + lengths[i]]) if any_waits
                     else ())
            c.gates = len(waits)
            names_i, positions, entry_ids = [], [], []
            for p in range(npipes):
                a, b = bounds[i * npipes + p], bounds[i * npipes + p + 1]
                if a == b:
                    continue
                pos, ids = qpos[a:b], qids[a:b]
                if c.gates:
                    q = list(map(entries.__getitem__, ids.tolist()))
                    _, pos, ids = _gated(q, pos, ids, waits, pipes[p] == "SCALAR",
                                         self.entry_id)
                names_i.append(pipes[p])
                positions.append(pos)
                entry_ids.append(ids)
            c.pipes, c.positions, c.entry_ids = tuple(names_i), positions, entry_ids
            pw = pipe_work[i]
            c.pipe_work = {pipes[p]: pw[p] for p in range(npipes) if pipes[p] in c.pipes}
            c.read_regions = read_regions[i]
            c.written_regions = written_regions[i]
            c.hbm_floor = floor[i]
            c.bytes_by_path = {names[k]: asked[i][k] for k in range(nb) if named[i][k]}
            c.hbm_read, c.hbm_write = hbm_read[i], hbm_write[i]
            c.cube_flops, c.vector_elems = flops[i], elems[i]
            c.gm_latency_min = int(lat[i]) if lat[i] != big else INF
            c.instr_count = int(lengths[i])
            out.append(c)
        return out


def distinct_programs(compiled: list) -> tuple:
    """The distinct :class:`Compiled` programs of a launch (first-run order) and, per
    program index, the number of its distinct program.

    Example::

        >>> a, b = object(), object()
        >>> distinct_programs([a, b, a])[1].tolist()
        [0, 1, 0]
    """
    ids = np.fromiter(map(id, compiled), np.int64, len(compiled))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first)                   # distinct programs as they first run
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return [compiled[i] for i in first[order].tolist()], rank[inverse.ravel()]
