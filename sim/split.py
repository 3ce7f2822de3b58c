"""The AIC and AIV streams of a mixed Cube + Vector program on a separated part (910B).

The split itself is a step of the schedule (``ir/schedule/split_cores.py``): every value
that crosses between the Cube side and the Vector side is an ``npu.handoff`` op, which the
recorder (``sim/lower.py``) lowers to a GM workspace copy on the sending core, cross-core
flags, and a GM copy into the receiving core's buffer.  What is left here is dealing the
recorded stream to the two cores:

* every instruction goes to the side of its pipe (MTE2 by its destination scope); a flag
  between two pipes of one side stays on that side (an MTE2 or SCALAR end takes the other
  end's side; SCALAR <-> MTE2 goes to both); a flag between the sides is dropped (what the
  schedule orders across the cores, the hand-offs order with cross-core flags);
* ``scalar`` instructions go to both cores (both scalar units decide a branch);
* cross-core flags go where the recorder says (``cross_sides``: position -> side), since
  the receiving MTE2 exists on both cores;
* a GM copy of the AIC addressed by a Vector-loaded index (an expert id in a block
  pointer's offset) is addressed by the AIC's own scalar unit: it does not read the AIV's UB.

A program whose Vector side reads the Cube's L0C directly (or the Cube a Vector result)
was not scheduled for a separated part: ``NotImplementedError`` says to schedule it for
the spec it runs on.

Example::

    >>> from npujit.sim.isa import copy, cross_set_flag, cross_wait_flag, mmad, vec
    >>> stream = [mmad(64, 64, 64, writes=[("L0C.0", 0)]),
    ...           copy("L0C_to_GM", 16384, reads=[("L0C.0", 0)]), cross_set_flag("FIXP", 0),
    ...           cross_wait_flag("MTE2", 0), copy("GM_to_UB", 16384, writes=[("UB.0", 0)]),
    ...           vec("relu", 4096, "f32", reads=[("UB.0", 0)])]
    >>> aic, aiv = split_stream(stream, 0, {2: "AIC", 3: "AIV"})
    >>> [i.kind for i in aic], [i.kind for i in aiv]
    (['mmad', 'copy', 'cross_set'], ['cross_wait', 'copy', 'vec'])
"""
from __future__ import annotations

_AIC_PIPES = ("MTE1", "CUBE", "FIXP")
_AIV_PIPES = ("VECTOR", "MTE3")


def side(pipe: str, path: str | None = None) -> str | None:
    """``"AIC"`` or ``"AIV"`` for a pipe (MTE2 by its destination), None for SCALAR.

    Example::

        >>> side("MTE2", "GM_to_L1"), side("MTE2", "GM_to_UB"), side("SCALAR")
        ('AIC', 'AIV', None)
    """
    if pipe in _AIC_PIPES:
        return "AIC"
    if pipe in _AIV_PIPES:
        return "AIV"
    if pipe == "MTE2":
        return "AIV" if path is None or path.endswith("_to_UB") else "AIC"
    return None


def _flag_side(pipe: str) -> str | None:
    """The side a flag's end pins down: MTE2 and SCALAR exist on both cores."""
    return None if pipe in ("MTE2", "SCALAR") else side(pipe)


_SYNC = ("set_flag", "wait_flag", "cross_set", "cross_wait")


def needs_split(instrs: list) -> bool:
    """Whether a recorded program has work on both sides.

    Example::

        >>> from npujit.sim.isa import vec, mmad
        >>> needs_split([vec("add", 128)]), needs_split([mmad(16, 16, 16), vec("add", 128)])
        (False, True)
    """
    sides = {side(i.pipe, i.path) for i in instrs if i.kind not in _SYNC}
    return {"AIC", "AIV"} <= sides


