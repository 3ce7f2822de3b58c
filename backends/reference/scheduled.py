"""Run a scheduled kernel with its tiles in the buffers the schedule gave them.

The plain interpreter keeps every tile in a Python variable, so a wrong schedule cannot
change its numbers.  ``BufferedExecution`` (an interpreter hook) makes the schedule count:

* each scope (UB, L1, L0A, L0B, L0C) is a byte arena; a tile result is written to its
  buffer at ``offset + slot * bytes`` (``slot`` = the iteration of the innermost loop
  modulo the buffer's ``stages``), and every operand that lives in a buffer is read back
  from the slot last written there.  Two live tiles the allocator let overlap, or a
  multi-buffer slot reused too early, now give wrong numbers;
* a dot's operands go through its L0A/L0B buffers (MTE1) the same way;
* ``poison=True``: each program starts with its arenas filled with NaN bits (all-ones
  bytes: NaN in every float dtype, -1 in ints), so reading a buffer nothing wrote shows;
* ``on_wait=True``: a GM -> scope copy (MTE2) lands in its buffer only when a
  ``wait_flag`` runs on any flag that was set after it on the same pipe (a pipe is in
  order, so every later set covers every copy issued before it on the pipe); the first
  such wait lands it.  A consumer without the wait reads the slot's old bytes: poison
  or a previous tile.  GM stores (MTE3 / FixPipe) land the same way: their bytes reach
  GM only at the wait that covers them (or at the program's end), so a load of those
  bytes without the MTE3 -> MTE2 order reads GM's old contents.  (Each deferred store
  snapshots its GM argument: debug sizes.)

These are the switches of Pallas's TPU interpret mode (uninitialised memory = NaN, DMAs
complete at wait), applied to the numbers; ``npujit.sim.debug`` applies them to timing.
Flag ids rotate as in ``npujit.sim.lower`` (``first + iteration % count``).  Dots split
into L0 K-chunks (``k_chunk``) keep their operands in L1 (their L0 slots hold one chunk).

Example::

    >>> from npujit.backends.reference.backend import run_buffered
    >>> run_buffered(fn, (4,), [x, y, out, 4096])     # doctest: +SKIP
"""
from __future__ import annotations

import numpy as np

from npujit.ir.core import loop_carried
from npujit.ir.ops import CONTROL, Kind
from npujit.ir.schedule.model import (LoopIterations, is_folded_cast, is_tile,
                                      operand_stages)

_GM_COPY_PIPES = ("MTE2",)
_GM_STORES = (Kind.STORE, Kind.BLOCK_STORE)


class _GMStore:
    """A GM store's bytes, held back until a wait lands them: ``raw[at] = data``."""

    __slots__ = ("raw", "at", "data", "pending")

    def __init__(self, raw: np.ndarray, at: np.ndarray, data: np.ndarray):
        self.raw, self.at, self.data, self.pending = raw, at, data, True

    def land(self) -> None:
        self.raw[self.at] = self.data
        self.pending = False


class _TileCopy:
    """A copy into a tile's buffer slot, held back until a wait lands it (once)."""

    __slots__ = ("execution", "place", "slot", "value", "pending")

    def __init__(self, execution, place, slot: int, value):
        self.execution, self.place, self.slot, self.value = execution, place, slot, value
        self.pending = True

    def land(self) -> None:
        self.execution._write(self.place, self.slot, self.value)
        self.pending = False


class _Place:
    """Where one tile value lives: scope, offset, slot bytes, stages, dtype, shape."""

    __slots__ = ("name", "scope", "offset", "nbytes", "stages", "dtype", "shape")

    def __init__(self, name, scope, offset, nbytes, stages, t):
        self.name, self.scope, self.offset = name, scope, int(offset)
        self.nbytes, self.stages = int(nbytes), max(1, int(stages))
        self.dtype, self.shape = t.dtype.np, tuple(t.shape)


