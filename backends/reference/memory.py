"""Global memory (GM) access for the reference interpreter: gathers, scatters, atomic
adds and block-pointer addressing, all bounds-checked.

A GM argument is a 1-D numpy array; the IR addresses it by integer element offsets from
element 0.  Two rules from docs/semantics.md shape everything here:

* masked-off lanes never touch memory: only the offsets of masked-on lanes are ever used
  as indices (or even checked), so a masked-off lane may hold any offset at all;
* lanes apply in row-major order: with duplicate offsets the last store wins, and atomic
  adds see each other's results one lane at a time.

An unmasked lane outside ``[0, len(mem))`` raises ``OutOfBoundsError`` naming the kernel,
the op's source line, the program id and the offending offset.  Negative offsets are out
of bounds (numpy would silently wrap them).

Example::

    >>> import numpy as np
    >>> mem = np.arange(4, dtype=np.float32)
    >>> where = AccessSite("k", "npu.load", "k.py:3", (0, 0, 0), "x")
    >>> gather(mem, np.array([3, 99]), np.array([True, False]), None, where)
    array([3., 0.], dtype=float32)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# An active lane's access outside its GM argument (or, for a block pointer, outside the
# declared shape on an axis without a boundary check): one error type for both tiers,
# raised here always and by the numba backend in debug mode.
from npujit.errors import OOB_FIX as FIX
from npujit.errors import OutOfBoundsError  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class AccessSite:
    """Who is accessing memory, for error messages: kernel, op, source line, program."""

    kernel: str
    op: str
    loc: str
    pid: tuple
    arg: str | None = None

    @property
    def argument(self) -> str:
        return f"argument '{self.arg}'" if self.arg else "the pointer argument"

    def error(self, what: str) -> OutOfBoundsError:
        return OutOfBoundsError(f"kernel '{self.kernel}', {self.op} at {self.loc}, program "
                                f"{self.pid}: {what}")


def check_offsets(offsets: np.ndarray, active: np.ndarray | None, size: int,
                  where: AccessSite) -> None:
    """Raise ``OutOfBoundsError`` if an active lane's offset is outside ``[0, size)``.

    Example::

        >>> site = AccessSite("k", "npu.store", "k.py:9", (1, 0, 0))
        >>> check_offsets(np.array([0, 5]), np.array([True, False]), 4, site)  # fine
    """
    off = offsets.astype(np.int64)     # compare in i64: an i8 offset vs a large size is safe
    bad = (off < 0) | (off >= size)
    if active is not None:
        bad &= active
    if bad.any():
        lane = tuple(int(i) for i in np.argwhere(bad)[0])
        raise where.error(f"lane {lane} accesses offset {int(off[lane])}, outside "
                          f"[0, {size}) of {where.argument}; {FIX}")


def gather(mem: np.ndarray, offsets: np.ndarray, mask: np.ndarray | None,
           other: np.ndarray | None, where: AccessSite) -> np.ndarray:
    """Lane i reads ``mem[offsets[i]]`` where ``mask[i]``; masked-off lanes give
    ``other[i]`` (or 0) without reading.  See the module example."""
    check_offsets(offsets, mask, mem.shape[0], where)
    if mask is None:
        return mem[offsets.astype(np.intp)]
    out = np.zeros(offsets.shape, mem.dtype) if other is None else other.copy()
    out[mask] = mem[offsets[mask].astype(np.intp)]
    return out


def _last_lane_per_offset(idx: np.ndarray) -> np.ndarray:
    """Positions (ascending) in the 1-D ``idx`` of the last lane writing each offset."""
    _, first_in_reversed = np.unique(idx[::-1], return_index=True)
    return np.sort(idx.shape[0] - 1 - first_in_reversed)


def scatter(mem: np.ndarray, offsets: np.ndarray, values: np.ndarray,
            mask: np.ndarray | None, where: AccessSite) -> None:
    """Lane i writes ``values[i]`` to ``mem[offsets[i]]`` where ``mask[i]``; with duplicate
    offsets the last lane in row-major order wins.

    Example::

        >>> mem = np.zeros(3, np.int32)
        >>> site = AccessSite("k", "npu.store", "k.py:4", (0, 0, 0))
        >>> scatter(mem, np.array([1, 1]), np.array([5, 6], np.int32), None, site)
        >>> mem
        array([0, 6, 0], dtype=int32)
    """
    check_offsets(offsets, mask, mem.shape[0], where)
    if mask is None:
        idx, vals = offsets.ravel(), values.ravel()
    else:
        idx, vals = offsets[mask], values[mask]     # boolean indexing keeps row-major order
    # numpy does not promise which duplicate wins in a fancy assignment; make it explicit.
    keep = _last_lane_per_offset(idx)
    mem[idx[keep].astype(np.intp)] = vals[keep]


def atomic_add(mem: np.ndarray, offsets: np.ndarray, values: np.ndarray,
               mask: np.ndarray | None, add, where: AccessSite,
               cmp: np.ndarray | None = None) -> np.ndarray:
    """Lanes in row-major order each do ``old = mem[o]; mem[o] = add(old, value)``;
    returns the old values (0 for masked-off lanes, which touch nothing).  ``add`` is the
    ``npu.add`` rule for the dtype (wrapping ints, half floats rounded per add), or any
    other combine; with ``cmp`` (compare-and-swap) it is called ``add(old, value, cmp)``.

    Example::

        >>> mem = np.zeros(2, np.int32)
        >>> site = AccessSite("k", "npu.atomic_add", "k.py:5", (0, 0, 0))
        >>> atomic_add(mem, np.array([0, 0]), np.array([1, 2], np.int32), None, np.add, site)
        array([0, 1], dtype=int32)
        >>> mem
        array([3, 0], dtype=int32)
    """
    check_offsets(offsets, mask, mem.shape[0], where)
    old = np.zeros(offsets.shape, mem.dtype)
    lanes = np.arange(offsets.size) if mask is None else np.flatnonzero(mask)
    idx = offsets.ravel()[lanes].astype(np.intp)
    vals = values.ravel()[lanes]
    extra = () if cmp is None else (cmp.ravel()[lanes],)
    old_flat = old.reshape(-1)          # a view: writing it fills ``old``
    if np.unique(idx).shape[0] == idx.shape[0]:
        # Distinct offsets: the lanes do not see each other, so do them all at once.
        seen = mem[idx]
        mem[idx] = add(seen, vals, *extra)
        old_flat[lanes] = seen
        return old
    for i, (lane, o) in enumerate(zip(lanes, idx)):    # duplicates: one lane at a time
        seen = mem[o:o + 1].copy()
        mem[o:o + 1] = add(seen, vals[i:i + 1], *(e[i:i + 1] for e in extra))
        old_flat[lane] = seen[0]
    return old


@dataclass(frozen=True)
class BlockAccess:
    """Where each element of a block-pointer tile lives.

    ``addresses`` (i64, the block's shape) are element offsets into GM; ``inside`` (bool,
    same shape) is False where a checked axis's coordinate is outside the declared shape:
    those elements are padded on load and skipped on store, and never addressed.
    """

    addresses: np.ndarray
    inside: np.ndarray


def block_access(shape, strides, offsets, block_shape, boundary_check, size: int,
                 where: AccessSite) -> BlockAccess:
    """Address the block ``(i_0..i_r-1) -> sum_d (offsets[d] + i_d) * strides[d]``.

    Coordinates outside ``[0, shape[d])`` are padding on a checked axis and an
    ``OutOfBoundsError`` on an unchecked one; addresses of elements inside must be in
    ``[0, size)``.

    Example::

        >>> site = AccessSite("k", "npu.block_load", "k.py:6", (0, 0, 0))
        >>> acc = block_access((3, 4), (4, 1), (2, 2), (2, 2), (0, 1), 12, site)
        >>> acc.addresses.tolist(), acc.inside.tolist()
        ([[10, 11], [14, 15]], [[True, True], [False, False]])
    """
    rank = len(block_shape)
    checked = set(boundary_check)
    addresses = np.zeros(tuple(block_shape), np.int64)
    inside = np.ones(tuple(block_shape), bool)
    for d in range(rank):
        coord = int(offsets[d]) + np.arange(block_shape[d], dtype=np.int64)
        ok = (coord >= 0) & (coord < int(shape[d]))
        if d not in checked and not ok.all():
            bad = int(coord[~ok][0])
            raise where.error(f"block coordinate {bad} on axis {d} is outside the declared "
                              f"shape [0, {int(shape[d])}) of {where.argument}, and axis "
                              f"{d} is not in boundary_check")
        along_d = [1] * rank
        along_d[d] = block_shape[d]
        addresses = addresses + (coord * int(strides[d])).reshape(along_d)
        inside = inside & ok.reshape(along_d)
    check_offsets(addresses, inside, size, where)
    return BlockAccess(addresses, inside)


def block_gather(mem: np.ndarray, access: BlockAccess, padding: float) -> np.ndarray:
    """The block tile: ``mem`` at ``access.addresses`` inside, ``padding`` outside.

    Example::

        >>> mem = np.arange(4, dtype=np.float32)
        >>> acc = BlockAccess(np.array([2, 3]), np.array([True, False]))
        >>> block_gather(mem, acc, np.nan)
        array([ 2., nan], dtype=float32)
    """
    out = np.full(access.addresses.shape, padding, mem.dtype)
    out[access.inside] = mem[access.addresses[access.inside].astype(np.intp)]
    return out


def block_scatter(mem: np.ndarray, access: BlockAccess, values: np.ndarray) -> None:
    """Write ``values`` at ``access.addresses`` where inside; if strides alias two
    elements, the later one in row-major order wins (as for ``npu.store``).

    Example::

        >>> mem = np.zeros(3, np.int8)
        >>> acc = BlockAccess(np.array([0, 0, 2]), np.array([True, True, False]))
        >>> block_scatter(mem, acc, np.array([1, 2, 3], np.int8))
        >>> mem
        array([2, 0, 0], dtype=int8)
    """
    idx, vals = access.addresses[access.inside], values[access.inside]
    keep = _last_lane_per_offset(idx)
    mem[idx[keep].astype(np.intp)] = vals[keep]
