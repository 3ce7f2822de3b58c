"""The instruction-stream contract between the scheduler and the timing engine.

A scheduled kernel becomes one :class:`CoreProgram` per program of the grid: the
instructions one AI core issues, in issue order.  The engine hands each instruction to the
in-order queue of its ``pipe``; instructions on different pipes run in parallel and are
ordered only by ``set_flag`` / ``wait_flag`` pairs and ``barrier`` (docs/npu-facts.md §A1).
A :class:`Launch` is the whole grid; programs beyond the core count run in waves.

Instruction kinds and the fields they use:

=========== ========================== ==================================================
kind        pipe                       fields
=========== ========================== ==================================================
copy        the path's pipe (MTE1/2/3, ``path`` (``"GM_to_UB"`` ...), ``nbytes``
            FIXP; VECTOR for L0C_to_UB
            on coupled parts)
mmad        CUBE                       ``m, n, k``, ``dtype`` of the inputs (f16, bf16, i8,
                                       f32); L0A x L0B accumulated into L0C
vec         VECTOR                     ``op`` (an op class of the spec's vector table),
                                       ``elems``, ``nbytes`` (= elems x dtype size)
scalar      SCALAR (or any pipe)       ``cycles`` (explicit cost)
set_flag    flag's source pipe         ``flag = (src_pipe, dst_pipe, event_id)``
wait_flag   flag's destination pipe    ``flag``
barrier     a pipe, or ``"ALL"``       ``"ALL"`` waits for every pipe of the core
cross_set   any pipe                   ``flag = ("CROSS", "CROSS", id)``: the partner
                                       program of a mixed launch's group may pass its
                                       ``cross_wait`` of that id (CrossCoreSetFlag)
cross_wait  any pipe                   ``flag``: blocks until the partner set it
=========== ========================== ==================================================

Every instruction may carry ``reads`` / ``writes`` (tuples of ``(buffer, slot)`` pairs of
on-core buffers, used by the race detector) and a ``tag`` (e.g. ``"kernel.py:42"``) that
shows up in traces and errors.  A GM copy may carry ``gm_region``: a hashable key naming
the GM bytes it touches (e.g. ``("a_ptr", (0, 128, 64, 128))``); copies with equal keys
touch the same bytes.  Only the L2 model reads it (``sim/l2.py``); a copy without one is
always an L2 miss, so streams written before the L2 model time as they did.  A GM copy may
also carry ``burst_bytes``: the bytes of the GM bursts its real offsets touch (the stream
recorder counts them, ``sim/lower.py``); without it the copy is one contiguous run from a
burst boundary (``sim/cost.py``).

Example::

    >>> from npujit.sim.isa import copy, vec, set_flag, wait_flag, CoreProgram
    >>> prog = CoreProgram("AIV", [
    ...     copy("GM_to_UB", 4096, writes=[("x", 0)]),
    ...     set_flag("MTE2", "VECTOR", 0),
    ...     wait_flag("MTE2", "VECTOR", 0),
    ...     vec("exp", 2048, "f16", reads=[("x", 0)], writes=[("y", 0)]),
    ... ])
    >>> [i.pipe for i in prog.instrs]
    ['MTE2', 'MTE2', 'VECTOR', 'VECTOR']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

from npujit.target import CORE_KINDS, CROSS_FLAG_IDS, PIPES, Pipe, SpecError, path_scopes

KINDS = ("copy", "mmad", "vec", "scalar", "set_flag", "wait_flag", "barrier", "cross_set",
         "cross_wait")

# Element sizes of the IR's dtype spellings (npujit.ir.types), in bytes.
# f64, the unsigned ints (ui8..ui64) and the fp8s have no vector ALU of their own on the
# presets: their vector instructions are charged by bytes like any other (f64 as i64, an fp8
# as i8), which is a lower bound for the emulation a real part would need (docs/semantics.md,
# "Dtypes on the NPU presets").
DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "u8": 1, "i16": 2, "i32": 4, "i64": 8,
               "i1": 1, "f64": 8, "ui8": 1, "ui16": 2, "ui32": 4, "ui64": 8, "f8E4M3FN": 1,
               "f8E5M2": 1}

# Which pipe runs a path when the caller does not say (the presets agree with this table).
DEFAULT_PATH_PIPE = {
    "GM_to_L1": "MTE2", "GM_to_L0A": "MTE2", "GM_to_L0B": "MTE2", "GM_to_UB": "MTE2",
    "UB_to_GM": "MTE3", "UB_to_L1": "MTE3",
    "L1_to_L0A": "MTE1", "L1_to_L0B": "MTE1", "L1_to_UB": "MTE1",
    "L0C_to_GM": "FIXP", "L0C_to_L1": "FIXP",
    # coupled 910: L0C leaves through the Vector unit (docs/npu-facts.md §A2)
    "L0C_to_UB": "VECTOR",
}

# Op name -> vector op class (the classes are the keys of NPUSpec.vector_op_cost).
VEC_OP_CLASS = {
    "add": "elementwise", "sub": "elementwise", "mul": "elementwise", "max": "elementwise",
    "min": "elementwise", "abs": "elementwise", "neg": "elementwise", "cmp": "elementwise",
    "select": "elementwise", "where": "elementwise", "copy": "elementwise", "dup": "elementwise",
    "and": "elementwise", "or": "elementwise", "muls": "elementwise", "adds": "elementwise",
    "relu": "elementwise", "fma": "elementwise",
    "cast": "cast",
    "div": "div", "reciprocal": "div",
    "exp": "transcendental", "ln": "transcendental", "log": "transcendental",
    "sqrt": "transcendental", "rsqrt": "transcendental", "tanh": "transcendental",
    "sigmoid": "transcendental", "silu": "transcendental", "gelu": "transcendental",
    "sum": "reduce", "reduce_max": "reduce", "reduce_min": "reduce", "argmax": "reduce",
    "cumsum": "reduce",
    "gather": "gather", "scatter": "gather",
    "sort": "sort", "topk": "sort",
}

# HardEvent spelling of a pipe (MTE2_V, M_FIX, S_MTE3 ...): npujit/target.py Pipe.abbr.
HARD_EVENT_PIPE = {p.value: p.abbr for p in Pipe}


class Instr(NamedTuple):
    """One instruction of a core's stream.  A tuple, so building and reading it is cheap.

    Build instructions with the helpers (:func:`copy`, :func:`mmad`, :func:`vec`,
    :func:`scalar`, :func:`set_flag`, :func:`wait_flag`, :func:`barrier`) rather than by hand.

    Example::

        >>> i = mmad(128, 256, 64, "f16")
        >>> i.pipe, i.kind, i.flops
        ('CUBE', 'mmad', 4194304)
    """

    pipe: str
    kind: str
    path: str | None = None
    nbytes: int = 0
    m: int = 0
    n: int = 0
    k: int = 0
    dtype: str | None = None
    op: str | None = None
    elems: int = 0
    flag: tuple | None = None
    cycles: int = 0
    reads: tuple = ()
    writes: tuple = ()
    tag: str | None = None
    gm_region: object = None
    burst_bytes: int | None = None

    @property
    def flops(self) -> int:
        """Arithmetic FLOPs: 2 m n k for ``mmad`` (one MAC = 2 FLOPs), ``elems`` for ``vec``."""
        if self.kind == "mmad":
            return 2 * self.m * self.n * self.k
        if self.kind == "vec":
            return self.elems
        return 0

    def __str__(self) -> str:
        return describe(self)


def describe(ins: Instr) -> str:
    """A short human-readable form of an instruction, as used in traces and errors.

    Example::

        >>> describe(copy("GM_to_UB", 4096, tag="k.py:7"))
        'MTE2 copy GM_to_UB 4096 B @k.py:7'
    """
    k = ins.kind
    if k == "copy":
        s = f"{ins.pipe} copy {ins.path} {ins.nbytes} B"
    elif k == "mmad":
        s = f"CUBE mmad {ins.m}x{ins.n}x{ins.k} {ins.dtype}"
    elif k == "vec":
        s = f"VECTOR {ins.op} {ins.elems} x {ins.dtype}"
    elif k == "scalar":
        s = f"{ins.pipe} scalar {ins.cycles} cycles"
    elif k in ("set_flag", "wait_flag", "cross_set", "cross_wait"):
        s = f"{ins.pipe} {k} {flag_name(ins.flag)}"
    else:
        s = f"barrier {ins.pipe}"
    return f"{s} @{ins.tag}" if ins.tag else s


def flag_name(flag: tuple) -> str:
    """Name a flag the way Ascend C spells its event: ``HardEvent::MTE2_V`` plus the id.

    Example::

        >>> flag_name(("MTE2", "VECTOR", 1))
        'MTE2->VECTOR id 1 (HardEvent::MTE2_V)'
    """
    src, dst, eid = flag
    if src == "CROSS":
        return f"cross-core flag {eid} (CrossCoreSetFlag/CrossCoreWaitFlag)"
    return f"{src}->{dst} id {eid} (HardEvent::{HARD_EVENT_PIPE[src]}_{HARD_EVENT_PIPE[dst]})"


def _bufrefs(refs) -> tuple:
    """Normalise buffer references: ``"x"`` means slot 0 of buffer x, ``("x", 1)`` slot 1;
    a single reference or a list of them."""
    if not refs:
        return ()
    if isinstance(refs, str) or (isinstance(refs, tuple) and len(refs) == 2
                                 and isinstance(refs[0], str) and isinstance(refs[1], int)):
        refs = (refs,)
    out = []
    for r in refs:
        if isinstance(r, str):
            out.append((r, 0))
        elif isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], int):
            out.append((r[0], r[1]))
        else:
            raise ValueError(f"buffer reference {r!r} must be 'name' or ('name', slot)")
    return tuple(out)


def _count(name: str, v) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ValueError(f"{name} must be an int >= 0, got {v!r}")
    return v


def copy(path: str, nbytes: int, *, pipe: str | None = None, reads=(), writes=(),
         tag: str | None = None, gm_region=None, burst_bytes: int | None = None) -> Instr:
    """A DataCopy of ``nbytes`` along ``path`` (e.g. ``"GM_to_UB"``) on its MTE/FixPipe pipe.
    ``gm_region`` (GM paths only): a hashable key of the GM bytes it touches, for the L2.
    ``burst_bytes`` (GM paths only): the bytes of the GM bursts it touches, when its GM
    bytes are not one contiguous run (a strided or gathered copy); see ``sim/cost.py``.

    Example::

        >>> copy("L1_to_L0A", 8192).pipe
        'MTE1'
        >>> copy("GM_to_L1", 8192, gm_region=("a", 0)).gm_region
        ('a', 0)
    """
    src, dst = path_scopes(path)
    if gm_region is not None:
        if "GM" not in (src, dst):
            raise ValueError(f"copy along {path} touches no GM; gm_region must be None, "
                             f"got {gm_region!r}")
        try:
            hash(gm_region)
        except TypeError:
            raise ValueError(f"gm_region must be hashable (a tuple of names and ints), "
                             f"got {gm_region!r}") from None
    if burst_bytes is not None:
        if "GM" not in (src, dst):
            raise ValueError(f"copy along {path} touches no GM; burst_bytes must be None, "
                             f"got {burst_bytes!r}")
        _count("burst_bytes", burst_bytes)
    if pipe is None:
        if path not in DEFAULT_PATH_PIPE:
            raise SpecError(f"path {path!r} has no default pipe; pass pipe=")
        pipe = DEFAULT_PATH_PIPE[path]
    return Instr(pipe, "copy", path=path, nbytes=_count("nbytes", nbytes),
                 reads=_bufrefs(reads), writes=_bufrefs(writes), tag=tag, gm_region=gm_region,
                 burst_bytes=burst_bytes)


def mmad(m: int, n: int, k: int, dtype: str = "f16", *, reads=(), writes=(),
         tag: str | None = None) -> Instr:
    """A Cube Mmad: (m x k) from L0A times (k x n) from L0B accumulated into L0C.

    Example::

        >>> mmad(16, 16, 16).flops
        8192
    """
    return Instr("CUBE", "mmad", m=_count("m", m), n=_count("n", n), k=_count("k", k),
                 dtype=dtype, reads=_bufrefs(reads), writes=_bufrefs(writes), tag=tag)


def vec(op: str, elems: int, dtype: str = "f16", *, reads=(), writes=(),
        tag: str | None = None) -> Instr:
    """A Vector instruction over ``elems`` elements of ``dtype``; ``op`` is an op name
    (``"exp"``, ``"add"`` ...) or directly an op class of the spec (``"transcendental"``).

    Example::

        >>> i = vec("exp", 1024, "f32")
        >>> i.op, i.nbytes
        ('transcendental', 4096)
    """
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"vec dtype {dtype!r} is not one of {sorted(DTYPE_BYTES)}")
    cls = VEC_OP_CLASS.get(op, op)
    return Instr("VECTOR", "vec", nbytes=_count("elems", elems) * DTYPE_BYTES[dtype],
                 dtype=dtype, op=cls, elems=elems, reads=_bufrefs(reads),
                 writes=_bufrefs(writes), tag=tag)


def scalar(cycles: int, *, pipe: str = "SCALAR", reads=(), writes=(),
           tag: str | None = None) -> Instr:
    """Scalar work of a known cost (address arithmetic, loop control) on the Scalar pipe.

    Example::

        >>> scalar(12).cycles
        12
    """
    _pipe(pipe)
    return Instr(pipe, "scalar", cycles=_count("cycles", cycles), reads=_bufrefs(reads),
                 writes=_bufrefs(writes), tag=tag)


def set_flag(src: str, dst: str, event_id: int = 0, *, tag: str | None = None) -> Instr:
    """``SetFlag<HardEvent::SRC_DST>(id)``: runs on ``src`` once its earlier instructions
    completed, and lets the matching ``wait_flag`` on ``dst`` proceed.

    Example::

        >>> set_flag("MTE2", "VECTOR", 0).pipe
        'MTE2'
    """
    _pipe(src), _pipe(dst)
    if src == dst:
        raise ValueError(f"set_flag: source and destination pipe are both {src}; "
                         f"use barrier({src!r})")
    return Instr(src, "set_flag", flag=(src, dst, _count("event_id", event_id)), tag=tag)


def wait_flag(src: str, dst: str, event_id: int = 0, *, tag: str | None = None) -> Instr:
    """``WaitFlag<HardEvent::SRC_DST>(id)``: blocks pipe ``dst`` until the flag is set, then
    clears it (the k-th wait consumes the k-th set).

    Example::

        >>> wait_flag("MTE2", "VECTOR", 0).pipe
        'VECTOR'
    """
    _pipe(src), _pipe(dst)
    if src == dst:
        raise ValueError(f"wait_flag: source and destination pipe are both {src}")
    return Instr(dst, "wait_flag", flag=(src, dst, _count("event_id", event_id)), tag=tag)


def cross_set_flag(pipe: str, event_id: int = 0, *, tag: str | None = None) -> Instr:
    """``CrossCoreSetFlag`` (mode 2, docs/npu-facts.md §A2): runs on ``pipe`` once its earlier
    work (and GM copies) finished, and lets the group partner's ``cross_wait_flag`` of the
    same id proceed.  Only in a :class:`Launch` with ``groups``.

    Example::

        >>> cross_set_flag("FIXP", 0).flag
        ('CROSS', 'CROSS', 0)
    """
    _pipe(pipe)
    eid = _count("event_id", event_id)
    if eid >= CROSS_FLAG_IDS:
        raise ValueError(f"cross-core flag id {eid} out of range 0..{CROSS_FLAG_IDS - 1}")
    return Instr(pipe, "cross_set", flag=("CROSS", "CROSS", eid), tag=tag)


def cross_wait_flag(pipe: str, event_id: int = 0, *, tag: str | None = None) -> Instr:
    """``CrossCoreWaitFlag``: blocks ``pipe`` until the group partner set the flag (the k-th
    wait takes the partner's k-th set).

    Example::

        >>> cross_wait_flag("MTE2", 0).kind
        'cross_wait'
    """
    _pipe(pipe)
    eid = _count("event_id", event_id)
    if eid >= CROSS_FLAG_IDS:
        raise ValueError(f"cross-core flag id {eid} out of range 0..{CROSS_FLAG_IDS - 1}")
    return Instr(pipe, "cross_wait", flag=("CROSS", "CROSS", eid), tag=tag)


def barrier(pipe: str = "ALL", *, tag: str | None = None) -> Instr:
    """``PipeBarrier<pipe>``; ``"ALL"`` (PIPE_ALL) holds every pipe of the core until all of
    them finished their earlier instructions.

    Example::

        >>> barrier().pipe
        'ALL'
    """
    if pipe != "ALL":
        _pipe(pipe)
    return Instr(pipe, "barrier", tag=tag)


def _pipe(p: str) -> str:
    if p not in PIPES:
        raise ValueError(f"unknown pipe {p!r}; pipes are {PIPES}")
    return p


@dataclass
class CoreProgram:
    """The instructions one program of the grid issues on one core, in issue order.

    ``core`` is ``"AIC"`` (Cube core) or ``"AIV"`` (Vector core); on a coupled part both run
    on the combined AI core.

    Example::

        >>> p = CoreProgram("AIC", [mmad(64, 64, 64)], name="pid0")
        >>> len(p)
        1
    """

    core: str
    instrs: list = field(default_factory=list)
    name: str = ""
    # ``(base, positions)`` when ``instrs`` is the list ``base`` but at ``positions`` (a
    # recorded stream placed for one program, sim/stream_places.py): the queue compiler
    # then looks up ``base`` once for all the programs placed from it
    placed_from: tuple | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.core not in CORE_KINDS:
            raise ValueError(f"CoreProgram core must be one of {CORE_KINDS}, got {self.core!r}")

    def __len__(self) -> int:
        return len(self.instrs)


@dataclass
class Launch:
    """A grid launch: one :class:`CoreProgram` per program, in program-id order.

    ``groups`` (a mixed AIC + AIV kernel on a separated part, Ascend's MIX_AIC_1_1): pairs
    ``(aic program index, aiv program index)`` covering every program once.  A group runs on
    one AI core (AIC ``j`` and AIV ``2j``), both programs starting together when both cores
    are free, and its programs pass ``cross_set``/``cross_wait`` flags to each other.

    Example::

        >>> Launch([CoreProgram("AIV", [vec("add", 128)])] * 4).instr_count
        4
        >>> Launch([CoreProgram("AIC"), CoreProgram("AIV")], groups=[(0, 1)]).groups
        [(0, 1)]
    """

    programs: Sequence[CoreProgram]
    name: str = "launch"
    groups: Sequence[tuple] | None = None

    def __post_init__(self):
        self.programs = list(self.programs)
        for i, p in enumerate(self.programs):
            if not isinstance(p, CoreProgram):
                raise TypeError(f"Launch program {i} is a {type(p).__name__}, not a CoreProgram")
        if self.groups is not None:
            self.groups = [tuple(g) for g in self.groups]
            seen = sorted(i for g in self.groups for i in g)
            if seen != list(range(len(self.programs))):
                raise ValueError("Launch groups must cover every program index exactly once, "
                                 f"got {self.groups}")
            for g in self.groups:
                kinds = tuple(self.programs[i].core for i in g)
                if kinds != ("AIC", "AIV"):
                    raise ValueError(f"Launch group {g} must be (AIC program, AIV program), "
                                     f"got kinds {kinds}")

    @property
    def instr_count(self) -> int:
        """Total instructions over all programs."""
        return sum(len(p.instrs) for p in self.programs)
