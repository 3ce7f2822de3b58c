"""The schedule's vocabulary: attribute names, flag spelling, and where ops sit in the IR.

A scheduled function is the same IR with attributes on its ops, so the printer, the
parser, the verifier and both backends read it unchanged; the one op kind scheduling adds
is ``npu.handoff`` on a separated part (``split_cores.py``), the identity on the CPU tiers:

================== ======================================================================
attribute          meaning
================== ======================================================================
``pipe``           the pipe that runs the op (docs/npu-facts.md §A1): ``MTE2`` GM->UB/L1,
                   ``MTE3`` UB->GM, ``MTE1`` L1->L0A/L0B, ``CUBE`` dot, ``FIXP`` L0C->GM,
                   ``VECTOR`` elementwise/reduce/fused, ``SCALAR`` scalar and index math
``scope``          the memory the op's tile results live in: ``UB``, ``L1``, ``L0C``
``buffer``         one buffer name per tile result, e.g. ``["UB.3"]`` (carried loop values
                   share their init's buffer)
``offset``         byte offset of slot 0 of each buffer in its scope
``bytes``          bytes of one slot of each buffer (aligned to the scope's rule, §A6)
``stages``         slots per buffer (``num_stages`` of the enclosing loop for transfers);
                   slot ``s`` of a buffer starts at ``offset + s * bytes``
``operand_scopes`` dot: where its MTE1 stage puts operands a, b (``L0A``, ``L0B``);
                   an L0C store on a part without FixPipe: ``UB``, where its VECTOR
                   stage puts the tile before MTE3 writes it out
``operand_buffers`` / ``operand_offsets`` / ``operand_bytes``: those staging buffers,
                   ``operand_stages(op)`` slots each (at most two: ping-pong)
``k_chunk``        dot: K of one L0 chunk when the kernel's ``L0_BLOCK_K`` splits it; the
                   MTE1 copies and Mmads run per chunk, rotating the L0 slots and the
                   dot's ``M_MTE1`` / ``MTE1_M`` flag ids per chunk
``wait_flags``     flags waited before the op runs, each on the flag's destination pipe
``set_flags``      flags set after the op ran, each on the flag's source pipe (on an
                   ``scf.for``: waits before the loop, sets after it)
``pre_set_flags``  ``scf.for`` only: slot-release flags set once per slot before the loop
``post_wait_flags`` ``scf.for`` only: the matching waits after the loop (keeps sets and
                   waits balanced, as TQue's FreeTensor/AllocTensor pairs do, §A7)
``src_pipe``       ``npu.handoff`` only: the pipe that writes the value into the GM
                   workspace on the sending core (``FIXP`` from L0C, ``MTE3`` from UB);
                   ``pipe`` is the receiving core's MTE2
``cross_flags``    ``npu.handoff`` only: its cross-core flag ids (workspace written;
                   inside a loop also workspace slot read), ``split_cores.py``
================== ======================================================================

A flag is ``"SRC_DST:id"`` in Ascend's ``HardEvent`` spelling (``MTE2_V:0``).  A rotating
flag ``"MTE2_V:0..1"`` uses id ``0 + i % 2`` where ``i`` counts the iterations of the op's
innermost enclosing ``scf.for`` (one id per buffer slot, so 1-bit flags are never set twice
before their wait).  The function gets ``npu.core`` = ``AIC`` (it has a dot) or ``AIV``.

Example::

    >>> str(Flag("MTE2", "VECTOR", 0, 2)), Flag.parse("V_MTE3:4")
    ('MTE2_V:0..1', Flag(src='VECTOR', dst='MTE3', first=4, count=1))
"""
from __future__ import annotations

from typing import NamedTuple

from npujit.target import Pipe, Scope

from ..core import Block, Function, Op
from ..ops import CONTROL, LOOPS, Kind
from ..types import TensorType

# HardEvent spells pipes short (MTE2_V, M_FIX, S_MTE2, ...): npujit/target.py Pipe.abbr.
PIPE_ABBR = {p.value: p.abbr for p in Pipe}
ABBR_PIPE = {v: k for k, v in PIPE_ABBR.items()}

CORE_ATTR = "npu.core"
# On a separated part, a kernel with work on both cores: ["AIC", "AIV"] (split_cores.py).
SIDES_ATTR = "npu.sides"
# Every attribute the schedule writes (``clear_schedule`` removes exactly these).
SCHEDULE_ATTRS = ("pipe", "scope", "buffer", "offset", "bytes", "stages", "operand_scopes",
                  "operand_buffers", "operand_offsets", "operand_bytes", "wait_flags",
                  "set_flags", "pre_set_flags", "post_wait_flags", "k_chunk", "src_pipe",
                  "cross_flags")


