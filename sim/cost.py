"""Single-instruction costs, read from the spec's tables (override them through the spec).

The cost of an instruction is what it takes alone on an idle chip, in integer cycles:

* ``mmad(m, n, k)``: ``cube_startup + ceil(ceil(m/16) ceil(n/16) ceil(k/16) / cube_rate[dtype])``
  (16 = ``cube_fractal``; i8 runs 2 steps per cycle, f32 a quarter).
* ``vec``: ``vector_startup + ceil(ceil(nbytes / 256) x vector_op_cost[op class])``.
* ``copy``: bytes are first rounded up to the alignment of both scopes of the path
  (UB/L1 32 B, L0A/L0B 512 B, L0C 64 B); a copy touching GM moves whole GM bursts
  (``alignment["GM"]``: 512 B on the Ascend presets, docs/npu-facts.md §A6): its
  ``burst_bytes`` (the bursts its real offsets touch, as the stream recorder counts them:
  a strided or gathered copy pays per burst touched) or, without them, its bytes rounded
  up to the burst (one contiguous run starting on a burst boundary); then
  ``path.latency + ceil(bytes / rate)`` occupies the pipe, with ``rate`` the port rate
  (for a path touching GM, ``min(port rate, HBM rate)``; with other transfers in flight HBM
  is shared and the copy takes longer: the engine).  A GM copy's data lands
  ``hbm_latency`` cycles after its transfer: the pipe may already issue its next copy
  (DMA requests pipeline), but a later ``set_flag``/``barrier`` on that pipe, and the end
  of the program, wait for the landing.  Alone, a GM copy costs
  ``path.latency + ceil(bytes / rate) + hbm_latency``.
* ``scalar``: its ``cycles``; ``set_flag`` / ``wait_flag`` / ``barrier``: ``sync_cycles``
  (a wait's blocked time is a stall, not part of its cost).

Example::

    >>> from npujit.target import TINY
    >>> from npujit.sim.isa import mmad, copy
    >>> instr_cycles(mmad(32, 32, 32), TINY)     # startup 10 + 2*2*2 steps
    18
    >>> instr_cycles(copy("GM_to_UB", 100), TINY)  # 10 + 100 latency, 128 B at 64 B/cycle
    112
"""
from __future__ import annotations

import math

from .isa import Instr
from npujit.target import NPUSpec, SpecError, path_scopes


