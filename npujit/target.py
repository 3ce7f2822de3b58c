"""NPU specs as data: core counts, clock, buffers, Cube/Vector rates, copy paths, HBM.

A spec is a frozen, hashable value; the presets below are instances, and a user builds
their own with ``NPUSpec(...)`` or ``spec.replace(...)``.  Every constant in a preset says
where it came from: a section of ``docs/npu-facts.md`` (``§A3``), which paraphrases the
fact and names its public source (tags [O] official / [D] derived / [U] uncertain as on that
page), or "assumed" when we chose it.
The model is calibrated to public figures, not validated on silicon.

Example::

    >>> from npujit.target import ASCEND_910B_LIKE
    >>> ASCEND_910B_LIKE.aic_cores, ASCEND_910B_LIKE.aiv_cores
    (24, 48)
    >>> fast = ASCEND_910B_LIKE.replace(hbm_bytes_per_s=3.2e12)
    >>> round(fast.hbm_bytes_per_cycle)
    1778
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class Pipe(str, enum.Enum):
    """A pipe of an AI core, in Ascend's words (docs/npu-model: PIPE_S, PIPE_MTE1/2/3,
    PIPE_M, PIPE_V, PIPE_FIX).  A member equals its name as a string, so tables keyed by
    name accept it.

    ``abbr``: its spelling in a ``HardEvent`` (``MTE2_V``, ``M_FIX``); ``profiler``: the
    stem of its ``msprof`` utilisation field (``aic_cube_ratio``, ``aiv_vec_ratio``);
    ``side``: the core kind that has it on a separated part (None: both have one).

    Example::

        >>> Pipe.CUBE.abbr, Pipe.VECTOR.profiler, Pipe.FIXP.side, Pipe("MTE2") == "MTE2"
        ('M', 'vec', 'AIC', True)
    """

    SCALAR = "SCALAR"
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    CUBE = "CUBE"
    VECTOR = "VECTOR"
    FIXP = "FIXP"

    def __str__(self) -> str:
        return self.value

    @property
    def abbr(self) -> str:
        return _PIPE_FACTS[self][0]

    @property
    def profiler(self) -> str:
        return _PIPE_FACTS[self][1]

    @property
    def side(self) -> str | None:
        return _PIPE_FACTS[self][2]


_PIPE_FACTS = {
    Pipe.SCALAR: ("S", "scalar", None), Pipe.MTE1: ("MTE1", "mte1", "AIC"),
    Pipe.MTE2: ("MTE2", "mte2", None), Pipe.MTE3: ("MTE3", "mte3", None),
    Pipe.CUBE: ("M", "cube", "AIC"), Pipe.VECTOR: ("V", "vec", "AIV"),
    Pipe.FIXP: ("FIX", "fixpipe", "AIC"),
}


class Scope(str, enum.Enum):
    """A memory scope.  GM is off-core HBM behind the L2; the rest are per core, on the
    side ``side`` of a separated part (L1 and L0* feed the Cube; UB the Vector).

    Example::

        >>> Scope.L0C.side, Scope.UB.side, Scope.GM.side
        ('AIC', 'AIV', None)
    """

    GM = "GM"
    L1 = "L1"
    L0A = "L0A"
    L0B = "L0B"
    L0C = "L0C"
    UB = "UB"

    def __str__(self) -> str:
        return self.value

    @property
    def side(self) -> str | None:
        return {"GM": None, "UB": "AIV"}.get(self.value, "AIC")


PIPES = tuple(p.value for p in Pipe)
SCOPES = tuple(s.value for s in Scope)
# Core kinds: AIC = Cube core, AIV = Vector core (§A2).  A coupled core is an AIC with Vector.
CORE_KINDS = ("AIC", "AIV")
# CrossCoreSetFlag / CrossCoreWaitFlag flag ids 0..10 (docs/npu-facts.md §A2 [O]): what
# the split-cores step hands out and the simulator checks.
CROSS_FLAG_IDS = 11
ARCHES = ("separated", "coupled")


class SpecError(ValueError):
    """An NPU spec (or a program checked against one) is inconsistent; the message says how."""


class FrozenMap(Mapping):
    """A read-only, hashable dict, so specs can be dict-valued and still be cache keys.

    Example::

        >>> m = FrozenMap({"UB": 192 * 1024})
        >>> m["UB"], hash(m) == hash(FrozenMap({"UB": 196608}))
        (196608, True)
    """

    __slots__ = ("_d", "_h")

    def __init__(self, items: Mapping | None = None):
        self._d = dict(items or {})
        self._h = None

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __hash__(self):
        if self._h is None:
            self._h = hash(tuple(sorted(self._d.items(), key=lambda kv: kv[0])))
        return self._h

    def __eq__(self, other):
        return isinstance(other, Mapping) and dict(self._d) == dict(other)

    def __repr__(self):
        return f"FrozenMap({self._d!r})"


@dataclass(frozen=True)
class PathSpec:
    """One data-movement path (e.g. ``GM_to_UB``): the pipe that runs it, its port rate, latency.

    ``latency`` is the fixed setup cost of one copy on the port in cycles; copies that touch
    GM additionally pay ``NPUSpec.hbm_latency_cycles`` and share HBM bandwidth with all cores.

    Example::

        >>> PathSpec("MTE2", bytes_per_cycle=110, latency=100).pipe
        'MTE2'
    """

    pipe: str
    bytes_per_cycle: float
    latency: int

    def __post_init__(self):
        if self.pipe not in PIPES:
            raise SpecError(f"path pipe {self.pipe!r} is not one of {PIPES}")
        if not self.bytes_per_cycle > 0:
            raise SpecError(f"path port rate must be > 0 bytes/cycle, got {self.bytes_per_cycle}")
        if not (isinstance(self.latency, int) and self.latency >= 0):
            raise SpecError(f"path latency must be an int >= 0 cycles, got {self.latency!r}")


def path_scopes(name: str) -> tuple[str, str]:
    """Split a path name into (source scope, destination scope).

    Example::

        >>> path_scopes("L0C_to_GM")
        ('L0C', 'GM')
    """
    src, sep, dst = name.partition("_to_")
    if not sep or src not in SCOPES or dst not in SCOPES:
        raise SpecError(f"path name {name!r} must read '<scope>_to_<scope>' with scopes {SCOPES}")
    return src, dst


@dataclass(frozen=True)
class NPUSpec:
    """A simulated NPU.  Dict-valued fields accept plain dicts and are frozen on construction.

    Fields (units in the name where it matters):

    * ``arch``: ``"separated"`` (AIC and AIV are distinct cores, 910B) or ``"coupled"``
      (one core has Cube and Vector, 910); ``aic_cores`` / ``aiv_cores`` count them.
    * ``pipes`` / ``scopes``: core kind -> the pipes / on-core memories that core has.
    * ``capacity`` / ``alignment``: scope -> bytes.  ``alignment["GM"]`` is the HBM burst:
      a GM copy moves every burst its offsets touch (``sim/bursts.py``, ``sim/cost.py``).
    * ``cube_fractal``: the M0 = N0 = K0 of one Cube step at fp16 (16); ``cube_rate``:
      dtype -> fp16-equivalent steps per cycle (i8 2, f32 0.25); ``cube_startup_cycles``.
    * ``vector_bytes_per_cycle`` (one repeat), ``vector_startup_cycles``, ``vector_op_cost``:
      op class -> cycles per repeat.
    * ``paths``: path name -> :class:`PathSpec`.
    * ``hbm_bytes_per_s`` shared by all cores, ``hbm_latency_cycles`` per GM access.
    * ``event_ids``: flag ids per (src pipe, dst pipe) pair; ``sync_cycles``: cost of
      set_flag / wait_flag / barrier on their pipe.
    * ``l2_bytes`` (0 = no L2), ``l2_bytes_per_s`` shared by all cores,
      ``l2_latency_cycles``: the shared L2 in front of HBM (``sim/l2.py``).  Optional, so a
      spec written before the L2 model still builds.
    * ``handoff_slots``: on a separated part, the hand-off workspace slots of one AI core's
      ring: how many groups (AIC + AIV program pairs of a mixed kernel) the core has in
      flight, so its AIC runs that many groups ahead of its AIV at most (1: a group
      starts when both of its cores are free; ``sim/engine.py``).
    * ``overlap_fixpipe``: an AIC takes its next program once every pipe but the FixPipe
      has drained, and that program's Cube and FixPipe wait for the FixPipe (L0C is free
      then), as a kernel looping over its tiles loads the next tile while the last one
      leaves L0C (False: a core takes its next program when every pipe has drained).

    Example::

        >>> from npujit.target import TINY
        >>> TINY.replace(aiv_cores=8).aiv_cores
        8
        >>> TINY.replace(clock_hz=0)
        Traceback (most recent call last):
        ...
        npujit.target.SpecError: TINY: clock_hz must be > 0, got 0
    """

    name: str
    arch: str
    aic_cores: int
    aiv_cores: int
    clock_hz: float
    pipes: Mapping
    scopes: Mapping
    capacity: Mapping
    alignment: Mapping
    cube_fractal: int
    cube_rate: Mapping
    cube_startup_cycles: int
    vector_bytes_per_cycle: int
    vector_startup_cycles: int
    vector_op_cost: Mapping
    paths: Mapping
    hbm_bytes_per_s: float
    hbm_latency_cycles: int
    event_ids: int
    sync_cycles: int
    l2_bytes: int = 0
    l2_bytes_per_s: float = 0.0
    l2_latency_cycles: int = 0
    handoff_slots: int = 1
    overlap_fixpipe: bool = False

    def __post_init__(self):
        for field in ("pipes", "scopes", "capacity", "alignment", "cube_rate", "vector_op_cost",
                      "paths"):
            value = getattr(self, field)
            if not isinstance(value, Mapping):
                raise SpecError(f"{self.name}: {field} must be a mapping, "
                                f"got {type(value).__name__}")
            as_tuple = field in ("pipes", "scopes")
            frozen = {k: tuple(v) if as_tuple else v for k, v in value.items()}
            object.__setattr__(self, field, FrozenMap(frozen))
        self._validate()

    # -- derived numbers --------------------------------------------------------------------
    @property
    def hbm_bytes_per_cycle(self) -> float:
        """HBM bandwidth shared by all cores, in bytes per core clock cycle."""
        return self.hbm_bytes_per_s / self.clock_hz

    @property
    def l2_bytes_per_cycle(self) -> float:
        """L2 bandwidth shared by all cores, in bytes per core clock cycle (0 without L2)."""
        return self.l2_bytes_per_s / self.clock_hz

    @property
    def core_counts(self) -> dict[str, int]:
        """Physical cores per kind; on a coupled part every core is an ``AIC``."""
        if self.arch == "coupled":
            return {"AIC": self.aic_cores}
        return {"AIC": self.aic_cores, "AIV": self.aiv_cores}

    def core_kind_for(self, program_kind: str) -> str:
        """The physical core kind that runs a program of ``program_kind`` (coupled: always AIC).

        Example::

            >>> ASCEND_910_LIKE.core_kind_for("AIV")
            'AIC'
        """
        if program_kind not in CORE_KINDS:
            raise SpecError(f"core kind {program_kind!r} is not one of {CORE_KINDS}")
        return "AIC" if self.arch == "coupled" else program_kind

    @property
    def peak_cube_flops(self) -> float:
        """fp16 Cube peak of the chip in FLOP/s (2 FLOP per MAC)."""
        f = self.cube_fractal
        return 2.0 * f * f * f * self.aic_cores * self.clock_hz

    def replace(self, **changes: Any) -> "NPUSpec":
        """A copy with some fields changed, validated again.

        Example::

            >>> TINY.replace(name="tiny-fast", hbm_bytes_per_s=1e12).hbm_bytes_per_cycle
            1000.0
        """
        return dataclasses.replace(self, **changes)

    def with_path(self, name: str, **changes: Any) -> "NPUSpec":
        """A copy with one path's fields changed (``pipe``, ``bytes_per_cycle``, ``latency``).

        Example::

            >>> TINY.with_path("GM_to_UB", bytes_per_cycle=32).paths["GM_to_UB"].bytes_per_cycle
            32
        """
        if name not in self.paths:
            raise SpecError(f"{self.name}: no path {name!r}; paths are {sorted(self.paths)}")
        paths = dict(self.paths)
        paths[name] = dataclasses.replace(paths[name], **changes)
        return self.replace(paths=paths)

    # -- validation -------------------------------------------------------------------------
    def _validate(self) -> None:
        def fail(msg: str):
            raise SpecError(f"{self.name}: {msg}")

        if self.arch not in ARCHES:
            fail(f"arch must be one of {ARCHES}, got {self.arch!r}")
        for field in ("aic_cores", "aiv_cores", "cube_fractal", "cube_startup_cycles",
                      "vector_bytes_per_cycle", "vector_startup_cycles", "hbm_latency_cycles",
                      "event_ids", "sync_cycles", "l2_bytes", "l2_latency_cycles",
                      "handoff_slots"):
            v = getattr(self, field)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                fail(f"{field} must be an int >= 0, got {v!r}")
        if not isinstance(self.overlap_fixpipe, bool):
            fail(f"overlap_fixpipe must be a bool, got {self.overlap_fixpipe!r}")
        for field in ("cube_fractal", "vector_bytes_per_cycle", "event_ids", "handoff_slots"):
            if getattr(self, field) == 0:
                fail(f"{field} must be > 0")
        if self.aic_cores + self.aiv_cores == 0:
            fail("needs at least one core (aic_cores + aiv_cores > 0)")
        if self.arch == "coupled" and self.aiv_cores:
            fail("a coupled part has no separate AIV cores; put Vector in the AIC pipes and "
                 "set aiv_cores=0")
        for field in ("clock_hz", "hbm_bytes_per_s"):
            v = getattr(self, field)
            if not (isinstance(v, (int, float)) and v > 0):
                fail(f"{field} must be > 0, got {v!r}")
        if self.l2_bytes and not (isinstance(self.l2_bytes_per_s, (int, float))
                                  and self.l2_bytes_per_s > 0):
            fail(f"l2_bytes_per_s must be > 0 when l2_bytes > 0, got {self.l2_bytes_per_s!r}")
        kinds = ("AIC",) if self.arch == "coupled" else CORE_KINDS
        for kind in kinds:
            if kind not in self.pipes:
                fail(f"pipes has no entry for core kind {kind!r}")
        for kind, pipes in self.pipes.items():
            if kind not in CORE_KINDS:
                fail(f"pipes: unknown core kind {kind!r}")
            for p in pipes:
                if p not in PIPES:
                    fail(f"pipes[{kind!r}]: unknown pipe {p!r}; pipes are {PIPES}")
        for kind in kinds:
            if kind not in self.scopes:
                fail(f"scopes has no entry for core kind {kind!r}")
        for kind, scopes in self.scopes.items():
            for sc in scopes:
                if sc not in SCOPES or sc == "GM":
                    fail(f"scopes[{kind!r}]: {sc!r} is not an on-core scope")
                if sc not in self.capacity:
                    fail(f"scopes[{kind!r}] lists {sc!r} but capacity has no entry for it")
        for scope in SCOPES:
            if scope not in self.alignment:
                fail(f"alignment has no entry for scope {scope!r}")
        for scope, v in self.alignment.items():
            if scope not in SCOPES:
                fail(f"alignment: unknown scope {scope!r}")
            if not (isinstance(v, int) and v > 0 and v & (v - 1) == 0):
                fail(f"alignment[{scope!r}] must be a power of two, got {v!r}")
        for scope, v in self.capacity.items():
            if scope not in SCOPES or scope == "GM":
                fail(f"capacity: {scope!r} is not an on-core scope")
            if not (isinstance(v, int) and v > 0):
                fail(f"capacity[{scope!r}] must be an int > 0 bytes, got {v!r}")
        if "f16" not in self.cube_rate:
            fail("cube_rate must give the f16 rate (the unit the others are relative to)")
        for dtype, v in self.cube_rate.items():
            if not (isinstance(v, (int, float)) and v > 0):
                fail(f"cube_rate[{dtype!r}] must be > 0, got {v!r}")
        if "elementwise" not in self.vector_op_cost:
            fail("vector_op_cost must give the 'elementwise' class")
        for cls, v in self.vector_op_cost.items():
            if not (isinstance(v, (int, float)) and v > 0):
                fail(f"vector_op_cost[{cls!r}] must be > 0 cycles per repeat, got {v!r}")
        all_pipes = {p for pipes in self.pipes.values() for p in pipes}
        for name, path in self.paths.items():
            try:
                path_scopes(name)
            except SpecError as e:
                fail(str(e))
            if not isinstance(path, PathSpec):
                fail(f"paths[{name!r}] must be a PathSpec, got {type(path).__name__}")
            if path.pipe not in all_pipes:
                fail(f"paths[{name!r}] runs on {path.pipe}, which no core kind has")


def _kb(n: int) -> int:
    return n * 1024


# --- Presets --------------------------------------------------------------------------------
# Vector op classes -> cycles per 256-byte repeat.  Only "elementwise" = 1 is sourced (one
# repeat of 8 x 32 B blocks per cycle, §A5 [O], cycle-per-repeat [U] §A10); the rest are assumed
# relative costs (transcendentals as a short polynomial/table sequence, gather/sort as
# multi-pass), to be calibrated.
_VECTOR_OP_COST = {
    "elementwise": 1,      # add/sub/mul/max/min/abs/cmp/select/copy: §A5 [O], §A10 [U]
    "cast": 1,             # assumed: one pass per repeat
    "div": 2,              # assumed: reciprocal + multiply
    "transcendental": 4,   # assumed: exp/ln/sqrt/rsqrt/tanh/sigmoid ("x4")
    "reduce": 2,           # assumed: in-repeat tree plus cross-repeat accumulate
    "gather": 8,           # assumed: per-element addressing
    "sort": 16,            # assumed: multi-pass bitonic-style sort / topk
}

_CUBE_RATE = {
    "f16": 1.0,    # 16x16x16 MAC per cycle: §A5 [O]
    "bf16": 1.0,   # same as f16: §A5 [O]
    "i8": 2.0,     # K0 = 32, 8192 MAC/cycle: §A5 [O]
    "f32": 0.25,   # 1/4 of half on 2201: §A5 [O]
}

# 910B-like (arch 2201, separated).  Copy-port rates are the INI memory-rate section (§A4,
# units probably bytes/cycle/core [U]); GM reads use l2_rate (all GM traffic passes L2, and the
# measured effective GM->L1 rate 3406 GB/s / 20 cores / 1.8 GHz = 95 B/cycle agrees, §A5).
# GM-path issue latency 32: assumed, chosen so one 16 KB copy loses <= ~20 % to it ("a single
# DMA >= 16 KB reaches best bandwidth", §A6 [O]); the HBM latency itself is paid on landing
# and overlaps the next copy (hbm_latency_cycles).
_910B_PATHS = {
    "GM_to_L1": PathSpec("MTE2", 110, 32),     # rate l2_rate read 110 §A4 [U]; latency see above
    "GM_to_L0A": PathSpec("MTE2", 110, 32),    # same port as GM_to_L1 §A1 [O]
    "GM_to_L0B": PathSpec("MTE2", 110, 32),    # same port as GM_to_L1 §A1 [O]
    "GM_to_UB": PathSpec("MTE2", 110, 32),     # rate l2_rate read 110 §A4 [U]; latency see above
    "UB_to_GM": PathSpec("MTE3", 64, 32),      # rate ub_to_l2_rate 64 §A4 [U]; latency see above
    "L1_to_L0A": PathSpec("MTE1", 512, 16),    # l1_to_l0_a_rate 512 §A4/§A10 [U]; latency assumed
    "L1_to_L0B": PathSpec("MTE1", 256, 16),    # l1_to_l0_b_rate 256 §A4/§A10 [U]; latency assumed
    "L0C_to_GM": PathSpec("FIXP", 86, 32),     # L2 write rate 86 §A4 [U]; latency assumed
    "L0C_to_L1": PathSpec("FIXP", 256, 32),    # l0_c_to_ub_rate as L0C out §A10 [U]; lat. assumed
}

ASCEND_910B_LIKE = NPUSpec(
    name="ascend-910b-like",
    arch="separated",                  # 2201: AIC + 2 AIV per AI core §A2 [O]
    aic_cores=24,                      # INI Ascend910B2C §A4 [O]
    aiv_cores=48,                      # INI Ascend910B2C §A4 [O]
    clock_hz=1.8e9,                    # cube_freq 1800 MHz §A4 [O]
    pipes={
        "AIC": ("SCALAR", "MTE1", "MTE2", "CUBE", "FIXP"),   # §A2 [O]
        "AIV": ("SCALAR", "MTE2", "VECTOR", "MTE3"),         # §A2 [O]
    },
    scopes={"AIC": ("L1", "L0A", "L0B", "L0C"), "AIV": ("UB",)},   # §A2 [O]
    # §A3 [O]
    capacity={"UB": _kb(192), "L1": _kb(512), "L0A": _kb(64), "L0B": _kb(64), "L0C": _kb(128)},
    # §A6 [O]: on-chip buffers 32 B (UB/L1), L0A/L0B 512 B, L0C 64 B; GM moves 512 B
    # HBM bursts (a copy pays per burst its offsets touch, sim/bursts.py)
    alignment={"GM": 512, "UB": 32, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 64},
    cube_fractal=16,                   # cube_m/n/k_size 16 §A4 [O]
    cube_rate=_CUBE_RATE,
    cube_startup_cycles=8,             # assumed: pipeline fill of one Mmad
    vector_bytes_per_cycle=256,        # 8 DataBlocks x 32 B per repeat §A5 [O]
    vector_startup_cycles=8,           # assumed: issue + pipeline fill of one vector instr
    vector_op_cost=_VECTOR_OP_COST,
    paths=_910B_PATHS,
    hbm_bytes_per_s=1.6e12,            # 1.6-1.8 TB/s §A5/§A10 [U]; low end chosen
    hbm_latency_cycles=500,            # assumed: ~280 ns HBM + L2 round trip, paid on landing
    event_ids=8,                       # QUE_MAX_EVENT = 8 on 2201 §A6 [O]
    sync_cycles=1,                     # assumed: set/wait/barrier issue cost
    l2_bytes=192 * 1024 * 1024,        # L2 192 MB, INI Ascend910B2C §A4 [O]
    # assumed: the 24 AIC ports at the INI l2_rate at once (24 x 110 B/cycle x 1.8 GHz =
    # 4.75 TB/s); above the measured effective 3.4 TB/s GM->L1 of a 20-core A2 that includes
    # L2 hits (§A5 [O]), which a 20-core part at the same port rate would cap at 3.96 TB/s
    l2_bytes_per_s=24 * 110 * 1.8e9,
    l2_latency_cycles=200,             # assumed: ~110 ns L2 round trip, under hbm_latency
    handoff_slots=2,                   # >= 2 hand-off slots per AI core advised §A2 [O]
    overlap_fixpipe=True,              # pipes are queues ordered by flags §A1 [O]; the next
                                       # program's Mmad waits FIX_M (ascendc/emit_cube.py)
)

# 910-like (arch 1001, coupled): one core has Cube and Vector; no FixPipe, so L0C leaves
# through the Vector unit into UB (§A2 [O]) and UB/L1 are linked by MTE1/MTE3.
_910_PATHS = {
    "GM_to_L1": PathSpec("MTE2", 110, 32),     # INI rates = 910B's §A4 [U]; latency as 910B
    "GM_to_L0A": PathSpec("MTE2", 110, 32),    # §A1 [O] path; rate/latency as GM_to_L1
    "GM_to_L0B": PathSpec("MTE2", 110, 32),    # §A1 [O] path; rate/latency as GM_to_L1
    "GM_to_UB": PathSpec("MTE2", 110, 32),     # l2_rate 110 §A4 [U]; latency as 910B
    "UB_to_GM": PathSpec("MTE3", 64, 32),      # ub_to_l2_rate 64 §A4 [U]; latency as 910B
    "L1_to_L0A": PathSpec("MTE1", 512, 16),    # l1_to_l0_a_rate §A4 [U]; latency assumed
    "L1_to_L0B": PathSpec("MTE1", 256, 16),    # l1_to_l0_b_rate §A4 [U]; latency assumed
    "L1_to_UB": PathSpec("MTE1", 128, 16),     # l1_to_ub_rate 128 §A4 [U]; coupled path §A1 [O]
    "UB_to_L1": PathSpec("MTE3", 128, 16),     # ub_to_l1_rate 128 §A4 [U]; coupled path §A1 [O]
    "L0C_to_UB": PathSpec("VECTOR", 256, 16),  # l0_c_to_ub_rate 256 §A4 [U]; via Vector §A2 [O]
}

ASCEND_910_LIKE = NPUSpec(
    name="ascend-910-like",
    arch="coupled",                    # arch 1001 §A2 [O]
    aic_cores=32,                      # INI Ascend910A, 32 AI cores §A4 [O]
    aiv_cores=0,                       # coupled: Vector lives in the AI core §A2 [O]
    clock_hz=1.0e9,                    # cube_freq 1000 MHz §A4 [O]
    pipes={"AIC": ("SCALAR", "MTE1", "MTE2", "MTE3", "CUBE", "VECTOR")},  # no FIXP: §A2 [O]
    scopes={"AIC": ("L1", "L0A", "L0B", "L0C", "UB")},      # UB and L1 in one core §A2 [O]
    # §A3 [O]
    capacity={"UB": _kb(256), "L1": _kb(1024), "L0A": _kb(64), "L0B": _kb(64), "L0C": _kb(256)},
    # §A6 [O] gives the 2201 rules (GM: 512 B HBM bursts); assumed the same on 1001
    alignment={"GM": 512, "UB": 32, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 64},
    cube_fractal=16,                   # §A5 [O]
    # f16 / i8 §A5 [O]; no bf16 on 910A (assumed); f32 at 1/4 assumed as on 2201
    cube_rate={"f16": 1.0, "i8": 2.0, "f32": 0.25},
    cube_startup_cycles=8,             # assumed
    vector_bytes_per_cycle=256,        # §A5 [O]
    vector_startup_cycles=8,           # assumed
    vector_op_cost=_VECTOR_OP_COST,
    paths=_910_PATHS,
    hbm_bytes_per_s=1.2e12,            # ~1.2 TB/s §A5 [U]
    hbm_latency_cycles=300,            # assumed: ~300 ns at 1 GHz
    event_ids=4,                       # 4 event ids on older arches §A6 [O]
    sync_cycles=1,                     # assumed
    l2_bytes=32 * 1024 * 1024,         # L2 32 MB, INI Ascend910A §A4 [O]
    l2_bytes_per_s=32 * 110 * 1.0e9,   # assumed: 32 cores x l2_rate 110 B/cycle §A4 [U]
    l2_latency_cycles=150,             # assumed: ~150 ns at 1 GHz, under hbm_latency
)

# TINY: round numbers so tests can compute expected cycles by hand.  All assumed.
TINY = NPUSpec(
    name="TINY",
    arch="separated",
    aic_cores=2,
    aiv_cores=2,
    clock_hz=1.0e9,                    # 1 cycle = 1 ns
    pipes={
        "AIC": ("SCALAR", "MTE1", "MTE2", "CUBE", "FIXP"),
        "AIV": ("SCALAR", "MTE2", "VECTOR", "MTE3"),
    },
    scopes={"AIC": ("L1", "L0A", "L0B", "L0C"), "AIV": ("UB",)},
    capacity={"UB": _kb(16), "L1": _kb(64), "L0A": _kb(8), "L0B": _kb(8), "L0C": _kb(16)},
    # GM moves 32 B "bursts" here (not the Ascend presets' 512 B) so small test copies
    # keep hand-computable byte counts
    alignment={"GM": 32, "UB": 32, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 64},
    cube_fractal=16,
    cube_rate={"f16": 1.0, "bf16": 1.0, "i8": 2.0, "f32": 0.25},
    cube_startup_cycles=10,
    vector_bytes_per_cycle=256,
    vector_startup_cycles=10,
    vector_op_cost=_VECTOR_OP_COST,
    paths={
        "GM_to_L1": PathSpec("MTE2", 64, 10),
        "GM_to_UB": PathSpec("MTE2", 64, 10),
        "UB_to_GM": PathSpec("MTE3", 64, 10),
        "L1_to_L0A": PathSpec("MTE1", 256, 10),
        "L1_to_L0B": PathSpec("MTE1", 256, 10),
        "L0C_to_GM": PathSpec("FIXP", 64, 10),
        "L0C_to_L1": PathSpec("FIXP", 256, 10),
    },
    hbm_bytes_per_s=256e9,             # 256 B/cycle: the knee sits at 4 cores of 64 B/cycle
    hbm_latency_cycles=100,
    event_ids=8,
    sync_cycles=1,
    l2_bytes=64 * 1024,                # small enough that a test can overflow it
    l2_bytes_per_s=512e9,              # 512 B/cycle: twice HBM
    l2_latency_cycles=20,
)

PRESETS = {s.name: s for s in (ASCEND_910B_LIKE, ASCEND_910_LIKE, TINY)}


def find_spec(spec) -> NPUSpec:
    """The NPU spec a ``spec=`` option names: an ``NPUSpec``, a preset's key or name, or
    None for the 910B-like default; raises ``SpecError`` for anything else.

    Example::

        >>> find_spec("TINY").name, find_spec(None) is ASCEND_910B_LIKE
        ('TINY', True)
    """
    if spec is None:
        return ASCEND_910B_LIKE
    if isinstance(spec, NPUSpec):
        return spec
    for key, preset in PRESETS.items():
        if spec in (key, preset.name):
            return preset
    raise SpecError(f"unknown NPU spec {spec!r}; use an npujit.target.NPUSpec or one of "
                    f"{sorted(PRESETS)}")
