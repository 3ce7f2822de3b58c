"""allocate-buffers: a buffer per tile, liveness, multi-buffering, alignment and capacity.

The model (simple on purpose, documented so its limits are plain):

* Every tile result with a ``scope`` gets a buffer; the values of one loop-carried
  variable (init, block argument, yielded value, loop result) share one buffer, as an
  accumulator does in L0C (``carried.py`` first inserts the Vector copies that make that
  right: a fill of a constant init, a copy of an init used elsewhere or of a next value
  made while the old one is still read); a FixPipe cast shares the buffer of the L0C
  tile it converts.
  Each dot adds one L0A and one L0B buffer for its MTE1 stage; an L0C store on a
  coupled part adds its UB staging buffer.
* A slot's bytes are the tile's bytes rounded up to the scope's alignment (docs/npu-facts.md
  §A6: 32 B UB/L1, 512 B L0A/L0B, 64 B L0C on the presets).  Fractal padding of Cube
  tiles to 16-multiples (§A8) is not modelled.
* Transfers inside an ``scf.for`` with ``num_stages = N`` (load results, store sources,
  L0A/L0B operands) get N slots, rotating with the iteration (TQue depth N, §A7).
* A kernel may split its dots' K into L0 chunks with a constexpr ``L0_BLOCK_K`` (Ascend's
  baseK; the loaded L1 tile's K is then several L0 steps deep, as the Matmul API's stepK
  is): a dot whose K is a multiple of it gets ``k_chunk``, its L0A/L0B buffers hold one
  chunk, and its N slots rotate per chunk (MTE1 of chunk c+1 overlaps the Cube on c).
* Liveness is a program-order interval.  A buffer used inside a loop lives for the whole
  outermost loop around its definition: iterations overlap on different pipes, so two
  buffers of one loop body never share bytes (this keeps the sync pass's slot-reuse rule
  to one case per loop).
* Per scope, first fit by start position; two buffers share bytes only when their
  intervals are disjoint.  When the peak exceeds the scope's capacity the pass raises
  ``npujit.OutOfResources`` at the largest buffer's source line, listing every buffer of
  the scope (bytes x stages), the budget and a tile size that fits.

Example::

    >>> AllocateBuffers().run(fn, CompileContext(spec=ASCEND_910B_LIKE))     # doctest: +SKIP
    True
    >>> fn_op.attrs["buffer"], fn_op.attrs["offset"], fn_op.attrs["stages"]  # doctest: +SKIP
    (['UB.0'], [0], 2)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from npujit.errors import OutOfResources

from ..core import Function, Op, Value, loop_carried
from ..ops import CONTROL, Kind
from .branches import own_branch_buffers
from .carried import own_carried_buffers
from .model import (Positions, clone_op, enclosing_loop, is_folded_cast, is_tile,
                    loop_stages, operand_stages, scheduled_ops)

TRANSFER_PIPES = ("MTE2", "MTE3", "FIXP")
# The constexpr that splits dots into L0 K-chunks (see the module doc).
L0_K_ATTR = "L0_BLOCK_K"


@dataclass
class Buffer:
    """One buffer of a scope: ``stages`` slots of ``slot_bytes`` from ``offset``, live over
    program positions ``[start, end]``; ``op`` is where it is made (for error messages)."""

    scope: str
    shape: tuple
    itemsize: int
    stages: int
    start: int
    end: int
    op: Op
    values: list = field(default_factory=list)
    name: str = ""
    offset: int = 0
    slot_bytes: int = 0

    @property
    def total(self) -> int:
        return self.slot_bytes * self.stages

    def describe(self) -> str:
        dims = "x".join(str(d) for d in self.shape) or "scalar"
        where = f"{os.path.basename(self.op.loc.file)}:{self.op.loc.line}"
        return (f"{self.name:<6} {dims} x {self.itemsize} B ({self.op.kind.value} at {where}): "
                f"{self.slot_bytes} B x {self.stages} stage{'s' if self.stages > 1 else ''}"
                f" = {self.total} B")


class AllocateBuffers:
    """Sets ``buffer``, ``offset``, ``bytes``, ``stages`` on ops with tile results and the
    dot's ``operand_buffers/offsets/bytes``; raises ``OutOfResources`` when a scope overflows.

    Example::

        >>> AllocateBuffers().run(fn, CompileContext(spec=ASCEND_910B_LIKE))   # doctest: +SKIP
        True
    """

    name = "allocate-buffers"

    def run(self, fn: Function, ctx) -> bool:
        spec = ctx.spec
        own_branch_buffers(fn)
        own_carried_buffers(fn)
        own_fills(fn)
        split_l0_k(fn, spec)
        pos = Positions(fn)
        buffers = collect_buffers(fn, pos)
        peaks = {}
        for scope in sorted({b.scope for b in buffers}):
            mine = [b for b in buffers if b.scope == scope]
            for i, b in enumerate(sorted(mine, key=lambda b: (b.start, -b.total))):
                b.name = f"{scope}.{i}"
            peak = first_fit(mine, spec.alignment[scope])
            peaks[scope] = peak
            if peak > spec.capacity[scope]:
                raise _over_budget(fn, spec, scope, mine, peak)
        _write_attrs(fn, buffers)
        return True


def _splat_other(op: Op) -> Op | None:
    """The Vector splat a load into UB takes as ``other=``, else None."""
    if op.kind is not Kind.LOAD or op.attrs.get("scope") != "UB":
        return None
    other = op.operand("other")
    if other is None or other.op is None or other.op.kind is not Kind.SPLAT \
            or other.op.attrs.get("pipe") != "VECTOR":
        return None
    return other.op


def _fill_of(op: Op) -> Value | None:
    """The ``other=`` fill a load into UB writes over its own slot: a Vector splat in the
    load's block read by nothing else (``own_fills`` makes it so), else None."""
    fill = _splat_other(op)
    if (fill is None or fill.attrs.get("scope") != "UB" or fill.parent is not op.parent
            or len(fill.result.uses) != 1):
        return None
    return fill.result


