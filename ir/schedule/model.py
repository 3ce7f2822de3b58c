"""The schedule's vocabulary: attribute names, flag spelling, and where ops sit in the IR.

A scheduled function is the same IR with attributes on its ops (no new op kinds, so the
printer, the parser, the verifier and both backends read it unchanged):

================== ======================================================================
attribute          meaning
================== ======================================================================
``pipe``           the pipe that runs the op (ascend-npu.md §1.1): ``MTE2`` GM->UB/L1,
                   ``MTE3`` UB->GM, ``MTE1`` L1->L0A/L0B, ``CUBE`` dot, ``FIXP`` L0C->GM,
                   ``VECTOR`` elementwise/reduce/fused, ``SCALAR`` scalar and index math
``scope``          the memory the op's tile results live in: ``UB``, ``L1``, ``L0C``
``buffer``         one buffer name per tile result, e.g. ``["UB.3"]`` (carried loop values
                   share their init's buffer)
``offset``         byte offset of slot 0 of each buffer in its scope
``bytes``          bytes of one slot of each buffer (aligned to the scope's rule, §2.4)
``stages``         slots per buffer (``num_stages`` of the enclosing loop for transfers);
                   slot ``s`` of a buffer starts at ``offset + s * bytes``
``operand_scopes`` dot: where its MTE1 stage puts operands a, b (``L0A``, ``L0B``);
                   an L0C store on a part without FixPipe: ``UB``, where its VECTOR
                   stage puts the tile before MTE3 writes it out
``operand_buffers`` / ``operand_offsets`` / ``operand_bytes``: those staging buffers
``k_chunk``        dot: K of one L0 chunk when the kernel's ``L0_BLOCK_K`` splits it; the
                   MTE1 copies and Mmads run per chunk, rotating the L0 slots and the
                   dot's ``M_MTE1`` / ``MTE1_M`` flag ids per chunk
``wait_flags``     flags waited before the op runs, each on the flag's destination pipe
``set_flags``      flags set after the op ran, each on the flag's source pipe (on an
                   ``scf.for``: waits before the loop, sets after it)
``pre_set_flags``  ``scf.for`` only: slot-release flags set once per slot before the loop
``post_wait_flags`` ``scf.for`` only: the matching waits after the loop (keeps sets and
                   waits balanced, as TQue's FreeTensor/AllocTensor pairs do, §3.2)
================== ======================================================================

A flag is ``"SRC_DST:id"`` in Ascend's ``HardEvent`` spelling (``MTE2_V:0``).  A rotating
flag ``"MTE2_V:0..1"`` uses id ``0 + i % 2`` where ``i`` counts the iterations of the op's
innermost enclosing ``scf.for`` (one id per buffer slot, so 1-bit flags are never set twice
before their wait).  The function gets ``npu.core`` = ``AIC`` (it has a dot) or ``AIV``.

Example::

    >>> flag_text("MTE2", "VECTOR", 0, 2), parse_flag("V_MTE3:4")
    ('MTE2_V:0..1', ('VECTOR', 'MTE3', 4, 1))
"""
from __future__ import annotations

from ..core import Block, Function, Op
from ..ops import Kind
from ..types import TensorType

# HardEvent spells pipes short (ascend-npu.md §1.1: MTE2_V, M_FIX, S_MTE2, ...).
PIPE_ABBR = {"SCALAR": "S", "VECTOR": "V", "CUBE": "M", "MTE1": "MTE1", "MTE2": "MTE2",
             "MTE3": "MTE3", "FIXP": "FIX"}
ABBR_PIPE = {v: k for k, v in PIPE_ABBR.items()}

CORE_ATTR = "npu.core"
# Every attribute the schedule writes (``clear_schedule`` removes exactly these).
SCHEDULE_ATTRS = ("pipe", "scope", "buffer", "offset", "bytes", "stages", "operand_scopes",
                  "operand_buffers", "operand_offsets", "operand_bytes", "wait_flags",
                  "set_flags", "pre_set_flags", "post_wait_flags", "k_chunk")
BUFFER_SCOPES = ("UB", "L1", "L0A", "L0B", "L0C")


def flag_text(src: str, dst: str, first_id: int, count: int = 1) -> str:
    """The attribute spelling of a flag between two pipes (see module doc)."""
    ids = str(first_id) if count == 1 else f"{first_id}..{first_id + count - 1}"
    return f"{PIPE_ABBR[src]}_{PIPE_ABBR[dst]}:{ids}"


