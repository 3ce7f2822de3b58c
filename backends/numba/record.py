"""Record what a numba-compiled kernel really did, for the timing simulator.

With the option ``record=True`` the generated kernel appends fixed-size events of four
int64s to a growing array (the entry then returns ``(events, count)``):

* ``[-1, p, 0, 0]``: program ``p`` (linear id) starts;
* ``[op, 1, 0, 0]`` at the top of every iteration of the loop ``op``, ``[op, 0, 0, 0]``
  after its last one;
* a load / store / atomic_add through pointer lanes: ``[op, active lanes, lowest offset,
  highest offset]`` (the active lanes' offsets; masked-off lanes move nothing); built
  with the option ``burst`` (the spec's GM burst in bytes), a second ``[op, runs, 0, 0]``:
  how often, walking the active lanes in row-major order, the GM burst a lane falls in
  changes (``sim/bursts.py`` ``burst_runs``: a gather of rows pays per row, not for the
  span between its rows);
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

_POINTER_OPS = (Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW)
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
    runs = None
    burst = cg.options.get("burst")
    if burst:           # bytes per lane / burst, both powers of two: a shift
        itemsize = (op.result if op.kind is Kind.LOAD else op.operands[0]).type.dtype.itemsize
        runs, prev = w.fresh("rec_runs"), w.fresh("rec_prev")
        w.line(f"{runs} = 0")
        w.line(f"{prev} = i64(-1)")
        runs = (runs, prev, itemsize, burst)
    if shape == ():
        _count(w, cnt, lo, hi, offs.name, mask.name if mask is not None else None, runs)
    else:
        up = None
        if runs is not None and len(shape) >= 2:    # each column's burst of the row above
            up = w.fresh("rec_up")
            cg.tiles.append(f"{up} = np.empty({shape[-1]}, i64)")
        _count_lanes(w, shape, offs, mask, cnt, lo, hi, runs, up)
    emit_event(cg, op, cnt, lo, hi)
    if runs is not None:
        emit_event(cg, op, runs[0])


def _count_lanes(w, shape, offs, mask, cnt, lo, hi, runs, up=None) -> None:
    """The lanes of a tile access counted without branches or a conditional recurrence,
    so LLVM can vectorise the loop: a lane's burst is compared with the previous lane's
    (the previous active lane's when the active lanes are one piece in lane order, the
    usual masks: all, a prefix, a row range); when they are several pieces, a second loop
    walks the active lanes and counts the burst runs exactly.  ``up`` (a tile of two or
    more dimensions): an array of the last axis's length holding each column's burst in
    the row above (-1: inactive), so a lane whose burst the lane above fetched is not a
    new run (``sim/bursts.py`` ``burst_runs``, the reference's rule)."""
    vals = [offs] + ([mask] if mask is not None else [])
    pieces = None
    if runs is not None:
        n, prev, itemsize, burst = runs
        pieces, prev_on = w.fresh("rec_pieces"), w.fresh("rec_prev_on")
        w.line(f"{pieces} = 0")
        w.line(f"{prev_on} = i64(0)")
        if up is not None:
            w.line(f"{up}[:] = -1")
    cols = shape[-1]
    with Nest(w, shape, vals) as nest:
        o = w.fresh("rec_o")
        w.line(f"{o} = i64({nest.at(offs)})")
        if mask is None:
            on = "1"
            _extent(w, cnt, lo, hi, o)
        else:
            on = w.fresh("rec_on")
            w.line(f"{on} = i64({nest.at(mask)})")
            w.line(f"{cnt} += {on}")
            w.line(f"{lo} = min({lo}, {o} if {on} else i64(9223372036854775807))")
            w.line(f"{hi} = max({hi}, {o} if {on} else i64(-9223372036854775807))")
        if runs is not None:
            b = _burst_of(w, o, itemsize, burst)
            _count_run(w, nest, up, cols, n, on, b, f"(i64({b} != {prev}) | (1 - {prev_on}))")
            w.line(f"{pieces} += {on} & (1 - {prev_on})")
            w.line(f"{prev} = {b}")
            w.line(f"{prev_on} = {on}")
    if pieces is not None and mask is not None:
        w.line(f"if {pieces} > 1:")
        w.depth += 1
        w.line(f"{n} = 0")
        w.line(f"{prev} = i64(-1)")
        if up is not None:
            w.line(f"{up}[:] = -1")
        with Nest(w, shape, vals) as nest:
            on = w.fresh("rec_on")
            w.line(f"{on} = i64({nest.at(mask)})")
            b = _burst_of(w, f"i64({nest.at(offs)})", itemsize, burst)
            _count_run(w, nest, up, cols, n, on, b, f"i64({b} != {prev})")
            w.line(f"{prev} = {b} if {on} else {prev}")
        w.depth -= 1


def _count_run(w, nest, up, cols: int, n: str, on: str, b: str, new: str) -> None:
    """Count the lane (active ``on``, burst ``b``) as a new run when ``new`` holds and,
    with ``up``, its burst is not the one the active lane above fetched; then record its
    burst (-1 when inactive) for the lane below."""
    if up is None:
        w.line(f"{n} += {on} & {new}")
        return
    col = w.fresh("rec_col")
    w.line(f"{col} = ({nest.out}) % {cols}")
    w.line(f"{n} += {on} & {new} & i64({b} != {up}[{col}])")
    w.line(f"{up}[{col}] = {b} * {on} + {on} - 1")


def _burst_of(w, o: str, itemsize: int, burst: int) -> str:
    """A fresh variable holding the GM burst of element offset ``o``."""
    b = w.fresh("rec_b")
    if burst % itemsize == 0 and burst & (burst - 1) == 0:
        # a power-of-two burst over whole elements: the floor division as a shift
        w.line(f"{b} = {o} >> {(burst // itemsize).bit_length() - 1}")
    else:
        w.line(f"{b} = ({o} * {itemsize}) // {burst}")
    return b


def _extent(w, cnt, lo, hi, o: str) -> None:
    """An active lane at offset ``o``: counted, and the lowest / highest offset updated."""
    w.line(f"{cnt} += 1")
    w.line(f"{lo} = min({lo}, {o})")
    w.line(f"{hi} = max({hi}, {o})")


def _count(w, cnt, lo, hi, off, mask, runs) -> None:
    if mask is not None:
        w.line(f"if {mask}:")
        w.depth += 1
    o = w.fresh("rec_o")
    w.line(f"{o} = i64({off})")
    _extent(w, cnt, lo, hi, o)
    if runs is not None:
        n, prev, itemsize, burst = runs
        b = _burst_of(w, o, itemsize, burst)
        w.line(f"{n} += {b} != {prev}")
        w.line(f"{prev} = {b}")
    if mask is not None:
        w.depth -= 1


# --- running and replaying ------------------------------------------------------------------
class _Program:
    """What a hook may look at: the program id (as the reference interpreter's), its
    ``index`` (the how-manieth program of the launch) and, at a memory op, ``event``:
    where its events start in the program's."""

    __slots__ = ("pid", "index", "event")

    def __init__(self, pid, index):
        self.pid, self.index = pid, index
        self.event = None


class Repeats:
    """Programs that ran exactly as an earlier one but for where their GM accesses are
    (see :class:`Replay`): ``index`` (how-manieth program of the launch), ``starts``
    (the row of each one's start event) and ``linear`` (its linear program id), int64
    arrays in launch order; :meth:`pid` the program id of the ``j``-th."""

    __slots__ = ("index", "starts", "linear", "gx", "gy")

    def __init__(self, index, starts, linear, gx: int, gy: int):
        self.index, self.starts, self.linear, self.gx, self.gy = index, starts, linear, gx, gy

    def __len__(self) -> int:
        return len(self.index)

    def pid(self, j: int) -> tuple:
        p = int(self.linear[j])
        return (p % self.gx, (p // self.gx) % self.gy, p // (self.gx * self.gy))


def replay(fn, grid, events: np.ndarray, hook, runs: bool = False) -> None:
    """Drive ``hook`` through the recorded launch as the reference interpreter would
    (``runs``: the events were recorded with the ``burst`` option).  Raises
    ``ValueError`` if the events do not match ``fn`` (a backend bug)."""
    gx, gy, _ = tuple(grid) + (1,) * (3 - len(grid))
    Replay(fn, events, hook, runs).run(gx, gy)


class Replay:
    """Walks ``fn`` against the events, program by program, calling the hook.  A hook
    with a ``repeat`` method (``npujit.sim.lower.StreamRecorder``) is walked through only
    the first of the programs whose events are equal but for where their GM accesses are
    (pointer lanes' lowest/highest offset, block offsets with the same in-bounds extent):
    ``hook.repeat(repeats, hook.template, self)`` records the others (a :class:`Repeats`)
    from that program's stream; their GM accesses are in ``self.ev`` (``runs``: with
    the burst-runs rows), a memory op's events ``event`` rows after a program's start
    row as marked in the walk.  Every memory op's ``program.event`` is that row offset
    when the hook sees it."""

    def __init__(self, fn, events, hook, runs: bool = False):
        self.fn, self.ev, self.hook, self.runs = fn, events, hook, runs
        self.ids = op_ids(fn)
        self.ops = {i: op for op in fn.walk() for i in (self.ids[id(op)],)}
        self.pos = 0
        self.start = 0

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
        ev = self.ev
        starts = np.flatnonzero(ev[:, 0] == -1) if len(ev) else np.zeros(0, np.int64)
        if len(ev) and (not len(starts) or starts[0] != 0):
            raise ValueError("recorded events: the first does not match a program start")
        ends = np.append(starts[1:], len(ev))
        linear = ev[starts, 1]
        if not hasattr(self.hook, "repeat"):
            for k, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
                self._walk(k, s, e, gx, gy)
            return
        for members in self._alike(starts, ends):
            first = int(members[0])
            self._walk(first, int(starts[first]), int(ends[first]), gx, gy)
            if len(members) > 1:
                rest = members[1:]
                self.hook.repeat(Repeats(rest, starts[rest], linear[rest], gx, gy),
                                 self.hook.template, self)

    def _walk(self, k: int, s: int, e: int, gx: int, gy: int) -> None:
        """Walk the ``k``-th program (events ``s:e``) through the hook."""
        hook = self.hook
        p = int(self.ev[s, 1])
        program = _Program((p % gx, (p // gx) % gy, p // (gx * gy)), k)
        self.pos = self.start = s
        self._next(None)
        hook.begin(program)
        self._block(program, self.fn.body)
        hook.end(program)
        if self.pos != e:
            raise ValueError(f"program {p} recorded {e - s} events but its walk "
                             f"used {self.pos - s}")

    def _alike(self, starts: np.ndarray, ends: np.ndarray) -> list:
        """The programs in groups whose events are equal but for where their GM accesses
        are (:meth:`_keys`): one int64 array of program numbers per group, ascending,
        the groups in the order of their first program."""
        keys = self._keys()
        groups = []
        lengths = ends - starts
        for length in np.unique(lengths).tolist():
            at = np.flatnonzero(lengths == length)
            rows = keys[starts[at][:, None] + np.arange(1, length)].reshape(len(at), -1)
            if rows.shape[1] == 0:
                groups.append(at)
                continue
            void = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1] * 8)))
            _, inverse = np.unique(void.ravel(), return_inverse=True)
            order = np.argsort(inverse.ravel(), kind="stable")
            bounds = np.cumsum(np.bincount(inverse.ravel()))[:-1]
            groups += [at[g] for g in np.split(order, bounds)]
        groups.sort(key=lambda g: int(g[0]))
        return groups

    def _keys(self) -> np.ndarray:
        """The events with what differs between programs that run alike taken out: a
        pointer access's lowest and highest offset, a block axis's offset (its in-bounds
        extent stays, in the shape's place)."""
        ev = self.ev
        keys = ev.copy()
        for i, op in self.ops.items():
            if op.kind not in RECORDED:
                continue
            rows = np.flatnonzero(ev[:, 0] == i)
            if not len(rows):
                continue
            if op.kind in _POINTER_OPS:
                keys[rows, 2:] = 0
                if self.runs:
                    keys[rows[1::2], 1] = 0
                continue
            bs = tuple(op.attrs["block_shape"])
            checked = set(op.attrs.get("boundary_check", ()))
            axis = np.arange(len(rows)) % len(bs)
            block = np.asarray(bs, np.int64)[axis]
            shape, off = ev[rows, 1], ev[rows, 3]
            inside = np.maximum(0, np.minimum(off + block, shape) - np.maximum(off, 0))
            is_checked = np.isin(axis, list(checked))
            keys[rows, 1] = np.where(is_checked, inside, block)
            keys[rows, 3] = 0
        return keys

    def _block(self, program, block) -> None:
        hook = self.hook
        for op in block.ops:
            if op.kind in (Kind.RETURN, Kind.YIELD):
                continue
            operands = [None] * len(op.operands)
            if op.kind in (Kind.FOR, Kind.WHILE):
                hook.before(program, op, operands)
                while self._next(op)[1] == 1:
                    self._block(program, op.body)
                    hook.before(program, op.body.terminator, [])
                hook.after(program, op, operands, [None] * len(op.results))
                continue
            if op.kind is Kind.IF:          # the branch the recorded numbers took
                hook.before(program, op, operands)
                region = op.regions[0 if self._next(op)[1] == 1 else 1]
                self._block(program, region)
                hook.before(program, region.terminator, [])
                hook.after(program, op, operands, [None] * len(op.results))
                continue
            hook.before(program, op, operands)
            for region in op.regions:       # npu.fused: its body runs as part of it
                self._block(program, region)
                hook.before(program, region.terminator, [])
            if op.kind in RECORDED:
                program.event = self.pos - self.start
                self._memory_operands(op, operands)
            hook.after(program, op, operands, [None] * len(op.results))

    def _memory_operands(self, op, operands) -> None:
        if op.kind in _POINTER_OPS:
            self._pointer_operands(op, operands)
        else:
            r = len(op.attrs["block_shape"])
            for d_ in range(r):
                _, operands[1 + d_], operands[1 + r + d_], operands[1 + 2 * r + d_] = \
                    (int(x) for x in self._next(op))

    def _pointer_operands(self, op, operands) -> None:
        """Offsets holding the active lanes' lowest and highest offset (and, when
        recorded, their burst runs), and an all-true mask: what the stream recorder
        derives bytes, GM region and bursts from."""
        _, count, lo, hi = (int(x) for x in self._next(op))
        offs = np.full(count, lo, np.int64)
        if count:
            offs[-1] = hi
        if self.runs:       # lo, hi alternating: as many burst runs as were recorded
            runs = int(self._next(op)[1])
            offs[1:runs:2] = hi
            if runs % 2 == 0:
                offs[runs:] = hi
        operands[1] = offs
        mask_at = 2 if op.kind is Kind.LOAD else 3
        if len(operands) > mask_at:
            operands[mask_at] = np.ones(count, bool)
