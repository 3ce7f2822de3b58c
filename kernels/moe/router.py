"""The fused MoE router: ``x @ router_weight.T`` on the Cube, then the score function,
group-limited selection, top-k and the weights on the Vector unit, in one kernel; only
``topk_weights`` / ``topk_ids`` reach GM (the logits never do).

One program routes ``BLOCK_T`` tokens; the expert axis is padded to ``BLOCK_E`` (a power
of two, at least 16 for the Cube) with -inf logits.  Router math is fp32 whatever x's
dtype: the Cube accumulates ``x . w`` in fp32.

Example::

    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((5, 32)).astype(np.float16)
    >>> w, ids = route(x, rng.standard_normal((8, 32)).astype(np.float16), 2)
    >>> w.shape, ids.dtype
    ((5, 2), dtype('int32'))
"""
from __future__ import annotations

import numpy as np

import npujit.language as nl
from npujit import cdiv, next_power_of_2, npu_kernel
from npujit.target import ASCEND_910B_LIKE

from .checks import as_array, check_router
from .launch import KernelLaunch, run_all
from .routing import RENORM_EPS, resolve


def select_experts(scores, bias_ptr, E, routed_scaling_factor, TOP_K, RENORMALIZE,
                   N_GROUP, TOPK_GROUP, GROUP_SIZE, BLOCK_T, BLOCK_E):
    """Scores [BLOCK_T, BLOCK_E] (fp32, padded experts ignored) -> (weights, ids), both
    [BLOCK_T, TOP_K]: the bias steers selection, groups limit it, the unbiased scores at
    the chosen ids are the weights.  Traced inside a kernel (plain tile code, no loops)."""
    cols = nl.arange(0, BLOCK_E)
    real = cols[None, :] < E
    bias = nl.load(bias_ptr + cols, mask=cols < E, other=0.0)
    choice = nl.where(real, scores + bias[None, :], float("-inf"))
    if N_GROUP > 1:
        # Rank groups by the sum of their two best (biased) scores, keep TOPK_GROUP.
        # The tile's padding experts form whole groups of -inf, never kept.
        size = GROUP_SIZE
        n_tile_groups = BLOCK_E // size
        grouped = nl.reshape(choice, (BLOCK_T, n_tile_groups, size))
        best2, _ = nl.topk(grouped, 2, axis=2)
        _, groups = nl.topk(nl.sum(best2, axis=2), TOPK_GROUP, axis=1)
        hit = groups[:, :, None] == nl.arange(0, n_tile_groups)[None, None, :]
        kept = nl.max(hit.to(nl.int32), axis=1) > 0
        kept = nl.reshape(nl.broadcast_to(kept[:, :, None], (BLOCK_T, n_tile_groups, size)),
                          (BLOCK_T, BLOCK_E))
        choice = nl.where(kept, choice, float("-inf"))
    _, ids = nl.topk(choice, TOP_K, axis=1)
    # The weights are the unbiased scores at the chosen ids (a one-hot select).
    chosen = ids[:, :, None] == cols[None, None, :]
    w = nl.sum(nl.where(chosen, scores[:, None, :], 0.0), axis=2)
    if RENORMALIZE:
        w = w / (nl.sum(w, axis=1)[:, None] + RENORM_EPS)
    w = w * routed_scaling_factor
    return w, ids


