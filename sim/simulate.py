"""``simulate(launch, spec)``: the one entry point of the timing simulator.

Example::

    >>> from npujit.sim import simulate, ASCEND_910B_LIKE
    >>> from npujit.sim.patterns import vector_pipeline
    >>> r = simulate(vector_pipeline(64, 32768, name="add"), ASCEND_910B_LIKE)
    >>> r.cycles >= r.bound.cycles, r.bound.kind
    (True, 'port')
"""
from __future__ import annotations

import contextlib
import gc

import numpy as np

from .debug import DebugOptions, RaceError, find_races, flag_issues, landing_points
from .engine import Engine
from .isa import CoreProgram, Launch
from .report import SimReport
from .roofline import ProgramWork, bound_from_work
from npujit import knobs
from npujit.target import ASCEND_910B_LIKE, NPUSpec


def simulate(launch, spec: NPUSpec = ASCEND_910B_LIKE, *, trace: bool = True,
             debug: DebugOptions | None = None, one_bit_flags: bool | None = None,
             start_jitter: int = 0, seed: int = 0, engine: str | None = None) -> SimReport:
    """Simulate a :class:`~npujit.sim.isa.Launch` (or one CoreProgram, or a list of them)
    on ``spec`` and return a :class:`~npujit.sim.report.SimReport`.

    ``trace=False`` skips recording the HBM bandwidth samples (the Chrome trace then has
    no counter track).  ``debug`` turns on the checks of :mod:`npujit.sim.debug`.

    ``one_bit_flags`` (default: ``npujit.knobs.one_bit_flags()``, on): flags are 1 bit as
    on hardware, so a ``set_flag`` on a flag still set raises
    :class:`~npujit.sim.engine.FlagStillSetError`; ``False`` counts sets instead (the
    k-th wait takes the k-th set), for synthetic streams written that way.
    ``start_jitter`` (cycles, default 0): each physical core takes its first program at a
    cycle drawn uniformly from ``0..start_jitter`` (``random.Random(seed)``, so one seed
    gives one timing), so the cores do not move in lockstep.
    ``engine`` (default: ``npujit.knobs.sim_engine()``, ``"auto"``): ``"python"`` runs
    :class:`~npujit.sim.engine.Engine`; ``"compiled"`` the same model compiled with numba
    (:mod:`npujit.sim.fast_engine`, same cycles, busy cycles and bytes); ``"auto"`` the
    compiled one for launches of at least ``knobs.sim_compiled_min()`` instructions once its
    machine code is compiled or cached (``use_compiled``: a cold one is compiled only after
    ``knobs.sim_compiled_cold_min()`` instructions on the Python engine).  An
    error the compiled engine meets (a lost 1-bit set, a deadlock) is raised by running
    the launch again on the Python engine, so the message is the same.

    Raises :class:`~npujit.sim.engine.DeadlockError` when a wait can never be satisfied,
    :class:`~npujit.sim.engine.ProgramError` when an instruction does not fit the spec.

    Example::

        >>> from npujit.sim import TINY, CoreProgram, copy
        >>> simulate([CoreProgram("AIV", [copy("GM_to_UB", 6400)])] * 2, TINY).cycles
        210
    """
    if isinstance(launch, CoreProgram):
        launch = Launch([launch])
    elif not isinstance(launch, Launch):
        launch = Launch(list(launch))
    debug = debug or DebugOptions()
    races = []
    landings = {}
    distinct = {}       # id(program) -> (its first index, it): what the checks look at
    if debug.detect_races or debug.uninitialized == "nan" or \
            debug.dma_execution_mode == "on_wait":
        for i, prog in enumerate(launch.programs):
            distinct.setdefault(id(prog), (i, prog))
    if debug.detect_races or debug.uninitialized == "nan":
        for i, prog in distinct.values():
            found = find_races(prog, uninitialized=debug.uninitialized == "nan", program_index=i)
            races += found if debug.detect_races else [r for r in found if r.kind == "UNINIT"]
        if races and debug.raise_on_race:
            raise RaceError(races)
    if debug.dma_execution_mode == "on_wait":
        landings = {i: landing_points(prog) for i, prog in distinct.values()}
    if one_bit_flags is None:
        one_bit_flags = knobs.one_bit_flags()
    # The engine and the report make millions of short-lived tuples that hold no cycles;
    # the cyclic collector's passes over them cost 5-10 % of the run (more when the
    # process holds a large heap) and free nothing.
    with no_cyclic_gc():
        timeline = None
        if use_compiled(launch, engine):
            from .fastpath import run_fast     # imports numba's cached machine code
            timeline = run_fast(launch, spec, record_hbm=trace, one_bit_flags=one_bit_flags,
                                start_jitter=start_jitter, seed=seed)
        if timeline is None:    # the Python engine (or the compiled one met an error)
            timeline = Engine(launch, spec, record_hbm=trace, one_bit_flags=one_bit_flags,
                              start_jitter=start_jitter, seed=seed).run()
        compiled, number = timeline.distinct()
        works = [ProgramWork(c.kind, c.pipe_work, c.hbm_read + c.hbm_write, c.gm_latency_min,
                             c.cube_flops, c.hbm_floor, c.read_regions, c.written_regions)
                 for c in compiled]
        bound = bound_from_work(works, spec,
                                np.bincount(number, minlength=len(works)).tolist())
        issues = flag_issues(timeline) if debug.check_flags else []
        return SimReport.from_timeline(timeline, bound, races=races, flag_issues=issues,
                                       landings=landings)


