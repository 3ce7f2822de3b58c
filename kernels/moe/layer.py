"""The MoE layer: ``fused_moe`` (the fused pipeline), ``fused_experts`` (the same from
precomputed routing, as vLLM's ``fused_experts``) and ``unfused_moe`` (the baseline).

Fused: the router kernel (logits stay on chip), the three small dispatch kernels
(histogram, offsets, slot scatter: int32 metadata only), and the expert kernels that
gather token rows by index, run gate/up and the activation, then down, and add the
weighted result into the fp32 output: by default (``form="workspace"``) two kernels with
the activation in a GM workspace between them (what a separated AIC + AIV part needs,
and the faster form on the CPU); ``form="onchip"`` is one kernel that keeps the
activation on chip (a coupled part such as the 910-like preset); a cast kernel when x is
not fp32.  ``fused_plan`` / ``unfused_plan`` give the launches as data
(``launch.simulate_all`` runs them through the simulator).

Unfused: every step its own kernel, its result in GM: router matmul (fp32 logits), score,
top-k, dispatch, permute (``expanded_x``), GEMM1 (``[rows, 2I]``), activation
(``[rows, I]``), GEMM2 (``[rows, H]``), unpermute + combine.

Example::

    >>> rng = np.random.default_rng(0)
    >>> T, H, I, E = 6, 16, 16, 4
    >>> x = rng.standard_normal((T, H)).astype(np.float32)
    >>> out = fused_moe(x, rng.standard_normal((E, H)).astype(np.float32),
    ...                 rng.standard_normal((E, 2 * I, H)).astype(np.float32),
    ...                 rng.standard_normal((E, H, I)).astype(np.float32), 2)
    >>> out.shape, out.dtype
    ((6, 16), dtype('float32'))
"""
from __future__ import annotations

import math

import numpy as np

from npujit import cdiv, knobs, next_power_of_2

from . import combine as combine_mod
from .checks import as_array, check_experts, check_layer, check_shared, check_topk
from .dispatch import AlignedRouting, align_launches, permute_launch
from .experts import ACTIVATIONS, act_launch, experts_launches, grouped_gemm_launch
from .launch import run_all
from .router import route_unfused_launches, router_launch


def expert_capacity(num_tokens: int, num_experts: int, top_k: int,
                    capacity_factor: float | None) -> int | None:
    """Slots per expert under ``capacity_factor`` (``ceil(T k / E * factor)``); None is
    dropless.

    Example::

        >>> expert_capacity(512, 8, 2, 1.25), expert_capacity(512, 8, 2, None)
        (160, None)
    """
    if capacity_factor is None:
        return None
    if not capacity_factor > 0:
        raise ValueError(f"capacity_factor must be > 0 (or None for dropless), got "
                         f"{capacity_factor!r}")
    return math.ceil(num_tokens * top_k * capacity_factor / num_experts)


def default_block_m(num_tokens: int, top_k: int, num_experts: int, itemsize: int = 2) -> int:
    """Rows per expert block: the power of two at or above twice the mean slots per
    expert, from 16 up to 128 rows of 2-byte activations (64 of fp32: the expert kernels'
    fp32 accumulators handed to the Vector fill its UB at twice that).  A block reads its
    expert's whole weights, so an expert whose tokens spill into a second block reads
    them twice; twice the mean leaves room for uneven routing.  The Mixtral 8x7B layer
    simulated on the 910B-like part (fused, bf16): at 64 tokens 16 rows 2.76 ms, 32 rows
    2.27 ms, 64 rows 2.39 ms; at 512 tokens the expert kernels take 2.30 ms at 128 rows
    against 3.05 ms at 64 (docs/moe.md).

    Example::

        >>> default_block_m(64, 2, 8), default_block_m(4, 2, 8), default_block_m(512, 2, 8)
        (32, 16, 128)
        >>> default_block_m(512, 2, 8, itemsize=4)
        64
    """
    mean = num_tokens * top_k / max(num_experts, 1)
    cap = 128 if itemsize <= 2 else 64
    return max(16, min(cap, next_power_of_2(max(1, math.ceil(2 * mean)))))


