"""Plain numpy Mixture-of-Experts: every piece and the whole layer, a few lines each.

These are the test oracles of the MoE kernels (written without looking at them): fp32
math, ties in top-k to the lower expert id, slots numbered row-major (slot ``t*k + j`` is
token t's j-th choice).  Weight layouts are the ones HF / vLLM hold:
``router_weight [E, H]``, ``gate_up_proj [E, 2I, H]`` (gate rows first), ``down_proj
[E, H, I]``.  A shared expert is a pair ``(gate_up [2I_s, H], down [H, I_s])``.

Example::

    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((4, 8)).astype(np.float32)
    >>> w, ids = route(x, rng.standard_normal((6, 8)).astype(np.float32), 2, "mixtral")
    >>> np.allclose(w.sum(axis=1), 1.0), ids.dtype
    (True, dtype('int32'))
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

from .routing import RENORM_EPS, resolve

# --- routing ---------------------------------------------------------------------------


def f32(a) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


def router_logits(x, router_weight) -> np.ndarray:
    """``x @ router_weight.T`` in fp32: [T, E]."""
    return f32(x) @ f32(router_weight).T


def softmax(z) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid(z) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def topk(scores, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest per row, largest first; equal scores go to the lower index.

    Example::

        >>> topk(np.array([[1.0, 3.0, 3.0, 2.0]]), 2)[1].tolist()
        [[1, 2]]
    """
    ids = np.argsort(-scores, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(scores, ids, axis=-1), ids


def route(x, router_weight, top_k: int, routing="mixtral") -> tuple[np.ndarray, np.ndarray]:
    """``(topk_weights [T, k] fp32, topk_ids [T, k] int32)`` under ``routing`` (a preset
    name or a ``Routing``)."""
    E = router_weight.shape[0]
    r = resolve(routing, E, top_k)
    logits = router_logits(x, router_weight)
    scores = softmax(logits) if r.scoring == "softmax" else sigmoid(logits)
    choice = scores + r.bias(E)             # the bias steers selection only
    if r.n_group > 1:                       # keep the topk_group best groups
        T = choice.shape[0]
        grouped = choice.reshape(T, r.n_group, E // r.n_group)
        group_score = np.sort(grouped, axis=2)[:, :, -2:].sum(axis=2)
        kept = np.zeros((T, r.n_group), bool)
        np.put_along_axis(kept, topk(group_score, r.topk_group)[1], True, axis=1)
        choice = np.where(np.repeat(kept, E // r.n_group, axis=1), choice, -np.inf)
    ids = topk(choice, top_k)[1]
    w = np.take_along_axis(scores, ids, axis=1)
    if r.renormalize:
        w = w / (w.sum(axis=1, keepdims=True) + RENORM_EPS)
    w = w * np.float32(r.routed_scaling_factor)
    return w.astype(np.float32), ids.astype(np.int32)


def router_probs(x, router_weight, top_k: int, routing="mixtral") -> np.ndarray:
    """Each token's router probabilities [T, E] for the load-balance loss: the softmax
    scores, or the sigmoid scores normalised to sum to 1 per token."""
    E = router_weight.shape[0]
    logits = router_logits(x, router_weight)
    if resolve(routing, E, top_k).scoring == "softmax":
        return softmax(logits)
    s = sigmoid(logits)
    return s / s.sum(axis=1, keepdims=True)


def route_logits_first(x, router_weight, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mixtral as mistral's reference writes it: top-k of the raw logits, then softmax over
    the k chosen.  Equal to ``route(..., "mixtral")`` in exact arithmetic."""
    vals, ids = topk(router_logits(x, router_weight), top_k)
    return softmax(vals).astype(np.float32), ids.astype(np.int32)


# --- dispatch --------------------------------------------------------------------------


def expert_capacity(num_tokens: int, num_experts: int, top_k: int, factor: float) -> int:
    """Slots one expert takes: ``ceil(T * k / E * factor)`` (Switch's capacity)."""
    return math.ceil(num_tokens * top_k * factor / num_experts)


def slot_rank(topk_ids) -> np.ndarray:
    """For each slot (row-major), how many earlier slots chose the same expert."""
    flat = np.asarray(topk_ids).ravel()
    rank = np.zeros(flat.size, np.int64)
    for e in np.unique(flat):
        where = np.flatnonzero(flat == e)
        rank[where] = np.arange(where.size)
    return rank.reshape(np.shape(topk_ids))


def kept(topk_ids, capacity: int | None = None) -> np.ndarray:
    """Bool [T, k]: the slot reaches its expert (the first ``capacity`` slots of each
    expert in slot order are kept; None = dropless).

    Example::

        >>> kept(np.array([[0, 1], [0, 1], [0, 2]]), capacity=2).tolist()
        [[True, True], [True, True], [False, True]]
    """
    if capacity is None:
        return np.ones(np.shape(topk_ids), bool)
    return slot_rank(topk_ids) < capacity


def expert_counts(topk_ids, num_experts: int, capacity: int | None = None) -> np.ndarray:
    """Slots each expert receives (after the capacity rule)."""
    ids = np.asarray(topk_ids)[kept(topk_ids, capacity)]
    return np.bincount(ids.ravel(), minlength=num_experts).astype(np.int32)


def align_block_size(topk_ids, num_experts: int, block: int, capacity: int | None = None):
    """vLLM's ``moe_align_block_size``: ``(sorted_token_ids, expert_ids,
    num_tokens_post_padded)``.  Each expert's slots in slot order, its segment padded to a
    multiple of ``block`` with the sentinel ``T*k``; one expert id per block.

    Example::

        >>> ids, experts, n = align_block_size(np.array([[1, 0], [1, 2]]), 3, 2)
        >>> ids.tolist(), experts.tolist(), n
        ([1, 4, 0, 2, 3, 4], [0, 1, 2], 6)
    """
    flat = np.asarray(topk_ids).ravel()
    keep = kept(topk_ids, capacity).ravel()
    pad = flat.size
    sorted_ids, expert_ids = [], []
    for e in range(num_experts):
        slots = np.flatnonzero((flat == e) & keep)
        n = -(-slots.size // block) * block
        sorted_ids.append(np.concatenate([slots, np.full(n - slots.size, pad)]))
        expert_ids += [e] * (n // block)
    sorted_ids = np.concatenate(sorted_ids).astype(np.int32)
    return sorted_ids, np.array(expert_ids, np.int32), int(sorted_ids.size)


def permute(x, topk_ids, num_experts: int, capacity: int | None = None):
    """The explicit form (CANN MoeInitRouting style): ``(expanded_x, expanded_row_idx,
    counts)``.  ``expanded_x`` holds token rows grouped by expert (kept slots only, slot
    order within an expert); ``expanded_row_idx[slot]`` is the slot's row there, -1 if
    dropped."""
    ids = np.asarray(topk_ids)
    flat, keep, k = ids.ravel(), kept(ids, capacity).ravel(), ids.shape[1]
    order = np.argsort(np.where(keep, flat, num_experts), kind="stable")   # dropped last
    order = order[:int(keep.sum())]
    row_idx = np.full(flat.size, -1, np.int32)
    row_idx[order] = np.arange(order.size)
    return x[order // k], row_idx, expert_counts(ids, num_experts, capacity)


# --- expert FFN and combine ------------------------------------------------------------


def act(g, activation: str = "silu") -> np.ndarray:
    """SiLU, or GELU (erf form)."""
    if activation == "silu":
        return g / (1.0 + np.exp(-g))
    if activation == "gelu":
        return 0.5 * g * (1.0 + erf(g / np.sqrt(2.0)))
    raise ValueError(f"activation must be 'silu' or 'gelu', got {activation!r}")


def ffn(h, gate_up, down, activation: str = "silu", act_dtype=np.float32) -> np.ndarray:
    """One expert: ``(act(h @ gate.T) * (h @ up.T)) @ down.T``, fp32, with the
    intermediate rounded to ``act_dtype`` (the activation dtype, as vLLM keeps it)."""
    inter = gate_up.shape[0] // 2
    h, gate_up = f32(h), f32(gate_up)
    a = act(h @ gate_up[:inter].T, activation) * (h @ gate_up[inter:].T)
    return f32(a.astype(act_dtype)) @ f32(down).T


def expert_outputs(x, topk_ids, gate_up_proj, down_proj, activation: str = "silu",
                   capacity: int | None = None) -> np.ndarray:
    """fp32 [T, k, H]: each slot's expert output (zeros for dropped slots)."""
    ids = np.asarray(topk_ids)
    keep = kept(ids, capacity)
    y = np.zeros(ids.shape + (x.shape[1],), np.float32)
    for e in np.unique(ids):
        t, j = np.nonzero((ids == e) & keep)
        if t.size:
            y[t, j] = ffn(x[t], gate_up_proj[e], down_proj[e], activation, x.dtype)
    return y


def combine(y, topk_weights, shared=None) -> np.ndarray:
    """fp32 [T, H]: ``sum_j w[t, j] * y[t, j]`` (+ the shared expert's output)."""
    out = np.einsum("tk,tkh->th", f32(topk_weights), f32(y))
    return out if shared is None else out + f32(shared)


def moe_from_topk(x, topk_weights, topk_ids, gate_up_proj, down_proj,
                  activation: str = "silu", shared_expert=None,
                  capacity_factor: float | None = None) -> np.ndarray:
    """The layer from precomputed routing; the result in x's dtype."""
    T, k = np.shape(topk_ids)
    E = gate_up_proj.shape[0]
    cap = None if capacity_factor is None else expert_capacity(T, E, k, capacity_factor)
    y = expert_outputs(x, topk_ids, gate_up_proj, down_proj, activation, cap)
    shared = None if shared_expert is None else ffn(x, *shared_expert, activation, x.dtype)
    return combine(y, topk_weights, shared).astype(x.dtype)


def moe(x, router_weight, gate_up_proj, down_proj, top_k: int, routing="mixtral",
        activation: str = "silu", shared_expert=None,
        capacity_factor: float | None = None) -> np.ndarray:
    """The whole layer: route, then experts, then combine; [T, H] in x's dtype."""
    w, ids = route(x, router_weight, top_k, routing)
    return moe_from_topk(x, w, ids, gate_up_proj, down_proj, activation, shared_expert,
                         capacity_factor)


# --- load balance ----------------------------------------------------------------------


def load_stats(topk_ids, num_experts: int, router_probs=None,
               capacity: int | None = None) -> dict:
    """Per-expert ``load`` (slots chosen), ``cv`` (std / mean of load), ``dropped`` per
    expert under ``capacity``, and with ``router_probs [T, E]`` the Switch auxiliary loss
    ``E * sum_i f_i * P_i`` (f_i: fraction of slots to expert i, P_i: mean probability);
    1.0 when perfectly balanced.

    Example::

        >>> s = load_stats(np.array([[0, 1], [0, 2]]), 4, capacity=1)
        >>> s["load"].tolist(), s["dropped"].tolist()
        ([2, 1, 1, 0], [1, 0, 0, 0])
    """
    ids = np.asarray(topk_ids)
    load = np.bincount(ids.ravel(), minlength=num_experts)
    stats = {"load": load, "cv": float(load.std() / load.mean()) if load.sum() else 0.0,
             "dropped": load - expert_counts(ids, num_experts, capacity)}
    if router_probs is not None:
        f = load / max(ids.size, 1)
        stats["aux_loss"] = float(num_experts * np.sum(f * f32(router_probs).mean(axis=0)))
    return stats
