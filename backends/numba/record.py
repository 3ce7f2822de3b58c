"""Record what a numba-compiled kernel really did, for the timing simulator.

With the option ``record=True`` the generated kernel appends fixed-size events of four
int64s to a growing array (the entry then returns ``(events, count)``):

* ``[-1, p, 0, 0]``: program ``p`` (linear id) starts;
* ``[op, 1, 0, 0]`` at the top of every iteration of the loop ``op``, ``[op, 0, 0, 0]``
  after its last one;
* a load / store / atomic_add through pointer lanes: ``[op, active lanes, lowest offset,
  highest offset]`` (the active lanes' offsets; masked-off lanes move nothing);
* a block load / store: one ``[op, shape[d], stride[d], offset[d]]`` per axis.

``op`` is the op's position in ``fn.walk()``.  Everything else a program does follows from
the IR (a block's ops run in order; there are no branches), so :func:`replay` walks the IR
against the events and calls an interpreter hook (``begin/before/after/end``, as the
reference interpreter does, e.g. ``npujit.sim.lower.StreamRecorder``) with operands that
carry the same facts: trip counts, bytes moved and GM regions.  Recording costs a few
instructions per memory op and loop iteration, so simulating a large kernel runs at
numba speed instead of the interpreter's.

Example::

    >>> from npujit.backends.numba.backend import record_launch
    >>> events = record_launch(fn, (4, 1, 1), [x, y, out, n])   # doctest: +SKIP
    >>> replay(fn, (4, 1, 1), events, hook)                     # doctest: +SKIP
"""
from __future__ import annotations

import numpy as np
from numba import njit

from npujit.ir.ops import Kind

from .values import Nest

_POINTER_OPS = (Kind.LOAD, Kind.STORE, Kind.ATOMIC_ADD)
_BLOCK_OPS = (Kind.BLOCK_LOAD, Kind.BLOCK_STORE)
RECORDED = _POINTER_OPS + _BLOCK_OPS


@njit(cache=True, nogil=True)
def put(rec, n, a, b, c, d):
    """Append the event ``(a, b, c, d)`` at ``rec[n:n+4]``, doubling ``rec`` when full."""
    if n + 4 > rec.size:
        grown = np.empty(max(2 * rec.size, 4096), np.int64)
        grown[:n] = rec[:n]
        rec = grown
    rec[n] = a
    rec[n + 1] = b
    rec[n + 2] = c
    rec[n + 3] = d
    return rec, n + 4


def op_ids(fn) -> dict:
    """``id(op) -> position in fn.walk()``: the op numbers events carry."""
    return {id(op): i for i, op in enumerate(fn.walk())}


# --- code generation (called by codegen / lower_control when options['record']) -------
def emit_event(cg, op, b="0", c="0", d="0") -> None:
    cg.w.line(f"rec, rec_n = rc.put(rec, rec_n, {cg.op_id(op)}, {b}, {c}, {d})")


def emit_memory(cg, op) -> None:
    """After a memory op: its event(s), from the offsets / mask / block operands."""
    w = cg.w
    if op.kind in _BLOCK_OPS:
        r = len(op.attrs["block_shape"])
        vals = [cg.val(v).name for v in op.operands[1:1 + 3 * r]]
        for d_ in range(r):
            emit_event(cg, op, f"i64({vals[d_]})", f"i64({vals[r + d_]})",
                       f"i64({vals[2 * r + d_]})")
        return
    offs = cg.val(op.operands[1])
    mask_at = 2 if op.kind is Kind.LOAD else 3
    mask = cg.val(op.operands[mask_at]) if len(op.operands) > mask_at else None
    shape = tuple(op.operands[1].type.shape)
    cnt, lo, hi = w.fresh("rec_cnt"), w.fresh("rec_lo"), w.fresh("rec_hi")
    w.line(f"{cnt} = 0")
    w.line(f"{lo} = i64(9223372036854775807)")
    w.line(f"{hi} = i64(-9223372036854775807)")
    if shape == ():
        _count(w, cnt, lo, hi, offs.name, mask.name if mask is not None else None)
    else:
        with Nest(w, shape, [offs] + ([mask] if mask is not None else [])) as nest:
            _count(w, cnt, lo, hi, nest.at(offs), nest.at(mask) if mask is not None else None)
    emit_event(cg, op, cnt, lo, hi)