def own_fills(fn: Function) -> None:
    """A masked load into UB with ``other=`` a value gets a fill of its own right before
    it, which shares the load's buffer (``collect_buffers``): the Vector ``Duplicate``s
    the value over the slot, MTE2's copy lands the masked-in lanes on top, as the emitted
    Ascend C does (backends/ascendc/emit_memory.py).  A separate fill tile cost a second
    UB buffer per stage and a second ``V_MTE2`` flag per slot (softmax's ``other=-inf``
    at num_stages 3 ran out of the 910-like part's 4 ids).  A fill CSE shared between
    loads, or made outside the load's loop, is cloned."""
    for op in list(scheduled_ops(fn.body)):
        fill = _splat_other(op)
        if fill is None or _fill_of(op) is not None:
            continue
        own = clone_op(fill)
        op.parent.insert(op.parent.ops.index(op), own)
        op.set_operand(op.info.operand_index("other", len(op.operands)), own.result)


def split_l0_k(fn: Function, spec) -> None:
    """A dot whose A or B tile does not fit its L0 slots (``operand_stages``) runs in L0
    K-chunks (``k_chunk``, as the kernel's ``L0_BLOCK_K`` asks for): K halved until both
    fit, down to one Cube fractal.  An L1 tile of K 128 beside a 256-wide other side
    (128x256 f16: 64 KB, all of L0B) is then two chunks of K 64, as Ascend's matmuls
    take an L1 step in several L0 steps (baseK < stepK).  A kernel's own ``L0_BLOCK_K``
    wins (``collect_buffers``); a tile still too big is left to the over-budget error."""
    for op in scheduled_ops(fn.body):
        if (op.kind is not Kind.DOT or "k_chunk" in op.attrs
                or op.operands[0].type.rank != 2):
            continue
        a, b = op.operands[0].type, op.operands[1].type
        (m, k), n, slots = a.shape, b.shape[1], operand_stages(op)

        def fits(kc: int) -> bool:
            return (slots * m * kc * a.dtype.itemsize <= spec.capacity["L0A"]
                    and slots * kc * n * b.dtype.itemsize <= spec.capacity["L0B"])
        kc = k
        while not fits(kc) and kc % 2 == 0 and kc // 2 >= spec.cube_fractal:
            kc //= 2
        if kc < k and fits(kc):
            op.attrs["k_chunk"] = kc


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def first_fit(buffers: list[Buffer], alignment: int) -> int:
    """Give each buffer the lowest aligned offset not overlapping a buffer live at the same
    time; returns the peak (bytes of the scope in use).

    Example::

        >>> first_fit([], 32)
        0
    """
    placed: list[Buffer] = []
    peak = 0
    for b in sorted(buffers, key=lambda b: (b.start, -b.itemsize * _numel(b.shape))):
        b.slot_bytes = _align(max(1, _numel(b.shape) * b.itemsize), alignment)
        busy = sorted((o.offset, o.offset + o.total) for o in placed
                      if o.start <= b.end and b.start <= o.end)
        offset = 0
        for lo, hi in busy:
            if offset + b.total <= lo:
                break
            offset = max(offset, _align(hi, alignment))
        b.offset = offset
        placed.append(b)
        peak = max(peak, offset + b.total)
    return peak


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class _Groups:
    """Union-find over value ids: the values that share one buffer."""

    def __init__(self):
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        while self.parent.get(x, x) != x:
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def collect_buffers(fn: Function, pos: Positions) -> list[Buffer]:
    """The function's buffers with shapes, stages and live intervals (not yet placed)."""
    ops = list(scheduled_ops(fn.body))
    groups = _Groups()
    members: dict[int, list[Value]] = {}
    producer: dict[int, Op] = {}
    filled: dict[int, Op] = {}      # a fill's value -> the load it fills (own_fills)
    for op in ops:
        if "scope" in op.attrs:
            for r in op.results:
                if is_tile(r):
                    producer[id(r)] = op
                    members.setdefault(id(r), [r])
        if is_folded_cast(op):
            groups.union(id(op.operands[0]), id(op.result))
        fill = _fill_of(op)
        if fill is not None:           # the fill and the load share one slot
            groups.union(id(fill), id(op.result))
            filled[id(fill)] = op
    for op in ops:
        for init, arg, nxt, res in loop_carried(op):
            if id(init) in producer or id(nxt) in producer:
                for v in (arg, res, init, nxt):
                    members.setdefault(id(v), [v])
                    groups.union(id(init) if id(init) in producer else id(nxt), id(v))
        if op.kind is Kind.IF:      # a result shares the buffer its branches yield into
            for i, res in enumerate(op.results):
                made = [r.terminator.operands[i] for r in op.regions]
                owner = next((v for v in made if id(v) in producer), None)
                if owner is not None:
                    for v in made + [res]:
                        members.setdefault(id(v), [v])
                        groups.union(id(owner), id(v))
    by_root: dict[int, list[Value]] = {}
    for vid, (v,) in members.items():
        by_root.setdefault(groups.find(vid), []).append(v)
    buffers = []
    for values in by_root.values():
        defs = [producer[id(v)] for v in values if id(v) in producer]
        first = min(defs, key=lambda o: pos.start[id(o)])
        start, end = _interval(values, pos)
        carried = len(values) > 1 and any(v.op is None or v.op.kind in CONTROL for v in values)
        stages = 1 if carried else _stages(first, values)
        t = next(v for v in values if producer.get(id(v)) is first).type
        # a load's fill: the buffer is the load's (its line in an over-budget message)
        owner = next((filled[id(v)] for v in values if id(v) in filled), first)
        buffers.append(Buffer(first.attrs["scope"], tuple(t.shape), t.dtype.itemsize, stages,
                              start, end, owner, values))
    k0 = fn.attrs.get(L0_K_ATTR)
    for op in ops:
        if (op.kind is Kind.DOT and isinstance(k0, int) and not isinstance(k0, bool)
                and op.operands[0].type.rank == 2):
            k = op.operands[0].type.shape[1]
            if 0 < k0 < k and k % k0 == 0:
                op.attrs["k_chunk"] = k0
    for op in ops:
        if "operand_scopes" in op.attrs:
            start, end = _span(op, pos)
            n = operand_stages(op)
            for scope, (shape, itemsize) in zip(op.attrs["operand_scopes"], staged(op)):
                buffers.append(Buffer(scope, shape, itemsize, n, start, end, op, []))
    return buffers


