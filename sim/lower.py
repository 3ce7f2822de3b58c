"""From a scheduled kernel and a real launch to the simulator's instruction streams.

``StreamRecorder(fn)`` is the hook a backend calls for every op it executes
(``run_recorded`` in ``backends/base.py``: the reference interpreter directly, numba by
replaying what its recording build did), so trip counts, masks and data-dependent work are
the real ones; the simulator never runs a kernel itself.  Each executed op emits what its
schedule attributes (``ir/schedule/model.py``) say:

* its ``wait_flags`` (each on the flag's destination pipe), then its instructions, then
  its ``set_flags`` (each on the source pipe); a rotating flag ``X_Y:0..1`` uses id
  ``0 + i % 2`` with ``i`` the iteration of the innermost running loop;
* ``scf.for``: ``wait_flags`` and ``pre_set_flags`` (every id) before the loop,
  ``post_wait_flags`` (every id) and ``set_flags`` after it; ``scf.while`` the same, and
  ``scf.if`` its ``wait_flags`` before and ``set_flags`` after whichever region ran (the
  recording follows the branch the numbers take); each decision of an ``scf.if`` and
  each test of an ``scf.while`` condition is one ``scalar`` instruction of
  ``BRANCH_CYCLES`` on the scalar unit;
* loads/stores: one copy of the bytes really moved (masked-off lanes and out-of-bounds
  block rows/columns move nothing; ``DataCopyPad``, docs/npu-facts.md §A6) on
  ``GM_to_<scope>`` / ``UB_to_GM`` / ``L0C_to_GM``; with a ``spec``, a copy whose GM bytes
  are not one run from a burst boundary carries ``burst_bytes``, the GM bursts its real
  offsets touch (``sim/bursts.py``); with ``gm_regions=True`` (what
  ``kernel.simulate`` asks for) each carries the GM region it touches, for the L2 model
  (``gm_region`` in ``sim/gm_access.py``); a region no other copy of the launch touches becomes
  ``sim.l2.ONCE``, so programs that differ only in which tiles they stream keep
  identical streams and share one ``CoreProgram`` (with or without regions);
* dot: ``L1_to_L0A`` and ``L1_to_L0B`` copies (MTE1) and one ``mmad(m, n, k)`` (CUBE);
  a dot with ``k_chunk`` (``L0_BLOCK_K``) does that per K-chunk, its ``M_MTE1`` /
  ``MTE1_M`` flags rotating per chunk (``i * chunks + c``) so MTE1 fills one L0 slot while
  the Cube works on the other;
  an L0C store without FixPipe: ``L0C_to_UB`` (VECTOR) then ``UB_to_GM`` (MTE3);
* vector ops: one ``vec`` per op (per op of a fused region) over its largest tile;
* ``npu.handoff`` (``ir/schedule/split_cores.py``): on the sending core, the copy of the
  tile into its GM workspace slot (FIXP ``L0C_to_GM`` or MTE3 ``UB_to_GM``) and a
  ``cross_set``; on the receiving core, the ``cross_wait`` and MTE2's copy into its buffer
  (``GM_to_UB`` or ``GM_to_L1``).  Inside a loop a workspace slot per buffer slot: the
  receiver ``cross_set``s the flag back after reading (pre-set once per slot before the
  loop), the sender waits for it before rewriting the slot (drained after the loop);
* with a separated ``spec`` (910B), a program with both Cube and Vector work becomes an
  AIC program and an AIV program (``sim/split.py`` deals the stream by pipe, the
  cross-core flags as recorded); the launch pairs them in ``groups``;
* SCALAR ops, the Cube's zero init and FixPipe casts emit nothing (their cost is folded
  into the neighbours; the scalar unit is not modelled, see sim/README.md); the first
  mmad after a zero init writes its accumulator without reading it (Ascend's ``Mmad``
  with ``cmatrixInitVal``), so the race detector sees no read of an unwritten L0C.

Example::

    >>> rec = StreamRecorder(fn, gm_regions=True, spec=ASCEND_910B_LIKE)   # doctest: +SKIP
    >>> get_backend("reference").run_recorded(fn, (4,), [x, y, out, 4096], rec)  # doctest: +SKIP
    >>> simulate(rec.launch("add"), ASCEND_910B_LIKE).cycles              # doctest: +SKIP
"""
from __future__ import annotations