def _count(w, cnt, lo, hi, off, mask) -> None:
    if mask is not None:
        w.line(f"if {mask}:")
        w.depth += 1
    o = w.fresh("rec_o")
    w.line(f"{o} = i64({off})")
    w.line(f"{cnt} += 1")
    w.line(f"{lo} = min({lo}, {o})")
    w.line(f"{hi} = max({hi}, {o})")
    if mask is not None:
        w.depth -= 1


# --- running and replaying ------------------------------------------------------------------
class _Program:
    """What a hook may look at: the program id (as the reference interpreter's)."""

    def __init__(self, pid):
        self.pid = pid


def replay(fn, grid, events: np.ndarray, hook) -> None:
    """Drive ``hook`` through the recorded launch as the reference interpreter would.
    Raises ``ValueError`` if the events do not match ``fn`` (a backend bug)."""
    gx, gy, _ = tuple(grid) + (1,) * (3 - len(grid))
    Replay(fn, events, hook).run(gx, gy)


class Replay:
    def __init__(self, fn, events, hook):
        self.fn, self.ev, self.hook = fn, events, hook
        self.ids = op_ids(fn)
        self.pos = 0

    def _next(self, op):
        if self.pos >= len(self.ev):
            raise ValueError(f"recorded events end before {op.kind.value} at {op.loc}")
        e = self.ev[self.pos]
        want = -1 if op is None else self.ids[id(op)]
        if e[0] != want:
            raise ValueError(f"recorded event {tuple(int(x) for x in e)} does not match "
                             f"{'a program start' if op is None else op.kind.value}")
        self.pos += 1
        return e

    def run(self, gx, gy) -> None:
        while self.pos < len(self.ev):
            p = int(self._next(None)[1])
            program = _Program((p % gx, (p // gx) % gy, p // (gx * gy)))
            self.hook.begin(program)
            self._block(program, self.fn.body)
            self.hook.end(program)

    def _block(self, program, block) -> None:
        hook = self.hook
        for op in block.ops:
            if op.kind in (Kind.RETURN, Kind.YIELD):
                continue
            operands = [None] * len(op.operands)
            if op.kind is Kind.FOR:
                hook.before(program, op, operands)
                while self._next(op)[1] == 1:
                    self._block(program, op.body)
                    hook.before(program, op.body.terminator, [])
                hook.after(program, op, operands, [None] * len(op.results))
                continue
            hook.before(program, op, operands)
            for region in op.regions:       # npu.fused: its body runs as part of it
                self._block(program, region)
                hook.before(program, region.terminator, [])
            if op.kind in _POINTER_OPS:
                self._pointer_operands(op, operands)
            elif op.kind in _BLOCK_OPS:
                r = len(op.attrs["block_shape"])
                for d_ in range(r):
                    _, operands[1 + d_], operands[1 + r + d_], operands[1 + 2 * r + d_] = \
                        (int(x) for x in self._next(op))
            hook.after(program, op, operands, [None] * len(op.results))

    def _pointer_operands(self, op, operands) -> None:
        """Offsets holding the active lanes' lowest and highest offset, and an all-true
        mask: what the stream recorder derives bytes and GM region from."""
        _, count, lo, hi = (int(x) for x in self._next(op))
        offs = np.full(count, lo, np.int64)
        if count:
            offs[-1] = hi
        operands[1] = offs
        mask_at = 2 if op.kind is Kind.LOAD else 3
        if len(operands) > mask_at:
            operands[mask_at] = np.ones(count, bool)
