"""The raise of the default mode's range check, compiled once for every kernel.

A ``raise`` with runtime values written inline costs numba and LLVM a lot per site (a
12-sub-kernel fuzz batch with ~50 check sites: 18 s of CPU to compile inline, 13 s
with the raise in this shared function, 12 s with no raise at all).  So generated code
calls :func:`out_of_bounds` with the check's *site* number; the launcher
(``runtime.NumbaLauncher``) turns the site into the message the module lists in
``OOB_SITES`` (``range_check.py`` writes both).

Example::

    >>> try:
    ...     out_of_bounds(0, 1, 0, 0, 130, 130, 128)
    ... except OutOfBoundsError as e:
    ...     (e.site, e.values)
    (0, (1, 0, 0, 130, 130, 128))
"""
from __future__ import annotations

from numba import njit

from npujit.errors import IndexOverflowError, OutOfBoundsError


@njit(cache=True, nogil=True)
def out_of_bounds(site, pid0, pid1, pid2, lo, hi, extent):
    """Raise ``OutOfBoundsError(site, ...)``: program ``(pid0, pid1, pid2)`` reached
    offsets ``[lo, hi]`` of an argument with ``extent`` elements at check ``site``."""
    raise OutOfBoundsError(site, pid0, pid1, pid2, lo, hi, extent)


@njit(cache=True, nogil=True)
def block_span(site, pid0, pid1, pid2, extent, offs, sizes, strides, shapes, clip):
    """Raise through :func:`out_of_bounds` when the box of a block-pointer access leaves
    its argument of ``extent`` elements: on axis ``d`` the coordinates
    ``offs[d] .. offs[d] + sizes[d] - 1``, clipped to ``[0, shapes[d])`` where bit ``d``
    of ``clip`` is set (a boundary-checked axis: the rest is padding, never addressed);
    an empty box addresses nothing.  The extremes of an affine map over a box lie at its
    corners, so the range is exact.  One call per access (inline, it was ~10 lines and
    one branch per axis in every kernel, which numba's compile time pays for)."""
    lo = 0
    hi = 0
    for d in range(len(offs)):
        c0 = offs[d]
        c1 = offs[d] + sizes[d] - 1
        if (clip >> d) & 1:
            c0 = max(c0, 0)
            c1 = min(c1, shapes[d] - 1)
        if c0 > c1:
            return
        a = c0 * strides[d]
        b = c1 * strides[d]
        lo += min(a, b)
        hi += max(a, b)
    if lo < 0 or hi >= extent:
        out_of_bounds(site, pid0, pid1, pid2, lo, hi, extent)


@njit(cache=True, nogil=True)
def index_overflow(site, pid0, pid1, pid2, a, b, exact, wrapped):
    """Raise ``IndexOverflowError(site, ...)``: program ``(pid0, pid1, pid2)``'s scalar
    int32 index arithmetic on ``a`` and ``b`` gave ``wrapped`` instead of ``exact``."""
    raise IndexOverflowError(site, pid0, pid1, pid2, a, b, exact, wrapped)
