"""A lower bound on a launch's cycles read from its scheduled IR, without running a program:
the autotuner prunes with it before recording a config's launch, and tries the configs in
its order (the lowest bound first), so a good config is measured early.

It must never exceed the simulated cycles, so every quantity is one the launch cannot do
with less of (docs/autotune.md, "The IR bound"):

* **Which ops run.**  Ops at the top level run once per program; the body of an
  ``scf.for`` whose bounds are known (constants, launch arguments, the program id's range,
  the grid's size, and sums and products of these) runs at least ``ceil((hi_min - lo_max) / step)`` times;
  anything under an ``scf.if`` or ``scf.while``, or in a loop of unknown bounds, counts
  zero times.
* **What a copy moves.**  A block copy moves its block clipped to the array on each
  boundary-checked axis: with the offsets' range (from the same interval arithmetic, loop
  carried offsets advanced by a constant step included) the in-bounds extent is at least
  ``min(block, block + min(0, off_lo), shape - off_hi)``, else zero.  HBM moves whole
  512 B bursts (``spec.alignment["GM"]``): rows of a 2-D tile farther apart than a burst
  never share one, so the tile moves at least ``rows x ceil(row bytes / 512) x 512`` B;
  otherwise its bytes rounded up to the burst.  A pointer copy with a mask moves an unknown
  number of lanes and counts zero; without one, its lanes' bytes.
* **Port time.**  A GM copy keeps its port (MTE2 for loads, FixPipe or MTE3 for stores)
  ``issue + ceil(moved / min(port rate, HBM rate))`` cycles (``copy_occupancy``); a dot
  keeps the Cube ``mmad_cycles`` and MTE1 its two L1 -> L0 copies.  Vector and scalar work
  count zero.

Every program gets the same counts (they hold for every program id in the grid), so with
``P`` programs on ``C`` cores of the kernel's kind some core runs ``ceil(P / C)`` of them
one after another, and each of its pipes does their work serially:
``T >= ceil(P / C) x work_pipe (+ the last copy's landing, hbm_latency or l2_latency)``.
HBM carries every byte that must reach it (with an L2, the stores only):
``T >= issue + P x bytes / HBM bytes per cycle + hbm_latency``.  On a separated part a
kernel with a dot counts only its AIC side (Cube, MTE1, FixPipe, the MTE2 loads into L1),
on AIC cores: its vector side may be split over AIV cores; a kernel without one runs on
AIV cores.

Example::

    >>> b = ir_bound(compiled.ir, (16, 16), named_args, ASCEND_910B_LIKE)   # doctest: +SKIP
    >>> b.cycles <= kernel.simulate(...).cycles                               # doctest: +SKIP
    True
"""
from __future__ import annotations

import math

from npujit.ir.core import loop_carried
from npujit.ir.ops import Kind
from npujit.target import NPUSpec

from .cost import copy_occupancy, mmad_cycles, round_up
from .roofline import RooflineBound

# The pipes the bound counts, by the names of sim/roofline.py's terms.
PIPES = {"CUBE": "cube", "MTE1": "mte1", "MTE2": "mte2", "MTE3": "mte3", "FIXP": "fixpipe"}
# Kinds whose result interval follows from their operands'.
_ARITH = {Kind.ADD: lambda a, b: (a[0] + b[0], a[1] + b[1]),
          Kind.SUB: lambda a, b: (a[0] - b[1], a[1] - b[0]),
          Kind.MUL: lambda a, b: (min(x * y for x in a for y in b),
                                  max(x * y for x in a for y in b))}