def split_stream(instrs: list, pid, cross_sides: dict, placed: dict | None = None
                 ) -> tuple[list, list]:
    """Deal one program's stream to (AIC instructions, AIV instructions); see the module
    doc.  ``cross_sides``: the side of each cross-core flag instruction, by position.
    ``placed``, if given, receives ``{input index: (0 for AIC / 1 for AIV, position)}`` of
    every copy, so programs that share a stream but not their GM regions can share the
    split (:class:`SplitTemplate`)."""
    halves = ([], [])
    aic, aiv = halves
    vector_written: set = set()
    for i, ins in enumerate(instrs):
        k = ins.kind
        if k in ("set_flag", "wait_flag"):
            src, dst, _ = ins.flag
            s, d = _flag_side(src), _flag_side(dst)
            s, d = s or d, d or s
            if s is None:               # SCALAR <-> MTE2: both cores have both pipes
                aic.append(ins)
                aiv.append(ins)
            elif s == d:
                (aic if s == "AIC" else aiv).append(ins)
            continue
        if k == "scalar":                # both cores' scalar units decide a branch
            aic.append(ins)
            aiv.append(ins)
            continue
        if k in ("cross_set", "cross_wait"):
            (aic if cross_sides[i] == "AIC" else aiv).append(ins)
            continue
        where = side(ins.pipe, ins.path)
        if where == "AIC":
            # A GM copy's index operands (a loaded expert id in a block pointer's offset,
            # gathered row offsets) are read by the AIC's own scalar unit, not handed
            # over (not timed): the AIC's copy does not read the AIV's UB.
            address_only = ins.kind == "copy" and "GM" in ins.path.split("_to_")
            for buf, _ in ins.reads:
                if buf in vector_written and not address_only:
                    raise _unsplit(pid, ins, f"the Cube reads {buf}, a Vector result")
            if address_only and any(b.startswith("UB") for b, _ in ins.reads):
                ins = ins._replace(reads=tuple(r for r in ins.reads if not r[0].startswith("UB")))
        else:
            for buf, _ in ins.reads:
                if buf.startswith("L0C"):
                    raise _unsplit(pid, ins, f"the Vector core reads {buf}, a Cube result")
            vector_written.update(buf for buf, _ in ins.writes)
        half = halves[where != "AIC"]
        if placed is not None and k == "copy":
            placed[i] = (int(where != "AIC"), len(half))
        half.append(ins)
    return aic, aiv


def _unsplit(pid, ins, what: str) -> NotImplementedError:
    return NotImplementedError(
        f"AIC/AIV split of program {pid} at {ins.tag}: {what} with no hand-off between "
        "them; schedule the kernel for the separated spec it runs on (its split-cores step "
        "hands values between the cores through a GM workspace)")


class SplitTemplate:
    """The split of one recorded stream, shared by every program that recorded it with
    other GM regions: :meth:`place` puts a program's regions (and its pid in the hand-off
    workspace's region) into copies of the two halves, so the split itself runs once per
    distinct stream, and the unchanged instructions stay the same objects (the engine's
    compiler knows them by id).

    Example::

        >>> from npujit.sim.isa import copy, mmad
        >>> t = SplitTemplate([copy("GM_to_L1", 512), mmad(16, 16, 16)], [0], 0, {})
        >>> aic, aiv = t.place(3, [(("a", 0, 0), 512)])
        >>> aic[0].gm_region, aiv
        (('a', 0, 0), [])
    """

    __slots__ = ("aic", "aiv", "marks", "workspace")

    def __init__(self, instrs: list, positions, pid, cross_sides: dict):
        """``positions``: the input indices of the copies whose GM regions differ from one
        program to the next (each program's ``places`` follow their order)."""
        where: dict = {}
        self.aic, self.aiv = split_stream(instrs, pid, cross_sides, placed=where)
        self.marks = [where[pos] for pos in positions]
        self.workspace = [(side, j) for side, half in enumerate((self.aic, self.aiv))
                          for j, ins in enumerate(half) if is_workspace(ins.gm_region)]

    def place(self, pid, places) -> tuple[list, list]:
        """(AIC, AIV) of the program ``pid`` whose marked copies go to ``places`` (one
        ``(gm_region, burst_bytes)`` each)."""
        halves = (list(self.aic), list(self.aiv))
        for (side, j), (region, burst) in zip(self.marks, places):
            ins = halves[side][j]
            if ins.gm_region != region or ins.burst_bytes != burst:
                halves[side][j] = ins._replace(gm_region=region, burst_bytes=burst)
        for side, j in self.workspace:
            ins = halves[side][j]
            if ins.gm_region[1] != pid:
                halves[side][j] = ins._replace(gm_region=("workspace", pid, ins.gm_region[2]))
        return halves


def is_workspace(region) -> bool:
    """Whether a GM region is a hand-off workspace slot: ``("workspace", pid, slot)``."""
    return isinstance(region, tuple) and len(region) == 3 and region[0] == "workspace"
