"""The AIC / AIV split of a mixed Cube + Vector program on a separated part (910B).

The schedule places a kernel's ops on the pipes of one virtual core that has them all.  On
a separated part the Cube pipes (MTE1, CUBE, FIXP, and MTE2 into L1/L0) live on the AIC and
the Vector pipes (VECTOR, MTE3, and MTE2 into UB) on an AIV, and the two share no on-chip
memory: a Cube result reaches the Vector unit only through a GM workspace, ordered by
cross-core flags (docs/npu-facts.md §A2: "AIC <-> AIV data only via GM", CrossCoreSetFlag /
CrossCoreWaitFlag).  :func:`split_stream` turns one recorded program into that pair:

* every instruction goes to the side of its pipe (MTE2 by its destination scope); a flag
  between two pipes of one side stays on that side (an MTE2 or SCALAR end takes the other
  end's side; SCALAR <-> MTE2 goes to both); a flag between the sides is dropped, replaced
  by the hand-off below;
* the first Vector-side instruction that reads an L0C tile triggers its hand-off:
  on the AIC, ``CUBE -> FIXP`` flag, FixPipe ``L0C_to_GM`` of the tile into a workspace
  region, ``cross_set``; on the AIV, ``cross_wait``, MTE2 ``GM_to_UB`` of that region into
  a staging buffer, ``MTE2 -> VECTOR`` flag; Vector reads of the tile read the staging
  buffer.  The workspace write lands in the L2, so the AIV's read is an L2 hit.
* The hand-off's ``CUBE -> FIXP`` and ``MTE2 -> VECTOR`` flags take the event ids the
  schedule's allocator reserved for them (``ir/schedule/event_ids.py``: the function's
  ``npu.handoff_ids``, passed as ``handoff_ids``); without them, the highest id of each
  pair no flag of the program uses (what the allocator reserves), and ``OutOfResources``
  when the program uses them all.  Cross-core flag ids are 0, 1, ...

Not supported (raises ``NotImplementedError``): a Cube result handed over again after the
Cube rewrote it (a hand-off inside a loop), and Vector results flowing back to the Cube.
The staging buffers must fit the UB the schedule left free (``ub_free``), else
``OutOfResources``.

Example::

    >>> from npujit.sim.isa import mmad, vec, set_flag, wait_flag, copy
    >>> from npujit.target import ASCEND_910B_LIKE
    >>> stream = [mmad(64, 64, 64, writes=[("L0C.0", 0)]), set_flag("CUBE", "VECTOR"),
    ...           wait_flag("CUBE", "VECTOR"), vec("relu", 4096, "f32", reads=[("L0C.0", 0)])]
    >>> aic, aiv = split_stream(stream, 0, ASCEND_910B_LIKE, {"L0C.0": 16384})
    >>> [i.kind for i in aic], [i.kind for i in aiv]
    (['mmad', 'set_flag', 'wait_flag', 'copy', 'cross_set'], ['cross_wait', 'copy', 'set_flag', 'wait_flag', 'vec'])
"""
from __future__ import annotations

from npujit.errors import OutOfResources

from .isa import copy, cross_set_flag, cross_wait_flag, set_flag, wait_flag

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


def needs_split(instrs: list) -> bool:
    """Whether a recorded program has work on both sides.

    Example::

        >>> from npujit.sim.isa import vec, mmad
        >>> needs_split([vec("add", 128)]), needs_split([mmad(16, 16, 16), vec("add", 128)])
        (False, True)
    """
    sides = {side(i.pipe, i.path) for i in instrs if i.kind not in ("set_flag", "wait_flag")}
    return {"AIC", "AIV"} <= sides


