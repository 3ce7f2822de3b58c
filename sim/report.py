"""``SimReport``: what a simulated launch did, in the words of Ascend's profiler.

Names follow ``msprof op``'s ``PipeUtilization.csv`` (``aic_cube_ratio``, ``aiv_vec_ratio``,
``aic_mte2_ratio`` ...) and ``Memory.csv`` (``GM_to_UB``, ``UB_to_GM``, ``L0C_to_GM`` ...),
docs/npu-facts.md §A9.  A ratio is a pipe's busy cycles over the block's duration, summed over
all blocks (programs) of that core kind.  A pipe is busy while it executes an instruction
or, for a DMA pipe, while a copy it issued is still landing; waiting on a flag or barrier
with nothing in flight is idle.

Example::

    >>> from npujit.sim import simulate, TINY
    >>> from npujit.sim.patterns import vector_pipeline
    >>> r = simulate(vector_pipeline(16, 4096), TINY)
    >>> r.waves, round(r.ratios["aiv_mte2_ratio"], 2)
    (1, 0.93)
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .roofline import RooflineBound
from npujit.target import NPUSpec, Pipe

# Pipe -> profiler field stem (PipeUtilization.csv: aic_cube_ratio, aiv_vec_ratio,
# aic_fixpipe_ratio ...): npujit/target.py Pipe.profiler.
PIPE_LABEL = {p.value: p.profiler for p in Pipe}


@dataclass(frozen=True)
class ProgramRun:
    """One program (block) of the grid: where and when it ran, and its pipes' busy cycles."""

    program: int
    name: str
    kind: str           # the program's core kind (AIC / AIV)
    core: str           # the physical core that ran it, e.g. "AIV 3"
    start: int
    end: int
    busy: dict

    @property
    def cycles(self) -> int:
        """The block's duration in cycles."""
        return self.end - self.start


class ProgramRuns(Sequence):
    """A report's :class:`ProgramRun` list, in program order, built from the timeline when
    first read: a launch of many short programs spends longer building them than
    simulating them, and most callers read only the totals.  Compares equal to the list.

    Example::

        >>> from npujit.sim import simulate, TINY, CoreProgram, vec
        >>> runs = simulate([CoreProgram("AIV", [vec("add", 128)])] * 2, TINY).programs
        >>> len(runs), [r.core for r in runs]
        (2, ['AIV 0', 'AIV 1'])
    """

    __hash__ = None

    def __init__(self, timeline):
        self._timeline = timeline
        self._runs: list | None = None

    def _list(self) -> list:
        if self._runs is None:
            runs = [ProgramRun(program, comp.program.name, comp.program.core, core, start,
                               end, busy)
                    for program, core, start, end, comp, busy in self._timeline.program_rows()]
            runs.sort(key=lambda r: r.program)
            self._runs = runs
        return self._runs

    def __len__(self) -> int:
        return len(self._timeline.compiled)

    def __getitem__(self, i):
        return self._list()[i]

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other) -> bool:
        if isinstance(other, ProgramRuns):
            other = other._list()
        return self._list() == other

    def __repr__(self) -> str:
        return repr(self._list())


