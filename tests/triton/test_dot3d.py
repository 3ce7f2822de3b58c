"""Batched ``tl.dot``: (B, M, K) @ (B, K, N) -> (B, M, N), and more leading dims, one
product per leading index, against numpy's batched matmul, on the reference tier and numba; the simulator
costs it as B*M rows on the Cube, and the Ascend C emitter refuses it by name."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.errors import CompilationError

B, M, N, K = 2, 4, 8, 16


@triton.jit
def _dot3d(q_ptr, k_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
           K: tl.constexpr):
    ob, om, on, ok = tl.arange(0, B), tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    q = tl.load(q_ptr + ob[:, None, None] * M * K + om[None, :, None] * K + ok[None, None, :])
    k = tl.load(k_ptr + ob[:, None, None] * K * N + ok[None, :, None] * N + on[None, None, :])
    acc = tl.dot(q, k, tl.full((B, M, N), 1.0, tl.float32))
    acc += tl.dot(q, k)
    tl.store(o_ptr + ob[:, None, None] * M * N + om[None, :, None] * N + on[None, None, :], acc)


def test_batched_dot_is_one_matmul_per_batch_index(backend):
    rng = np.random.default_rng(3)
    q = rng.integers(-4, 5, (B, M, K)).astype(np.float16)     # exact in f32 accumulation
    k = rng.integers(-4, 5, (B, K, N)).astype(np.float16)
    out = np.zeros((B, M, N), np.float32)
    _dot3d.with_options(backend=backend)[(1,)](q, k, out, B=B, M=M, N=N, K=K)
    want = 1 + 2 * np.matmul(q.astype(np.float32), k.astype(np.float32))
    np.testing.assert_array_equal(out, want)


def test_batched_dot_simulates_and_ascendc_refuses_it(tmp_path):
    q, k = np.zeros((B, M, K), np.float16), np.zeros((B, K, N), np.float16)
    out = np.zeros((B, M, N), np.float32)
    kern = _dot3d.with_options(backend="reference")
    assert "tensor<2x4x8xf32>" in kern.ir(q, k, out, B=B, M=M, N=N, K=K)
    assert kern.simulate(q, k, out, B=B, M=M, N=N, K=K, grid=(1,)).cycles > 0
    with pytest.raises(NotImplementedError, match="cannot lower npu"):
        kern.emit("ascendc", str(tmp_path), q, k, out, B=B, M=M, N=N, K=K)


@triton.jit
def _dot_batch_mismatch(q_ptr, N: tl.constexpr):
    a = tl.load(q_ptr + tl.arange(0, N * N * N)).reshape(N, N, N)
    b = tl.load(q_ptr + tl.arange(0, 2 * N * N)).reshape(2, N, N)
    tl.store(q_ptr + tl.arange(0, N * N * N), tl.dot(a, b).to(tl.float16).reshape(N * N * N))


def test_batch_dimensions_that_differ_are_refused():
    with pytest.raises(CompilationError, match=r"dot batch dimensions differ: a is \[4, 4, 4\]"):
        _dot_batch_mismatch.with_options(backend="reference")[(1,)](np.zeros(64, np.float16), N=4)


@triton.jit
def _int8_dot(a_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + r)
    tl.store(o_ptr.to(tl.pointer_type(tl.int32)) + r, tl.dot(a, a, out_dtype=tl.int8))


def test_int8_dot_is_int32_whatever_out_dtype_says_and_pointer_casts_keep_their_type():
    a = np.arange(-8, 8, dtype=np.int8).reshape(4, 4) * 9        # products overflow i8
    out = np.zeros((4, 4), np.int32)
    _int8_dot.with_options(backend="reference")[(1,)](a, out, N=4)
    np.testing.assert_array_equal(out, a.astype(np.int32) @ a.astype(np.int32))
    with pytest.raises(CompilationError, match=r"cannot cast a pointer to i64 arrays to pointer<nl.int32>"):
        _int8_dot.with_options(backend="reference")[(1,)](a, out.astype(np.int64), N=4)


@triton.jit
def _dot4d(x_ptr, o_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 2 * 3 * N * N)).reshape(2, 3, N, N)
    tl.store(o_ptr + tl.arange(0, 2 * 3 * N * N), tl.dot(x, x.trans(0, 1, 3, 2)).reshape(2 * 3 * N * N))


def test_dot_with_two_leading_batch_dims():
    x = np.random.default_rng(4).integers(-3, 4, 2 * 3 * 4 * 4).astype(np.float32)
    out = np.zeros_like(x)
    _dot4d.with_options(backend="reference")[(1,)](x, out, N=4)
    x4 = x.reshape(2, 3, 4, 4)
    np.testing.assert_array_equal(out.reshape(x4.shape), np.matmul(x4, np.swapaxes(x4, 2, 3)))
