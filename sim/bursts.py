"""How many GM bursts a load or store touches, from its real offsets.

HBM moves whole bursts (``spec.alignment["GM"]``: 512 B on the Ascend presets,
docs/npu-facts.md §A6), so a copy's HBM traffic is the bursts its bytes fall in, not its
byte count: a contiguous run of ``b`` bytes from byte ``s`` touches
``(s + b - 1) // burst - s // burst + 1`` bursts; a strided or gathered copy pays for every
burst it touches, once.  Each GM argument is taken to start on a burst boundary (the runtime's
allocator aligns GM buffers).  The on-chip side keeps its own 32 B alignment
(``sim/cost.py``).

* Pointer lanes (what the numba recording keeps of them: the active lanes' count,
  lowest / highest element offset, and their burst runs -- how often the burst a lane
  falls in changes, walking the lanes in row-major order): ``min(count, bursts spanned,
  runs)`` -- exact for any uniform stride (a stride under one burst touches every burst
  of the span, a larger one one burst per lane) and for a gather of rows (each row's
  bursts once, however far apart the rows are), an upper bound otherwise (a burst the
  walk leaves and comes back to counts again).
* A block access: one run per row of the innermost axis (contiguous when its stride is
  1, else one run per element), from the in-bounds box, the strides and the offsets;
  every burst any run touches counts once (two rows 256 B apart share a burst).

Example::

    >>> lanes_bursts(2048, 0, 2047, 4, 512)      # 8 KiB contiguous f32: 16 bursts
    8192
    >>> lanes_bursts(64, 0, 63 * 256, 2, 512)    # every 256th f16: one burst per lane
    32768
    >>> lanes_bursts(512, 0, 40 * 4096 + 255, 2, 512, runs=2)   # rows 0 and 40 of [*, 4096]
    1024
"""
from __future__ import annotations

import numpy as np


def run_bursts(start: np.ndarray | int, nbytes: int, burst: int):
    """Bursts touched by contiguous runs of ``nbytes`` starting at byte ``start``."""
    return (start + nbytes - 1) // burst - start // burst + 1


def lanes_bursts(count: int, lo: int, hi: int, itemsize: int, burst: int,
                 runs: int | None = None) -> int:
    """Bytes of the bursts touched by ``count`` lanes of ``itemsize`` bytes whose element
    offsets run from ``lo`` to ``hi``, ``runs`` their :func:`burst_runs` when known (see
    the module docstring)."""
    if not count:
        return 0
    spanned = run_bursts(lo * itemsize, (hi - lo + 1) * itemsize, burst)
    return min(count, spanned, runs or count) * burst


def lanes_bursts_many(count: np.ndarray, lo: np.ndarray, hi: np.ndarray, itemsize: int,
                      burst: int, runs: np.ndarray | None = None) -> np.ndarray:
    """:func:`lanes_bursts` of many accesses at once (int64 arrays; a ``runs`` of 0, or
    none, counts as unknown).

    Example::

        >>> lanes_bursts_many(np.array([2048, 64]), np.array([0, 0]),
        ...                   np.array([2047, 63 * 256]), 2, 512).tolist()
        [4096, 32768]
    """
    start = lo * itemsize
    spanned = run_bursts(start, (hi - lo + 1) * itemsize, burst)
    known = count if runs is None else np.where(runs > 0, runs, count)
    return np.where(count > 0, np.minimum(np.minimum(count, spanned), known) * burst, 0)


def burst_runs(offsets: np.ndarray, itemsize: int, burst: int,
               active: np.ndarray | None = None) -> int:
    """The bursts a DMA walking the active lanes in row-major order fetches: a lane
    starts a new one when its burst differs from the previous active lane's and, in a
    tile of two or more dimensions, from the active lane right above it (same column,
    previous row), which fetched it already.  ``offsets`` in elements; ``active`` (the
    mask, broadcast to ``offsets``) defaults to every lane.

    The lane above makes rows that read several runs each, interleaved, count their
    bursts once: a ``[128, 256]`` bf16 tile from a panel-major workspace (each row 256 B
    of panel ``p`` and 256 B of panel ``p + 1``, the rows of a panel contiguous) fetches
    128 bursts, as the two 32 KB panel pieces do; walking the lanes alone counts 256.  It
    stays an upper bound: a lane is only left out when an earlier lane had its burst.

    Example::

        >>> burst_runs(np.array([0, 1, 4096, 4097, 8]), 2, 512)   # bursts 0, 16, 0
        3
        >>> rows = np.arange(4)[:, None] * 128
        >>> panels = np.concatenate([rows + np.arange(128), rows + 4096 + np.arange(128)], 1)
        >>> burst_runs(panels, 2, 512)      # two panels, rows of 256 B: 2 bursts each
        4
    """
    offsets = np.asarray(offsets)
    on = np.ones(offsets.shape, bool) if active is None else \
        np.broadcast_to(np.asarray(active, bool), offsets.shape)
    if not on.any():
        return 0
    b = offsets.astype(np.int64) * itemsize // burst
    flat_b, flat_on = b.ravel(), on.ravel()
    lanes = flat_b[flat_on]
    new = np.ones(lanes.size, bool)
    new[1:] = lanes[1:] != lanes[:-1]
    if b.ndim >= 2 and b.shape[-1]:
        cols = b.shape[-1]
        rows_b = np.where(on, b, -1).reshape(-1, cols)
        above = np.full_like(rows_b, -1)
        above[1:] = rows_b[:-1]
        new &= (rows_b.ravel() != above.ravel())[flat_on]
    return int(np.count_nonzero(new))