import math
import os

from npujit.ir.ops import CONTROL, LOOPS, OWN_REGION, Kind, vec_op_name
from npujit.ir.schedule import CORE_ATTR, value_buffers
from npujit.ir.schedule.model import (LoopIterations, enclosing_loop, is_folded_cast,
                                      operand_stages)
from npujit.target import Pipe, Scope

from .gm_access import _Access, _active_offsets, _moved
from .isa import (CoreProgram, Launch, copy, cross_set_flag, cross_wait_flag, mmad, scalar,
                  set_flag, vec, wait_flag)
from .l2 import ONCE
from .split import SplitTemplate, needs_split
from .stream_places import LaunchPlaces


# Cycles the scalar unit spends deciding one scf.if or testing one scf.while condition
# (compare + branch on values already in scalar registers).  Assumed, not from a public
# figure: a few cycles, small next to any copy or vector instruction.
BRANCH_CYCLES = 4


def _once_regions(streams: list) -> list:
    """Replace the gm_region of every copy whose region no other copy touches by ONCE."""
    touches: dict = {}
    for *_, instrs in streams:
        for ins in instrs:
            if ins.gm_region is not None:
                touches[ins.gm_region] = touches.get(ins.gm_region, 0) + 1
    if all(n > 1 for n in touches.values()):
        return streams
    out = []
    for *head, instrs in streams:
        out.append((*head, [ins._replace(gm_region=ONCE) if ins.gm_region is not None
                            and touches[ins.gm_region] == 1 else ins for ins in instrs]))
    return out



class _Template:
    """A recorded stream with what depends on where its GM copies go taken out: ``instrs``
    (as recorded) and ``marks``, one ``(position, event, op)`` per GM copy (``event``:
    where the recording backend's events for that op start, for
    :meth:`StreamRecorder.repeat`).  A program's ``places`` are one ``(gm_region,
    burst_bytes)`` per mark.  ``cross_sides``: the core of each cross-core flag
    instruction, by position (``sim/split.py``)."""

    __slots__ = ("instrs", "marks", "cross_sides", "_placed", "accesses")

    def __init__(self, instrs: list, marks: tuple, cross_sides: dict):
        self.instrs, self.marks, self.cross_sides = instrs, marks, cross_sides
        self.accesses = None       # the recorder's _Access of each mark, once repeated
        self._placed: dict = {}    # (id of a marked Instr, place) -> the placed Instr

    def with_regions(self, places) -> list:
        """The stream with each mark's ``(gm_region, burst_bytes)`` from ``places``.  A
        copy placed the same way in several programs is one ``Instr`` object in all of
        them (the queue compiler then finds it by identity instead of hashing it)."""
        out = list(self.instrs)
        placed = self._placed
        for (pos, _, _), place in zip(self.marks, places):
            ins = out[pos]
            if ins.gm_region != place[0] or ins.burst_bytes != place[1]:
                key = (id(ins), place)
                new = placed.get(key)
                if new is None:
                    new = placed[key] = ins._replace(gm_region=place[0], burst_bytes=place[1])
                out[pos] = new
        return out