def staged(op: Op) -> list[tuple[tuple, int]]:
    """(shape, itemsize) of each operand an op stages through ``operand_scopes``: a dot's
    a and b (L0A, L0B); a coupled part's L0C store, converted to the GM dtype in UB."""
    if op.kind is Kind.DOT:
        a, b = op.operands[0].type.shape, op.operands[1].type.shape   # batched: (B, ...)
        k = op.attrs.get("k_chunk", a[-1])
        return [(a[:-1] + (k,), op.operands[0].type.dtype.itemsize),
                (b[:-2] + (k, b[-1]), op.operands[1].type.dtype.itemsize)]
    value = op.operands[2] if op.kind is Kind.STORE else op.operands[-1]
    return [(tuple(value.type.shape), op.operands[0].type.dtype.itemsize)]


def _span(op: Op, pos: Positions) -> tuple[int, int]:
    """An op's interval, widened to its outermost enclosing loop (see module doc)."""
    outer, loop = None, enclosing_loop(op)
    while loop is not None:
        outer, loop = loop, enclosing_loop(loop)
    target = outer or op
    return pos.start[id(target)], pos.end[id(target)]


def _interval(values: list[Value], pos: Positions) -> tuple[int, int]:
    start, end = None, None
    for v in values:
        anchor = v.op if v.op is not None else v.owner.parent_op     # block arg: its loop
        lo, hi = _span(anchor, pos)
        for use in v.users:      # in SSA, all in the block that defines v or nested in it
            hi = max(hi, _span(use, pos)[1])
        start = lo if start is None else min(start, lo)
        end = hi if end is None else max(end, hi)
    return start, end