def block_bursts(block: tuple, checked, shape, strides, offsets, itemsize: int,
                 burst: int) -> int:
    """Bytes of the bursts touched by a block access: ``block`` is its block shape,
    ``checked`` the boundary-checked axes (clipped to ``shape``), ``strides`` and
    ``offsets`` in elements per axis.  Each row of the innermost axis is a run; a burst
    that several rows touch counts once.

    Example::

        >>> block_bursts((4, 100), (), (4, 100), (100, 1), (0, 0), 4, 512)  # 1600 B in a row
        2048
        >>> block_bursts((4, 64), (), (4, 1024), (1024, 1), (0, 0), 2, 512)  # 4 runs, 2 KiB apart
        2048
    """
    return box_bursts(in_bounds_box(block, checked, shape, offsets), strides, itemsize, burst)


def in_bounds_box(block: tuple, checked, shape, offsets) -> tuple:
    """``((lo, hi), ...)`` per axis of a block at ``offsets``: boundary-checked axes
    clipped to ``shape`` (an empty axis has ``hi <= lo``).

    Example::

        >>> in_bounds_box((4, 4), (1,), (8, 6), (6, 4))
        ((6, 10), (4, 6))
    """
    box = []
    for d, size in enumerate(block):
        lo = offsets[d]
        if d in checked:
            hi = min(lo + size, shape[d])
            box.append((lo if lo > 0 else 0, hi))
        else:
            box.append((lo, lo + size))
    return tuple(box)


def box_bursts(box: tuple, strides, itemsize: int, burst: int) -> int:
    """:func:`block_bursts` of the in-bounds box ``((lo, hi), ...)`` per axis.

    Example::

        >>> box_bursts(((0, 4), (0, 64)), (1024, 1), 2, 512)
        2048
    """
    lo, hi = [], []
    for a, b in box:
        if b <= a:
            return 0
        lo.append(a)
        hi.append(b)
    last = len(box) - 1
    if last and strides[last] != 1 and 1 in strides:
        # A transposed view (a weight read as [K, N] from its [N, K] rows): the bytes it
        # touches do not depend on the order of the axes, so make the unit-stride axis
        # the innermost one and count its rows as contiguous runs.
        d = list(strides).index(1)
        order = [a for a in range(last + 1) if a != d] + [d]
        lo, hi = [lo[a] for a in order], [hi[a] for a in order]
        strides = [strides[a] for a in order]
    n, step = hi[last] - lo[last], strides[last]
    if step == 1 and last <= 1:     # the common cases, without numpy
        start = lo[last] + (lo[0] * strides[0] if last else 0)
        per_row = run_bursts(start * itemsize, n * itemsize, burst)
        rows = hi[0] - lo[0] if last else 1
        apart = strides[0] * itemsize if last else 0
        if rows == 1 or (apart % burst == 0 and apart // burst >= per_row):
            return rows * per_row * burst      # rows start alike, share no burst
    starts = np.zeros(1, np.int64)
    for d in range(last):
        axis = np.arange(lo[d], hi[d], dtype=np.int64) * strides[d]
        starts = (starts[:, None] + axis[None, :]).ravel()
    starts = starts + lo[last] * step
    if step != 1 and n > 1:     # not contiguous: every element is a run
        starts = (starts[:, None] + np.arange(n, dtype=np.int64)[None, :] * step).ravel()
        n = 1
    first = starts * itemsize // burst
    last_b = ((starts + n) * itemsize - 1) // burst
    return _union(first, last_b) * burst


def _union(first: np.ndarray, last: np.ndarray) -> int:
    """How many integers the intervals ``[first[i], last[i]]`` cover together."""
    if len(first) > 1 and np.any(first[1:] < first[:-1]):
        order = np.argsort(first, kind="stable")
        first, last = first[order], last[order]
    length = last - first + 1
    if len(first) == 1:
        return int(length[0])
    # Everything before interval i covers [first[i], reach] of it (their starts are lower).
    reach = np.maximum.accumulate(last)[:-1]
    covered = np.clip(reach - first[1:] + 1, 0, length[1:])
    return int(length.sum() - covered.sum())