class StreamRecorder:
    """The interpreter hook that turns executed ops into one ``CoreProgram`` per program.
    Identical streams share one ``CoreProgram`` object (the engine compiles it once).

    A recording backend that knows two programs executed alike (numba: the same events
    but for the GM regions) calls :meth:`repeat` for the second instead of replaying it:
    the stream is the first one's with the regions of the second.

    Example::

        >>> rec = StreamRecorder(fn)                        # doctest: +SKIP
        >>> Plan(fn).run(grid, args, hook=rec)              # doctest: +SKIP
        >>> rec.programs[0].core                            # doctest: +SKIP
        'AIV'
    """

    def __init__(self, fn, gm_regions: bool = False, spec=None):
        if CORE_ATTR not in fn.attrs:
            raise ValueError(f"kernel '{fn.name}' is not scheduled; run npujit.ir.schedule."
                             "schedule(fn, spec) first")
        self.fn = fn
        self.gm_regions = gm_regions
        self.spec = spec
        self.groups = None              # (AIC, AIV) program index pairs of a split launch
        self.split = False              # the kernel hands values between AIC and AIV
        self.core = fn.attrs[CORE_ATTR]
        self.buffers = value_buffers(fn)
        self._walked: list = []         # (index, pid, template, places) per walked program
        self._repeats: list = []        # (template, Repeats) of programs recorded alike
        self._events = None             # the recording's replay (its events), for repeats
        self._count = 0                 # programs recorded so far
        self._templates: dict = {}      # stream without regions -> its _Template
        self.template: _Template | None = None   # the last recorded program's
        self._programs: list[CoreProgram] | None = None
        self._tags: dict[int, str] = {}
        self.instrs: list = []
        self.marks: list = []
        self.loops = LoopIterations()
        self.slots: dict[str, int] = {}  # buffer -> slot its last write went to
        self.zeroed: set = set()         # L0C buffers the Cube zeroed, not yet accumulated
        self._accesses: dict = {}        # id(load/store op) -> its _Access
        self.cross_sides: dict = {}      # position of a cross-core flag -> its core
        self.returns: dict = {}          # id(loop) -> the hand-offs whose slots it rotates
        for op in fn.walk():
            if op.kind is Kind.HANDOFF:
                self.split = True
                if len(op.attrs["cross_flags"]) > 1:
                    self.returns.setdefault(id(enclosing_loop(op)), []).append(op)

    # --- hook protocol (backends/reference/interpreter.py Plan.run) ------------------
    def begin(self, program) -> None:
        self.instrs, self.loops, self.slots, self.zeroed = [], LoopIterations(), {}, set()
        self.marks, self.cross_sides = [], {}

    @property
    def burst(self) -> int:
        """The GM burst (bytes) whose runs a recording counts; 0 without a spec."""
        return self.spec.alignment["GM"] if self.spec is not None else 0

    def end(self, program) -> None:
        instrs = self.instrs
        places = tuple((instrs[pos].gm_region, instrs[pos].burst_bytes)
                       for pos, _, _ in self.marks)
        marked = {pos for pos, _, _ in self.marks}
        key = tuple(ins._replace(gm_region=None, burst_bytes=None) if pos in marked else ins
                    for pos, ins in enumerate(instrs))
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = _Template(instrs, tuple(self.marks),
                                                        self.cross_sides)
        self.template = template
        index = getattr(program, "index", None)
        self._walked.append((self._count if index is None else index, program.pid, template,
                             places))
        self._count += 1
        self._programs = None

    def repeat(self, repeats, template: _Template, events) -> None:
        """Record the programs ``repeats`` (``backends/numba/record.py`` ``Repeats``: each
        ran exactly as the one ``template`` was recorded from, but for where its GM copies
        go) as ``template``'s stream; where their copies go is read from ``events.ev``
        (``events.runs``: with burst-runs rows) when the launch is asked for
        (``sim/stream_places.py``), a mark's events ``event`` rows after a program's start
        row as marked in the template."""
        self._repeats.append((template, repeats))
        self._events = events
        self._count += len(repeats)
        self._programs = None

    def launch(self, name: str | None = None) -> Launch:
        """The recorded launch: its programs and, on a split part, their AIC/AIV groups."""
        programs = self.programs
        return Launch(programs, name=name or self.fn.name, groups=self.groups)

    @property
    def programs(self) -> list[CoreProgram]:
        """One ``CoreProgram`` per recorded program; identical streams share one object."""
        if self._programs is None:
            ev = self._events.ev if self._events is not None else None
            runs = self._events.runs if self._events is not None else False
            placed = LaunchPlaces(self._walked, self._repeats, ev, runs, self._access)
            self.groups = None
            separated = self.spec is not None and self.spec.arch == "separated"
            if self.split or (separated and any(needs_split(t.instrs)
                                                for t in self._templates.values())):
                self._programs = self._split_programs(placed.streams())
            else:
                self._programs = placed.shared_programs(self.core, self.fn.name)
        return self._programs

    def _split_programs(self, recorded: list) -> list[CoreProgram]:
        """A separated part: every ``(pid, template, places)`` program split into an AIC
        and an AIV program (``sim/split.py``), paired in ``groups``."""
        streams, splits = [], {}
        for pid, template, places in recorded:
            split = splits.get(id(template))
            if split is None:      # once per distinct stream; its programs differ in regions
                split = splits[id(template)] = SplitTemplate(
                    template.with_regions(places), [pos for pos, _, _ in template.marks],
                    pid, template.cross_sides)
            aic, aiv = split.place(pid, places)
            streams += [(pid, "AIC", aic), (pid, "AIV", aiv)]
        self.groups = [(i, i + 1) for i in range(0, len(streams), 2)]
        distinct: dict[tuple, CoreProgram] = {}
        programs = []
        for pid, core, instrs in _once_regions(streams):
            key = (core, tuple(instrs))
            prog = distinct.get(key)
            if prog is None:
                prog = distinct[key] = CoreProgram(core, instrs, name=f"{self.fn.name}{pid}")
            programs.append(prog)
        return programs

    def before(self, program, op, operands) -> None:
        if op.kind in CONTROL:
            self._flags_of(op, "wait_flags", wait=True)
            self._flags_of(op, "pre_set_flags", wait=False, every=True)
            self._workspace_slots(op, free=True)
            if op.kind is not Kind.FOR:         # the scalar unit tests the condition
                self.instrs.append(scalar(BRANCH_CYCLES, tag=self._tag(op)))
        elif op.kind is Kind.YIELD and op.parent.parent_op.kind is Kind.WHILE:
            self.instrs.append(scalar(BRANCH_CYCLES, tag=self._tag(op.parent.parent_op)))
        self.loops.before(op)

    def after(self, program, op, operands, results) -> None:
        parent = op.parent.parent_op
        if parent is not None and parent.kind in OWN_REGION:
            return                          # emitted with the fused (or combine) op
        if op.kind in CONTROL:
            self.loops.after(op)
            self._flags_of(op, "post_wait_flags", wait=True, every=True)
            self._workspace_slots(op, free=False)
            self._zero_unwritten(op)
            self._flags_of(op, "set_flags", wait=False)
            return
        if "pipe" not in op.attrs:
            return
        if op.kind is Kind.DOT and "k_chunk" in op.attrs:
            self._emit_chunked_dot(op)
            return
        self._flags_of(op, "wait_flags", wait=True)
        self._emit(program, op, operands, results)
        self._flags_of(op, "set_flags", wait=False)

    # --- emission ----------------------------------------------------------------------
    def _flags_of(self, op, attr: str, wait: bool, every: bool = False) -> None:
        flags = op.attrs.get(attr)
        if not flags:
            return
        it = self.loops.current
        make = wait_flag if wait else set_flag
        for flag in flags:
            for i in flag.ids(it, every):
                self.instrs.append(make(flag.src, flag.dst, i, tag=self._tag(op)))

    def _cross(self, ins, side: str) -> None:
        self.cross_sides[len(self.instrs)] = side
        self.instrs.append(ins)

    def _workspace_slots(self, loop, free: bool) -> None:
        """Before a loop (``free``): each hand-off in its body whose workspace slots rotate
        with it has its receiver set the way-back flag once per slot (every slot starts
        free); after it: the sender takes those sets back (the flag ends balanced)."""
        if loop.kind not in LOOPS:
            return
        for h in self.returns.get(id(loop), ()):
            back = h.attrs["cross_flags"][1]
            receiver = Scope(h.attrs["scope"]).side
            for _ in range(int(h.attrs.get("stages", 1))):
                if free:
                    self._cross(cross_set_flag("MTE2", back, tag=self._tag(h)), receiver)
                else:
                    self._cross(cross_wait_flag(Pipe(h.attrs["src_pipe"]).value, back,
                                                tag=self._tag(h)), _other(receiver))

    def _emit_handoff(self, op, tag: str) -> None:
        """An ``npu.handoff``: the sender's copy into the workspace slot of this iteration
        and its cross-core set; the receiver's wait and copy into its buffer (see the
        module doc)."""
        src = Pipe(op.attrs["src_pipe"]).value
        into = Scope(op.attrs["scope"])
        receiver = into.side
        sender = _other(receiver)
        there, *back = op.attrs["cross_flags"]
        writes = self._refs(op, op.results, True)
        slot = writes[0][1] if writes else 0
        # the pid is the program's: SplitTemplate.place puts it in
        region = ("workspace", None, f"{writes[0][0] if writes else id(op)}.{slot}")
        nbytes = op.operands[0].type.nbytes
        if back:
            self._cross(cross_wait_flag(src, back[0], tag=tag), sender)
        self.instrs.append(copy("L0C_to_GM" if src == "FIXP" else "UB_to_GM", nbytes, tag=tag,
                                reads=self._refs(op, op.operands, False), gm_region=region))
        self._cross(cross_set_flag(src, there, tag=tag), sender)
        self._cross(cross_wait_flag("MTE2", there, tag=tag), receiver)
        self.instrs.append(copy(f"GM_to_{into.value}", nbytes, tag=tag, writes=writes,
                                gm_region=region))
        if back:
            self._cross(cross_set_flag("MTE2", back[0], tag=tag), receiver)

    def _emit_chunked_dot(self, op) -> None:
        """A dot split into L0 K-chunks: the MTE2 <-> MTE1 flags once around it, then per
        chunk the L0 slot handshake (M_MTE1 wait, two MTE1 copies, MTE1_M set; MTE1_M
        wait, mmad, M_MTE1 set), with flag ids and L0 slots rotating per chunk."""
        tag = self._tag(op)
        a, b = op.operands[0].type, op.operands[1].type
        m, k = a.shape
        n = b.shape[1]
        k0 = int(op.attrs["k_chunk"])
        chunks = k // k0
        l0a, l0b = op.attrs["operand_buffers"]
        stages = operand_stages(op)
        it = self.loops.current
        l0_pairs = {("CUBE", "MTE1"), ("MTE1", "CUBE")}
        waits = op.attrs.get("wait_flags", ())
        sets = op.attrs.get("set_flags", ())
        out = self.instrs
        for f in waits:
            if (f.src, f.dst) not in l0_pairs:
                out.append(wait_flag(f.src, f.dst, f.id_at(it), tag=tag))
        l1_reads = self._refs(op, op.operands[:2], False)
        acc_reads = self._acc_reads(op)
        acc_writes = self._refs(op, op.results, True)
        for c in range(chunks):
            g = it * chunks + c          # the flags and slots rotate per chunk
            slot = g % stages
            for f in waits:
                if (f.src, f.dst) == ("CUBE", "MTE1"):
                    out.append(wait_flag(f.src, f.dst, f.id_at(g), tag=tag))
            out.append(copy("L1_to_L0A", m * k0 * a.dtype.itemsize, tag=tag,
                            writes=[(l0a, slot)], reads=l1_reads[:1]))
            out.append(copy("L1_to_L0B", k0 * n * b.dtype.itemsize, tag=tag,
                            writes=[(l0b, slot)], reads=l1_reads[1:]))
            for f in sets:
                if (f.src, f.dst) == ("MTE1", "CUBE"):
                    out.append(set_flag(f.src, f.dst, f.id_at(g), tag=tag))
            for f in waits:
                if (f.src, f.dst) == ("MTE1", "CUBE"):
                    out.append(wait_flag(f.src, f.dst, f.id_at(g), tag=tag))
            out.append(mmad(m, n, k0, a.dtype.name, tag=tag, writes=acc_writes,
                            reads=[(l0a, slot), (l0b, slot)] + acc_reads))
            acc_reads = acc_writes       # later chunks accumulate onto this one
            for f in sets:
                if (f.src, f.dst) == ("CUBE", "MTE1"):
                    out.append(set_flag(f.src, f.dst, f.id_at(g), tag=tag))
        for f in sets:
            if (f.src, f.dst) not in l0_pairs:
                out.append(set_flag(f.src, f.dst, f.id_at(it), tag=tag))

    def _access(self, op) -> "_Access":
        access = self._accesses.get(id(op))
        if access is None:
            access = self._accesses[id(op)] = _Access(op, self.gm_regions, self.burst)
        return access

    def _place(self, op, operands, nbytes: int) -> tuple:
        """``(gm_region, burst_bytes)`` of a load or store that moves ``nbytes``."""
        if not nbytes:
            return None, None
        access = self._access(op)
        if access.lanes:
            return access.offsets_place(*_active_offsets(op, operands))
        shape, strides, offsets = op.block_layout(operands)
        return access.block_place([int(x) for x in shape], [int(x) for x in offsets],
                                  [int(x) for x in strides])

    def _mark(self, program, op, nbytes: int) -> None:
        """The next instruction is a GM copy whose region and bursts a repeat recomputes."""
        if (self.gm_regions or self.spec is not None) and nbytes:
            self.marks.append((len(self.instrs), getattr(program, "event", None), op))

    def _tag(self, op) -> str:
        tag = self._tags.get(id(op))
        if tag is None:
            tag = self._tags[id(op)] = f"{os.path.basename(op.loc.file)}:{op.loc.line}"
        return tag

    def _refs(self, op, values, write: bool) -> list:
        out = []
        it = self.loops.current
        for v in values:
            name = self.buffers.get(id(v))
            if name is None:
                continue
            if write:
                slot = it % max(1, op.attrs.get("stages", 1))
                self.slots[name] = slot
            else:
                slot = self.slots.get(name, 0)
            out.append((name, slot))
        return out

    def _acc_reads(self, op) -> list:
        """The accumulator a dot reads: none right after the Cube zeroed it (the mmad
        initialises L0C instead of accumulating)."""
        reads = self._refs(op, op.operands[2:], False)
        fresh = [r for r in reads if r[0] in self.zeroed]
        self.zeroed.difference_update(name for name, _ in fresh)
        return [r for r in reads if r not in fresh]

    def _zero_unwritten(self, loop) -> None:
        """A loop that ran no trips hands on a Cube accumulator that no mmad wrote (its
        zero init is the first mmad's ``cmatrixInitVal``): the Cube writes the zero now,
        one mmad one fractal deep over zero-filled L0A/L0B tiles (the fill is not timed), as the
        emitted Ascend C does (backends/ascendc/emit_cube.py).  Before the loop's exit
        flags, so whatever reads the accumulator after the loop is ordered after it."""
        for r in loop.results:
            name = self.buffers.get(id(r))
            if name not in self.zeroed:
                continue
            dots = [d for d in loop.walk() if d.kind is Kind.DOT
                    and self.buffers.get(id(d.operands[-1])) == name]
            dtype = dots[0].operands[0].type.dtype.name if dots else "f16"
            m, n = r.type.shape[-2:]
            k = self.spec.cube_fractal if self.spec is not None else 16
            self.instrs.append(mmad(m, n, k, dtype, tag=self._tag(loop),
                                    writes=[(name, self.slots.get(name, 0))]))
            self.zeroed.discard(name)

    def _fill(self, op, tag: str, nbytes: int) -> None:
        """A masked load into L1 whose ``other=`` is a fill value, not a tile
        (ir/schedule/placement.py ``_address_ops``): MTE2 writes the value over the
        ``nbytes`` its mask leaves off (Ascend's ``InitConstValue``: pad rows or tail
        columns are runs of 32-byte blocks in the NZ layout), assumed at the GM -> L1
        port's rate."""
        other = op.operand("other")
        if (other is None or op.attrs.get("scope") != "L1" or self.spec is None
                or self.buffers.get(id(other)) is not None):
            return
        rate = self.spec.paths["GM_to_L1"].bytes_per_cycle
        self.instrs.append(scalar(math.ceil(nbytes / rate), pipe="MTE2",
                                  tag=tag, writes=self._refs(op, op.results, True)))

    def _operand_slot(self, op) -> int:
        """The slot of an op's staging buffers in this iteration of its loop."""
        it = self.loops.current
        return it % operand_stages(op)

    def _emit(self, program, op, operands, results) -> None:
        k, pipe, tag = op.kind, op.attrs["pipe"], self._tag(op)
        if pipe == "SCALAR" or is_folded_cast(op) or (k is Kind.SPLAT and pipe == "CUBE"):
            if pipe == "CUBE":
                self.zeroed.update(name for name, _ in self._refs(op, op.results, True))
            return
        out = self.instrs
        if k in (Kind.LOAD, Kind.BLOCK_LOAD):
            nbytes = _moved(op, operands) * op.result.type.dtype.itemsize
            if k is Kind.LOAD and nbytes < op.result.type.nbytes:
                self._fill(op, tag, op.result.type.nbytes - nbytes)
            self._mark(program, op, nbytes)
            region, burst = self._place(op, operands, nbytes)
            out.append(copy(f"GM_to_{op.attrs['scope']}", nbytes, tag=tag,
                            reads=self._refs(op, op.operands[1:], False),
                            writes=self._refs(op, op.results, True),
                            gm_region=region, burst_bytes=burst))
        elif k in (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW):
            nbytes = _moved(op, operands) * op.operands[0].type.dtype.itemsize
            reads = self._refs(op, op.operands, False)
            if "operand_buffers" in op.attrs:   # no FixPipe: L0C -> UB on VECTOR first
                staging = [(op.attrs["operand_buffers"][0],
                            self._operand_slot(op))]
                out.append(copy("L0C_to_UB", nbytes, tag=tag, reads=reads, writes=staging))
                reads = staging
            path = "L0C_to_GM" if pipe == "FIXP" else "UB_to_GM"
            self._mark(program, op, nbytes)
            region, burst = self._place(op, operands, nbytes)
            out.append(copy(path, nbytes, tag=tag, reads=reads,
                            writes=self._refs(op, op.results, True),
                            gm_region=region, burst_bytes=burst))
        elif k is Kind.HANDOFF:
            self._emit_handoff(op, tag)
        elif k is Kind.DOT:
            a, b = op.operands[0].type, op.operands[1].type
            l0a, l0b = op.attrs["operand_buffers"]
            slot = self._operand_slot(op)
            out.append(copy("L1_to_L0A", a.nbytes, tag=tag, writes=[(l0a, slot)],
                            reads=self._refs(op, op.operands[:1], False)))
            out.append(copy("L1_to_L0B", b.nbytes, tag=tag, writes=[(l0b, slot)],
                            reads=self._refs(op, op.operands[1:2], False)))
            # a batched dot's B products cost what one of B*M rows does
            rows = a.numel // a.shape[-1]
            out.append(mmad(rows, b.shape[-1], a.shape[-1], a.dtype.name, tag=tag,
                            reads=[(l0a, slot), (l0b, slot)] + self._acc_reads(op),
                            writes=self._refs(op, op.results, True)))
        elif k is Kind.FUSED:
            reads = self._refs(op, op.operands, False)
            for inner in op.body.ops[:-1]:
                name, elems, dtype = _vec_work(inner)
                out.append(vec(name, elems, dtype, tag=tag, reads=reads))
            if out and out[-1].kind == "vec":
                out[-1] = out[-1]._replace(writes=tuple(self._refs(op, op.results, True)))
        else:
            name, elems, dtype = _vec_work(op)
            out.append(vec(name, elems, dtype, tag=tag,
                           reads=self._refs(op, op.operands, False),
                           writes=self._refs(op, op.results, True)))


def _other(side: str) -> str:
    return "AIC" if side == "AIV" else "AIV"


def _vec_work(op) -> tuple[str, int, str]:
    """(vector op name, elements, dtype) of one vector op: its largest tile."""
    name = vec_op_name(op)
    tiles = [v.type for v in list(op.operands) + list(op.results) if hasattr(v.type, "numel")]
    big = max(tiles, key=lambda t: (t.numel, t.dtype.itemsize))
    return name, big.numel, big.dtype.name