# The expert kernels' tiles when the layer runs on a CPU backend (numba, reference).
# There a padding row costs as much as a token's row (no burst or Cube edge to fill), and
# a dot reads f32 / bf16 weights where they are (backends/numba/lower_memory.py
# read_in_place), so a block's weight tiles cost nothing extra: the smallest row block,
# and long K tiles (cube_lib.dot_nt sums each output over K, and ends each sum with a
# reduction across the vector's lanes).  Stages mean nothing on the CPU; one stage lets
# the longer tiles pass the 910B-like part's L1 check, which every backend's compile
# runs.  numba, fp32, 512 tokens, H 1024, I 3584, 8 experts, top-2, 1 thread, medians of
# 3 interleaved rounds (load 1.9): 64-row blocks 1463 ms (loaded), 16 rows 439 ms, and
# with K tiles of 256: 383 ms, of 512 (and 64-wide I tiles): 364 ms.
CPU_TILES = dict(block_m=16, block_k=512, block_i=64, num_stages=1)
CPU_BACKENDS = ("llvm", "numba", "reference")     # the backends that run on this CPU


def run_tiles(backend: str | None, tiles: dict) -> dict:
    """The expert kernels' tiles and form for a run on ``backend`` (None:
    ``NPUJIT_BACKEND``): on the CPU backends (llvm, numba, the reference), the workspace form with no
    tile given takes ``CPU_TILES``; otherwise the caller's, the rest sized for the NPU
    (``default_block_m``, ``experts.workspace_tiles``: a caller who sets one tile gets
    the NPU's for the others, which fit together; the Ascend C twin keeps them too).

    Example::

        >>> run_tiles("llvm", {})["block_m"], run_tiles("numba", {"block_m": 64})
        (16, {'block_m': 64})
        >>> run_tiles("ascendc-twin", {}), run_tiles("numba", {"form": "onchip"})
        ({}, {'form': 'onchip'})
    """
    if ((backend or knobs.backend()) in CPU_BACKENDS
            and tiles.get("form", "workspace") == "workspace"
            and not any(k in tiles for k in CPU_TILES)):
        return {**tiles, **CPU_TILES}
    return dict(tiles)