class _Bound:
    """Walks the scheduled IR once, keeping integer intervals of the scalars."""

    def __init__(self, fn, grid, named: dict, spec: NPUSpec):
        self.spec = spec
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.iv: dict = {}
        for v in fn.args:
            x = named.get(v.name)
            if isinstance(x, (int, bool)) or (getattr(x, "shape", None) == ()
                                              and getattr(x, "dtype", None) is not None
                                              and x.dtype.kind in "iub"):
                self.iv[v] = (int(x), int(x))
        # (core side, pipe) -> cycles per program; the side is the core kind a separated
        # part runs the work on (UB copies on the AIV, the rest of a Cube kernel on the AIC)
        self.work: dict[tuple, float] = {}
        self.gm_pipes: set = set()
        self.hbm_bytes = 0.0                  # per program, that must reach HBM
        self.issue_min = math.inf

    # --- scalars -------------------------------------------------------------------
    def interval(self, v):
        got = self.iv.get(v)
        if got is not None or v in self.iv:
            return got
        op = v.op
        r = None
        if op is not None and not op.regions:
            if op.kind is Kind.CONSTANT:
                val = op.attrs.get("value")
                if isinstance(val, (int, bool)):
                    r = (int(val), int(val))
            elif op.kind is Kind.PROGRAM_ID:
                r = (0, self.grid[op.attrs["axis"]] - 1)
            elif op.kind is Kind.NUM_PROGRAMS:
                r = (self.grid[op.attrs["axis"]],) * 2
            elif op.kind is Kind.CAST and op.operands and _is_int(op.result.type) \
                    and _is_int(op.operands[0].type):
                r = self.interval(op.operands[0])
            elif op.kind in _ARITH and len(op.operands) == 2 and _is_int(op.result.type):
                a, b = (self.interval(x) for x in op.operands)
                if a is not None and b is not None:
                    r = _ARITH[op.kind](a, b)
        self.iv[v] = r
        return r

    # --- ops -----------------------------------------------------------------------
    def walk(self, block, mult: float) -> None:
        for op in block.ops:
            k = op.kind
            if k is Kind.FOR:
                self.loop(op, mult)
            elif op.regions:        # scf.if, scf.while: may not run
                continue
            elif mult and k in (Kind.BLOCK_LOAD, Kind.BLOCK_STORE):
                self.block_copy(op, mult)
            elif mult and k in (Kind.LOAD, Kind.STORE):
                self.lanes_copy(op, mult)
            elif mult and k is Kind.DOT:
                self.dot(op, mult)

    def loop(self, op, mult: float) -> None:
        lo, hi, step = (self.interval(v) for v in op.operands[:3])
        body = op.regions[0]
        known = None not in (lo, hi, step) and step[0] == step[1] and step[0] > 0
        s = step[0] if known else 0
        trips_min = max(0, -(-(hi[0] - lo[1]) // s)) if known else 0
        trips_max = max(0, -(-(hi[1] - lo[0]) // s)) if known else None
        iv_arg = body.args[0]
        self.iv[iv_arg] = (lo[0], max(lo[0], hi[1] - 1)) if known else None
        for init, arg, nxt, res in loop_carried(op):
            # in the body after j < trips_max trips; the result after j <= trips_max
            self.iv[arg] = self.carried(init, arg, nxt, None if trips_max is None else
                                        max(0, trips_max - 1))
            self.iv[res] = self.carried(init, arg, nxt, trips_max)
        self.walk(body, mult * trips_min)

    def carried(self, init, arg, nxt, trips):
        """The range of a loop-carried scalar after at most ``trips`` trips: kept, or
        advanced by a constant each trip."""
        if not _is_int(arg.type):
            return None
        first = self.interval(init)
        if first is None:
            return None
        if nxt is arg:
            return first
        op = nxt.op if nxt is not None else None
        if op is None or op.kind is not Kind.ADD or trips is None:
            return None
        a, b = op.operands
        other = b if a is arg else a if b is arg else None
        c = self.interval(other) if other is not None else None
        if c is None:
            return None
        return (first[0] + min(0, c[0] * trips), first[1] + max(0, c[1] * trips))

    def block_copy(self, op, mult: float) -> None:
        block = tuple(op.attrs["block_shape"])
        shape, strides, offsets = op.block_layout()
        checked = set(op.attrs.get("boundary_check", ()))
        ext = []
        for d, b in enumerate(block):
            if d not in checked:
                ext.append(b)
                continue
            s, o = self.interval(shape[d]), self.interval(offsets[d])
            ext.append(0 if s is None or o is None else
                       max(0, min(b, b + min(0, o[0]), s[0] - o[1])))
        ty = op.result.type if op.kind is Kind.BLOCK_LOAD else op.operands[-1].type
        size = ty.dtype.itemsize
        nbytes = math.prod(ext) * size
        if not nbytes:
            return
        burst = self.spec.alignment["GM"]
        moved = round_up(nbytes, burst)
        st = [self.interval(x) for x in strides]
        if len(block) == 2 and st[1] == (1, 1) and st[0] is not None and st[0][0] == st[0][1] \
                and abs(st[0][0]) * size >= ext[1] * size > 0:
            # rows of `row` bytes, `pitch` apart: each touches ceil(row / burst) bursts,
            # and a burst holds bytes of at most (burst + row - 2) // pitch + 1 rows
            row, pitch = ext[1] * size, abs(st[0][0]) * size
            share = (burst + row - 2) // pitch + 1
            moved = max(moved, -(-ext[0] * -(-row // burst) // share) * burst)
        self.gm_copy(op, nbytes, moved, mult)

    def lanes_copy(self, op, mult: float) -> None:
        n = len(op.operands)
        mask_at = op.info.operand_index("mask", n)
        if mask_at is not None and op.operands[mask_at] is not None:
            return                           # how many lanes are on is not known here
        offs = op.operands[op.info.operand_index("offsets", n)]
        ty = op.result.type if op.kind is Kind.LOAD else op.operands[2].type
        nbytes = getattr(offs.type, "numel", 1) * ty.dtype.itemsize
        self.gm_copy(op, nbytes, 0, mult)

    def gm_copy(self, op, nbytes: int, moved_min: int, mult: float) -> None:
        spec = self.spec
        if op.kind in (Kind.LOAD, Kind.BLOCK_LOAD):
            pipe, path = "MTE2", f"GM_to_{_name(op.attrs.get('scope', 'UB'))}"
        else:
            pipe = _name(op.attrs.get("pipe", "MTE3"))
            path = "L0C_to_GM" if pipe == "FIXP" else "UB_to_GM"
        if path not in spec.paths:
            return
        port = spec.paths[path]
        side = "AIV" if path in ("GM_to_UB", "UB_to_GM") else "AIC"
        self.add(side, pipe, mult * copy_occupancy(path, nbytes, spec, moved_min))
        self.gm_pipes.add((side, pipe))
        self.issue_min = min(self.issue_min, port.latency)
        moved = max(round_up(nbytes, 32), moved_min)
        if not spec.l2_bytes or pipe != "MTE2":
            self.hbm_bytes += mult * moved

    def dot(self, op, mult: float) -> None:
        a, b = op.operands[0].type, op.operands[1].type
        if a.dtype.name not in self.spec.cube_rate or "L1_to_L0A" not in self.spec.paths:
            return
        rows = a.numel // a.shape[-1]
        self.add("AIC", "CUBE", mult * mmad_cycles(rows, b.shape[-1], a.shape[-1],
                                                   a.dtype.name, self.spec))
        self.add("AIC", "MTE1", mult * (copy_occupancy("L1_to_L0A", a.nbytes, self.spec) +
                                        copy_occupancy("L1_to_L0B", b.nbytes, self.spec)))

    def add(self, side: str, pipe: str, cycles: float) -> None:
        self.work[(side, pipe)] = self.work.get((side, pipe), 0.0) + cycles


def _name(attr) -> str:
    """A pipe or scope attribute's name (they are enums of str)."""
    return str(getattr(attr, "value", attr))


def _is_int(ty) -> bool:
    dt = getattr(ty, "dtype", None)
    return getattr(ty, "shape", None) == () and dt is not None and (dt.is_int or dt.is_bool)


def ir_bound(fn, grid, named: dict, spec: NPUSpec) -> RooflineBound:
    """The lower bound on the cycles of the scheduled ``fn`` launched on ``grid``, with the
    launch's arguments by name (``named``: the integers give loop bounds, shapes, strides)."""
    w = _Bound(fn, grid, named, spec)
    w.walk(fn.body, 1.0)
    programs = math.prod(w.grid)
    terms: dict[str, float] = {}
    kind = fn.attrs.get("npu.core", "AIC")      # "AIC" when the kernel has a dot
    # coupled: a program runs whole on one core; separated: count only the side of the
    # kernel's kind (a Cube kernel's vector side may be spread over AIV cores)
    sides = ("AIC", "AIV") if spec.arch == "coupled" else (kind,)
    cores = spec.core_counts.get(spec.core_kind_for(kind), 0)
    if cores and programs:
        landing = spec.hbm_latency_cycles
        if spec.l2_bytes:
            landing = min(landing, spec.l2_latency_cycles)
        per_core = -(-programs // cores)
        for pipe, name in PIPES.items():
            c = sum(w.work.get((side, pipe), 0.0) for side in sides)
            if c:
                lands = any((side, pipe) in w.gm_pipes for side in sides)
                terms[name] = per_core * c + (landing if lands else 0)
    if w.hbm_bytes:
        terms["hbm"] = (w.issue_min + programs * w.hbm_bytes / spec.hbm_bytes_per_cycle +
                        spec.hbm_latency_cycles)
    if not terms:
        return RooflineBound(0.0, "none", {})
    best = max(terms, key=lambda t: terms[t])
    kinds = {"cube": "cube", "hbm": "hbm"}
    return RooflineBound(terms[best], kinds.get(best, "port"), terms)