@npu_kernel
def router_kernel(x_ptr, w_ptr, bias_ptr, weights_ptr, ids_ptr, T, H, E, stride_xt,
                  routed_scaling_factor, prob_sum_ptr,
                  TOP_K: nl.constexpr, SIGMOID: nl.constexpr, RENORMALIZE: nl.constexpr,
                  N_GROUP: nl.constexpr, TOPK_GROUP: nl.constexpr,
                  GROUP_SIZE: nl.constexpr, BLOCK_T: nl.constexpr, BLOCK_E: nl.constexpr,
                  BLOCK_H: nl.constexpr, L0_BLOCK_K: nl.constexpr = 0,
                  PROB_SUM: nl.constexpr = False):
    pid = nl.program_id(0)
    x_blk = nl.make_block_ptr(x_ptr, shape=(T, H), strides=(stride_xt, 1),
                              offsets=(pid * BLOCK_T, 0), block_shape=(BLOCK_T, BLOCK_H))
    # router_weight [E, H] read as its transpose [H, E]: the Cube's B operand.
    w_blk = nl.make_block_ptr(w_ptr, shape=(H, E), strides=(1, H), offsets=(0, 0),
                              block_shape=(BLOCK_H, BLOCK_E))
    logits = nl.zeros((BLOCK_T, BLOCK_E), dtype=nl.float32)
    for h in nl.range(0, H, BLOCK_H, num_stages=2):
        logits = nl.dot(nl.load(x_blk, boundary_check=(0, 1)),
                        nl.load(w_blk, boundary_check=(0, 1)), logits)
        x_blk = nl.advance(x_blk, (0, BLOCK_H))
        w_blk = nl.advance(w_blk, (BLOCK_H, 0))
    real = nl.arange(0, BLOCK_E)[None, :] < E
    if SIGMOID:
        scores = nl.sigmoid(logits)
    else:
        scores = nl.softmax(nl.where(real, logits, float("-inf")), axis=1)
    w, ids = select_experts(scores, bias_ptr, E, routed_scaling_factor, TOP_K, RENORMALIZE,
                            N_GROUP, TOPK_GROUP, GROUP_SIZE, BLOCK_T, BLOCK_E)
    rows = pid * BLOCK_T + nl.arange(0, BLOCK_T)
    slots = rows[:, None] * TOP_K + nl.arange(0, TOP_K)[None, :]
    nl.store(weights_ptr + slots, w, mask=rows[:, None] < T)
    nl.store(ids_ptr + slots, ids, mask=rows[:, None] < T)
    if PROB_SUM:
        # The load-balance statistics' router probabilities (kernels/moe/balance.py): each
        # token's scores as a distribution over the real experts, summed over the block's
        # tokens and added into prob_sum [E].
        p = nl.where(real & (rows[:, None] < T), scores, 0.0)
        if SIGMOID:
            p = p / (nl.sum(p, axis=1)[:, None] + RENORM_EPS)
        cols = nl.arange(0, BLOCK_E)
        nl.atomic_add(prob_sum_ptr + cols, nl.sum(p, axis=0), mask=cols < E)


@npu_kernel
def score_kernel(logits_ptr, scores_ptr, T, E, SIGMOID: nl.constexpr,
                 BLOCK_T: nl.constexpr, BLOCK_E: nl.constexpr):
    """The unfused baseline's score step: fp32 logits [T, E] -> softmax or sigmoid."""
    rows = nl.program_id(0) * BLOCK_T + nl.arange(0, BLOCK_T)
    cols = nl.arange(0, BLOCK_E)
    at = rows[:, None] * E + cols[None, :]
    inside = (rows[:, None] < T) & (cols[None, :] < E)
    logits = nl.load(logits_ptr + at, mask=inside, other=float("-inf"))
    if SIGMOID:
        scores = nl.sigmoid(logits)
    else:
        scores = nl.softmax(logits, axis=1)
    nl.store(scores_ptr + at, scores, mask=inside)


@npu_kernel
def select_kernel(scores_ptr, bias_ptr, weights_ptr, ids_ptr, T, E, routed_scaling_factor,
                  TOP_K: nl.constexpr, RENORMALIZE: nl.constexpr, N_GROUP: nl.constexpr,
                  TOPK_GROUP: nl.constexpr, GROUP_SIZE: nl.constexpr, BLOCK_T: nl.constexpr,
                  BLOCK_E: nl.constexpr):
    """The unfused baseline's top-k step: scores [T, E] in GM -> weights and ids."""
    rows = nl.program_id(0) * BLOCK_T + nl.arange(0, BLOCK_T)
    cols = nl.arange(0, BLOCK_E)
    scores = nl.load(scores_ptr + rows[:, None] * E + cols[None, :],
                     mask=(rows[:, None] < T) & (cols[None, :] < E), other=0.0)
    w, ids = select_experts(scores, bias_ptr, E, routed_scaling_factor, TOP_K, RENORMALIZE,
                            N_GROUP, TOPK_GROUP, GROUP_SIZE, BLOCK_T, BLOCK_E)
    slots = rows[:, None] * TOP_K + nl.arange(0, TOP_K)[None, :]
    nl.store(weights_ptr + slots, w, mask=rows[:, None] < T)
    nl.store(ids_ptr + slots, ids, mask=rows[:, None] < T)


