"""The simulated NPU: chip specs, the event-driven timing engine, roofline bounds, reports.

The scheduler emits one :class:`CoreProgram` per program of the grid (the instructions a
core issues, in order); :func:`simulate` runs the :class:`Launch` on an :class:`NPUSpec`
and returns a :class:`SimReport`.  Calibrated to public figures, not validated on silicon.

Example::

    >>> from npujit.sim import simulate, TINY, CoreProgram, copy, vec, set_flag, wait_flag
    >>> prog = CoreProgram("AIV", [copy("GM_to_UB", 4096), set_flag("MTE2", "VECTOR"),
    ...                            wait_flag("MTE2", "VECTOR"), vec("exp", 2048, "f16")])
    >>> simulate(prog, TINY).cycles
    250
"""
from .cost import copy_cycles, instr_cycles, mmad_cycles, vec_cycles
from .debug import DebugOptions, Race, RaceError, find_races, landing_points
from .engine import DeadlockError, FlagStillSetError, ProgramError
from .isa import (KINDS, VEC_OP_CLASS, CoreProgram, Instr, Launch, barrier, copy, mmad,
                  scalar, set_flag, vec, wait_flag)
from .lower import StreamRecorder
from .report import ProgramRun, SimReport
from .roofline import RooflineBound, roofline_bound
from .simulate import simulate
from npujit.target import (ASCEND_910_LIKE, ASCEND_910B_LIKE, PIPES, PRESETS, SCOPES, TINY, NPUSpec,
                   PathSpec, SpecError)

__all__ = [
    # specs
    "NPUSpec", "PathSpec", "SpecError", "ASCEND_910B_LIKE", "ASCEND_910_LIKE", "TINY",
    "PRESETS", "PIPES", "SCOPES",
    # instruction streams
    "Instr", "CoreProgram", "Launch", "KINDS", "VEC_OP_CLASS",
    "copy", "mmad", "vec", "scalar", "set_flag", "wait_flag", "barrier",
    # costs and bounds
    "instr_cycles", "copy_cycles", "mmad_cycles", "vec_cycles",
    "roofline_bound", "RooflineBound",
    # scheduled kernels -> streams
    "StreamRecorder",
    # simulation
    "simulate", "SimReport", "ProgramRun", "DeadlockError", "FlagStillSetError", "ProgramError",
    # debug
    "DebugOptions", "find_races", "landing_points", "Race", "RaceError",
]
