"""Where a recorded GM load or store lands: the bytes it really moves, the L2 region key
it touches and the HBM bursts its offsets fall in (``sim/l2.py``, ``sim/bursts.py``).
``sim/lower.py``'s stream recorder asks these for every GM copy it emits.

Example::

    >>> gm_region(block_load_op, [a, 64, 64, 64, 1, 0, 32])   # doctest: +SKIP
    ('a_ptr', ((0, 64), (32, 64)))
"""
from __future__ import annotations

import numpy as np

from npujit.ir.ops import Kind

from .bursts import (box_bursts, burst_runs, in_bounds_box, lanes_bursts,
                     lanes_bursts_many)
from .cost import round_up

# Ops that address GM by pointer lanes (the rest by a block pointer).
_LANE_OPS = (Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW)


def _arg_name(op) -> str:
    return getattr(op.operands[0], "name", None) or f"arg{id(op.operands[0])}"


class _Access:
    """What a load or store's GM region and bursts need of its op, looked up once: the
    pointer argument's name, lanes or block (its shape and checked axes), the element
    size; ``burst`` = 0 when the recorder has no spec (no burst counting)."""

    __slots__ = ("name", "lanes", "block", "checked", "itemsize", "regions", "burst",
                 "_blocks")

    def __init__(self, op, regions: bool, burst: int):
        self.name = _arg_name(op)
        self.lanes = op.kind in _LANE_OPS
        self.block = () if self.lanes else tuple(op.attrs["block_shape"])
        self.checked = frozenset(op.attrs.get("boundary_check", ()))
        v = op.result if op.kind in (Kind.LOAD, Kind.BLOCK_LOAD) else op.operands[0]
        self.itemsize = v.type.dtype.itemsize
        self.regions, self.burst = regions, burst
        self._blocks: dict = {}    # (shape, offsets, strides) -> block_place's answer

    def lanes_place(self, count: int, lo: int, hi: int, runs: int | None = None) -> tuple:
        """``(gm_region, burst_bytes)`` of ``count`` active lanes from ``lo`` to ``hi``
        whose bursts change ``runs`` times in lane order (``sim/bursts.py``)."""
        region = (self.name, lo, hi, count) if self.regions and count else None
        if not self.burst or not count:
            return region, None
        return region, self._unless_one_run(
            lanes_bursts(count, lo, hi, self.itemsize, self.burst, runs),
            count * self.itemsize)

    def lanes_bursts(self, count: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     runs: np.ndarray | None) -> np.ndarray:
        """The ``burst_bytes`` of :meth:`lanes_place` for many accesses at once (arrays of
        their numbers), -1 where it is None."""
        if not self.burst:
            return np.full(len(count), -1, np.int64)
        got = lanes_bursts_many(count, lo, hi, self.itemsize, self.burst, runs)
        one = -(-(count * self.itemsize) // self.burst) * self.burst    # round_up
        return np.where((got == one) | (got == 0), -1, got)

    def offsets_place(self, offsets: np.ndarray, active: np.ndarray) -> tuple:
        """:meth:`lanes_place` of the element ``offsets`` of a pointer access whose
        ``active`` lanes (broadcast to ``offsets``) move data."""
        lanes = offsets[active]
        if not lanes.size:
            return self.lanes_place(0, 0, 0)
        runs = burst_runs(offsets, self.itemsize, self.burst, active) if self.burst else None
        return self.lanes_place(int(lanes.size), int(lanes.min()), int(lanes.max()), runs)

    def block_place(self, shape, offsets, strides) -> tuple:
        """``(gm_region, burst_bytes)`` of the block at ``offsets`` in an array of ``shape``
        with ``strides`` (elements).  Remembered: programs of a grid read the same tiles
        (a matmul's A row block once per N block)."""
        key = (*shape, *offsets, *strides)
        got = self._blocks.get(key)
        if got is None:
            got = self._blocks[key] = self._block_place(shape, offsets, strides)
        return got

    def _block_place(self, shape, offsets, strides) -> tuple:
        box = in_bounds_box(self.block, self.checked, shape, offsets)
        region = (self.name, box) if self.regions else None
        if not self.burst:
            return region, None
        got = box_bursts(box, strides, self.itemsize, self.burst)
        if not got:
            return region, None
        n = 1
        for lo, hi in box:
            n *= hi - lo
        return region, self._unless_one_run(got, n * self.itemsize)

    def _unless_one_run(self, burst_bytes: int, nbytes: int):
        """None when the bursts are those of one run from a burst boundary (the default)."""
        return None if burst_bytes == round_up(nbytes, self.burst) else burst_bytes


def gm_region(op, operands) -> tuple | None:
    """The L2 key of the GM bytes a load/store touches (``sim/l2.py``): the pointer
    argument's name and, for a block pointer, the in-bounds box ``(lo, hi)`` per axis; for
    pointer lanes, the first and last element offset of the active lanes and their count.
    ``None`` when no lane is active.

    Example::

        >>> gm_region(block_load_op, [a, 64, 64, 64, 1, 0, 32])   # doctest: +SKIP
        ('a_ptr', ((0, 64), (32, 64)))
    """
    access = _Access(op, True, 0)
    if access.lanes:
        return access.offsets_place(*_active_offsets(op, operands))[0]
    shape, _, offsets = op.block_layout(operands)
    return access.block_place([int(x) for x in shape], [int(x) for x in offsets], ())[0]


def _active_offsets(op, operands) -> tuple:
    """``(offsets, active)`` of a pointer access: its element offsets as a tile and which
    lanes move data (the mask broadcast to them; every lane without one)."""
    offsets = np.asarray(operands[op.info.operand_index("offsets", len(operands))])
    mask_at = op.info.operand_index("mask", len(operands))
    if mask_at is not None and operands[mask_at] is not None:
        return offsets, np.broadcast_to(np.asarray(operands[mask_at], bool), offsets.shape)
    return offsets, np.ones(offsets.shape, bool)


def _moved(op, operands) -> int:
    """Elements a load/store really moves: mask lanes that are on, or the in-bounds part
    of a block (boundary-checked axes clipped to the array)."""
    k = op.kind
    if k in (Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW):
        mask_at = op.info.operand_index("mask", len(operands))
        if mask_at is not None and operands[mask_at] is not None:
            return int(np.count_nonzero(operands[mask_at]))
        return int(np.asarray(operands[op.info.operand_index("offsets", len(operands))]).size)
    block = tuple(op.attrs["block_shape"])
    r = len(block)
    shape, _, offsets = ([int(x) for x in part] for part in op.block_layout(operands))
    checked = set(op.attrs.get("boundary_check", ()))
    n = 1
    for d in range(r):
        if d in checked:
            lo, hi = max(offsets[d], 0), min(offsets[d] + block[d], shape[d])
            n *= max(0, hi - lo)
        else:
            n *= block[d]
    return n
