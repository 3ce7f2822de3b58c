"""Dispatch: which slot goes to which expert, without moving activations (vLLM's
``moe_align_block_size``), and the explicit permute (CANN MoeInitRouting style).

A *slot* is one (token, choice) pair, numbered row-major: slot ``s = t * k + j``;
S = T * k slots.  Three kernels build the grouped-GEMM metadata:

1. ``count_kernel`` (one program per ``BLOCK_S`` slots): each block's per-expert counts
   (stored, for ranks) and the histogram ``counts`` by ``atomic_add``.
2. ``offsets_kernel`` (one program): each expert keeps ``min(count, capacity)`` slots,
   its segment padded to a multiple of ``BLOCK_M``; ``offsets`` is the exclusive prefix
   sum, ``expert_ids`` one id per ``BLOCK_M`` rows (-1 past the end), ``sorted_ids``
   prefilled with the pad sentinel S, ``total`` the padded length.
3. ``scatter_kernel`` (one program per ``BLOCK_S`` slots): a slot's rank among its
   expert's slots (earlier blocks' counts + its rank in the block: deterministic, no
   atomics order); kept slots (rank < capacity) write ``sorted_ids[offsets[e] + rank] =
   s`` and ``row_idx[s]`` (their row in the padded order; -1 if dropped).

The arrays (``AlignedRouting``), for T=4, k=3, E=5, BLOCK_M=4 and topk_ids
``[[2,3,4],[1,2,4],[1,3,4],[1,2,3]]``: ``sorted_ids = [3,6,9,12, 0,4,10,12, 1,7,11,12,
2,5,8,12]`` (12 = pad), ``expert_ids = [1, 2, 3, 4]`` (then -1 up to the worst case).

Example::

    >>> a = align(np.array([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]]), 5, block_m=4)
    >>> a.sorted_ids[:a.total].tolist()[:8], a.expert_ids[:4].tolist()
    ([3, 6, 9, 12, 0, 4, 10, 12], [1, 2, 3, 4])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import npujit.language as nl
from npujit import cdiv, next_power_of_2, npu_kernel

from .launch import KernelLaunch, run_all


@npu_kernel
def count_kernel(ids_ptr, counts_ptr, block_counts_ptr, S, E,
                 BLOCK_S: nl.constexpr, BLOCK_E: nl.constexpr):
    pid = nl.program_id(0)
    s = pid * BLOCK_S + nl.arange(0, BLOCK_S)
    ids = nl.load(ids_ptr + s, mask=s < S, other=-1)
    cols = nl.arange(0, BLOCK_E)
    c = nl.sum((ids[:, None] == cols[None, :]).to(nl.int32), axis=0)
    nl.store(block_counts_ptr + pid * E + cols, c, mask=cols < E)
    nl.atomic_add(counts_ptr + cols, c, mask=cols < E)


@npu_kernel
def offsets_kernel(counts_ptr, offsets_ptr, expert_ids_ptr, sorted_ids_ptr, total_ptr,
                   E, S, capacity, max_blocks,
                   BLOCK_M: nl.constexpr, BLOCK_E: nl.constexpr, FILL: nl.constexpr):
    cols = nl.arange(0, BLOCK_E)
    counts = nl.load(counts_ptr + cols, mask=cols < E, other=0)
    padded = (nl.minimum(counts, capacity) + (BLOCK_M - 1)) // BLOCK_M * BLOCK_M
    end = nl.cumsum(padded, axis=0)
    nl.store(offsets_ptr + cols, end - padded, mask=cols < E)
    total = nl.sum(padded, axis=0)
    nl.store(total_ptr, total)
    end = nl.where(cols < E, end, 2147483647)       # padding experts never end
    for b0 in nl.range(0, max_blocks, FILL):
        b = b0 + nl.arange(0, FILL)
        first_row = b * BLOCK_M
        # a block's expert is the number of segments that end at or before its first row
        e = nl.sum((end[None, :] <= first_row[:, None]).to(nl.int32), axis=1)
        nl.store(expert_ids_ptr + b, nl.where(first_row < total, e, -1), mask=b < max_blocks)
        rows = first_row[:, None] + nl.arange(0, BLOCK_M)[None, :]
        nl.store(sorted_ids_ptr + rows, nl.full((FILL, BLOCK_M), S, nl.int32),
                 mask=b[:, None] < max_blocks)


@npu_kernel
def scatter_kernel(ids_ptr, block_counts_ptr, offsets_ptr, sorted_ids_ptr, row_idx_ptr,
                   S, E, capacity, BLOCK_S: nl.constexpr, BLOCK_E: nl.constexpr):
    pid = nl.program_id(0)
    s = pid * BLOCK_S + nl.arange(0, BLOCK_S)
    ids = nl.load(ids_ptr + s, mask=s < S, other=-1)
    cols = nl.arange(0, BLOCK_E)
    hit = (ids[:, None] == cols[None, :]).to(nl.int32)
    earlier = nl.zeros((BLOCK_E,), dtype=nl.int32)
    for p in nl.range(0, pid):
        earlier += nl.load(block_counts_ptr + p * E + cols, mask=cols < E, other=0)
    before = nl.cumsum(hit, axis=0) - hit + earlier[None, :]
    rank = nl.sum(before * hit, axis=1)
    keep = (s < S) & (rank < capacity)
    pos = nl.load(offsets_ptr + ids, mask=keep, other=0) + rank
    nl.store(sorted_ids_ptr + pos, s, mask=keep)
    nl.store(row_idx_ptr + s, nl.where(keep, pos, -1), mask=s < S)


@npu_kernel
def permute_kernel(x_ptr, sorted_ids_ptr, expanded_ptr, S, H, stride_xt,
                   TOP_K: nl.constexpr, BLOCK_M: nl.constexpr, BLOCK_H: nl.constexpr):
    pid = nl.program_id(0)
    rows = pid * BLOCK_M + nl.arange(0, BLOCK_M)
    slot = nl.load(sorted_ids_ptr + rows)
    valid = slot < S
    tok = slot // TOP_K
    for h in nl.range(0, H, BLOCK_H):
        cols = h + nl.arange(0, BLOCK_H)
        x = nl.load(x_ptr + tok[:, None] * stride_xt + cols[None, :],
                    mask=valid[:, None] & (cols[None, :] < H))
        nl.store(expanded_ptr + rows[:, None] * H + cols[None, :], x, mask=cols[None, :] < H)


@dataclass
class AlignedRouting:
    """The grouped-GEMM metadata (every array int32):

    * ``counts [E]``: slots each expert was chosen by (before the capacity rule);
    * ``offsets [E]``: first row of each expert's segment in the padded order;
    * ``sorted_ids [max_rows]``: slot id per row, expert-major, slot order inside an
      expert; pad rows (and rows past ``total``) hold S;
    * ``expert_ids [max_rows // block_m]``: the expert of each ``block_m`` rows, -1 past
      ``total``;
    * ``row_idx [S]``: each slot's row in the padded order, -1 if dropped;
    * ``total``: rows used (the padded length; kept in ``total_buf [1]``, which the
      offsets kernel writes); ``capacity`` the per-expert limit.
    """

    counts: np.ndarray
    offsets: np.ndarray
    sorted_ids: np.ndarray
    expert_ids: np.ndarray
    row_idx: np.ndarray
    total_buf: np.ndarray
    block_m: int
    capacity: int
    top_k: int

    @property
    def total(self) -> int:
        return int(self.total_buf[0])

    @property
    def num_slots(self) -> int:
        return self.row_idx.size

    @property
    def dropped(self) -> np.ndarray:
        """Slots each expert dropped under the capacity rule."""
        return self.counts - np.minimum(self.counts, self.capacity)


def max_rows(num_slots: int, num_experts: int, block_m: int) -> int:
    """Worst-case padded length: every expert's segment one row short of a full block."""
    return cdiv(num_slots + num_experts * (block_m - 1), block_m) * block_m


# Slots x experts of the count and scatter kernels' one-hot tiles ([BLOCK_S, BLOCK_E]
# int32 and their prefix sums in UB): 64 slots per program up to 64 experts, fewer beyond
# (DeepSeek-V3's 256 experts overflowed the 910B-like part's 192 KiB UB at 64 slots).
ONE_HOT_ELEMS = 64 * 64


def align_launches(topk_ids, num_experts: int, block_m: int = 16,
                   capacity: int | None = None, block_s: int | None = None):
    """``(launches, AlignedRouting)``: the three dispatch kernels over ``topk_ids`` (an
    int32 [T, k] array they read when run, so it may be filled by an earlier launch) and
    the metadata arrays they fill.  ``block_s``: slots per program (default from
    ``ONE_HOT_ELEMS``)."""
    ids = topk_ids
    S, E = ids.size, num_experts
    cap = S if capacity is None else int(capacity)
    block_e = max(16, next_power_of_2(E))
    if block_s is None:
        block_s = max(16, min(64, ONE_HOT_ELEMS // block_e))
    nblk_s = cdiv(max(S, 1), block_s)
    rows = max_rows(S, E, block_m)
    a = AlignedRouting(np.zeros(E, np.int32), np.zeros(E, np.int32),
                       np.zeros(rows, np.int32), np.zeros(rows // block_m, np.int32),
                       np.zeros(S, np.int32), np.zeros(1, np.int32), block_m, cap,
                       ids.shape[1] if ids.ndim == 2 else 1)
    block_counts = np.zeros((nblk_s, E), np.int32)
    launches = [
        KernelLaunch(count_kernel, (nblk_s,), (ids, a.counts, block_counts, S, E),
                     dict(BLOCK_S=block_s, BLOCK_E=block_e)),
        KernelLaunch(offsets_kernel, (1,), (a.counts, a.offsets, a.expert_ids, a.sorted_ids,
                                            a.total_buf, E, S, cap, rows // block_m),
                     dict(BLOCK_M=block_m, BLOCK_E=block_e, FILL=16)),
        KernelLaunch(scatter_kernel, (nblk_s,), (ids, block_counts, a.offsets, a.sorted_ids,
                                                 a.row_idx, S, E, cap),
                     dict(BLOCK_S=block_s, BLOCK_E=block_e)),
    ]
    return launches, a


def align(topk_ids, num_experts: int, block_m: int = 16, capacity: int | None = None,
          backend: str | None = None, block_s: int | None = None) -> AlignedRouting:
    """Run the three dispatch kernels on ``topk_ids [T, k]`` (int32, in [0, E)).

    ``capacity`` limits the slots one expert takes (the first ones in slot order); None
    is dropless.  See the module doc for the arrays.

    Example::

        >>> a = align(np.array([[0, 1], [0, 1]], np.int32), 2, block_m=4)
        >>> a.total, a.sorted_ids[:8].tolist()
        (8, [0, 2, 4, 4, 1, 3, 4, 4])
    """
    ids = np.ascontiguousarray(topk_ids, dtype=np.int32)
    launches, aligned = align_launches(ids, num_experts, block_m, capacity, block_s)
    run_all(launches, backend)
    return aligned


def permute_launch(x, aligned: AlignedRouting, out, block_h: int = 64) -> KernelLaunch:
    """The launch of ``permute_kernel`` writing ``expanded_x`` into ``out``."""
    H = x.shape[1]
    return KernelLaunch(permute_kernel, (aligned.sorted_ids.size // aligned.block_m,),
                        (x, aligned.sorted_ids, out, aligned.num_slots, H,
                         x.strides[0] // x.itemsize),
                        dict(TOP_K=aligned.top_k, BLOCK_M=aligned.block_m,
                             BLOCK_H=min(block_h, next_power_of_2(H))))


def permute(x, aligned: AlignedRouting, backend: str | None = None,
            block_h: int = 64) -> np.ndarray:
    """The explicit form: ``expanded_x [max_rows, H]``, row r holding the token of slot
    ``sorted_ids[r]`` (zeros on pad rows); ``aligned.row_idx`` maps slots to rows.

    Example::

        expanded = permute(x, align(topk_ids, E))
    """
    out = np.empty((aligned.sorted_ids.size, x.shape[1]), x.dtype)
    permute_launch(x, aligned, out, block_h).run(backend)
    return out
