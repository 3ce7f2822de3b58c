"""f32 operands on the Cube (16 x 8 fractals; a row-major B reaches L0B through
LoadDataWithTranspose) and the tutorial router on f32 and on 3-4 experts (rows of logits
shorter than a 32-byte block), on the twin against the reference backend and numpy."""
from __future__ import annotations

import numpy as np
import pytest

from npujit.kernels import matmul
from npujit.kernels.triton_gallery import matmul as tutorial_mm, moe_router

from ascendc_support import TWIN, assert_matches


def _data(shape, seed=3):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close_to_f64(got, a, b, what, tol=1e-5):
    """Against an independent product in f64 (f32 accumulation of K terms: ``tol``
    1e-5; a result stored as f16: 2 ** -10)."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale, err_msg=what)


@pytest.mark.parametrize("l0_block_k", [0, 16])
def test_f32_matmul_row_major_and_transposed_b(l0_block_k):
    # ragged on every side; B row-major (LoadDataWithTranspose of 16 x 16 squares) and
    # B = w.T with strides (1, K) (its columns copied as NZ rows: LoadData as they are),
    # both run-time choices of one build
    for M, N, K in ((70, 50, 40), (33, 9, 17)):
        a, b = _data((M, K)), _data((K, N), seed=4)
        for rhs in (b, np.ascontiguousarray(b.T).T):
            kw = dict(block_m=32, block_n=32, block_k=32, l0_block_k=l0_block_k)
            got = matmul.matmul(a, rhs, backend=TWIN, **kw)
            what = f"{M}x{K} @ {K}x{N}, B strides {rhs.strides}, L0 K chunk {l0_block_k}"
            assert_matches(got, matmul.matmul(a, rhs, backend="reference", **kw), what)
            _close_to_f64(got, a, rhs, what)


def test_f32_matmul_whose_k_loop_runs_no_trips_stores_zeros():
    M, N = 32, 48
    a, b = np.ones((M, 1), np.float32), np.ones((1, N), np.float32)
    out = np.full((M, N), 7.0, np.float32)
    matmul.matmul_kernel.with_options(backend=TWIN)[(1, 2)](
        a, b, out, M, N, 0, 1, 1, N, 1, N, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, NUM_STAGES=2)
    np.testing.assert_array_equal(out, np.zeros((M, N), np.float32))


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_tutorial_matmul_on_f32(activation):
    # pointer tiles, `% M` / `% N` wrapped offsets: rows copied one descriptor each, B's
    # rows into its blocks of 16 rows of K; the result is stored as f16
    a, b = _data((70, 48)), _data((48, 90), seed=5)
    run = lambda backend: tutorial_mm.matmul(                         # noqa: E731
        a, b, activation, block=(32, 32, 16), group_size_m=2,
        kernel=tutorial_mm.matmul_kernel.with_options(backend=backend))
    got = run(TWIN)
    assert_matches(got, run("reference"), f"tutorial matmul {activation}")
    if not activation:
        _close_to_f64(got, a, b, "tutorial matmul", tol=2.0 ** -10)


def _top2(x, w):
    """Each token's two best experts and their softmax weights, in f64."""
    logits = x.astype(np.float64) @ w.astype(np.float64)
    ids = np.argsort(-logits, axis=1, kind="stable")[:, :2]
    chosen = np.take_along_axis(logits, ids, axis=1)
    p = np.exp(chosen - chosen[:, :1])
    return p / p.sum(axis=1, keepdims=True), ids.astype(np.int32)


@pytest.mark.parametrize("experts, dtype", [(8, np.float32), (4, np.float32), (3, np.float32),
                                            (4, np.float16)])
def test_tutorial_router(experts, dtype):
    # 21 tokens, hidden 40: ragged T and H tails; 3-4 experts make [16, 4] logits whose
    # rows (16 or 8 bytes) are shorter than a 32-byte block
    x = _data((21, 40), seed=6).astype(dtype)
    w = _data((40, experts), seed=7).astype(dtype)
    run = lambda backend: moe_router.route(                           # noqa: E731
        x, w, top_k=2, block_h=16, kernel=moe_router.router_kernel.with_options(backend=backend))
    weights, ids = run(TWIN)
    want_w, want_ids = run("reference")
    np.testing.assert_array_equal(ids, want_ids)
    assert_matches(weights, want_w, f"router weights, {experts} experts")
    oracle_w, oracle_ids = _top2(x, w)
    np.testing.assert_array_equal(ids, oracle_ids)
    np.testing.assert_allclose(weights, oracle_w, rtol=1e-4, atol=1e-5)