# Router tiles (``router_meta``), sized for the 910B-like part's AIC (npujit/target.py):
# the routing of T tokens is a stream of x rows through the Cube, bound by the AIC's MTE2.
ROUTER_CORES = ASCEND_910B_LIKE.aic_cores
L1_BYTES = ASCEND_910B_LIKE.capacity["L1"]
L0A_BYTES = ASCEND_910B_LIKE.capacity["L0A"]
L0B_BYTES = ASCEND_910B_LIKE.capacity["L0B"]


def router_meta(T: int, H: int, E: int, block_t: int | None = None,
                block_h: int | None = None, itemsize: int = 2):
    """The grid and tile sizes the router launches with.

    ``BLOCK_T`` (tokens per program, default): 16, doubled up to 64 while that still
    leaves more than two programs per AIC core -- fewer, longer programs re-read the
    router weight less and pay the launch's fixed costs less often.  ``BLOCK_H`` (the x
    tile's width, default): all of H, as far as two stages of the x and weight tiles fill
    at most three quarters of L1; long rows are few large copies, and the AIC's MTE2 pays a
    fixed latency per copy.  ``L0_BLOCK_K`` feeds the Cube from those L1 tiles in K-chunks
    that fit L0A twice.  Simulated, Mixtral's router (H 4096, E 8, bf16) on the 910B-like
    part: 2048 tokens 83.4 -> 16.8 us (its floor 10.6 us), 512 tokens 26.1 -> 6.5 us
    (floor 2.7 us), 8192 tokens 58.7 us (floor 42.1 us), against 16-token programs with
    128-wide tiles.  Assumed in those numbers: the 910B-like part's 500-cycle HBM latency
    per copy and 1.6 TB/s (npujit/target.py); a shorter latency favours smaller tiles.

    Example::

        >>> grid, meta = router_meta(2048, 4096, 8)
        >>> grid, meta["BLOCK_T"], meta["BLOCK_H"], meta["L0_BLOCK_K"]
        ((64,), 32, 2048, 256)
        >>> router_meta(512, 7168, 256)[1]          # DeepSeek-V3: 256 experts fill L0B
        {'BLOCK_T': 16, 'BLOCK_E': 256, 'BLOCK_H': 256, 'L0_BLOCK_K': 64}
    """
    block_e = max(16, next_power_of_2(E))
    if block_t is None:
        block_t = 16
        while block_t < 64 and cdiv(max(T, 1), 2 * block_t) > 2 * ROUTER_CORES:
            block_t *= 2
    if block_h is None:
        fit = (3 * L1_BYTES // 4) // (2 * (block_t + block_e) * itemsize)
        block_h = max(16, min(next_power_of_2(H), 1 << (fit.bit_length() - 1)))
    # two stages of the [BLOCK_T, K] chunk in L0A and of the [K, BLOCK_E] chunk in L0B
    l0 = min(L0A_BYTES // (2 * block_t * itemsize), L0B_BYTES // (2 * block_e * itemsize))
    l0_k = max(16, min(block_h, 512 // itemsize, 1 << (l0.bit_length() - 1)))
    return (cdiv(max(T, 1), block_t),), dict(BLOCK_T=block_t, BLOCK_E=block_e,
                                             BLOCK_H=block_h,
                                             L0_BLOCK_K=l0_k if l0_k < block_h else 0)


def router_args(x, router_weight, top_k: int, scoring="mixtral", block_t: int | None = None,
                prob_sum: np.ndarray | None = None):
    """Validated arguments of ``router_kernel``: (grid, args, constexprs, outputs).
    ``prob_sum``: an fp32 [E] array the kernel adds the per-expert sums of the tokens'
    router probabilities into (``PROB_SUM``), or None."""
    x, router_weight = as_array(x, "x"), as_array(router_weight, "router_weight")
    T, H, E = check_router(x, router_weight, top_k)
    r = resolve(scoring, E, top_k)
    grid, meta = router_meta(T, H, E, block_t, itemsize=x.itemsize)
    size = E // r.n_group
    if r.n_group > 1 and meta["BLOCK_E"] % size:
        raise ValueError(f"group-limited routing needs a power-of-two group size "
                         f"(num_experts / n_group), got {E} / {r.n_group} = {size}")
    weights = np.zeros((T, top_k), np.float32)
    ids = np.zeros((T, top_k), np.int32)
    args = (x, router_weight, r.bias(E), weights, ids, T, H, E, x.strides[0] // x.itemsize,
            float(r.routed_scaling_factor),
            np.zeros(1, np.float32) if prob_sum is None else prob_sum)
    meta.update(TOP_K=int(top_k), SIGMOID=r.scoring == "sigmoid",
                RENORMALIZE=bool(r.renormalize), N_GROUP=r.n_group, TOPK_GROUP=r.topk_group,
                GROUP_SIZE=size, PROB_SUM=prob_sum is not None)
    return grid, args, meta, (weights, ids)


def router_launch(x, router_weight, top_k: int, scoring="mixtral",
                  block_t: int | None = None, prob_sum: np.ndarray | None = None):
    """``(KernelLaunch, (topk_weights, topk_ids))``: the fused router as data (see
    ``router_args`` for ``prob_sum``)."""
    grid, args, meta, out = router_args(x, router_weight, top_k, scoring, block_t, prob_sum)
    return KernelLaunch(router_kernel, grid, args, meta), out


def route_unfused_launches(x, router_weight, top_k: int, scoring="mixtral",
                           block_t: int = 16):
    """``(launches, (topk_weights, topk_ids))``: the baseline's router as three kernels
    with the fp32 logits and scores in GM: router matmul (``kernels/matmul.py``), score,
    top-k."""
    from npujit.kernels.matmul import matmul_kernel

    grid, args, meta, (weights, ids) = router_args(x, router_weight, top_k, scoring, block_t)
    x, router_weight, bias, T, H, E = args[0], args[1], args[2], args[5], args[6], args[7]
    logits = np.empty((T, E), np.float32)
    scores = np.empty((T, E), np.float32)
    w_t = router_weight.T                   # [H, E] view: the matmul's B operand
    sx, sw = x.itemsize, router_weight.itemsize
    be = meta["BLOCK_E"]
    launches = [
        KernelLaunch(matmul_kernel, (cdiv(max(T, 1), 16), cdiv(E, be)),
                     (x, w_t, logits, T, E, H, x.strides[0] // sx, x.strides[1] // sx,
                      w_t.strides[0] // sw, w_t.strides[1] // sw, E, 1),
                     dict(BLOCK_M=16, BLOCK_N=be, BLOCK_K=64, NUM_STAGES=2, L0_BLOCK_K=0)),
        KernelLaunch(score_kernel, grid, (logits, scores, T, E),
                     dict(SIGMOID=meta["SIGMOID"], BLOCK_T=block_t, BLOCK_E=be)),
        KernelLaunch(select_kernel, grid, (scores, bias, weights, ids, T, E, args[9]),
                     {k: meta[k] for k in ("TOP_K", "RENORMALIZE", "N_GROUP", "TOPK_GROUP",
                                           "GROUP_SIZE", "BLOCK_T", "BLOCK_E")}),
    ]
    return launches, (weights, ids)


def route_unfused(x, router_weight, top_k: int, scoring="mixtral",
                  backend: str | None = None, block_t: int = 16):
    """``route`` as three kernels with the logits and scores in GM (the baseline):
    router matmul, score, top-k.  Returns ``(topk_weights, topk_ids)``.

    Example::

        w, ids = route_unfused(x, router_weight, 2)
    """
    launches, out = route_unfused_launches(x, router_weight, top_k, scoring, block_t)
    run_all(launches, backend)
    return out


def route(x, router_weight, top_k: int, scoring="mixtral", backend: str | None = None,
          block_t: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(topk_weights [T, k] fp32, topk_ids [T, k] int32)`` for ``x [T, H]`` and
    ``router_weight [E, H]``; ``scoring`` is a preset name (``"mixtral"``, ``"qwen"``,
    ``"qwen3"``, ``"deepseek_v3"``, ``"switch"``, ``"gating_topk_softmax"``) or a
    ``Routing``.  Ties go to the lower expert id.

    Example::

        w, ids = route(x, router_weight, 8,
                       scoring=Routing.preset("deepseek_v3", correction_bias=bias))
    """
    launch, out = router_launch(x, router_weight, top_k, scoring, block_t)
    launch.run(backend)
    return out