# The op attributes that hold flags (lists of ``Flag``).
FLAG_ATTRS = ("wait_flags", "set_flags", "pre_set_flags", "post_wait_flags")
# The ops that read GM into a tile (MTE2 copies once placed).
GM_LOADS = (Kind.LOAD, Kind.BLOCK_LOAD)


class Flag(NamedTuple):
    """A flag between two pipes: ``count`` event ids from ``first`` that rotate with the
    iteration of the innermost running loop (one id: a single flag).  A typed attribute:
    printed as its HardEvent-style text (``"MTE2_V:0..1"``), read back by the parser.

    Example::

        >>> f = Flag.parse("MTE2_V:0..1")
        >>> f.src, f.dst, str(f), f.id_at(3), list(f.ids(3, every=True))
        ('MTE2', 'VECTOR', 'MTE2_V:0..1', 1, [0, 1])
    """

    src: str
    dst: str
    first: int
    count: int = 1

    def text(self) -> str:
        """The attribute spelling (see the module doc)."""
        ids = str(self.first) if self.count == 1 else f"{self.first}..{self.first + self.count - 1}"
        return f"{self.event}:{ids}"

    __str__ = text

    @property
    def event(self) -> str:
        """The HardEvent name, e.g. ``MTE2_V``."""
        return f"{PIPE_ABBR[self.src]}_{PIPE_ABBR[self.dst]}"

    def id_at(self, iteration: int) -> int:
        """The event id used in loop iteration ``iteration`` (the only rotation rule)."""
        return self.first + iteration % self.count

    def ids(self, iteration: int, every: bool = False) -> range:
        """The ids one op sets or waits: every id (a loop's pre-sets and post-waits), or
        the one of this iteration."""
        if every:
            return range(self.first, self.first + self.count)
        i = self.id_at(iteration)
        return range(i, i + 1)

    @classmethod
    def parse(cls, text: str) -> "Flag":
        """``"MTE2_V:0..1"`` -> ``Flag("MTE2", "VECTOR", 0, 2)``."""
        event, _, ids = text.partition(":")
        for abbr, pipe in ABBR_PIPE.items():      # MTE2_MTE1 has two underscores: try each
            if event.startswith(abbr + "_") and event[len(abbr) + 1:] in ABBR_PIPE:
                dst = ABBR_PIPE[event[len(abbr) + 1:]]
                first, _, last = ids.partition("..")
                first = int(first)
                return cls(pipe, dst, first, (int(last) - first + 1) if last else 1)
        raise ValueError(f"not a flag: {text!r} (expected e.g. 'MTE2_V:0' or 'MTE2_V:0..1')")


def clone_op(op: Op) -> Op:
    """Another op like ``op``: its kind, operands, result types, attributes and location
    (not inserted anywhere; no regions)."""
    return Op(op.kind, list(op.operands), [r.type for r in op.results], dict(op.attrs),
              loc=op.loc)


def decode_schedule_attrs(attrs: dict) -> dict:
    """``attrs`` with the schedule's typed attributes read from their text (the parser's
    last step for an op): pipes and scopes as enum members, flags as ``Flag``."""
    for key in FLAG_ATTRS:
        if key in attrs:
            attrs[key] = [f if isinstance(f, Flag) else Flag.parse(f) for f in attrs[key]]
    for key in ("pipe", "src_pipe"):
        if isinstance(attrs.get(key), str):
            attrs[key] = Pipe(attrs[key])
    if isinstance(attrs.get("scope"), str):
        attrs["scope"] = Scope(attrs["scope"])
    if "operand_scopes" in attrs:
        attrs["operand_scopes"] = [Scope(s) for s in attrs["operand_scopes"]]
    return attrs


def is_tile(v) -> bool:
    """Whether a value is a tensor (tile or 0-d) rather than a GM pointer."""
    return isinstance(v.type, TensorType)


def is_folded_cast(op: Op) -> bool:
    """A cast of an L0C tile on its way out: done by the FixPipe (or, on a coupled part,
    the Vector unit) as part of the store, so it has no work or buffer of its own."""
    return op.kind is Kind.CAST and op.attrs.get("scope") == "L0C"


def scheduled_ops(block: Block):
    """The ops the schedule annotates, in program order: every op of ``block`` and of the
    regions of its loops and ifs (then region first); the ops inside an ``npu.fused``
    region run as part of it."""
    for op in block.ops:
        if op.kind in (Kind.RETURN, Kind.YIELD):
            continue
        yield op
        if op.kind in CONTROL:
            for region in op.regions:
                yield from scheduled_ops(region)


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
            if op.kind in CONTROL:
                for region in op.regions:
                    self._number(region)
            self.end[id(op)] = self._n - 1


def enclosing_loop(op: Op) -> Op | None:
    """The innermost loop (``scf.for``/``scf.while``) whose body holds ``op`` (directly
    or nested), or None."""
    block = op.parent
    while block is not None and block.parent_op is not None:
        if block.parent_op.kind in LOOPS:
            return block.parent_op
        block = block.parent_op.parent
    return None


