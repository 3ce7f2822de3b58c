"""Block pointers over a transposed view (``strides=(1, ld)``: ``W.T`` of a row-major
``W``, as the expert kernels read ``gate_up_proj``) load and store the same elements on
every tier, whether the block is inside the view (numba walks its columns outermost,
reading memory in order) or hangs over an edge (checked axes padded with zeros, stores
clipped), in the default and the debug modes; an unchecked axis past the view's shape
still raises in debug mode.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit import OutOfBoundsError, npu_kernel


@npu_kernel
def transposed_copy(w_ptr, out_ptr, N, K, BK: nl.constexpr, BN: nl.constexpr):
    """out [K, N] = W.T for W [N, K] row-major, one (BK, BN) block per program."""
    k0 = nl.program_id(0) * BK
    n0 = nl.program_id(1) * BN
    src = nl.make_block_ptr(w_ptr, shape=(K, N), strides=(1, K), offsets=(k0, n0),
                            block_shape=(BK, BN))
    dst = nl.make_block_ptr(out_ptr, shape=(K, N), strides=(N, 1), offsets=(k0, n0),
                            block_shape=(BK, BN))
    nl.store(dst, nl.load(src, boundary_check=(0, 1)), boundary_check=(0, 1))


@npu_kernel
def transposed_store(x_ptr, out_ptr, N, K, BK: nl.constexpr, BN: nl.constexpr):
    """out [N, K] = X.T for X [K, N] row-major, written through a transposed view."""
    k0 = nl.program_id(0) * BK
    n0 = nl.program_id(1) * BN
    src = nl.make_block_ptr(x_ptr, shape=(K, N), strides=(N, 1), offsets=(k0, n0),
                            block_shape=(BK, BN))
    dst = nl.make_block_ptr(out_ptr, shape=(K, N), strides=(1, K), offsets=(k0, n0),
                            block_shape=(BK, BN))
    nl.store(dst, nl.load(src, boundary_check=(0, 1)), boundary_check=(0, 1))


@nl.inline
def _products(a, b, K, BM, BN, BK):
    """x @ W.T over K in BK steps, from block pointers a (x) and b (W.T); traced inside
    the kernels below."""
    acc = nl.zeros((BM, BN), dtype=nl.float32)
    for _ in nl.range(0, K, BK):
        acc = nl.dot(nl.load(a, boundary_check=(0, 1)), nl.load(b, boundary_check=(0, 1)), acc)
        a = nl.advance(a, (0, BK))
        b = nl.advance(b, (BK, 0))
    return acc


@npu_kernel
def dot_transposed(x_ptr, w_ptr, out_ptr, M, N, K, BM: nl.constexpr, BN: nl.constexpr,
                   BK: nl.constexpr):
    """out [M, N] = x [M, K] @ W.T for W [N, K] (a linear layer), K in BK steps."""
    m0 = nl.program_id(0) * BM
    n0 = nl.program_id(1) * BN
    a = nl.make_block_ptr(x_ptr, shape=(M, K), strides=(K, 1), offsets=(m0, 0),
                          block_shape=(BM, BK))
    b = nl.make_block_ptr(w_ptr, shape=(K, N), strides=(1, K), offsets=(0, n0),
                          block_shape=(BK, BN))
    acc = _products(a, b, K, BM, BN, BK)
    c = nl.make_block_ptr(out_ptr, shape=(M, N), strides=(N, 1), offsets=(m0, n0),
                          block_shape=(BM, BN))
    nl.store(c, acc, boundary_check=(0, 1))


def _grid(K, N, BK, BN):
    return (-(-K // BK), -(-N // BN))


# (N, K): blocks all inside; ragged on both axes; ragged on one
SHAPES = [(16, 32), (21, 13), (16, 11)]


@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
@pytest.mark.parametrize("backend", ["reference", "numba"])
@pytest.mark.parametrize("N,K", SHAPES)
def test_transposed_block_load_and_store_match_numpy(N, K, backend, debug):
    rng = np.random.default_rng(N * 100 + K)
    opts = dict(backend=backend, debug=debug)
    w = rng.standard_normal((N, K)).astype(np.float32)
    out = np.full((K, N), 7.0, np.float32)
    transposed_copy.with_options(**opts)[_grid(K, N, 8, 8)](w, out, N, K, BK=8, BN=8)
    np.testing.assert_array_equal(out, w.T)
    x = rng.standard_normal((K, N)).astype(np.float32)
    out2 = np.full((N, K), 7.0, np.float32)
    transposed_store.with_options(**opts)[_grid(K, N, 8, 8)](x, out2, N, K, BK=8, BN=8)
    np.testing.assert_array_equal(out2, x.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_dot_with_a_transposed_weight_matches_numpy(backend, dtype):
    """f32 and bf16 weights are read in place by the numba dot while a K step is inside
    the weight, and copied with zero padding on the ragged last step (K 40 in steps of
    16); f16 weights are always copied."""
    M, N, K = 9, 24, 40                                   # ragged M and K
    rng = np.random.default_rng(3)
    x = rng.standard_normal((M, K)).astype(dtype)
    w = rng.standard_normal((N, K)).astype(dtype)
    out = np.zeros((M, N), np.float32)
    dot_transposed.with_options(backend=backend)[(2, 2)](x, w, out, M, N, K,
                                                         BM=8, BN=16, BK=16)
    want = x.astype(np.float64) @ w.astype(np.float64).T
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    if backend == "numba":
        src = dot_transposed.with_options(backend=backend).inspect(
            x, w, out, M, N, K, BM=8, BN=16, BK=16)["backend"]
        assert ("cl.dot_nt(" in src) == (dtype != np.float16)


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_an_unchecked_axis_past_the_view_raises_in_debug_mode(backend):
    @npu_kernel
    def unchecked(w_ptr, out_ptr, N, K, BK: nl.constexpr, BN: nl.constexpr):
        src = nl.make_block_ptr(w_ptr, shape=(K, N), strides=(1, K), offsets=(0, 0),
                                block_shape=(BK, BN))
        nl.store(out_ptr + nl.arange(0, BK)[:, None] * BN + nl.arange(0, BN)[None, :],
                 nl.load(src, boundary_check=(0,)))

    w = np.zeros((4, 8), np.float32)                      # N 4: an 8-wide block overhangs
    out = np.zeros((8, 8), np.float32)
    k = unchecked.with_options(backend=backend, debug=True)
    with pytest.raises(OutOfBoundsError, match="axis 1"):
        k[(1,)](w, out, 4, 8, BK=8, BN=8)


@pytest.mark.parametrize("m,n,k", [(16, 64, 32), (7, 6, 5), (4, 3, 9), (1, 1, 1), (9, 13, 17)])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_dot_nt_matches_numpy_on_every_remainder(m, n, k, dtype):
    """cube_lib.dot_nt's register blocks (4 rows x 4 columns) and its remainder rows
    and columns, on a weight read in place at an offset with a leading dimension."""
    from npujit.backends.numba import cube_lib
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    ld, off = k + 3, 5
    w = rng.standard_normal(off + n * ld).astype(dtype)
    bits = w.view(np.uint16) if dtype is ml_dtypes.bfloat16 else w
    a = rng.standard_normal(m * k).astype(np.float32)
    out = rng.standard_normal(m * n).astype(np.float32)
    want = out.astype(np.float64) + (a.reshape(m, k).astype(np.float64)
                                     @ w[off:].reshape(n, ld)[:, :k].astype(np.float64).T).ravel()
    cube_lib.dot_nt(a, bits, off, ld, out, m, k, n, n)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@npu_kernel
def dot_whole_tile(x_ptr, w_ptr, out_ptr, N, K, BM: nl.constexpr, BN: nl.constexpr,
                   BK: nl.constexpr):
    """out [BM, BN] = x [BM, K] @ W.T for W [N, K] with N < BN: the tile's columns past N
    (the weight's zero padding) are stored too."""
    a = nl.make_block_ptr(x_ptr, shape=(BM, K), strides=(K, 1), offsets=(0, 0),
                          block_shape=(BM, BK))
    b = nl.make_block_ptr(w_ptr, shape=(K, N), strides=(1, K), offsets=(0, 0),
                          block_shape=(BK, BN))
    acc = _products(a, b, K, BM, BN, BK)
    rows = nl.arange(0, BM)[:, None] * BN
    nl.store(out_ptr + rows + nl.arange(0, BN)[None, :], acc)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_a_weight_narrower_than_its_tile_is_read_in_place_with_its_padding(dtype):
    """A router's 5 experts in an 8-wide tile: the numba dot reads the 5 weight rows in
    place (``dot_nt``'s row count) and gives the padding columns what the reference's
    zero-padded product gives: 0, or NaN on a row of x holding an inf or a NaN."""
    BM, N, K = 8, 5, 32
    rng = np.random.default_rng(5)
    x = rng.standard_normal((BM, K)).astype(dtype)
    x[2, 7] = np.inf
    x[5, 30] = np.nan
    w = rng.standard_normal((N, K)).astype(dtype)
    outs = {}
    for backend in ("reference", "numba"):
        outs[backend] = np.full((BM, 8), 7.0, np.float32)
        k = dot_whole_tile.with_options(backend=backend)
        k[(1,)](x, w, outs[backend], N, K, BM=BM, BN=8, BK=16)
    src = dot_whole_tile.with_options(backend="numba").inspect(
        x, w, outs["numba"], N, K, BM=BM, BN=8, BK=16)["backend"]
    assert "cl.dot_nt(" in src and "w_rows" in src
    with np.errstate(invalid="ignore"):
        want = x.astype(np.float64) @ w.astype(np.float64).T
    np.testing.assert_allclose(outs["numba"][:, :N], want, rtol=1e-5, atol=1e-4)
    padding = np.where(np.isfinite(x.astype(np.float32)).all(axis=1)[:, None], 0.0, np.nan)
    np.testing.assert_array_equal(outs["numba"][:, N:], np.broadcast_to(padding, (BM, 8 - N)))
    np.testing.assert_array_equal(outs["numba"][:, N:], outs["reference"][:, N:])
