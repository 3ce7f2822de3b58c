"""Every shipped kernel emitted as Ascend C, built with g++ against the CPU twin, and
compared with the reference backend: several shapes each, ragged tails included, grids
larger than the core count (the per-core program loop), 1 to 3 pipeline stages.

Run: NPUJIT_CACHE_DIR=/tmp/c python -m pytest -n 0 -q tests/backends/ascendc
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.kernels import elementwise, layernorm, matmul, softmax
from npujit.kernels.elementwise import add_stream_kernel

from ascendc_support import TWIN, assert_matches

rng = np.random.default_rng(13)
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16]


def _data(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-2**31, 2**31 - 1, size=shape, dtype=np.int64).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_vector_add(dtype):
    # 50 programs of 32 lanes: more programs than the 48 AIV cores, a ragged last block
    for n in (1590, 32, 5):
        x, y = _data(n, dtype), _data(n, dtype)
        want = elementwise.add(x, y, block=32, backend="reference")
        got = elementwise.add(x, y, block=32, backend=TWIN)
        assert_matches(got, want, f"add n={n} {np.dtype(dtype)}")


@pytest.mark.parametrize("stages", [1, 2])
def test_streaming_add(stages):
    n = 1000
    x, y = _data(n, np.float32), _data(n, np.float32)
    outs = {}
    for backend in ("reference", TWIN):
        out = np.zeros(n, np.float32)
        add_stream_kernel.with_options(backend=backend)[(3,)](
            x, y, out, n, 334, BLOCK=64, NUM_STAGES=stages)
        outs[backend] = out
    assert_matches(outs[TWIN], outs["reference"], f"streaming add, {stages} stages")


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax(dtype):
    for shape in ((5, 100), (3, 128), (2, 7)):
        x = _data(shape, dtype)
        want = softmax.softmax(x, backend="reference")
        got = softmax.softmax(x, backend=TWIN)
        assert_matches(got, want, f"softmax {shape}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layernorm_and_rmsnorm(dtype):
    for shape in ((4, 100), (2, 128)):
        x, w, b = _data(shape, dtype), _data(shape[1], dtype), _data(shape[1], dtype)
        assert_matches(layernorm.layernorm(x, w, b, backend=TWIN),
                       layernorm.layernorm(x, w, b, backend="reference"), f"layernorm {shape}")
        assert_matches(layernorm.rmsnorm(x, w, backend=TWIN),
                       layernorm.rmsnorm(x, w, backend="reference"), f"rmsnorm {shape}")


@pytest.mark.parametrize("stages,in_dtype,out_dtype", [
    (1, np.float16, np.float16), (2, np.float16, np.float32), (3, ml_dtypes.bfloat16, np.float32)])
def test_matmul_cube_path(stages, in_dtype, out_dtype):
    for M, N, K in ((64, 64, 64), (70, 50, 40), (33, 17, 9)):
        a, b = _data((M, K), in_dtype), _data((K, N), in_dtype)
        kw = dict(out_dtype=out_dtype, block_m=32, block_n=32, block_k=16, num_stages=stages)
        want = matmul.matmul(a, b, backend="reference", **kw)
        got = matmul.matmul(a, b, backend=TWIN, **kw)
        assert_matches(got, want, f"matmul {M}x{N}x{K}, {stages} stages")
    # and against an independent f32 product, so reference and twin cannot share a bug
    f32 = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), f32, rtol=1e-2, atol=1e-2 * np.abs(f32).max())


def test_matmul_whose_k_loop_runs_no_trips_stores_zeros():
    # No Mmad runs, so nothing applies cmatrixInitVal: the emitted kernel zeroes L0C itself
    # (the twin poisons fresh memory, so an unwritten L0C would show here).
    M, N, K = 32, 48, 0
    a, b = np.ones((M, 1), np.float16), np.ones((1, N), np.float16)
    out = np.full((M, N), 7.0, np.float32)
    matmul.matmul_kernel.with_options(backend=TWIN)[(1, 2)](
        a, b, out, M, N, K, 1, 1, N, 1, N, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, NUM_STAGES=2)
    np.testing.assert_array_equal(out, a[:, :K].astype(np.float32) @ b[:K].astype(np.float32))


def test_matmul_with_a_transposed_operand_says_what_to_do():
    a = _data((32, 32), np.float16).T          # inner stride 32: not a contiguous row copy
    b = _data((32, 32), np.float16)
    with pytest.raises(NotImplementedError, match="stride_ak"):
        matmul.matmul(a, b, block_m=32, block_n=32, block_k=16, backend=TWIN)


@pytest.mark.parametrize("l0_block_k", [0, 16])
def test_matmul_with_b_a_transposed_view(l0_block_k):
    # B = w.T with strides (1, K) passed as run-time arguments (the unfused MoE router's
    # logits): the kernel sees stride_bn != 1 and copies B's columns, its GM rows; the
    # same build runs a contiguous B through the row copy
    a, w, b = _data((33, 40), np.float16), _data((50, 40), np.float16), _data((40, 50), np.float16)
    for rhs in (w.T, b):
        kw = dict(block_m=32, block_n=32, block_k=32, l0_block_k=l0_block_k)
        assert_matches(matmul.matmul(a, rhs, backend=TWIN, **kw),
                       matmul.matmul(a, rhs, backend="reference", **kw), f"a @ {rhs.strides}")
    strided = _data((80, 100), np.float16)[::2, ::2]          # strides (200, 2): neither is 1
    with pytest.raises(NotImplementedError, match="'stride_bk' and 'stride_bn' are 200 and 2"):
        matmul.matmul(a, strided, backend=TWIN, **kw)


def test_half_rounding_matches_numpy_bit_for_bit():
    # f32 -> f16 and f32 -> bf16 casts over ordinary, tiny (subnormal), huge and tie values
    x = np.concatenate([rng.standard_normal(1000) * 10.0 ** rng.integers(-9, 6, 1000),
                        [65504.0, 65519.0, 65520.0, 1e-8, 5.96e-8, 2.98e-8, -0.0, np.inf, -np.inf],
                        np.float32(1.0) + np.arange(8) * np.float32(2.0 ** -11)]).astype(np.float32)
    n = x.size
    for dtype in (np.float16, ml_dtypes.bfloat16):
        out = np.zeros(n, dtype)
        _cast_kernel.with_options(backend=TWIN)[(1,)](x, out, n, BLOCK=1024)
        with np.errstate(over="ignore"):          # 65520 -> inf is the point
            want = x.astype(dtype)
        np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


@npu_kernel
def _cast_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    mask = offs < n
    x = nl.load(x_ptr + offs, mask=mask)
    nl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("stages", [1, 2])
def test_matmul_with_l0_k_chunks(stages):
    # L0_BLOCK_K: each L1 tile reaches L0A/L0B a chunk of K at a time, the L0 slots and
    # the M_MTE1 / MTE1_M event ids rotating per chunk (emit_cube.py chunked_mmad)
    M, N, K = 70, 50, 96
    a, b = _data((M, K), ml_dtypes.bfloat16), _data((K, N), ml_dtypes.bfloat16)
    kw = dict(out_dtype=np.float32, block_m=32, block_n=32, block_k=32, num_stages=stages,
              l0_block_k=16)
    got = matmul.matmul(a, b, backend=TWIN, **kw)
    assert_matches(got, matmul.matmul(a, b, backend="reference", **kw), "chunked matmul")
    f32 = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(got, f32, rtol=1e-2, atol=1e-2 * np.abs(f32).max())


@npu_kernel
def _column_sums(x_ptr, out_ptr, cols, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    x = nl.load(x_ptr + nl.program_id(0) * cols + offs, mask=offs < cols)
    nl.atomic_add(out_ptr + offs, x * 2, mask=offs < cols)


@pytest.mark.parametrize("dtype,cols", [(np.float32, 40), (np.int32, 64), (np.float16, 24)])
def test_atomic_add_of_a_tile_from_every_program(dtype, cols):
    # every program adds its row into the same elements: SetAtomicAdd around the copy
    rows = 5
    x = (np.arange(rows * cols) % 7 - 3).astype(dtype).reshape(rows, cols)
    out = np.ones(cols, dtype)
    _column_sums.with_options(backend=TWIN)[(rows,)](x, out, cols, BLOCK=64)
    want = (1 + 2 * x.astype(np.float64).sum(axis=0)).astype(dtype)   # small ints: exact
    np.testing.assert_array_equal(out, want)


@npu_kernel
def _column_max(x_ptr, out_ptr, cols, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.atomic_max(out_ptr + offs, nl.load(x_ptr + offs, mask=offs < cols), mask=offs < cols)


@npu_kernel
def _reads_old_values(x_ptr, out_ptr, old_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    old = nl.atomic_add(out_ptr + offs, nl.load(x_ptr + offs))
    nl.store(old_ptr + offs, old)


def test_atomics_the_emitter_cannot_lower_name_the_line():
    x = np.ones(32, np.float32)
    with pytest.raises(NotImplementedError, match=r"npu.atomic_rmw at .*atomic_max.*SetAtomicAdd "
                                                  r"adds only"):
        _column_max.with_options(backend=TWIN)[(1,)](x, x.copy(), 32, BLOCK=32)
    with pytest.raises(NotImplementedError, match=r"the old values an atomic returns"):
        _reads_old_values.with_options(backend=TWIN)[(1,)](x, x.copy(), x.copy(), BLOCK=32)


@npu_kernel
def tanh_erf_gelu_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs, mask=offs < n)
    y = nl.tanh(x) + nl.erf(x * 0.5) + nl.gelu(x, approximate="tanh")
    nl.store(out_ptr + offs, y, mask=offs < n)


@pytest.mark.parametrize("dtype", FLOATS)
def test_tanh_erf_and_gelu_tanh_form(dtype):
    # the math library's Tanh and Erf, and gelu's tanh form step by step (f32 for halves)
    x = (rng.standard_normal(100) * 3).astype(dtype)
    x[:3] = (0.0, -0.0, 1e-4)
    outs = {}
    for backend in ("reference", TWIN):
        out = np.zeros(100, dtype)
        tanh_erf_gelu_kernel.with_options(backend=backend)[(1,)](x, out, 100, BLOCK=128)
        outs[backend] = out
    assert_matches(outs[TWIN], outs["reference"], f"tanh + erf + gelu {np.dtype(dtype)}")