def parse_flag(text: str) -> tuple[str, str, int, int]:
    """``"MTE2_V:0..1"`` -> ``("MTE2", "VECTOR", 0, 2)``: source pipe, destination pipe,
    first id, how many ids rotate.

    Example::

        >>> parse_flag("M_FIX:1")
        ('CUBE', 'FIXP', 1, 1)
    """
    event, _, ids = text.partition(":")
    for abbr, pipe in ABBR_PIPE.items():      # MTE2_MTE1 has two underscores: try each src
        if event.startswith(abbr + "_") and event[len(abbr) + 1:] in ABBR_PIPE:
            dst = ABBR_PIPE[event[len(abbr) + 1:]]
            first, _, last = ids.partition("..")
            first = int(first)
            return pipe, dst, first, (int(last) - first + 1) if last else 1
    raise ValueError(f"not a flag: {text!r} (expected e.g. 'MTE2_V:0' or 'MTE2_V:0..1')")


def is_tile(v) -> bool:
    """Whether a value is a tensor (tile or 0-d) rather than a GM pointer."""
    return isinstance(v.type, TensorType)


def is_folded_cast(op: Op) -> bool:
    """A cast of an L0C tile on its way out: done by the FixPipe (or, on a coupled part,
    the Vector unit) as part of the store, so it has no work or buffer of its own."""
    return op.kind is Kind.CAST and op.attrs.get("scope") == "L0C"


def scheduled_ops(block: Block):
    """The ops the schedule annotates, in program order: every op of ``block`` and of the
    bodies of its loops; the ops inside an ``npu.fused`` region run as part of it."""
    for op in block.ops:
        if op.kind in (Kind.RETURN, Kind.YIELD):
            continue
        yield op
        if op.kind is Kind.FOR:
            yield from scheduled_ops(op.body)


class Positions:
    """Program-order positions of the scheduled ops: ``start[op]`` is where an op begins and
    ``end[op]`` where it (with everything nested in it) ends; liveness and the order of
    flags are read from them.

    Example::

        >>> pos = Positions(fn)                  # doctest: +SKIP
        >>> pos.start[id(loop)] < pos.end[id(loop)]   # doctest: +SKIP
        True
    """

    def __init__(self, fn: Function):
        self.start: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self._n = 0
        self._number(fn.body)

    def _number(self, block: Block) -> None:
        for op in block.ops:
            self.start[id(op)] = self._n
            self._n += 1
            if op.kind is Kind.FOR:
                self._number(op.body)
            self.end[id(op)] = self._n - 1


def enclosing_loop(op: Op) -> Op | None:
    """The innermost ``scf.for`` whose body holds ``op`` (directly or nested), or None."""
    block = op.parent
    while block is not None and block.parent_op is not None:
        if block.parent_op.kind is Kind.FOR:
            return block.parent_op
        block = block.parent_op.parent
    return None


def loop_stages(op: Op) -> int:
    """The ``num_stages`` of the innermost loop around ``op`` (1 outside loops): how many
    rotating slots its transfers get."""
    loop = enclosing_loop(op)
    return max(1, int(loop.attrs.get("num_stages", 1))) if loop is not None else 1


def blocks_of(op: Op) -> list[Block]:
    """The blocks holding ``op``, innermost first."""
    out = []
    block = op.parent
    while block is not None:
        out.append(block)
        block = block.parent_op.parent if block.parent_op is not None else None
    return out


def ancestor_in(op: Op, block: Block) -> Op | None:
    """The op of ``block`` that is ``op`` or contains it, or None."""
    while op is not None:
        if op.parent is block:
            return op
        parent = op.parent.parent_op if op.parent is not None else None
        op = parent
    return None


def common_block(a: Op, b: Op) -> Block:
    """The innermost block holding both ops (a flag between them is placed in it)."""
    mine = {id(x) for x in blocks_of(a)}
    for block in blocks_of(b):
        if id(block) in mine:
            return block
    raise ValueError("ops of different functions")


def add_flag(op: Op, attr: str, text: str) -> None:
    """Append a flag to one of ``op``'s flag lists, once."""
    flags = list(op.attrs.get(attr, ()))
    if text not in flags:
        flags.append(text)
    op.attrs[attr] = flags


def clear_schedule(fn: Function) -> None:
    """Remove every schedule attribute (scheduling twice starts from a clean IR)."""
    fn.attrs.pop(CORE_ATTR, None)
    for op in fn.walk():
        for a in SCHEDULE_ATTRS:
            op.attrs.pop(a, None)
