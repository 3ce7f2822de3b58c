"""The analytic lower bound on a launch's cycles: the test oracle (sim >= bound, always) and
the autotuner's pruner.

Every term is a time no schedule can beat (docs/npu-facts.md §S1):

* per pipe ``P``: a program's ``P`` instructions run one after another, each at least its
  standalone cost, so ``T >= max over programs of work_P``; and a core runs its programs
  one after another, so ``T >= sum over programs of work_P / cores of that kind``.
  ``cube`` and ``vector`` are these terms for CUBE and VECTOR, ``mte1`` ... ``fixpipe`` the
  copy ports, ``scalar`` the Scalar pipe.
* ``cores``: a program lasts at least its busiest pipe, so
  ``T >= sum over programs of max_P work_P / cores of that kind``.
* ``hbm``: every GM byte passes the shared HBM, no copy enters it before its issue latency
  and the last one lands ``hbm_latency`` after it, so
  ``T >= min issue latency + GM bytes / HBM bytes per cycle + hbm_latency``.
  With an L2 (``spec.l2_bytes > 0``) only the bytes that must come from HBM count: every
  write and read without a ``gm_region`` (or ``ONCE``), each distinct written region once
  (the L2 is write-back: a dirty region crosses HBM once, when evicted or drained; a
  hand-off workspace slot, the AI core's ring, may never), and each distinct read region
  not written once (its first read misses).
* a pipe with GM copies ends no earlier than its last copy lands: its work is at least the
  copies' occupancy (issue + bytes / rate) plus one ``hbm_latency`` (other work on the pipe
  may overlap the landing; ``min(hbm_latency, l2_latency)`` on a pipe whose copies the L2
  may serve: keyed reads, and keyed writes, which land in the write-back L2).

The ``kind`` of the bound names the winning term coarsely: ``"cube"``, ``"vector"``,
``"hbm"``, ``"port"`` (an MTE or FixPipe port), ``"scalar"``.

Example::

    >>> from npujit.target import TINY
    >>> from npujit.sim.isa import CoreProgram, Launch, mmad
    >>> b = roofline_bound(Launch([CoreProgram("AIC", [mmad(256, 256, 256)])] * 4), TINY)
    >>> b.cycles, b.kind     # 4 programs of 4106 cycles on 2 AIC cores
    (8212.0, 'cube')
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .cost import copy_occupancy, copy_terms, instr_cycles
from .isa import Launch
from .l2 import ONCE
from .split import is_workspace
from npujit.target import NPUSpec

# Term names per pipe, as Ascend's profiler names the pipes (aic_cube_ratio, aic_fixpipe_ratio).
PIPE_TERM = {"CUBE": "cube", "VECTOR": "vector", "SCALAR": "scalar", "MTE1": "mte1",
             "MTE2": "mte2", "MTE3": "mte3", "FIXP": "fixpipe"}
# Terms in the order ties are broken (and printed).
TERM_ORDER = ("hbm", "cube", "vector", "mte2", "mte3", "mte1", "fixpipe", "scalar", "cores")
# Coarse kind of each term.
TERM_KIND = {"cube": "cube", "vector": "vector", "scalar": "scalar", "mte1": "port",
             "mte2": "port", "mte3": "port", "fixpipe": "port", "hbm": "hbm"}


@dataclass(frozen=True)
class ProgramWork:
    """What the bound needs to know about one program: its core kind, the standalone cost
    sum of each pipe, its GM bytes and the smallest issue latency of its GM copies."""

    kind: str
    pipe_work: dict
    gm_bytes: int = 0
    gm_latency_min: float = float("inf")
    cube_flops: int = 0
    # With an L2: bytes that go to HBM whatever the cache does (writes, reads without a
    # region), and the regions read (key -> fewest bytes a read of it moved), each of which
    # misses at least once (with its first read, of at least that many bytes).
    hbm_floor: int | None = None
    read_regions: dict = field(default_factory=dict)
    written_regions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RooflineBound:
    """``cycles`` no schedule can beat, the coarse ``kind`` of the winning term, and all terms.

    Example::

        >>> RooflineBound(100.0, "hbm", {"hbm": 100.0, "vector": 40.0}).seconds(1e9)
        1e-07
    """

    cycles: float
    kind: str
    terms: dict = field(default_factory=dict)

    @property
    def term(self) -> str:
        """The fine name of the winning term (``"mte2"``, ``"hbm"`` ...; ties as ``kind``)."""
        fine = [t for t in self.terms if t != "cores"] or list(self.terms)
        if not fine:
            return "none"
        order = {t: i for i, t in enumerate(TERM_ORDER)}
        return max(fine, key=lambda t: (self.terms[t], -order.get(t, len(order))))

    def seconds(self, clock_hz: float) -> float:
        """The bound in seconds at ``clock_hz``."""
        return self.cycles / clock_hz


def program_work(program, spec: NPUSpec) -> ProgramWork:
    """Total the standalone costs of one program, instruction by instruction.

    Example::

        >>> from npujit.target import TINY
        >>> from npujit.sim.isa import CoreProgram, copy, vec
        >>> prog = CoreProgram("AIV", [copy("GM_to_UB", 640), vec("add", 320)])
        >>> program_work(prog, TINY).pipe_work
        {'MTE2': 120, 'VECTOR': 13}
    """
    pipes = spec.pipes[spec.core_kind_for(program.core)]
    work: dict[str, int] = {}
    dma_work: dict[str, int] = {}
    gm = floor = 0
    regions: dict = {}
    written: dict = {}
    cached_pipes = set()
    lat = float("inf")
    flops = 0
    for ins in program.instrs:
        cost = instr_cycles(ins, spec)
        if ins.kind == "copy":
            burst = ins.burst_bytes
            issue, _, moved, _, touches_gm = copy_terms(ins.path, ins.nbytes, spec, burst)
            if touches_gm:
                cost = copy_occupancy(ins.path, ins.nbytes, spec, burst)
                dma_work[ins.pipe] = dma_work.get(ins.pipe, 0) + cost
                gm += moved
                lat = min(lat, issue)
                keyed = ins.gm_region is not None and ins.gm_region != ONCE
                if spec.l2_bytes and keyed and ins.path.startswith("GM_"):
                    regions[ins.gm_region] = min(regions.get(ins.gm_region, moved), moved)
                    cached_pipes.add(ins.pipe)
                elif spec.l2_bytes and keyed:
                    # a write lands in the L2, and HBM sees each written region at least
                    # once (a hand-off slot maybe never: it is the core's ring)
                    written[ins.gm_region] = min(written.get(ins.gm_region, moved), moved)
                    cached_pipes.add(ins.pipe)
                else:
                    floor += moved
        elif ins.kind == "mmad":
            flops += ins.flops
        targets = pipes if ins.pipe == "ALL" else (ins.pipe,)   # a full barrier holds every pipe
        for p in targets:
            work[p] = work.get(p, 0) + cost
    for p, occupancy in dma_work.items():
        landing = spec.hbm_latency_cycles
        if p in cached_pipes:
            landing = min(landing, spec.l2_latency_cycles)
        work[p] = max(work[p], occupancy + landing)
    return ProgramWork(program.core, work, gm, lat, flops, floor, regions, written)


def bound_from_work(works: list[ProgramWork], spec: NPUSpec,
                    counts: list[int] | None = None) -> RooflineBound:
    """Combine per-program work into the bound (one entry per program of the launch, or
    with ``counts`` one per distinct work and how many programs of the launch do it).

    Example::

        >>> from npujit.target import TINY
        >>> w = ProgramWork("AIV", {"VECTOR": 100, "MTE2": 60})
        >>> bound_from_work([w, w, w], TINY).terms["vector"]   # 300 cycles over 2 AIV cores
        150.0
    """
    cores = spec.core_counts
    terms: dict[str, float] = {}
    kind_sum: dict[tuple, float] = {}
    core_sum: dict[str, float] = {}
    gm_bytes = 0
    lat_min = float("inf")
    l2 = spec.l2_bytes > 0
    hbm_floor = 0
    regions: dict = {}
    written: dict = {}
    # Each distinct work once, times how often the launch runs it (the sums are of whole
    # cycles and bytes, so the order of adding them does not change them).
    if counts is None:
        repeats: dict[int, list] = {}
        for w in works:
            r = repeats.get(id(w))
            if r is None:
                repeats[id(w)] = [w, 1]
            else:
                r[1] += 1
        works, counts = [w for w, _ in repeats.values()], [n for _, n in repeats.values()]
    for w, n in zip(works, counts):
        kp = spec.core_kind_for(w.kind)
        core_sum[kp] = core_sum.get(kp, 0.0) + n * max(w.pipe_work.values(), default=0)
        for p, c in w.pipe_work.items():
            name = PIPE_TERM[p]
            terms[name] = max(terms.get(name, 0.0), float(c))
            kind_sum[(kp, name)] = kind_sum.get((kp, name), 0.0) + n * c
        gm_bytes += n * w.gm_bytes
        lat_min = min(lat_min, w.gm_latency_min)
        if l2:
            hbm_floor += n * (w.gm_bytes if w.hbm_floor is None else w.hbm_floor)
            for r, b in w.read_regions.items():     # the least bytes any copy moves
                old = regions.get(r)
                if old is None or b < old:
                    regions[r] = b
            for r, b in w.written_regions.items():
                old = written.get(r)
                if old is None or b < old:
                    written[r] = b
    for (kp, name), total in kind_sum.items():
        terms[name] = max(terms[name], total / cores[kp])
    if core_sum:
        terms["cores"] = max(total / cores[kp] for kp, total in core_sum.items())
    if l2:
        gm_bytes = (hbm_floor + sum(b for r, b in regions.items() if r not in written) +
                    sum(b for r, b in written.items() if not is_workspace(r)))
    if gm_bytes:
        terms["hbm"] = lat_min + gm_bytes / spec.hbm_bytes_per_cycle + spec.hbm_latency_cycles
    if not terms:
        return RooflineBound(0.0, "none", {})
    terms = {t: terms[t] for t in TERM_ORDER if t in terms}
    best = max(terms.values())
    # "cores" is never below a pipe term; when it wins, name the busiest pipe's kind.  Ties
    # go to the earlier term of TERM_ORDER, so the answer never depends on dict order.
    fine = [t for t in terms if t != "cores"]
    winner = max(fine, key=lambda t: (terms[t], -TERM_ORDER.index(t))) if fine else "cores"
    return RooflineBound(best, TERM_KIND.get(winner, winner), terms)


def roofline_bound(launch: Launch, spec: NPUSpec) -> RooflineBound:
    """The analytic lower bound on ``launch``'s cycles on ``spec``.

    Example::

        >>> from npujit.target import TINY
        >>> from npujit.sim.isa import CoreProgram, Launch, copy
        >>> spec = TINY.replace(aiv_cores=8)
        >>> b = roofline_bound(Launch([CoreProgram("AIV", [copy("GM_to_UB", 25600)])] * 8), spec)
        >>> b.kind, b.cycles   # 8 x 25600 B at 256 B/cycle + 10 issue + 100 landing
        ('hbm', 910.0)
    """
    cache: dict[int, ProgramWork] = {}
    works = []
    for prog in launch.programs:
        w = cache.get(id(prog))
        if w is None:
            w = cache[id(prog)] = program_work(prog, spec)
        works.append(w)
    return bound_from_work(works, spec)