def outermost_loop(op: Op) -> Op | None:
    """The outermost loop whose body holds ``op`` (directly or nested), or None."""
    loop, outer = enclosing_loop(op), None
    while loop is not None:
        outer, loop = loop, enclosing_loop(loop)
    return outer


def loop_stages(op: Op) -> int:
    """The ``num_stages`` of the innermost loop around ``op`` (1 outside loops, and inside
    an ``scf.if`` of that loop, whose transfers do not run every iteration): how many
    rotating slots its transfers get."""
    loop = enclosing_loop(op)
    if loop is None or under_if(op, loop):
        return 1
    return max(1, int(loop.attrs.get("num_stages", 1)))


# Slots of an op's staging buffers (a dot's L0A / L0B, a coupled store's UB): ping-pong,
# whatever the loop's num_stages.  The deep pipeline is GM -> L1, where a copy waits
# hundreds of cycles for HBM; L1 -> L0 takes tens (MTE1, npujit/target.py), so a second
# slot already lets MTE1 fill one while the Cube reads the other, as Ascend's matmuls
# double-buffer L0A / L0B (docs/schedule.md).  With num_stages slots, a 128x256 B tile of
# K 64 at num_stages=3 needed 96 KB of the 64 KB L0B.
OPERAND_SLOTS = 2


def operand_stages(op: Op) -> int:
    """Slots of ``op``'s staging buffers (``operand_buffers``): ``loop_stages(op)``, at
    most ``OPERAND_SLOTS``."""
    return min(loop_stages(op), OPERAND_SLOTS)


def under_if(op: Op, upto: Op | None = None) -> bool:
    """Whether an ``scf.if`` region holds ``op`` (below ``upto``, when given)."""
    block = op.parent
    while block is not None and block.parent_op is not None and block.parent_op is not upto:
        if block.parent_op.kind is Kind.IF:
            return True
        block = block.parent_op.parent
    return False


def home_block(op: Op) -> Block:
    """The block whose every run runs ``op``'s region ancestors: ``op``'s block, or, for an
    op inside an ``scf.if``, the block holding the outermost such ``if`` up to a loop body
    (a buffer made in a branch is reused per iteration of that loop, not per branch)."""
    block = op.parent
    while block.parent_op is not None and block.parent_op.kind is Kind.IF:
        block = block.parent_op.parent
    return block


def blocks_of(op: Op) -> list[Block]:
    """The blocks holding ``op``, innermost first."""
    out = []
    block = op.parent
    while block is not None:
        out.append(block)
        block = block.parent_op.parent if block.parent_op is not None else None
    return out


def common_block(a: Op, b: Op) -> Block:
    """The innermost block holding both ops (a flag between them is placed in it)."""
    mine = {id(x) for x in blocks_of(a)}
    for block in blocks_of(b):
        if id(block) in mine:
            return block
    raise ValueError("ops of different functions")


def add_flag(op: Op, attr: str, flag: Flag) -> None:
    """Append a flag to one of ``op``'s flag lists, once."""
    flags = list(op.attrs.get(attr, ()))
    if flag not in flags:
        flags.append(flag)
    op.attrs[attr] = flags


def clear_schedule(fn: Function) -> None:
    """Remove every schedule attribute and the AIC <-> AIV hand-offs (their readers read
    the handed value again): scheduling twice starts from a clean IR."""
    for key in (CORE_ATTR, SIDES_ATTR):
        fn.attrs.pop(key, None)
    for op in list(fn.walk()):
        if op.kind is Kind.HANDOFF:
            op.result.replace_all_uses_with(op.operands[0])
            op.erase()
    for op in fn.walk():
        for a in SCHEDULE_ATTRS:
            op.attrs.pop(a, None)


class LoopIterations:
    """The loops an executing program is inside and how many iterations of each have
    completed: what rotating flag ids (``Flag.id_at``) and buffer slots follow.  The hooks
    that execute a schedule (``sim/lower.py``, ``backends/reference/scheduled.py``) feed
    it the interpreter's ops.

    Example::

        >>> it = LoopIterations()
        >>> it.current
        0
    """

    __slots__ = ("_stack",)

    def __init__(self):
        self._stack: list = []          # completed iterations, innermost loop last

    def before(self, op: Op) -> None:
        """An op is about to run: a loop starts, or a loop body's yield ends an iteration."""
        if op.kind in LOOPS:
            self._stack.append(0)
        elif op.kind is Kind.YIELD and op.parent.parent_op.kind in LOOPS:
            self._stack[-1] += 1

    def after(self, op: Op) -> None:
        """An op ran: a loop that finished is left."""
        if op.kind in LOOPS:
            self._stack.pop()

    @property
    def current(self) -> int:
        """Completed iterations of the innermost running loop (0 outside loops)."""
        return self._stack[-1] if self._stack else 0

