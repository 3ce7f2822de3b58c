"""The Triton-style gallery (kernels/triton_gallery/): each kernel, written as a Triton user
writes it, against numpy on the reference and numba tiers, through ``kernel.simulate`` on
the 910B-like part under every debug check, and on the Ascend C twin where the emitter
lowers it (where it does not, the error names the line and the construct)."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.kernels.triton_gallery import layernorm, matmul, moe_router, softmax, vector_add
from npujit.sim import ASCEND_910B_LIKE, DebugOptions

TIERS = ["reference", "llvm"]
CHECKS = DebugOptions.full()
HAS_CXX = shutil.which(os.environ.get("CXX") or "g++") is not None


def _softmax_ref(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _matmul_ref(a, b, activation=""):
    c = a.astype(np.float32) @ b.astype(np.float32)
    if activation == "leaky_relu":
        c = np.where(c >= 0, c, np.float32(0.01) * c)
    return c


def _route_ref(x, w, top_k):
    logits = x.astype(np.float32) @ w.astype(np.float32)
    ids = np.argsort(-logits, axis=1, kind="stable")[:, :top_k]
    chosen = np.take_along_axis(logits, ids, axis=1)
    e = np.exp(chosen - chosen[:, :1])
    return e / e.sum(axis=1, keepdims=True), ids.astype(np.int32)


def _check_layer_norm(x, w, b, got, eps=1e-5):
    y, mean, rstd = got
    want_mean = x.mean(axis=1)
    want_rstd = 1 / np.sqrt(x.var(axis=1) + eps)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, want_rstd, rtol=1e-4)
    np.testing.assert_allclose(y, (x - want_mean[:, None]) * want_rstd[:, None] * w + b,
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("tier", TIERS)
def test_vector_add(tier):
    x, y = np.random.default_rng(0).standard_normal((2, 5003)).astype(np.float32)
    out = vector_add.add(x, y, kernel=vector_add.add_kernel.with_options(backend=tier))
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("tier", TIERS)
def test_softmax_on_strided_rows(tier):
    x = np.random.default_rng(1).standard_normal((37, 130)).astype(np.float32)[:, 5:105]
    got = softmax.softmax(x, kernel=softmax.softmax_kernel.with_options(backend=tier))
    np.testing.assert_allclose(got, _softmax_ref(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_grouped_matmul_with_ragged_edges(tier, activation):
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (70, 48)).astype(np.float16)        # exact products and sums
    b = rng.integers(-3, 4, (48, 90)).astype(np.float16)
    got = matmul.matmul(a, b, activation, block=(32, 32, 16), group_size_m=2,
                        kernel=matmul.matmul_kernel.with_options(backend=tier))
    np.testing.assert_array_equal(got, _matmul_ref(a, b, activation).astype(np.float16))


@pytest.mark.parametrize("tier", TIERS)
def test_layer_norm_forward(tier):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 300)).astype(np.float32)
    w, b = rng.standard_normal((2, 300)).astype(np.float32)
    got = layernorm.layer_norm(x, w, b, block_size=128,
                               kernel=layernorm._layer_norm_fwd_fused.with_options(backend=tier))
    _check_layer_norm(x, w, b, got)


@pytest.mark.parametrize("tier", TIERS)
def test_moe_router(tier):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((40, 96)).astype(np.float16)
    w = rng.standard_normal((96, 6)).astype(np.float16)        # 6 experts, padded to 8
    weights, ids = moe_router.route(x, w, top_k=2, block_h=32,
                                    kernel=moe_router.router_kernel.with_options(backend=tier))
    want_w, want_ids = _route_ref(x, w, 2)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_w, rtol=1e-5, atol=1e-6)


def _simulated(kernel, args, grid, **meta):
    report = kernel.simulate(*args, grid=grid, spec=ASCEND_910B_LIKE, debug=CHECKS, **meta)
    assert report.cycles >= report.bound.cycles > 0
    assert report.races == [] and report.flag_issues == []
    return report


def test_every_gallery_kernel_simulates_cleanly_and_computes_the_same():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(3000).astype(np.float32)
    out = np.empty_like(x)
    _simulated(vector_add.add_kernel, (x, x, out, 3000), (3,), BLOCK_SIZE=1024)
    np.testing.assert_array_equal(out, 2 * x)

    s = rng.standard_normal((9, 100)).astype(np.float32)
    y = np.empty_like(s)
    _simulated(softmax.softmax_kernel, (y, s, 100, 100, 9, 100), (4,), BLOCK_SIZE=128,
               num_stages=2)
    np.testing.assert_allclose(y, _softmax_ref(s), rtol=1e-5, atol=1e-7)

    a = rng.integers(-3, 4, (64, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (32, 64)).astype(np.float16)
    c = np.empty((64, 64), np.float16)
    report = _simulated(matmul.matmul_kernel, (a, b, c, 64, 64, 32, 32, 1, 64, 1, 64, 1), (4,),
                        BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16, GROUP_SIZE_M=2,
                        ACTIVATION="")
    np.testing.assert_array_equal(c, _matmul_ref(a, b).astype(np.float16))
    assert report.ratios["aic_cube_ratio"] > 0

    ln = rng.standard_normal((4, 200)).astype(np.float32)
    w, bias = np.ones(200, np.float32), np.zeros(200, np.float32)
    yl, mean, rstd = np.empty_like(ln), np.empty(4, np.float32), np.empty(4, np.float32)
    _simulated(layernorm._layer_norm_fwd_fused, (ln, yl, w, bias, mean, rstd, 200, 200, 1e-5),
               (4,), BLOCK_SIZE=64)
    _check_layer_norm(ln, w, bias, (yl, mean, rstd))

    xr = rng.standard_normal((20, 64)).astype(np.float16)
    wr = rng.standard_normal((64, 8)).astype(np.float16)
    weights, ids = np.empty((20, 2), np.float32), np.empty((20, 2), np.int32)
    _simulated(moe_router.router_kernel, (xr, wr, weights, ids, 20, 64, 8, 64, 8), (2,),
               BLOCK_T=16, BLOCK_H=32, BLOCK_E=8, TOP_K=2)
    want_w, want_ids = _route_ref(xr, wr, 2)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_w, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler for the Ascend C twin")
def test_the_twin_runs_add_softmax_and_layer_norm():
    rng = np.random.default_rng(6)
    x = rng.standard_normal(3000).astype(np.float32)
    twin_add = vector_add.add_kernel.with_options(backend="ascendc-twin")
    np.testing.assert_array_equal(vector_add.add(x, x, kernel=twin_add), 2 * x)
    s = rng.standard_normal((9, 100)).astype(np.float32)
    twin_softmax = softmax.softmax_kernel.with_options(backend="ascendc-twin")
    np.testing.assert_allclose(softmax.softmax(s, kernel=twin_softmax), _softmax_ref(s),
                               rtol=1e-5, atol=1e-7)
    # the fused layer norm: mean and variance summed in a vector tile the loop carries in
    # its one UB buffer
    x = rng.standard_normal((3, 300)).astype(np.float32)
    w, b = rng.standard_normal((2, 300)).astype(np.float32)
    twin_ln = layernorm._layer_norm_fwd_fused.with_options(backend="ascendc-twin")
    _check_layer_norm(x, w, b, layernorm.layer_norm(x, w, b, block_size=128, kernel=twin_ln))


@pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler for the Ascend C twin")
@pytest.mark.parametrize("experts", [6, 16])
def test_the_twin_runs_the_moe_router(experts):
    # 6 experts: a [16, 8] logits tile, its N side padded to a whole fractal in L1/L0B/L0C;
    # 21 tokens and a hidden size of 72 leave ragged tails on both the T and H sides
    rng = np.random.default_rng(7)
    x = rng.standard_normal((21, 72)).astype(np.float16)
    w = rng.standard_normal((72, experts)).astype(np.float16)
    twin = moe_router.router_kernel.with_options(backend="ascendc-twin")
    weights, ids = moe_router.route(x, w, top_k=2, block_h=32, kernel=twin)
    want_w, want_ids = _route_ref(x, w, 2)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_w, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler for the Ascend C twin")
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_the_twin_runs_the_tutorial_matmul(activation):
    # `% M` / `% N` offsets and pointer tiles advanced through the K loop; 70 x 48 @ 48 x 90
    # leaves ragged tiles on every side (the last column tile's offsets wrap past N)
    rng = np.random.default_rng(8)
    a = rng.integers(-3, 4, (70, 48)).astype(np.float16)        # exact products and sums
    b = rng.integers(-3, 4, (48, 90)).astype(np.float16)
    twin = matmul.matmul_kernel.with_options(backend="ascendc-twin")
    got = matmul.matmul(a, b, activation, block=(32, 32, 16), group_size_m=2, kernel=twin)
    np.testing.assert_array_equal(got, _matmul_ref(a, b, activation).astype(np.float16))


@triton.jit
def _matmul_short_mask_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    """The tutorial's wrapped column offsets, stored under a mask that keeps one column
    past the wrap: the column the Cube computed from zeros is the kernel's output."""
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :], mask=offs_m[:, None] < M, other=0.0)
    b = tl.load(b_ptr + offs_k[:, None] * N + (offs_n % N)[None, :])
    c = tl.dot(a, b).to(tl.float16)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N + 1))


def test_the_emitter_names_what_it_cannot_lower_yet(tmp_path):
    a, b = np.zeros((32, 16), np.float16), np.zeros((16, 8), np.float16)
    args = (a, b, np.zeros((32, 9), np.float16), 32, 8, 16)
    with pytest.raises(NotImplementedError,
                       match=r"npu\.(block_)?store at test_gallery\.py:\d+ .*B columns wrap"):
        _matmul_short_mask_kernel.emit("ascendc", str(tmp_path), *args, BLOCK=16)
