"""Combine: the k expert outputs of each token, weighted, summed back into its row (plus
a shared expert), and the final cast of the fp32 accumulation to the activation dtype.

The fused layer combines inside the expert kernel (``atomic_add`` into fp32 rows,
experts.py); ``combine_kernel`` is the unfused baseline's unpermute + weighted sum over the
permuted expert outputs ``y [rows, H]`` (``row_idx[slot]`` = the slot's row, -1 dropped).

Example::

    >>> y = np.ones((4, 8), np.float32)
    >>> combine(y, np.array([0, 1, 2, -1], np.int32), np.full((2, 2), 0.5, np.float32),
    ...         np.float32)[1].tolist()[:2]
    [0.5, 0.5]
"""
from __future__ import annotations

import numpy as np

import npujit.language as nl
from npujit import cdiv, next_power_of_2, npu_kernel
from npujit.target import ASCEND_910B_LIKE

from .launch import KernelLaunch


@npu_kernel
def combine_kernel(y_ptr, row_idx_ptr, weights_ptr, shared_ptr, out_ptr, T, H,
                   TOP_K: nl.constexpr, HAS_SHARED: nl.constexpr, BLOCK_T: nl.constexpr,
                   BLOCK_H: nl.constexpr):
    t = nl.program_id(0) * BLOCK_T + nl.arange(0, BLOCK_T)
    hs = nl.program_id(1) * BLOCK_H + nl.arange(0, BLOCK_H)
    inside = (t[:, None] < T) & (hs[None, :] < H)
    acc = nl.zeros((BLOCK_T, BLOCK_H), dtype=nl.float32)
    if HAS_SHARED:
        acc += nl.load(shared_ptr + t[:, None] * H + hs[None, :], mask=inside).to(nl.float32)
    for j in nl.static_range(TOP_K):
        row = nl.load(row_idx_ptr + t * TOP_K + j, mask=t < T, other=-1)
        w = nl.load(weights_ptr + t * TOP_K + j, mask=t < T, other=0.0)
        y = nl.load(y_ptr + row[:, None] * H + hs[None, :],
                    mask=(row[:, None] >= 0) & (hs[None, :] < H))
        acc += w[:, None] * y.to(nl.float32)
    nl.store(out_ptr + t[:, None] * H + hs[None, :], acc, mask=inside)


@npu_kernel
def cast_kernel(src_ptr, dst_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(dst_ptr + offs, nl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def combine_launch(y, row_idx, topk_weights, out, shared=None, block_t: int = 16,
                   block_h: int = 128) -> KernelLaunch:
    """The launch of ``combine_kernel`` writing the combined rows into ``out``."""
    T, k = topk_weights.shape
    H = y.shape[1]
    bh = max(16, min(block_h, next_power_of_2(H)))
    return KernelLaunch(combine_kernel, (cdiv(max(T, 1), block_t), cdiv(H, bh)),
                        (y, row_idx, topk_weights, shared, out, T, H),
                        dict(TOP_K=k, HAS_SHARED=shared is not None, BLOCK_T=block_t,
                             BLOCK_H=bh))


def combine(y, row_idx, topk_weights, out_dtype, shared=None, backend: str | None = None,
            block_t: int = 16, block_h: int = 128) -> np.ndarray:
    """``out[t] = sum_j w[t, j] * y[row_idx[t*k + j]] (+ shared[t])`` in ``out_dtype``.

    Example::

        out = combine(y, aligned.row_idx, topk_weights, x.dtype)
    """
    out = np.empty((topk_weights.shape[0], y.shape[1]), out_dtype)
    combine_launch(y, row_idx, topk_weights, out, shared, block_t, block_h).run(backend)
    return out


def cast_block(n: int) -> int:
    """Elements per program of the cast: enough programs for every AIV of the 910B-like
    part (npujit/target.py), each as long as that allows, from 1024 to 8192 elements.  A
    short program pays the HBM latency for little data: the Mixtral 8x7B layer's fp32
    output (2048 x 4096) casts in 100.1 us at 1024, 40.0 us at 8192 (bandwidth floor 31
    us); at 16 x 512, 0.65 us at 1024 against 0.98 at 8192.

    Example::

        >>> cast_block(2048 * 4096), cast_block(64 * 4096), cast_block(16 * 512)
        (8192, 8192, 1024)
    """
    return max(1024, min(8192, next_power_of_2(cdiv(max(n, 1), ASCEND_910B_LIKE.aiv_cores))))


def cast_launch(src, dst, block: int | None = None) -> KernelLaunch:
    """The launch that writes ``src`` converted to ``dst``'s dtype into ``dst``
    (``block``: elements per program, default ``cast_block``)."""
    block = cast_block(src.size) if block is None else block
    return KernelLaunch(cast_kernel, (cdiv(max(src.size, 1), block),),
                        (src.reshape(-1), dst.reshape(-1), src.size), dict(BLOCK=block))


def cast(src, dtype, backend: str | None = None, block: int | None = None) -> np.ndarray:
    """``src`` converted to ``dtype`` by a kernel (round to nearest even).

    Example::

        y = cast(acc_f32, np.float16)
    """
    if src.dtype == dtype:
        return src
    dst = np.empty(src.shape, dtype)
    cast_launch(src, dst, block).run(backend)
    return dst
