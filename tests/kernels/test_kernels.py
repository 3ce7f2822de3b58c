"""The bundled kernels against numpy on several shapes, ragged edges included, on both
backends; and their IR survives the printer/parser round trip and the verifier."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from npujit.ir.parser import parse_function
from npujit.ir.printer import print_function
from npujit.ir.verifier import verify
from npujit.kernels import elementwise, layernorm, matmul, softmax


def _np_softmax(x):
    x = x.astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("n", [1, 1000, 4096, 5003])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_vector_add(backend, n, dtype):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 100).astype(dtype)
    y = (rng.standard_normal(n) * 100).astype(dtype)
    out = elementwise.add(x, y, block=1024, backend=backend)
    want = (x.astype(np.float32) + y.astype(np.float32)).astype(dtype) \
        if dtype != np.int32 else x + y
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("shape", [(1, 7), (33, 100), (64, 128), (5, 1000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_softmax(backend, shape, dtype):
    x = (np.random.default_rng(1).standard_normal(shape) * 4).astype(dtype)
    got = softmax.softmax(x, backend=backend)
    tol = {np.float32: 1e-6, np.float16: 1e-3}.get(dtype, 8e-3)
    np.testing.assert_allclose(got.astype(np.float32), _np_softmax(x), rtol=tol, atol=tol)


def test_softmax_strided_rows(backend):
    """A row stride that is not the row length (a column slice of a wider array)."""
    base = np.random.default_rng(2).standard_normal((16, 300)).astype(np.float32)
    x = base[:, 10:110]
    got = softmax.softmax(x, backend=backend)
    np.testing.assert_allclose(got, _np_softmax(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 17), (32, 256), (7, 1000)])
def test_layernorm(backend, shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[1]).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * w + b
    np.testing.assert_allclose(layernorm.layernorm(x, w, b, backend=backend), want,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(3, 17), (32, 256)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rmsnorm(backend, shape, dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(shape[1]).astype(dtype)
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    want = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-6) * wf
    tol = 1e-4 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(layernorm.rmsnorm(x, w, backend=backend).astype(np.float32), want,
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("mnk", [(64, 64, 64), (70, 50, 90), (1, 33, 17), (128, 96, 40)])
@pytest.mark.parametrize("out_dtype", [np.float32, np.float16])
def test_matmul(backend, mnk, out_dtype):
    m, n, k = mnk
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    got = matmul.matmul(a, b, out_dtype=out_dtype, block_m=32, block_n=32, block_k=16,
                        backend=backend)
    if out_dtype == np.float16:
        want = want.astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-3)


def test_matmul_transposed_operand(backend):
    """b given as a transposed view: the kernel walks it with its strides."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 24)).astype(np.float32)
    bt = rng.standard_normal((30, 24)).astype(np.float32)
    got = matmul.matmul(a, bt.T, block_m=16, block_n=16, block_k=8, backend=backend)
    np.testing.assert_allclose(got, a @ bt.T, rtol=1e-5, atol=1e-4)


def _kernel_irs():
    x = np.ones(8, np.float32)
    m = np.ones((8, 8), np.float16)
    c = np.ones((8, 8), np.float32)
    yield "add", elementwise.add_kernel.with_options(backend="reference").inspect(
        x, x, x, 8, BLOCK=16)
    yield "softmax", softmax.softmax_kernel.with_options(backend="reference").inspect(
        c, c, 8, 8, 8, BLOCK=8)
    yield "layernorm", layernorm.layernorm_kernel.with_options(backend="reference").inspect(
        c, x, x, c, 8, 1e-5, BLOCK=8)
    yield "rmsnorm", layernorm.rmsnorm_kernel.with_options(backend="reference").inspect(
        c, x, c, 8, 1e-5, BLOCK=8)
    yield "matmul", matmul.matmul_kernel.with_options(backend="reference").inspect(
        m, m, c, 8, 8, 8, 8, 1, 8, 1, 8, 1, BLOCK_M=8, BLOCK_N=8, BLOCK_K=8, NUM_STAGES=2)


@pytest.mark.parametrize("stage", ["trace", "ir"])
def test_kernel_ir_round_trips(stage):
    for name, arts in _kernel_irs():
        text = arts[stage]
        fn = parse_function(text)
        verify(fn)
        assert print_function(fn, locs="loc(" in text) == text, name