@contextlib.contextmanager
def no_cyclic_gc():
    """Turn the cyclic garbage collector off for the block, then back on if it was:
    reference counting still frees the acyclic garbage at once, and any cycles made in
    the block are collected after it.

    Example::

        >>> with no_cyclic_gc():
        ...     gc.isenabled()
        False
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()

ENGINES = ("auto", "compiled", "python")


def use_compiled(launch: Launch, engine: str | None = None) -> bool:
    """Whether :func:`simulate` runs ``launch`` on the compiled engine: ``engine`` (default
    ``knobs.sim_engine()``) is ``"compiled"``, or ``"auto"`` and the launch has at least
    ``knobs.sim_compiled_min()`` instructions (below that the compiled engine's start-up
    costs more than it saves, and a fresh numba cache would compile it).

    Example::

        >>> from npujit.sim import CoreProgram, vec
        >>> use_compiled(Launch([CoreProgram("AIV", [vec("add", 128)])]), "auto")
        False
    """
    engine = engine or knobs.sim_engine()
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r} (NPUJIT_SIM_ENGINE "
                         "sets the default)")
    if engine == "auto":
        return launch.instr_count >= knobs.sim_compiled_min() and _worth_compiling(launch)
    return engine == "compiled"


# Instructions this process ran on the Python engine because the compiled one was cold.
_cold_instrs = 0


def _worth_compiling(launch: Launch) -> bool:
    """Whether the ``auto`` engine takes the compiled engine for ``launch`` (already past
    ``sim_compiled_min``): yes when its machine code is at hand (compiled in this process
    or in numba's cache, ``fast_engine.warm``); else only once this process has run
    ``knobs.sim_compiled_cold_min()`` instructions on the Python engine for want of it.
    Compiling it costs 15-25 s on the 2-core machine, as long as the Python engine takes
    for ~10 M instructions (0.5 M/s against the compiled 1.7 M/s, benchmarks/bench_sim.py),
    so a first run does not pay that for a few small launches (the demo's largest, 36 k
    instructions, takes 25 ms on the Python engine), and a long one pays it at most once,
    after a Python-engine time about equal to it (the ski-rental rule)."""
    global _cold_instrs
    from . import fast_engine
    if fast_engine.warm():
        return True
    _cold_instrs += launch.instr_count
    return _cold_instrs > knobs.sim_compiled_cold_min()
