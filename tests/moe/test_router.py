"""The fused router kernel (and the unfused router steps) against the numpy reference,
every routing variant; ties, one token, T not a multiple of the token block."""
from __future__ import annotations

import numpy as np
import pytest

from npujit.kernels.moe import reference as ref
from npujit.kernels.moe.router import route, route_unfused
from npujit.kernels.moe.routing import Routing

from .conftest import DTYPES, problem

BIAS = np.array([0.3, -0.2, 0.0, 0.1, -0.4, 0.25, 0.05, -0.1], np.float32)
VARIANTS = [
    ("mixtral", 2), ("qwen", 4), ("qwen3", 3), ("switch", 1), ("gating_topk_softmax", 3),
    (Routing.preset("deepseek_v3", n_group=4, topk_group=2, correction_bias=BIAS), 3),
]
IDS = ["mixtral", "qwen", "qwen3", "switch", "gating", "deepseek_v3"]


def check(got, want):
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("routing,k", VARIANTS, ids=IDS)
def test_router_variants(routing, k, backend):
    x, router, *_ = problem(T=37, E=8, seed=k)            # 37: not a multiple of 16
    check(route(x, router, k, routing, backend=backend), ref.route(x, router, k, routing))


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=["f16", "bf16"])
def test_router_half_inputs_route_in_fp32(dtype):
    x, router, *_ = problem(T=20, H=64, E=8, dtype=dtype, seed=5)
    check(route(x, router, 2, "mixtral", backend="reference"),
          ref.route(x, router, 2, "mixtral"))


def test_router_on_numba():
    """One specialisation, the one with the most code (sigmoid, groups, bias, renorm):
    each numba compile of this kernel costs seconds."""
    x, router, *_ = problem(T=37, E=8, seed=1)
    routing, k = VARIANTS[-1]
    check(route(x, router, k, routing, backend="numba"), ref.route(x, router, k, routing))


def test_router_ties_and_one_token():
    """Equal logits (router_weight = I makes the logits x): the lower expert id wins."""
    x = np.array([[1.0, 3.0, 3.0, 3.0, 0.0, 3.0, -1.0, 2.0]], np.float32)
    eye = np.eye(8, dtype=np.float32)
    for routing in ("mixtral", "gating_topk_softmax"):
        w, ids = route(x, eye, 3, routing, backend="reference")
        assert ids.tolist() == [[1, 2, 3]]
        check((w, ids), ref.route(x, eye, 3, routing))
    ds = Routing.preset("deepseek_v3", n_group=4, topk_group=2)
    check(route(x, eye, 3, ds, backend="reference"), ref.route(x, eye, 3, ds))


def test_group_routing_excludes_the_best_expert_outside_the_kept_groups():
    logits = np.array([[5.0, -5.0, 1.0, 1.0, 0.0, 4.0, -1.0, -2.0]], np.float32)
    r = Routing.preset("deepseek_v3", n_group=4, topk_group=2)
    _, ids = route(logits, np.eye(8, dtype=np.float32), 2, r, backend="reference")
    assert ids.tolist() == [[5, 2]]


@pytest.mark.parametrize("routing,k", [VARIANTS[0], VARIANTS[-1]], ids=["mixtral", "ds"])
def test_unfused_router_steps(routing, k):
    x, router, *_ = problem(T=19, E=8, seed=2)
    check(route_unfused(x, router, k, routing, backend="reference"),
          ref.route(x, router, k, routing))