def dense_routing(T: int, block_m: int) -> AlignedRouting:
    """Metadata that sends every token to expert 0 with weight 1 (a shared expert)."""
    rows = cdiv(max(T, 1), block_m) * block_m
    sorted_ids = np.minimum(np.arange(rows, dtype=np.int32), T)
    expert_ids = np.where(np.arange(rows // block_m) * block_m < T, 0, -1).astype(np.int32)
    return AlignedRouting(np.array([T], np.int32), np.zeros(1, np.int32), sorted_ids,
                          expert_ids, np.arange(T, dtype=np.int32),
                          np.array([rows], np.int32), block_m, T, 1)


def _check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")


def experts_plan(x, topk_weights, topk_ids, gate_up_proj, down_proj,
                 activation: str = "silu", shared_expert=None,
                 capacity_factor: float | None = None, block_m: int | None = None,
                 routed_later: bool = False, **tiles) -> tuple[list, np.ndarray]:
    """``(launches, out)``: dispatch, the expert kernels (and the shared expert's), the
    final cast; ``out`` ([T, H], x's dtype) holds the result once they ran.
    ``routed_later``: the routing arrays are filled by an earlier launch (not checked).

    Example::

        launches, out = experts_plan(x, topk_weights, topk_ids, gate_up_proj, down_proj)
        run_all(launches)                     # out holds the layer's output now
    """
    x = as_array(x, "x")
    gate_up_proj = as_array(gate_up_proj, "gate_up_proj")
    down_proj = as_array(down_proj, "down_proj")
    T, H, E, I = check_experts(x, gate_up_proj, down_proj)
    shared = check_shared(shared_expert, H)
    _check_activation(activation)
    if routed_later:       # the router's output arrays, filled by an earlier launch
        w, ids = topk_weights, topk_ids
    else:
        w, ids = check_topk(topk_weights, topk_ids, T, E)
    cap = expert_capacity(T, E, ids.shape[1], capacity_factor)
    block_m = block_m or default_block_m(T, ids.shape[1], E, x.itemsize)
    launches, aligned = align_launches(ids, E, block_m, cap)
    acc = np.zeros((T, H), np.float32)
    launches += experts_launches(x, aligned, w, gate_up_proj, down_proj, acc, activation,
                                 **tiles)
    if shared is not None:
        launches += experts_launches(x, dense_routing(T, block_m), np.ones(T, np.float32),
                                     shared[0][None], shared[1][None], acc, activation,
                                     **tiles)
    if x.dtype == np.float32:
        return launches, acc
    out = np.empty((T, H), x.dtype)
    return launches + [combine_mod.cast_launch(acc, out)], out


def fused_plan(x, router_weight, gate_up_proj, down_proj, top_k: int, routing="mixtral",
               activation: str = "silu", shared_expert=None,
               capacity_factor: float | None = None, **tiles) -> tuple[list, np.ndarray]:
    """``(launches, out)`` of the whole fused layer: the router, then ``experts_plan``.

    Example::

        launches, out = fused_plan(x, router_weight, gate_up_proj, down_proj, 2,
                                   form="workspace")        # the form the 910B-like part splits
        reports = simulate_all(launches, ASCEND_910B_LIKE)    # out now holds the result
    """
    x = as_array(x, "x")
    router_weight = as_array(router_weight, "router_weight")
    check_layer(x, router_weight, as_array(gate_up_proj, "gate_up_proj"),
                as_array(down_proj, "down_proj"), top_k)
    router, (w, ids) = router_launch(x, router_weight, top_k, routing)
    launches, out = experts_plan(x, w, ids, gate_up_proj, down_proj, activation,
                                 shared_expert, capacity_factor, routed_later=True, **tiles)
    return [router] + launches, out


def fused_experts(x, topk_weights, topk_ids, gate_up_proj, down_proj,
                  activation: str = "silu", shared_expert=None,
                  capacity_factor: float | None = None, backend: str | None = None,
                  **tiles) -> np.ndarray:
    """Dispatch + expert FFN + combine from precomputed ``topk_weights / topk_ids
    [T, k]``; ``[T, H]`` in x's dtype.  ``shared_expert = (gate_up [2I_s, H],
    down [H, I_s])`` is added unweighted (DeepSeek).  ``tiles``: ``block_m, block_h,
    block_k, block_i, num_stages`` and ``form`` (``"workspace"``, the default: two expert
    kernels, the activation in GM between them; ``"onchip"``: one; experts.py).  With no
    tile given, the numba and reference backends take ``CPU_TILES`` (``run_tiles``).

    Example::

        out = fused_experts(x, w, ids, gate_up_proj, down_proj)
    """
    tiles = run_tiles(backend, tiles)
    launches, out = experts_plan(x, topk_weights, topk_ids, gate_up_proj, down_proj,
                                 activation, shared_expert, capacity_factor, **tiles)
    run_all(launches, backend)
    return out


def fused_moe(x, router_weight, gate_up_proj, down_proj, top_k: int, routing="mixtral",
              activation: str = "silu", shared_expert=None,
              capacity_factor: float | None = None, backend: str | None = None,
              **tiles) -> np.ndarray:
    """The fused MoE layer: ``[T, H]`` in x's dtype.  ``routing`` is a preset name
    (``router.route``) or a ``Routing``; weight layouts as HF / vLLM hold them:
    ``router_weight [E, H]``, ``gate_up_proj [E, 2I, H]`` (gate rows first),
    ``down_proj [E, H, I]``.  ``capacity_factor`` drops the slots past
    ``ceil(T k / E * factor)`` per expert (None: dropless).  ``tiles``: as
    ``fused_experts``.

    Example::

        out = fused_moe(x, router_weight, gate_up_proj, down_proj, 2, routing="mixtral")
    """
    tiles = run_tiles(backend, tiles)
    launches, out = fused_plan(x, router_weight, gate_up_proj, down_proj, top_k, routing,
                               activation, shared_expert, capacity_factor, **tiles)
    run_all(launches, backend)
    return out


def unfused_plan(x, router_weight, gate_up_proj, down_proj, top_k: int, routing="mixtral",
                 activation: str = "silu", shared_expert=None,
                 capacity_factor: float | None = None,
                 block_m: int | None = None) -> tuple[list, np.ndarray]:
    """``(launches, out)`` of the baseline (see the module doc); ``out`` ([T, H], x's
    dtype) holds the result once they ran.

    Example::

        launches, out = unfused_plan(x, router_weight, gate_up_proj, down_proj, 2)
        reports = simulate_all(launches, ASCEND_910B_LIKE)
    """
    x = as_array(x, "x")
    router_weight = as_array(router_weight, "router_weight")
    gate_up_proj = as_array(gate_up_proj, "gate_up_proj")
    down_proj = as_array(down_proj, "down_proj")
    T, H, E, I = check_layer(x, router_weight, gate_up_proj, down_proj, top_k)
    shared = check_shared(shared_expert, H)
    _check_activation(activation)
    launches, (w, ids) = route_unfused_launches(x, router_weight, top_k, routing)
    cap = expert_capacity(T, E, top_k, capacity_factor)
    block_m = block_m or default_block_m(T, top_k, E, x.itemsize)
    steps, aligned = align_launches(ids, E, block_m, cap)
    launches += steps
    steps, y = _ffn_steps(x, aligned, gate_up_proj, down_proj, activation)
    launches += steps
    shared_y = None
    if shared is not None:
        steps, shared_y = _ffn_steps(x, dense_routing(T, block_m), shared[0][None],
                                     shared[1][None], activation)
        launches += steps
    out = np.empty((T, H), x.dtype)
    return launches + [combine_mod.combine_launch(y, aligned.row_idx, w, out, shared_y)], out


def unfused_moe(x, router_weight, gate_up_proj, down_proj, top_k: int, routing="mixtral",
                activation: str = "silu", shared_expert=None,
                capacity_factor: float | None = None, backend: str | None = None,
                block_m: int | None = None) -> np.ndarray:
    """The baseline: the same layer as ``fused_moe``, every step its own kernel with its
    intermediate in GM (see the module doc).

    Example::

        out = unfused_moe(x, router_weight, gate_up_proj, down_proj, 2)
    """
    launches, out = unfused_plan(x, router_weight, gate_up_proj, down_proj, top_k, routing,
                                 activation, shared_expert, capacity_factor,
                                 block_m or run_tiles(backend, {}).get("block_m"))
    run_all(launches, backend)
    return out


def _ffn_steps(x, aligned: AlignedRouting, gate_up_proj, down_proj, activation):
    """(launches, y): permute -> GEMM1 -> activation -> GEMM2, each a kernel with its
    result in GM; ``y [rows, H]`` in x's dtype (a shared expert's rows are its tokens)."""
    rows, H, I = aligned.sorted_ids.size, x.shape[1], gate_up_proj.shape[1] // 2
    expanded = np.empty((rows, H), x.dtype)
    h = np.empty((rows, 2 * I), x.dtype)
    a = np.empty((rows, I), x.dtype)
    y = np.empty((rows, H), x.dtype)
    bm = aligned.block_m
    return [permute_launch(x, aligned, expanded),
            grouped_gemm_launch(expanded, aligned.expert_ids, gate_up_proj, h, bm),
            act_launch(h, a, activation),
            grouped_gemm_launch(a, aligned.expert_ids, down_proj, y, bm)], y


__all__ = ["fused_moe", "fused_experts", "fused_plan", "experts_plan", "unfused_moe",
           "unfused_plan", "expert_capacity", "default_block_m"]
