"""The numpy references test their own invariants: the two Mixtral router forms agree,
hand-worked routing and alignment examples, the explicit permute inverts, capacity keeps
the earliest slots, the layer equals a dense per-expert formulation, load statistics."""
from __future__ import annotations

import numpy as np
import pytest

from npujit.kernels.moe import reference as ref
from npujit.kernels.moe.routing import Routing

from .conftest import problem


def test_mixtral_router_forms_agree():
    """softmax -> top-k -> renormalise == top-k on the logits -> softmax over the k."""
    x, router, *_ = problem(T=50, E=8)
    w1, ids1 = ref.route(x, router, 2, "mixtral")
    w2, ids2 = ref.route_logits_first(x, router, 2)
    np.testing.assert_array_equal(ids1, ids2)
    np.testing.assert_allclose(w1, w2, rtol=1e-5)


def test_switch_is_top1_probability_and_gating_is_unnormalised():
    x, router, *_ = problem(T=9, E=4)
    p = ref.softmax(ref.router_logits(x, router))
    w, ids = ref.route(x, router, 1, "switch")
    np.testing.assert_array_equal(ids[:, 0], p.argmax(axis=1))
    np.testing.assert_allclose(w[:, 0], p.max(axis=1), rtol=1e-6)
    w3, ids3 = ref.route(x, router, 3, "gating_topk_softmax")
    np.testing.assert_allclose(w3, np.take_along_axis(p, ids3, axis=1), rtol=1e-6)
    with pytest.raises(ValueError, match="at most 1"):
        ref.route(x, router, 2, "switch")


def test_deepseek_group_limited_by_hand():
    """Groups of 2: sums of sigmoid scores g0 = 1.0, g1 = 1.46, g2 = 1.48, g3 = 0.39;
    the best two groups are g2 and g1, so expert 0 (the best single score) is excluded;
    expert 5 and then 2 (tied with 3: the lower id) win."""
    logits = np.array([[5.0, -5.0, 1.0, 1.0, 0.0, 4.0, -1.0, -2.0]], np.float32)
    r = Routing.preset("deepseek_v3", n_group=4, topk_group=2)
    w, ids = ref.route(logits, np.eye(8, dtype=np.float32), 2, r)
    assert ids.tolist() == [[5, 2]]
    s = ref.sigmoid(np.array([4.0, 1.0]))
    np.testing.assert_allclose(w[0], s / s.sum() * 2.5, rtol=1e-6)


def test_deepseek_bias_steers_selection_not_weights():
    logits = np.array([[2.0, 1.0, 0.0, -1.0]], np.float32)
    bias = np.array([0.0, 0.0, 0.0, 5.0], np.float32)
    r = Routing.preset("deepseek_v3", n_group=1, topk_group=1, correction_bias=bias,
                       renormalize=False, routed_scaling_factor=1.0)
    w, ids = ref.route(logits, np.eye(4, dtype=np.float32), 2, r)
    assert ids.tolist() == [[3, 0]]
    np.testing.assert_allclose(w[0], ref.sigmoid(np.array([-1.0, 2.0])), rtol=1e-6)


@pytest.mark.parametrize("routing", ["mixtral", "qwen", "gating_topk_softmax"])
def test_ties_go_to_the_lower_expert(routing):
    logits = np.array([[1.0, 3.0, 3.0, 3.0, 0.0]], np.float32)
    _, ids = ref.route(logits, np.eye(5, dtype=np.float32), 2, routing)
    assert ids.tolist() == [[1, 2]]


def test_align_block_size_matches_the_vllm_example():
    ids = np.array([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]])
    sorted_ids, expert_ids, total = ref.align_block_size(ids, 5, 4)
    assert sorted_ids.tolist() == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12]
    assert expert_ids.tolist() == [1, 2, 3, 4] and total == 16


def test_permute_and_capacity():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 4, (30, 2))
    x = rng.standard_normal((30, 5)).astype(np.float32)
    cap = ref.expert_capacity(30, 4, 2, 1.0)
    assert cap == 15
    expanded, row_idx, counts = ref.permute(x, ids, 4, capacity=cap)
    keep = ref.kept(ids, cap).ravel()
    slots = np.flatnonzero(keep)
    np.testing.assert_array_equal(expanded[row_idx[slots]], x[slots // 2])
    assert (row_idx[~keep] == -1).all() and counts.max() <= cap
    # the kept slots of an expert are its first `cap` in slot order
    flat = ids.ravel()
    for e in range(4):
        mine = np.flatnonzero(flat == e)
        np.testing.assert_array_equal(keep[mine], np.arange(mine.size) < cap)
    stats = ref.load_stats(ids, 4, capacity=cap)
    np.testing.assert_array_equal(stats["dropped"], np.maximum(stats["load"] - cap, 0))


def test_layer_equals_the_dense_formulation():
    """HF's loop: every expert on every token, masked by routing; the shared expert added."""
    x, router, gate_up, down, shared = problem(T=7, H=8, I=6, E=4, shared_i=5)
    w, ids = ref.route(x, router, 2, "mixtral")
    dense = np.zeros((7, 8), np.float32)
    for e in range(4):
        g, u = x @ gate_up[e, :6].T, x @ gate_up[e, 6:].T
        coef = (w * (ids == e)).sum(axis=1, keepdims=True)
        dense += coef * ((g / (1 + np.exp(-g)) * u) @ down[e].T)
    g, u = x @ shared[0][:5].T, x @ shared[0][5:].T
    dense += (g / (1 + np.exp(-g)) * u) @ shared[1].T
    got = ref.moe(x, router, gate_up, down, 2, "mixtral", shared_expert=shared)
    np.testing.assert_allclose(got, dense, rtol=1e-5, atol=1e-5)


def test_load_stats_balanced_and_skewed():
    uniform = np.arange(16).reshape(8, 2) % 4
    probs = np.full((8, 4), 0.25, np.float32)
    s = ref.load_stats(uniform, 4, probs)
    assert s["cv"] == 0.0 and s["aux_loss"] == pytest.approx(1.0)
    skewed = np.zeros((8, 2), int)
    skewed[:, 1] = 1
    s = ref.load_stats(skewed, 4, probs)
    assert s["load"].tolist() == [8, 8, 0, 0] and s["cv"] == pytest.approx(1.0)


def test_floors_against_hand_counts():
    from npujit.kernels.moe.floors import (expected_active_experts, layer_floor,
                                           router_floor)
    from npujit.target import ASCEND_910B_LIKE as spec

    assert expected_active_experts(1, 8, 2) == pytest.approx(2.0)
    assert expected_active_experts(64, 8, 2) == pytest.approx(8.0, abs=1e-6)
    f = layer_floor(512, 4096, 14336, 8, 2, 2, spec, active=8)
    expert = 3 * 4096 * 14336 * 2
    assert f.weight_bytes == 8 * expert + 8 * 4096 * 2
    assert f.bytes == f.weight_bytes + 2 * 512 * 4096 * 2 + 512 * 2 * 8
    assert f.flops == 2 * 512 * (2 * 3 * 4096 * 14336 + 4096 * 8)
    assert f.seconds == pytest.approx(f.bytes / 1.6e12) and f.bound == "hbm"
    r = router_floor(2048, 4096, 8, 2, 2, spec)
    assert r.bytes == 2048 * 4096 * 2 + 8 * 4096 * 2 + 2048 * 2 * 8