def split_stream(instrs: list, pid, spec, buffer_bytes: dict,
                 ub_free: int | None = None,
                 handoff_ids: tuple | None = None,
                 placed: dict | None = None) -> tuple[list, list]:
    """Split one program's stream into (AIC instructions, AIV instructions); see the module
    doc.  ``buffer_bytes`` gives each L0C buffer's bytes (one slot); ``ub_free`` the UB
    bytes the schedule's own buffers leave (default: all of it); ``handoff_ids`` the
    ``(CUBE->FIXP, MTE2->VECTOR)`` event ids the schedule reserved.  ``placed``, if given,
    receives ``{input index: (0 for AIC / 1 for AIV, position)}`` of every copy, so
    programs that share a stream but not their GM regions can share the split
    (:class:`SplitTemplate`)."""
    free = spec.capacity["UB"] if ub_free is None else ub_free
    aic, aiv = [], []
    handed: dict[str, str] = {}        # L0C buffer -> its UB staging buffer
    vector_written: set = set()
    fix_id, v_id = handoff_ids if handoff_ids is not None else (
        _unused_id(instrs, "CUBE", "FIXP", spec, pid), _unused_id(instrs, "MTE2", "VECTOR",
                                                                  spec, pid))
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
        where = side(ins.pipe, ins.path)
        if where == "AIC":
            for buf, _ in ins.writes:
                if buf in handed:
                    raise NotImplementedError(
                        f"AIC/AIV split of program {pid}: the Cube rewrites {buf} after "
                        "handing it to the Vector core (a hand-off inside a loop)")
            # A GM copy's index operands (a loaded expert id in a block pointer's offset,
            # gathered row offsets) are read by the AIC's own scalar unit, not handed
            # over (not timed): the AIC's copy does not read the AIV's UB.
            address_only = ins.kind == "copy" and "GM" in ins.path.split("_to_")
            for buf, _ in ins.reads:
                if buf in vector_written and not address_only:
                    raise NotImplementedError(
                        f"AIC/AIV split of program {pid}: the Cube reads {buf}, a Vector "
                        "result (Vector -> Cube through GM is not lowered yet)")
            if address_only and any(b.startswith("UB") for b, _ in ins.reads):
                ins = ins._replace(reads=tuple(r for r in ins.reads if not r[0].startswith("UB")))
            if placed is not None and k == "copy":
                placed[i] = (0, len(aic))
            aic.append(ins)
            continue
        reads = []
        for buf, slot in ins.reads:
            if buf.startswith("L0C"):
                if buf not in handed:
                    free -= buffer_bytes[buf]
                    if free < 0:
                        raise OutOfResources(
                            f"the AIC -> AIV hand-off of {buf} ({buffer_bytes[buf]} B, at "
                            f"{ins.tag}) needs a UB staging buffer, but the schedule leaves "
                            f"only {free + buffer_bytes[buf]} B of {spec.name}'s "
                            f"{spec.capacity['UB']} B UB free; use smaller BLOCK sizes")
                    handed[buf] = _hand_off(aic, aiv, buf, buffer_bytes[buf], pid,
                                            len(handed), (fix_id, v_id), ins.tag)
                reads.append((handed[buf], 0))
            else:
                reads.append((buf, slot))
        vector_written.update(buf for buf, _ in ins.writes)
        if placed is not None and k == "copy":
            placed[i] = (1, len(aiv))
        aiv.append(ins._replace(reads=tuple(reads)) if reads != list(ins.reads) else ins)
    return aic, aiv


class SplitTemplate:
    """The split of one recorded stream, shared by every program that recorded it with
    other GM regions: :meth:`place` puts a program's regions (and its pid in the hand-off
    workspace's region) into copies of the two halves, so the split itself runs once per
    distinct stream, and the unchanged instructions stay the same objects (the engine's
    compiler knows them by id).

    Example::

        >>> from npujit.sim.isa import copy, mmad
        >>> from npujit.target import ASCEND_910B_LIKE
        >>> t = SplitTemplate([copy("GM_to_L1", 512), mmad(16, 16, 16)], [0], 0,
        ...                   ASCEND_910B_LIKE, {})
        >>> aic, aiv = t.place(3, [(("a", 0, 0), 512)])
        >>> aic[0].gm_region, aiv
        (('a', 0, 0), [])
    """

    __slots__ = ("aic", "aiv", "marks", "workspace")

    def __init__(self, instrs: list, positions, pid, spec, buffer_bytes: dict, ub_free=None):
        """``positions``: the input indices of the copies whose GM regions differ from one
        program to the next (each program's ``places`` follow their order)."""
        where: dict = {}
        self.aic, self.aiv = split_stream(instrs, pid, spec, buffer_bytes, ub_free,
                                          placed=where)
        self.marks = [where[pos] for pos in positions]
        self.workspace = [(side, j) for side, half in enumerate((self.aic, self.aiv))
                          for j, ins in enumerate(half) if _is_workspace(ins.gm_region)]

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


def _is_workspace(region) -> bool:
    return isinstance(region, tuple) and len(region) == 3 and region[0] == "workspace"


def _unused_id(instrs: list, src: str, dst: str, spec, pid) -> int:
    """The highest event id of ``src -> dst`` no flag of the program uses."""
    used = {ins.flag[2] for ins in instrs if ins.kind in ("set_flag", "wait_flag")
            and (ins.flag[0], ins.flag[1]) == (src, dst)}
    free = [i for i in range(spec.event_ids) if i not in used]
    if not free:
        raise OutOfResources(
            f"the AIC -> AIV hand-off of program {pid} needs a {src} -> {dst} event id, but "
            f"the schedule uses all {spec.event_ids} of {spec.name}; schedule the kernel for "
            f"this spec (its allocator reserves the hand-off's ids) or use fewer num_stages")
    return free[-1]


def _hand_off(aic: list, aiv: list, buf: str, nbytes: int, pid, cid: int, ids: tuple,
              tag) -> str:
    """Append the L0C -> GM workspace -> UB hand-off of ``buf``; returns the staging name."""
    region = ("workspace", pid, buf)
    staging = f"UB.{buf}"
    fix_id, v_id = ids
    aic += [set_flag("CUBE", "FIXP", fix_id, tag=tag), wait_flag("CUBE", "FIXP", fix_id, tag=tag),
            copy("L0C_to_GM", nbytes, reads=[(buf, 0)], tag=tag, gm_region=region),
            cross_set_flag("FIXP", cid, tag=tag)]
    aiv += [cross_wait_flag("MTE2", cid, tag=tag),
            copy("GM_to_UB", nbytes, writes=[(staging, 0)], tag=tag, gm_region=region),
            set_flag("MTE2", "VECTOR", v_id, tag=tag), wait_flag("MTE2", "VECTOR", v_id, tag=tag)]
    return staging
