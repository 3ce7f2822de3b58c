"""Sort and top-k along one axis of a flat tile, as numba helpers.

Tiles are seen as ``(outer, n, inner)`` like in ``reduce_lib``.

* ``sort``: ascending puts NaN last (np.sort) and is stable (-0.0 and 0.0 keep their
  order); descending is the exact reverse.
* ``topk``: the k largest, largest first, ties to the lower index, NaN above every
  number (NaNs among themselves by index).  The order is total, so small k selects
  directly (O(n·k)) and larger k merge-sorts the indices (O(n log n)).

Example::

    >>> a = np.array([1, 3, 3, 2], np.float32)
    >>> v = np.empty(2, np.float32); i = np.empty(2, np.int32)
    >>> topk(a, 1, 4, 1, 2, v, i); v, i
    (array([3., 3.], dtype=float32), array([1, 2], dtype=int32))
"""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, error_model="numpy")

_SELECT_MAX_K = 16  # above this, sorting the whole line beats k selection passes


@njit(**_JIT)
def sort(a, outer, n, inner, out, descending):
    """Stable sort of every line along the axis into ``out``."""
    line = np.empty(n, a.dtype)
    order = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for o in range(outer):
        base = o * n * inner
        for j in range(inner):
            for k in range(n):
                line[k] = a[base + k * inner + j]
            _rank_merge(line, order, tmp, n, False)
            for k in range(n):
                src = n - 1 - k if descending else k
                out[base + k * inner + j] = line[order[src]]


@njit(**_JIT)
def _before(x, i, y, j):
    # True when (x, index i) ranks above (y, index j) for topk
    xn = x != x
    yn = y != y
    if xn or yn:
        if xn and yn:
            return i < j
        return xn
    if x > y:
        return True
    if x < y:
        return False
    return i < j


@njit(**_JIT)
def _ascending(x, i, y, j):
    # True when (x, index i) sorts before (y, index j): ascending, NaN last, stable
    xn = x != x
    yn = y != y
    if xn or yn:
        if xn and yn:
            return i < j
        return yn
    if x < y:
        return True
    if x > y:
        return False
    return i < j


@njit(**_JIT)
def _rank_merge(line, order, tmp, n, top_first):
    # bottom-up merge sort of the indices 0..n-1 by _before (top_first) or _ascending
    for i in range(n):
        order[i] = i
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            p, q, t = lo, mid, lo
            while p < mid and q < hi:
                x, i, y, j = line[order[q]], order[q], line[order[p]], order[p]
                if _before(x, i, y, j) if top_first else _ascending(x, i, y, j):
                    tmp[t] = order[q]
                    q += 1
                else:
                    tmp[t] = order[p]
                    p += 1
                t += 1
            while p < mid:
                tmp[t] = order[p]
                p += 1
                t += 1
            while q < hi:
                tmp[t] = order[q]
                q += 1
                t += 1
            lo = hi
        for i in range(n):
            order[i] = tmp[i]
        width *= 2


@njit(**_JIT)
def _rank_select(line, order, taken, n, k):
    # the k best indices in rank order, one pass per pick
    taken[:] = False
    for r in range(k):
        best = -1
        for i in range(n):
            if taken[i]:
                continue
            if best < 0 or _before(line[i], i, line[best], best):
                best = i
        taken[best] = True
        order[r] = best


@njit(**_JIT)
def topk(a, outer, n, inner, k, values, indices):
    """Top-k along the axis: ``values``/``indices`` are flat ``(outer, k, inner)``."""
    line = np.empty(n, a.dtype)
    order = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    taken = np.empty(n, np.bool_)
    for o in range(outer):
        base = o * n * inner
        obase = o * k * inner
        for j in range(inner):
            for i in range(n):
                line[i] = a[base + i * inner + j]
            if k <= _SELECT_MAX_K:
                _rank_select(line, order, taken, n, k)
            else:
                _rank_merge(line, order, tmp, n, True)
            for r in range(k):
                values[obase + r * inner + j] = line[order[r]]
                indices[obase + r * inner + j] = order[r]