class BufferedExecution:
    """The interpreter hook of :func:`run_buffered` (chains to ``inner`` if given)."""

    def __init__(self, fn, poison: bool = True, on_wait: bool = True, inner=None):
        if "npu.core" not in fn.attrs:
            raise ValueError(f"kernel '{fn.name}' is not scheduled; run "
                             "npujit.ir.schedule.schedule(fn, spec) first")
        self.poison, self.on_wait, self.inner = poison, on_wait, inner
        self.places: dict[int, _Place] = {}        # value id -> its buffer
        self.by_name: dict[str, _Place] = {}
        self._collect(fn.body)
        self.sizes: dict[str, int] = {}
        for p in self.by_name.values():
            self.sizes[p.scope] = max(self.sizes.get(p.scope, 0),
                                      p.offset + p.stages * p.nbytes)

    # --- where each tile lives ----------------------------------------------------------
    def _collect(self, block) -> None:
        for op in block.ops:
            if op.kind in CONTROL:
                for region in op.regions:
                    self._collect(region)
            names = op.attrs.get("buffer")
            if names and not is_folded_cast(op):
                tiles = [r for r in op.results if is_tile(r)]
                for r, name, off, nb in zip(tiles, names, op.attrs["offset"],
                                            op.attrs["bytes"]):
                    place = _Place(name, op.attrs["scope"], off, nb,
                                   op.attrs.get("stages", 1), r.type)
                    self.places[id(r)] = place
                    self.by_name.setdefault(name, place)
            if op.kind is Kind.DOT and "operand_buffers" in op.attrs and "k_chunk" not in op.attrs:
                for v, name, scope, off, nb in zip(
                        op.operands[:2], op.attrs["operand_buffers"],
                        op.attrs["operand_scopes"], op.attrs["operand_offsets"],
                        op.attrs["operand_bytes"]):
                    self.by_name.setdefault(name, _Place(name, scope, off, nb,
                                                         operand_stages(op), v.type))
        for op in block.ops:                      # loop-carried values share one buffer
            for init, arg, nxt, res in loop_carried(op):
                place = self.places.get(id(init)) or self.places.get(id(nxt))
                if place is not None:
                    self.places[id(arg)] = self.places[id(res)] = place
            if op.kind is Kind.IF:                # so do an if's result and its yields
                for i, res in enumerate(op.results):
                    place = next(filter(None, (self.places.get(id(r.terminator.operands[i]))
                                               for r in op.regions)), None)
                    if place is not None:
                        self.places[id(res)] = place

    # --- hook protocol ------------------------------------------------------------------
    def begin(self, program) -> None:
        fill = 0xFF if self.poison else 0
        self.arenas = {s: np.full(n, fill, np.uint8) for s, n in self.sizes.items()}
        self.slots: dict[str, int] = {}
        self.loops = LoopIterations()
        self.pending: dict[str, list] = {}       # pipe -> copies issued, not yet covered
        self.covered: dict[tuple, list] = {}     # (src, dst, id) -> copies its wait lands
        self.gm_before = None                    # the GM argument before a deferred store
        if self.inner is not None:
            self.inner.begin(program)

    def end(self, program) -> None:
        # The program is over: every GM store still in flight lands, in issue order.
        held = [c for cs in self.covered.values() for c in cs] + \
               [c for cs in self.pending.values() for c in cs]
        for store in held:
            if isinstance(store, _GMStore) and store.pending:
                store.land()
        if self.inner is not None:
            self.inner.end(program)

    def before(self, program, op, operands) -> None:
        if not (op.kind is Kind.YIELD and op.parent.parent_op.kind is Kind.FOR):
            self._wait(op, "wait_flags")
        self.loops.before(op)
        for i, v in enumerate(op.operands):
            place = self.places.get(id(v))
            if place is not None:
                operands[i] = self._read(place, self.slots.get(place.name, 0))
        if op.kind is Kind.DOT and "operand_buffers" in op.attrs and "k_chunk" not in op.attrs:
            slot = self._iteration() % operand_stages(op)
            for i, name in enumerate(op.attrs["operand_buffers"]):
                place = self.by_name[name]
                self._write(place, slot, operands[i])
                operands[i] = self._read(place, slot)
        if self.on_wait and op.kind in _GM_STORES and isinstance(operands[0], np.ndarray) \
                and operands[0].flags.c_contiguous:
            self.gm_before = operands[0].copy()
        if self.inner is not None:
            self.inner.before(program, op, operands)

    def after(self, program, op, operands, results) -> None:
        if op.kind in CONTROL:
            self.loops.after(op)
            self._wait(op, "post_wait_flags", every=True)
        elif self.gm_before is not None:
            self._hold_store(op, operands[0])
        else:
            for v, value in zip(op.results, results):
                place = self.places.get(id(v))
                if place is None:
                    continue
                slot = self._iteration() % place.stages
                self.slots[place.name] = slot
                if self.on_wait and op.attrs.get("pipe") in _GM_COPY_PIPES:
                    self.pending.setdefault(op.attrs["pipe"], []).append(
                        _TileCopy(self, place, slot, value))
                else:
                    self._write(place, slot, value)
        self._set(op, "set_flags")
        if self.inner is not None:
            self.inner.after(program, op, operands, results)

    def _hold_store(self, op, mem: np.ndarray) -> None:
        """Undo what the store wrote and keep it pending on its pipe until a wait lands it."""
        raw, old = mem.view(np.uint8), self.gm_before.view(np.uint8)
        self.gm_before = None
        at = np.flatnonzero(raw != old)
        if at.size:
            self.pending.setdefault(op.attrs["pipe"], []).append(_GMStore(raw, at, raw[at]))
            raw[at] = old[at]

    # --- flags: copies land at the wait that covers them --------------------------------
    def _iteration(self) -> int:
        return self.loops.current

    def _ids(self, flag, every: bool):
        return [(flag.src, flag.dst, i) for i in flag.ids(self._iteration(), every)]

    def _set(self, op, attr: str) -> None:
        # Every flag the pipe sets after a copy fires once the copy is done: the copy
        # lands (once) at whichever of their waits comes first.
        for flag in op.attrs.get(attr, ()):
            copies = [c for c in self.pending.get(flag.src, ()) if c.pending]
            self.pending[flag.src] = copies
            for key in self._ids(flag, every=False):
                if copies:
                    self.covered.setdefault(key, []).extend(copies)

    def _wait(self, op, attr: str, every: bool = False) -> None:
        for flag in op.attrs.get(attr, ()):
            for key in self._ids(flag, every):
                for copy in self.covered.pop(key, ()):
                    if copy.pending:
                        copy.land()

    # --- arenas ---------------------------------------------------------------------------
    def _view(self, place: _Place, slot: int) -> np.ndarray:
        start = place.offset + slot * place.nbytes
        count = int(np.prod(place.shape, dtype=np.int64))
        raw = self.arenas[place.scope][start:start + count * np.dtype(place.dtype).itemsize]
        return raw.view(place.dtype)

    def _write(self, place: _Place, slot: int, value) -> None:
        self._view(place, slot)[:] = np.asarray(value, dtype=place.dtype).reshape(-1)

    def _read(self, place: _Place, slot: int) -> np.ndarray:
        return self._view(place, slot).reshape(place.shape).copy()