@dataclass
class SimReport:
    """The result of :func:`npujit.sim.simulate`.

    Fields: ``launch`` (name), ``spec``, ``cycles`` (total), ``waves`` (most programs any
    core ran), ``instr_count``, ``programs`` (one :class:`ProgramRun` per program),
    ``core_busy`` (physical core -> pipe -> busy cycles), ``ratios`` (profiler names ->
    [0, 1]), ``bytes_by_path`` (bytes the copies asked for, per path), ``hbm_read_bytes`` /
    ``hbm_write_bytes`` (bytes HBM moved, after alignment; reads the L2 served are not HBM
    bytes), ``hbm_bytes_served`` (what the bandwidth server integrated; equals their sum),
    ``l2_read_bytes`` (GM reads looked up in the L2: those with a ``gm_region``),
    ``l2_hit_bytes`` (of those, served by the L2), ``l2_write_bytes`` (GM writes with a
    region: they land in the L2, and HBM sees each dirty region once, when it is evicted
    or drained: those bytes are in ``hbm_write_bytes``), ``l2_bytes_served`` (what the L2's
    bandwidth server integrated; equals hits + those writes), ``cube_flops``, ``vector_elems``,
    ``bound`` (:class:`~npujit.sim.roofline.RooflineBound`), the debug results
    ``races``, ``flag_issues``, ``landings``, and ``numerics``: False when the launch ran
    timing-only (``kernel.simulate(..., numerics=False)``), so its output arrays hold
    garbage.

    Example::

        >>> from npujit.sim import simulate, TINY, CoreProgram, mmad
        >>> r = simulate(CoreProgram("AIC", [mmad(64, 64, 64)]), TINY)
        >>> r.cycles, r.ratios["aic_cube_ratio"], r.bound.kind
        (74, 1.0, 'cube')
    """

    launch: str
    spec: NPUSpec
    cycles: int
    waves: int
    instr_count: int
    programs: list
    core_busy: dict
    ratios: dict
    bytes_by_path: dict
    hbm_read_bytes: int
    hbm_write_bytes: int
    hbm_bytes_served: float
    cube_flops: int
    vector_elems: int
    bound: RooflineBound
    races: list = field(default_factory=list)
    flag_issues: list = field(default_factory=list)
    landings: dict = field(default_factory=dict)
    l2_read_bytes: int = 0
    l2_hit_bytes: int = 0
    l2_write_bytes: int = 0
    l2_bytes_served: float = 0.0
    numerics: bool = True
    timeline: object = field(default=None, repr=False, compare=False)

    # -- derived numbers --------------------------------------------------------------------
    @property
    def time_s(self) -> float:
        """Simulated time in seconds at the spec's clock."""
        return self.cycles / self.spec.clock_hz

    @property
    def hbm_bytes(self) -> int:
        """Bytes through HBM, both directions."""
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def achieved_flops(self) -> float:
        """Cube FLOP/s over the whole launch."""
        return self.cube_flops / self.time_s if self.cycles else 0.0

    @property
    def achieved_hbm_bandwidth(self) -> float:
        """HBM bytes/s over the whole launch."""
        return self.hbm_bytes / self.time_s if self.cycles else 0.0

    @property
    def l2_hit_rate(self) -> float:
        """Fraction of the L2-looked-up read bytes the L2 served (0.0 when none looked up)."""
        return self.l2_hit_bytes / self.l2_read_bytes if self.l2_read_bytes else 0.0

    @property
    def roofline_fraction(self) -> float:
        """bound / simulated cycles: 1.0 means the launch runs at its roofline."""
        return self.bound.cycles / self.cycles if self.cycles else 1.0

    def utilisation(self, core: str, pipe: str) -> float:
        """Busy fraction of one physical core's pipe over the whole launch.

        Example::

            >>> from npujit.sim import simulate, TINY, CoreProgram, vec
            >>> simulate(CoreProgram("AIV", [vec("add", 128)]), TINY).utilisation("AIV 0", "VECTOR")
            1.0
        """
        busy = self.core_busy.get(core, {}).get(pipe, 0)
        return busy / self.cycles if self.cycles else 0.0

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def from_timeline(cls, timeline, bound: RooflineBound, **debug) -> "SimReport":
        """Summarise an engine :class:`~npujit.sim.engine.Timeline` (``simulate`` does this).

        Example::

            >>> from npujit.sim import TINY, CoreProgram, Launch, vec, roofline_bound
            >>> from npujit.sim.engine import run
            >>> launch = Launch([CoreProgram("AIV", [vec("add", 128)])])
            >>> SimReport.from_timeline(run(launch, TINY), roofline_bound(launch, TINY)).cycles
            11
        """
        spec = timeline.spec
        bytes_by_path: dict[str, int] = {}
        hbm_read = hbm_write = flops = elems = instrs = 0
        core_busy, per_core_programs, kind_time, kind_busy = timeline.busy_totals()
        distinct, number = timeline.distinct()
        for comp, n in zip(distinct, np.bincount(number, minlength=len(distinct)).tolist()):
            # whole bytes and counts: any order adds alike
            for path, b in comp.bytes_by_path.items():
                bytes_by_path[path] = bytes_by_path.get(path, 0) + n * b
            hbm_read += n * comp.hbm_read
            hbm_write += n * comp.hbm_write
            flops += n * comp.cube_flops
            elems += n * comp.vector_elems
            instrs += n * comp.instr_count
        cache = getattr(timeline.hbm, "cache", None)
        l2_read = l2_hit = l2_write = 0
        l2_served = 0.0
        if cache is not None:
            l2_read, l2_hit = cache.hit_bytes + cache.miss_bytes, cache.hit_bytes
            l2_write = cache.write_bytes
            l2_served = timeline.hbm.l2_served
            hbm_read -= l2_hit
            hbm_write += cache.writeback_bytes - l2_write    # write-back: dirty bytes once
        ratios = {}
        for phys, total in kind_time.items():
            for p in spec.pipes[phys]:
                busy = kind_busy[phys].get(p, 0)
                ratios[f"{phys.lower()}_{PIPE_LABEL[p]}_ratio"] = busy / total if total else 0.0
        return cls(
            launch=timeline.launch.name, spec=spec, cycles=timeline.cycles,
            waves=max(per_core_programs.values(), default=0), instr_count=instrs,
            programs=ProgramRuns(timeline), core_busy=core_busy, ratios=ratios,
            bytes_by_path=dict(sorted(bytes_by_path.items())), hbm_read_bytes=hbm_read,
            hbm_write_bytes=hbm_write, hbm_bytes_served=timeline.hbm.served, cube_flops=flops,
            vector_elems=elems, bound=bound, timeline=timeline, l2_read_bytes=l2_read,
            l2_hit_bytes=l2_hit, l2_write_bytes=l2_write, l2_bytes_served=l2_served, **debug)

    # -- output -----------------------------------------------------------------------------
    def __str__(self) -> str:
        spec = self.spec
        kinds: dict[str, int] = {}
        for r in self.programs:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        progs = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        lines = [
            f"SimReport: launch {self.launch!r} on {spec.name}" +
            ("" if self.numerics else " (timing only: the outputs were not computed)"),
            f"  cycles        {self.cycles:,}  ({self.time_s * 1e6:,.2f} us at "
            f"{spec.clock_hz / 1e9:.2f} GHz)",
            f"  programs      {len(self.programs)} ({progs or 'none'}), waves {self.waves}, "
            f"instructions {self.instr_count:,}",
            f"  roofline      {self.bound.cycles:,.0f} cycles, bound by {self.bound.kind} "
            f"({self.bound.term}); the launch runs at {100 * self.roofline_fraction:.1f}% of it",
            f"  cube          {self.achieved_flops / 1e12:,.2f} TFLOP/s "
            f"(peak {spec.peak_cube_flops / 1e12:,.1f})",
            f"  HBM           {self.achieved_hbm_bandwidth / 1e9:,.1f} GB/s "
            f"(peak {spec.hbm_bytes_per_s / 1e9:,.0f}); read {self.hbm_read_bytes:,} B, "
            f"write {self.hbm_write_bytes:,} B",
        ]
        if self.l2_read_bytes:
            lines.append(f"  L2            hit rate {100 * self.l2_hit_rate:.1f}%: "
                         f"{self.l2_hit_bytes:,} of {self.l2_read_bytes:,} B read served by "
                         f"L2 ({spec.l2_bytes // 2**20:,} MB)")
        lines.append("  pipe utilisation (busy / block time)")
        for name, v in sorted(self.ratios.items()):
            bar = "#" * round(20 * v)
            lines.append(f"    {name:<20} {v:6.3f}  {bar}")
        if self.bytes_by_path:
            lines.append("  bytes per path")
            for path, n in self.bytes_by_path.items():
                lines.append(f"    {path:<20} {n:>16,}")
        lines.append("  roofline terms (cycles): " + ", ".join(
            f"{k} {v:,.0f}" for k, v in sorted(self.bound.terms.items(), key=lambda kv: -kv[1])))
        for title, items in (("races", self.races), ("flag issues", self.flag_issues)):
            if items:
                lines.append(f"  {title}: {len(items)}")
                lines.extend(f"    {x}" for x in items[:10])
        return "\n".join(lines)

    def chrome_trace(self, **options) -> dict:
        """The Chrome trace as a dict (see :func:`npujit.sim.trace.chrome_trace`).

        Example::

            >>> from npujit.sim import simulate, TINY, CoreProgram, vec
            >>> t = simulate(CoreProgram("AIV", [vec("add", 128)]), TINY).chrome_trace()
            >>> t["otherData"]["cycles"]
            11
        """
        from .trace import chrome_trace
        return chrome_trace(self.timeline, **options)

    def to_chrome_trace(self, path, **options) -> None:
        """Write the Chrome trace JSON to ``path`` (open it in ui.perfetto.dev).

        Example::

            >>> import tempfile, os, json
            >>> from npujit.sim import simulate, TINY, CoreProgram, vec
            >>> r = simulate(CoreProgram("AIV", [vec("add", 128)]), TINY)
            >>> p = os.path.join(tempfile.mkdtemp(), "t.json")
            >>> r.to_chrome_trace(p)
            >>> "traceEvents" in json.load(open(p))
            True
        """
        from .trace import write_chrome_trace
        write_chrome_trace(self.timeline, path, **options)

    def plot_timeline(self, path, **options) -> None:
        """Save a per-core, per-pipe timeline PNG (needs matplotlib); see
        :func:`npujit.sim.plot.plot_timeline` for the options and an example."""
        from .plot import plot_timeline
        plot_timeline(self, path, **options)

    def plot_roofline(self, path, **options) -> None:
        """Save a roofline PNG with this launch's point on it (needs matplotlib); see
        :func:`npujit.sim.plot.plot_roofline` for an example."""
        from .plot import plot_roofline
        plot_roofline(self, path, **options)
