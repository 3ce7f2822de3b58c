"""Load-balance statistics from the kernels (kernels/moe/balance.py) against the numpy
reference's ``load_stats``: the router's on-chip probability sums, the dispatch histogram,
the auxiliary loss, CV and drops; balanced and skewed routings; the simulated router with
its probability sums on the 910B-like part."""
from __future__ import annotations

import numpy as np
import pytest

from npujit.kernels.moe import reference as ref
from npujit.kernels.moe.balance import LoadBalance, route_and_balance
from npujit.kernels.moe.layer import expert_capacity
from npujit.kernels.moe.router import route, router_launch
from npujit.kernels.moe.routing import Routing
from npujit.sim import DebugOptions
from npujit.target import ASCEND_910B_LIKE

from .conftest import problem

BIAS = np.array([0.3, -0.2, 0.0, 0.1, -0.4, 0.25, 0.05, -0.1], np.float32)


def expect(x, router, k, routing, factor=None):
    _, ids = ref.route(x, router, k, routing)
    cap = expert_capacity(x.shape[0], router.shape[0], k, factor)
    return ref.load_stats(ids, router.shape[0], ref.router_probs(x, router, k, routing), cap)


@pytest.mark.parametrize("routing,k", [
    ("mixtral", 2), ("switch", 1),
    (Routing.preset("deepseek_v3", n_group=4, topk_group=2, correction_bias=BIAS), 3)],
    ids=["mixtral", "switch", "deepseek_v3"])
def test_statistics_match_the_reference(routing, k, backend):
    # 37: a partial token block; H 256 as in the demo (npujit/demo.py), whose Mixtral
    # router specialisation an empty kernel cache then compiles once for both
    x, router, *_ = problem(T=37, H=256, E=8, seed=k)
    w, ids, lb = route_and_balance(x, router, k, routing, capacity_factor=1.0,
                                   backend=backend)
    want = expect(x, router, k, routing, factor=1.0)
    np.testing.assert_array_equal(ids, ref.route(x, router, k, routing)[1])
    np.testing.assert_array_equal(lb.load, want["load"])
    np.testing.assert_array_equal(lb.dropped, want["dropped"])
    assert lb.cv == pytest.approx(want["cv"], rel=1e-6)
    assert lb.aux_loss == pytest.approx(want["aux_loss"], rel=1e-5)
    probs = ref.router_probs(x, router, k, routing)
    np.testing.assert_allclose(lb.mean_prob, probs.mean(axis=0), rtol=1e-5, atol=1e-6)
    assert lb.mean_prob.sum() == pytest.approx(1.0, rel=1e-5)


def test_skewed_routing_shows_in_every_statistic():
    """A router whose weight for expert 0 dominates: most slots go to it."""
    x, router, *_ = problem(T=64, E=8, seed=3)
    balanced = route_and_balance(x, router, 2, backend="reference")[2]
    skewed_router = router.copy()
    skewed_router[0] = 4.0 * np.sign(x.mean(axis=0))    # aligned with every token's mean
    x = x + 1.0 * np.sign(x.mean(axis=0))
    skewed = route_and_balance(x, skewed_router, 2, capacity_factor=1.25,
                               backend="reference")[2]
    want = expect(x, skewed_router, 2, "mixtral", factor=1.25)
    np.testing.assert_array_equal(skewed.load, want["load"])
    assert skewed.load[0] == 64                       # every token chose expert 0
    assert skewed.aux_loss == pytest.approx(want["aux_loss"], rel=1e-5)
    assert skewed.aux_loss > 2.0 * balanced.aux_loss
    assert skewed.cv > balanced.cv
    cap = expert_capacity(64, 8, 2, 1.25)
    assert skewed.dropped[0] == 64 - cap and skewed.dropped.sum() == want["dropped"].sum()


def test_analytic_extremes():
    """Perfect balance gives aux loss 1 and CV 0; everything on one certain expert gives E."""
    even = LoadBalance(np.full(4, 8), np.full(4, 0.25, np.float32), 16, 2)
    assert even.aux_loss == pytest.approx(1.0) and even.cv == 0.0 and even.imbalance == 1.0
    one = LoadBalance(np.array([16, 0, 0, 0]), np.array([1, 0, 0, 0], np.float32), 16, 1,
                      capacity=4)
    assert one.aux_loss == pytest.approx(4.0) and one.dropped.tolist() == [12, 0, 0, 0]
    assert one.imbalance == pytest.approx(4.0)


def test_probability_sums_leave_the_routing_unchanged_and_simulate():
    """The router with PROB_SUM on, simulated on the 910B-like part under the full debug
    options: the same ids and weights as the plain router, and the sums of the reference
    probabilities (several programs add into one [E] array)."""
    x, router, *_ = problem(T=40, H=64, E=8, seed=5)
    prob_sum = np.zeros(8, np.float32)
    launch, (w, ids) = router_launch(x, router, 2, block_t=16, prob_sum=prob_sum)
    launch.simulate(ASCEND_910B_LIKE, debug=DebugOptions.full())
    want_w, want_ids = route(x, router, 2, backend="reference", block_t=16)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(w, want_w, rtol=1e-6)
    np.testing.assert_allclose(prob_sum, ref.router_probs(x, router, 2).sum(axis=0),
                               rtol=1e-5, atol=1e-5)
