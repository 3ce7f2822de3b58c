"""The MoE layer: fused == unfused == the numpy reference for every routing variant and
dtype; shared expert, GELU, capacity drops; dropped and padding slots contribute nothing;
one token; bad input names the argument."""
from __future__ import annotations

import numpy as np
import pytest

from npujit.kernels.moe import reference as ref
from npujit.kernels.moe.dispatch import align
from npujit.kernels.moe.layer import fused_experts, fused_moe, unfused_moe
from npujit.kernels.moe.routing import Routing

from .conftest import DTYPES, close, problem

DS = Routing.preset("deepseek_v3", n_group=4, topk_group=2,
                    correction_bias=np.linspace(-0.2, 0.2, 8).astype(np.float32))
VARIANTS = [("mixtral", 2), ("qwen", 3), ("switch", 1), ("gating_topk_softmax", 2), (DS, 3)]


@pytest.mark.parametrize("routing,k", VARIANTS,
                         ids=["mixtral", "qwen", "switch", "gating", "deepseek_v3"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f16", "bf16"])
def test_fused_unfused_reference_agree(routing, k, dtype):
    x, router, gate_up, down, _ = problem(T=21, dtype=dtype, seed=k)
    want = ref.moe(x, router, gate_up, down, k, routing)
    fused = fused_moe(x, router, gate_up, down, k, routing, backend="reference")
    unfused = unfused_moe(x, router, gate_up, down, k, routing, backend="reference")
    assert fused.dtype == unfused.dtype == x.dtype
    close(fused, want, dtype)
    close(unfused, want, dtype)


@pytest.mark.parametrize("backend", ["llvm", "numba"])
def test_cpu_backends_fused_and_unfused(backend):
    """On each CPU backend: the dispatch metadata, and fused == unfused == reference.
    Mixtral routing at the demo's sizes (npujit/demo.py: H 256, I 512, 8 experts, top-2,
    f32), so on the default backend the expert kernels' specialisations are the demo's and
    an empty kernel cache compiles them once for both (a numba compile of these kernels
    costs seconds).  The router's variants run on llvm in test_router.py, its biggest on
    numba there too."""
    from .test_dispatch import check_aligned
    routing, k = "mixtral", 2
    x, router, gate_up, down, _ = problem(T=21, H=256, I=512, E=8, seed=3)
    want = ref.moe(x, router, gate_up, down, k, routing)
    close(fused_moe(x, router, gate_up, down, k, routing, backend=backend), want, np.float32)
    close(unfused_moe(x, router, gate_up, down, k, routing, backend=backend), want,
          np.float32)
    _, ids = ref.route(x, router, k, routing)
    check_aligned(align(ids, 8, 16, backend=backend), ids, 8, 16)


@pytest.mark.parametrize("kw", [dict(shared_expert=True), dict(activation="gelu"),
                                dict(capacity_factor=0.5)], ids=["shared", "gelu", "cf0.5"])
def test_layer_options(kw):
    x, router, gate_up, down, shared = problem(T=19, dtype=np.float16, shared_i=8, seed=6)
    if kw.get("shared_expert"):
        kw = dict(shared_expert=shared)
    want = ref.moe(x, router, gate_up, down, 2, "mixtral", **kw)
    close(fused_moe(x, router, gate_up, down, 2, backend="reference", **kw), want,
          np.float16)
    close(unfused_moe(x, router, gate_up, down, 2, backend="reference", **kw), want,
          np.float16)


def test_dropped_and_padding_slots_contribute_nothing():
    """Every token picks experts 0 and 1; with capacity 11 of 12 the last token loses both
    slots.  It holds NaN: no other row may see it (nor a padding row), its own row is 0."""
    x, router, gate_up, down, _ = problem(T=12, E=4, seed=8)
    x[-1] = np.nan
    ids = np.tile(np.array([[0, 1]], np.int32), (12, 1))
    w = np.random.default_rng(2).random((12, 2)).astype(np.float32)
    cf = 1.75                                    # capacity = ceil(12 * 2 * 1.75 / 4) = 11
    want = ref.moe_from_topk(x, w, ids, gate_up, down, capacity_factor=cf)
    got = fused_experts(x, w, ids, gate_up, down, capacity_factor=cf, backend="reference")
    assert (got[-1] == 0).all() and np.isfinite(got).all()
    close(got, want, np.float32)
    close(unfused_moe_from(x, w, ids, gate_up, down, cf), want, np.float32)


def unfused_moe_from(x, w, ids, gate_up, down, cf):
    """The unfused expert steps on fixed routing (dispatch, permute, GEMMs, combine)."""
    from npujit.kernels.moe.combine import combine
    from npujit.kernels.moe.dispatch import align
    from npujit.kernels.moe.launch import run_all
    from npujit.kernels.moe.layer import _ffn_steps, expert_capacity
    (T, k), E = ids.shape, gate_up.shape[0]
    a = align(ids, E, 16, expert_capacity(T, E, k, cf), backend="reference")
    launches, y = _ffn_steps(x, a, gate_up, down, "silu")
    run_all(launches, "reference")
    return combine(y, a.row_idx, w, x.dtype, backend="reference")


def test_skewed_routing():
    """About 80 % of the token-choices (top-1) to one expert: its segment spans several
    row blocks, most experts get one block or none."""
    x, _, gate_up, down, _ = problem(T=40, E=8, dtype=np.float16, seed=11)
    rng = np.random.default_rng(12)
    ids = np.where(rng.random((40, 1)) < 0.8, 5, rng.integers(0, 8, (40, 1)))
    assert (ids == 5).mean() > 0.7
    w = rng.random((40, 1)).astype(np.float32)
    want = ref.moe_from_topk(x, w, ids, gate_up, down)
    for form in ("onchip", "workspace"):
        close(fused_experts(x, w, ids, gate_up, down, backend="reference", form=form), want,
              np.float16)


def test_one_token_and_empty_experts():
    x, router, gate_up, down, _ = problem(T=1, E=8, seed=2)
    close(fused_moe(x, router, gate_up, down, 2, backend="reference"),
          ref.moe(x, router, gate_up, down, 2), np.float32)
    x, router, gate_up, down, _ = problem(T=30, E=8, seed=2)
    ids = np.random.default_rng(0).choice([2, 5], (30, 2)).astype(np.int32)
    w = np.random.default_rng(1).random((30, 2)).astype(np.float32)
    close(fused_experts(x, w, ids, gate_up, down, backend="reference", block_m=8),
          ref.moe_from_topk(x, w, ids, gate_up, down), np.float32)



def test_an_empty_batch_gives_an_empty_output():
    """No tokens (an expert-parallel rank that received none): every form returns
    ``[0, H]`` (and the router ``[0, k]``) instead of failing on the empty array's
    strides, which numpy leaves as zeros when the array is made from a zero-size product."""
    _, router, gate_up, down, _ = problem(T=4, E=8, seed=3)
    x = np.random.default_rng(0).standard_normal((0, router.shape[1])).astype(np.float32)
    assert x.strides[1] != x.itemsize              # what the stride check used to reject
    for y in (fused_moe(x, router, gate_up, down, 2, backend="reference"),
              unfused_moe(x, router, gate_up, down, 2, backend="reference"),
              fused_experts(x, np.zeros((0, 2), np.float32), np.zeros((0, 2), np.int32),
                            gate_up, down, backend="reference")):
        assert y.shape == (0, router.shape[1]) and y.dtype == x.dtype
        np.testing.assert_array_equal(y, ref.moe(x, router, gate_up, down, 2))

BAD = [
    (dict(top_k=9), ValueError, "top_k must be an int between 1 and the number of experts"),
    (dict(gate_up="transposed"), ValueError, "gate_up_proj must be"),
    (dict(down="wrong_i"), ValueError, "down_proj must be"),
    (dict(router="wrong_h"), ValueError, "router_weight must be"),
    (dict(gate_up="strided"), ValueError, "gate_up_proj must be C-contiguous"),
    (dict(x="int"), TypeError, "x must be float32, float16 or bfloat16"),
    (dict(activation="relu"), ValueError, "activation must be one of"),
    (dict(routing="mixtrall"), ValueError, "unknown preset 'mixtrall'"),
]


@pytest.mark.parametrize("bad,exc,msg", BAD, ids=[m[:24] for _, _, m in BAD])
def test_bad_input_names_the_argument(bad, exc, msg):
    x, router, gate_up, down, _ = problem(T=4, H=16, I=4, E=8)
    args = dict(x=x, router_weight=router, gate_up_proj=gate_up, down_proj=down, top_k=2)
    if "top_k" in bad:
        args["top_k"] = bad["top_k"]
    if bad.get("gate_up") == "transposed":
        args["gate_up_proj"] = np.ascontiguousarray(gate_up.transpose(0, 2, 1))
    if bad.get("gate_up") == "strided":
        args["gate_up_proj"] = np.repeat(gate_up, 2, axis=2)[:, :, ::2]
    if bad.get("down") == "wrong_i":
        args["down_proj"] = down[:, :, :2].copy()
    if bad.get("router") == "wrong_h":
        args["router_weight"] = router[:, :8].copy()
    if bad.get("x") == "int":
        args["x"] = x.astype(np.int32)
    extra = {k: v for k, v in bad.items() if k in ("activation", "routing")}
    with pytest.raises(exc, match=msg):
        fused_moe(**args, **extra, backend="reference")


def test_precomputed_routing_is_checked():
    x, _, gate_up, down, _ = problem(T=4, H=16, I=4, E=8)
    w = np.full((4, 2), 0.5, np.float32)
    with pytest.raises(ValueError, match=r"topk_ids must lie in \[0, 8\)"):
        fused_experts(x, w, np.full((4, 2), 8, np.int32), gate_up, down)
    with pytest.raises(ValueError, match="topk_weights must have topk_ids' shape"):
        fused_experts(x, w[:, :1], np.zeros((4, 2), np.int32), gate_up, down)


def test_torch_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    x, router, gate_up, down, _ = problem(T=5, H=16, I=8, E=4)
    got = fused_moe(torch.from_numpy(x), torch.from_numpy(router), torch.from_numpy(gate_up),
                    torch.from_numpy(down), 2, backend="reference")
    close(got, ref.moe(x, router, gate_up, down, 2), np.float32)


def test_odd_shapes_strided_rows_and_all_experts():
    """E = 6 (not a power of two), H = 40, I = 20 (not multiples of the tiles), x a
    column slice of a wider array, top_k = E, and no tokens at all."""
    x, router, gate_up, down, shared = problem(T=13, H=40, I=20, E=6, seed=1, shared_i=12)
    wide = np.zeros((13, 64), np.float32)
    wide[:, :40] = x
    want = ref.moe(x, router, gate_up, down, 3, "qwen3", shared_expert=shared)
    for layer in (fused_moe, unfused_moe):
        close(layer(wide[:, :40], router, gate_up, down, 3, "qwen3", shared_expert=shared,
                    backend="reference"), want, np.float32)
    close(fused_moe(x, router, gate_up, down, 6, backend="reference"),
          ref.moe(x, router, gate_up, down, 6), np.float32)
    assert fused_moe(x[:0], router, gate_up, down, 2, backend="reference").shape == (0, 40)