def round_up(n: int, align: int) -> int:
    """``n`` rounded up to a multiple of ``align``.

    Example::

        >>> round_up(100, 32)
        128
    """
    return -(-n // align) * align


def copy_bytes(path: str, nbytes: int, spec: NPUSpec, burst_bytes: int | None = None) -> int:
    """Bytes a copy really moves: rounded up to the alignment of its source and destination;
    on a GM path at least ``burst_bytes`` (the GM bursts it touches) when given, else the
    bytes rounded up to the GM burst (one contiguous run from a burst boundary).

    Example::

        >>> from npujit.target import TINY, ASCEND_910B_LIKE
        >>> copy_bytes("L1_to_L0A", 100, TINY)   # L0A fractal = 512 B
        512
        >>> copy_bytes("GM_to_UB", 100, ASCEND_910B_LIKE)   # one 512 B HBM burst
        512
        >>> copy_bytes("GM_to_UB", 4096, ASCEND_910B_LIKE, burst_bytes=16 * 512)   # strided
        8192
    """
    src, dst = path_scopes(path)
    if burst_bytes is None or "GM" not in (src, dst):
        return round_up(nbytes, max(spec.alignment[src], spec.alignment[dst]))
    chip = dst if src == "GM" else src
    return max(round_up(nbytes, spec.alignment[chip]), burst_bytes)


def copy_terms(path: str, nbytes: int, spec: NPUSpec,
               burst_bytes: int | None = None) -> tuple[int, int, int, float, bool]:
    """``(issue latency, landing latency, moved bytes, rate in bytes/cycle, touches GM)`` of
    one copy, uncontended (``burst_bytes``: see :func:`copy_bytes`).  The pipe is busy for
    ``issue + ceil(moved / rate)``.

    Example::

        >>> from npujit.target import TINY
        >>> copy_terms("UB_to_GM", 64, TINY)
        (10, 100, 64, 64, True)
    """
    if path not in spec.paths:
        raise SpecError(f"{spec.name} has no path {path!r}; paths are {sorted(spec.paths)}")
    port = spec.paths[path]
    moved = copy_bytes(path, nbytes, spec, burst_bytes)
    if path.startswith("GM_") or path.endswith("_GM"):
        return (port.latency, spec.hbm_latency_cycles, moved,
                min(port.bytes_per_cycle, spec.hbm_bytes_per_cycle), True)
    return port.latency, 0, moved, port.bytes_per_cycle, False


def copy_occupancy(path: str, nbytes: int, spec: NPUSpec, burst_bytes: int | None = None) -> int:
    """Cycles a copy keeps its pipe busy when uncontended (without the landing latency).

    Example::

        >>> from npujit.target import TINY
        >>> copy_occupancy("GM_to_UB", 6400, TINY)   # 10 + 6400 / 64
        110
    """
    issue, _, moved, rate, _ = copy_terms(path, nbytes, spec, burst_bytes)
    return issue + math.ceil(moved / rate)


def copy_cycles(path: str, nbytes: int, spec: NPUSpec, burst_bytes: int | None = None) -> int:
    """Cycles of one copy alone on an idle chip, until its data has landed.

    Example::

        >>> from npujit.target import TINY
        >>> copy_cycles("L1_to_L0B", 1024, TINY), copy_cycles("GM_to_UB", 6400, TINY)
        (14, 210)
    """
    issue, landing, moved, rate, _ = copy_terms(path, nbytes, spec, burst_bytes)
    return issue + math.ceil(moved / rate) + landing


def mmad_cycles(m: int, n: int, k: int, dtype: str, spec: NPUSpec) -> int:
    """Cycles of one Mmad: fractal steps at the dtype's rate, plus startup.

    Example::

        >>> from npujit.target import TINY
        >>> mmad_cycles(128, 128, 128, "i8", TINY)   # 512 steps at 2 per cycle + 10
        266
    """
    if dtype not in spec.cube_rate:
        raise SpecError(f"{spec.name}: the Cube has no rate for dtype {dtype!r}; "
                        f"known: {sorted(spec.cube_rate)}: the NPU's Cube does not multiply "
                        f"{dtype} tiles; cast them to one it does (e.g. a.to(nl.float32)), "
                        "or run the kernel on a CPU backend ('llvm', the default, or "
                        "'numba') or on 'reference'")
    f = spec.cube_fractal
    steps = -(-m // f) * -(-n // f) * -(-k // f)
    return spec.cube_startup_cycles + math.ceil(steps / spec.cube_rate[dtype])


def vec_cycles(op_class: str, nbytes: int, spec: NPUSpec) -> int:
    """Cycles of one Vector instruction: repeats of 256 B times the op class's cost.

    Example::

        >>> from npujit.target import TINY
        >>> vec_cycles("transcendental", 4096, TINY)   # 10 + 16 repeats x 4
        74
    """
    if op_class not in spec.vector_op_cost:
        raise SpecError(f"{spec.name}: unknown vector op class {op_class!r}; "
                        f"classes: {sorted(spec.vector_op_cost)}")
    repeats = -(-nbytes // spec.vector_bytes_per_cycle)
    return spec.vector_startup_cycles + math.ceil(repeats * spec.vector_op_cost[op_class])


def instr_cycles(ins: Instr, spec: NPUSpec) -> int:
    """The standalone cost of any instruction in cycles (see the module docstring).

    Example::

        >>> from npujit.target import TINY
        >>> from npujit.sim.isa import vec, set_flag
        >>> instr_cycles(vec("add", 128, "f32"), TINY)
        12
        >>> instr_cycles(set_flag("MTE2", "VECTOR"), TINY)
        1
    """
    kind = ins.kind
    if kind == "copy":
        return copy_cycles(ins.path, ins.nbytes, spec, ins.burst_bytes)
    if kind == "mmad":
        return mmad_cycles(ins.m, ins.n, ins.k, ins.dtype, spec)
    if kind == "vec":
        return vec_cycles(ins.op, ins.nbytes, spec)
    if kind == "scalar":
        return ins.cycles
    if kind in ("set_flag", "wait_flag", "barrier", "cross_set", "cross_wait"):
        return spec.sync_cycles
    raise SpecError(f"unknown instruction kind {kind!r}")


def gm_bytes(ins: Instr, spec: NPUSpec) -> int:
    """Bytes an instruction moves to or from GM (0 for everything but GM copies).

    Example::

        >>> from npujit.target import TINY
        >>> from npujit.sim.isa import copy
        >>> gm_bytes(copy("GM_to_UB", 100), TINY), gm_bytes(copy("L1_to_L0A", 512), TINY)
        (128, 0)
    """
    if ins.kind != "copy":
        return 0
    _, _, moved, _, touches_gm = copy_terms(ins.path, ins.nbytes, spec, ins.burst_bytes)
    return moved if touches_gm else 0
