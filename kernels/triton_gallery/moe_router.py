"""A Mixture-of-Experts router in one kernel, written as a Triton user would: the gate
matmul ``x @ w_gate`` over ``BLOCK_H`` chunks of the hidden size, the top ``TOP_K``
experts of each token by repeated argmax (ties to the lower expert), and the softmax
over the chosen logits (Mixtral's routing).

Example::

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((6, 32)).astype(np.float16)
    >>> w = rng.standard_normal((32, 8)).astype(np.float16)
    >>> weights, ids = route(x, w, top_k=2)
    >>> bool(np.allclose(weights.sum(axis=1), 1.0))
    True
"""
from __future__ import annotations

import numpy as np

import npujit.triton as triton
import npujit.triton.language as tl


@triton.jit
def router_kernel(x_ptr, w_ptr, weights_ptr, ids_ptr, T, H, E,
                  stride_xt, stride_wh,
                  BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_E: tl.constexpr,
                  TOP_K: tl.constexpr):
    pid = tl.program_id(0)
    offs_t = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_e = tl.arange(0, BLOCK_E)
    offs_h = tl.arange(0, BLOCK_H)
    logits = tl.zeros((BLOCK_T, BLOCK_E), dtype=tl.float32)
    for h in range(0, H, BLOCK_H):
        cols = h + offs_h
        x = tl.load(x_ptr + offs_t[:, None] * stride_xt + cols[None, :],
                    mask=(offs_t[:, None] < T) & (cols[None, :] < H), other=0.0)
        w = tl.load(w_ptr + cols[:, None] * stride_wh + offs_e[None, :],
                    mask=(cols[:, None] < H) & (offs_e[None, :] < E), other=0.0)
        logits = tl.dot(x, w, logits)
    logits = tl.where(offs_e[None, :] < E, logits, -float("inf"))

    top = tl.max(logits, axis=1)                    # the first choice: softmax's shift
    slots = tl.arange(0, TOP_K)
    chosen = tl.zeros((BLOCK_T, TOP_K), dtype=tl.float32)
    chosen_ids = tl.zeros((BLOCK_T, TOP_K), dtype=tl.int32)
    for i in tl.static_range(TOP_K):
        idx = tl.argmax(logits, axis=1)
        p = tl.exp(tl.max(logits, axis=1) - top)
        chosen = tl.where(slots[None, :] == i, p[:, None], chosen)
        chosen_ids = tl.where(slots[None, :] == i, idx[:, None], chosen_ids)
        logits = tl.where(offs_e[None, :] == idx[:, None], -float("inf"), logits)
    weights = chosen / tl.sum(chosen, axis=1)[:, None]

    out = offs_t[:, None] * TOP_K + slots[None, :]
    tl.store(weights_ptr + out, weights, mask=offs_t[:, None] < T)
    tl.store(ids_ptr + out, chosen_ids, mask=offs_t[:, None] < T)


def route(x: np.ndarray, w_gate: np.ndarray, top_k: int = 2, block_t: int = 16,
          block_h: int = 64, kernel=router_kernel):
    """``(weights, ids)``, each ``(T, top_k)``: each token's experts, best first, and
    their weights (a softmax over the chosen logits).  ``top_k`` a power of two."""
    T, H = x.shape
    E = w_gate.shape[1]
    weights = np.empty((T, top_k), np.float32)
    ids = np.empty((T, top_k), np.int32)
    kernel[(triton.cdiv(T, block_t),)](
        x, w_gate, weights, ids, T, H, E, x.strides[0] // x.itemsize,
        w_gate.strides[0] // w_gate.itemsize, BLOCK_T=block_t,
        BLOCK_H=min(block_h, triton.next_power_of_2(H)), BLOCK_E=triton.next_power_of_2(E),
        TOP_K=top_k)
    return weights, ids