def _stages(op: Op, values: list[Value]) -> int:
    """num_stages of the loop around a transfer buffer; 1 for everything else.  A Cube
    result in L0C and an AIC/AIV hand-off are ping-pong (``operand_stages``):
    the FixPipe drains L0C and the other core reads the L2 in hundreds of cycles, not an
    HBM round trip, so two slots keep both sides busy; at num_stages 3-4 flash
    attention's scores in L0C and hand-off tiles in UB overflowed both."""
    transfer = op.attrs.get("pipe") in TRANSFER_PIPES
    if not transfer:
        for v in values:
            transfer |= any(u.attrs.get("pipe") in TRANSFER_PIPES for u in v.users)
    if not transfer:
        return 1
    if op.attrs.get("scope") == "L0C" or op.kind is Kind.HANDOFF:
        return operand_stages(op)
    return loop_stages(op)


def _write_attrs(fn: Function, buffers: list[Buffer]) -> None:
    by_value = {id(v): b for b in buffers for v in b.values}
    for op in scheduled_ops(fn.body):
        if "operand_scopes" in op.attrs:
            dot_bufs = [b for b in buffers if b.op is op and not b.values]
            op.attrs["operand_buffers"] = [b.name for b in dot_bufs]
            op.attrs["operand_offsets"] = [b.offset for b in dot_bufs]
            op.attrs["operand_bytes"] = [b.slot_bytes for b in dot_bufs]
        if "scope" not in op.attrs:
            continue
        mine = [by_value[id(r)] for r in op.results if id(r) in by_value]
        if mine:
            op.attrs["buffer"] = [b.name for b in mine]
            op.attrs["offset"] = [b.offset for b in mine]
            op.attrs["bytes"] = [b.slot_bytes for b in mine]
            op.attrs["stages"] = max(b.stages for b in mine)


# --- the over-budget error -------------------------------------------------------------------

def _over_budget(fn: Function, spec, scope: str, buffers: list[Buffer], peak: int):
    cap = spec.capacity[scope]
    worst = max(buffers, key=lambda b: b.total)
    lines = [f"the {scope} buffers live at once need {peak} B, but {scope} holds {cap} B on "
             f"{spec.name}:"]
    for b in sorted(buffers, key=lambda b: -b.total)[:12]:
        lines.append("  " + b.describe())
    if len(buffers) > 12:
        lines.append(f"  ... and {len(buffers) - 12} smaller buffers")
    lines.append(_suggestion(fn, spec, scope, buffers, worst, cap))
    reason = (f"{scope} needs {peak} B > {cap} B on {spec.name}; biggest: "
              f"{' '.join(worst.describe().split())}")
    return OutOfResources("\n".join(lines), worst.op.loc, fn.name, reason=reason)


def _suggestion(fn, spec, scope, buffers, worst, cap) -> str:
    """A constexpr tile size that fits (found by re-running the allocator with the tiles'
    dims equal to that constexpr scaled down), else an element budget for the worst tile."""
    align = spec.alignment[scope]
    sizes = {name: value for name, value in fn.attrs.items()
             if isinstance(value, int) and not isinstance(value, bool) and value >= 2}
    for name, value in sizes.items():
        if value not in worst.shape:
            continue
        # constexprs of one value cannot be told apart by the tile's dims: name them all
        same = [n for n, v in sizes.items() if v == value]
        name = ", ".join(same[:-1]) + " or " + same[-1] if len(same) > 1 else name
        p = 1 << (value.bit_length() - 1)
        p = p if p < value else p // 2
        while p >= 1:
            trial = [Buffer(b.scope, tuple(p if d == value else d for d in b.shape), b.itemsize,
                            b.stages, b.start, b.end, b.op) for b in buffers]
            if first_fit(trial, align) <= cap:
                more = " (or fewer num_stages)" if any(b.stages > 1 for b in buffers) else ""
                return f"try {name} <= {p}{more}"
            p //= 2
    others = sum(b.total for b in buffers) - worst.total
    room = max(0, cap - others) // max(1, worst.stages * worst.itemsize)
    return (f"the tile at line {worst.op.loc.line} would fit with <= {room} elements "
            f"(it has {_numel(worst.shape)})")
