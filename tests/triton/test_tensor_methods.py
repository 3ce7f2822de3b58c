"""Triton's tensor methods (x.exp(), x.sum(1), x.reshape(2, 4)...), builtin min/max on
tiles, numpy scalars next to tiles, and kernel.warmup / compiled.asm, against numpy.
One batched kernel on the reference tier."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.errors import CompilationError


@triton.jit
def _methods(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows)                                          # (M, N) f32
    mn = M * N
    tl.store(out_ptr + rows, x.abs().sqrt() + x.exp().log() + x.floor() + x.ceil())
    tl.store(out_ptr + mn + tl.arange(0, M), x.sum(1) + x.max(1) + x.min(axis=1))
    tl.store(out_ptr + mn + M + tl.arange(0, mn), x.trans().ravel())
    flat = x.reshape(mn).view(N, M).reshape((M, N))
    tl.store(out_ptr + 2 * mn + M + rows, flat.cumsum(1) + x.to(tl.int32).to(tl.float32))
    tl.store(out_ptr + 3 * mn + M + tl.arange(0, N), x.argmax(0).to(tl.float32))
    lo = min(x, 0.5, x * 2)          # builtin min/max: nl.minimum / nl.maximum of them all
    hi = max(x, np.float32(0.25)) + min(M, N)
    tl.store(out_ptr + 3 * mn + M + N + rows, lo + hi + np.float32(2) * x - (x < np.float32(0)))


def test_tensor_methods_and_builtin_min_max_compute_what_numpy_does():
    M, N = 2, 4
    x = np.array([[-1.5, 0.25, 2.0, 0.5], [3.0, -0.75, 1.0, -2.0]], np.float32)
    out = np.zeros(4 * M * N + M + N, np.float32)
    _methods.with_options(backend="reference")[(1,)](x, out, M=M, N=N)
    mn = M * N
    np.testing.assert_allclose(out[:mn].reshape(M, N), np.sqrt(np.abs(x)) + x + np.floor(x)
                               + np.ceil(x), rtol=1e-6)
    np.testing.assert_array_equal(out[mn:mn + M], x.sum(1) + x.max(1) + x.min(1))
    np.testing.assert_array_equal(out[mn + M:2 * mn + M], x.T.ravel())
    np.testing.assert_array_equal(out[2 * mn + M:3 * mn + M].reshape(M, N),
                                  np.cumsum(x, 1) + np.trunc(x))
    np.testing.assert_array_equal(out[3 * mn + M:3 * mn + M + N], np.argmax(x, 0))
    want = (np.minimum(np.minimum(x, 0.5), x * 2) + np.maximum(x, 0.25) + min(M, N) + 2 * x
            - (x < 0))
    np.testing.assert_array_equal(out[3 * mn + M + N:].reshape(M, N), want)


@triton.jit
def _min_of_one(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, min(tl.load(x_ptr + tl.arange(0, N))))


def test_builtin_min_of_one_tile_names_the_reduction():
    with pytest.raises(CompilationError, match=r"builtin min\(\) on a traced tensor.*nl.min\(x, axis\)"):
        _min_of_one.with_options(backend="reference")[(1,)](np.zeros(4, np.float32), N=4)


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(out_ptr + o, tl.load(x_ptr + o) + tl.load(y_ptr + o))


def test_warmup_compiles_without_running_and_asm_has_every_stage():
    x = np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    c = _add.with_options(backend="reference").warmup(x, x, out, N=8, grid=(1,), num_warps=4)
    assert (out == 0).all()                              # compiled, not run
    asm = c.asm
    assert '"npu.add"' in asm["ir"] and 'pipe = "VECTOR"' in asm["schedule"]
    assert "AscendC::Add" in asm["ascendc"]             # emitted on first read
    c[(1,)](x, x, out)
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(KeyError, match="no compile stage 'ttgir': it is a stage of Triton's GPU"):
        asm["ttgir"]
    with pytest.raises(KeyError, match="no compile stage 'warp'; stages: .*schedule"):
        asm["warp"]
    with pytest.raises(Exception, match="grid"):
        _add.warmup(x, x, out, N=8, grid=(0.5,))


@triton.jit
def _sum_dtype(out_ptr):
    ones = tl.full((8, 8), 1, tl.int1)
    tl.store(out_ptr, tl.sum(ones, dtype=tl.int1).to(tl.int32))             # parity of 64
    tl.store(out_ptr + 1, tl.sum(ones.to(tl.int32) * 7, dtype=tl.int8).to(tl.int32))
    tl.store(out_ptr + 2, tl.sum(ones))                                     # widened: 64


def test_sum_with_dtype_wraps_at_that_width():
    out = np.zeros(3, np.int32)
    _sum_dtype.with_options(backend="reference")[(1,)](out)
    np.testing.assert_array_equal(out, [0, (7 * 64 + 128) % 256 - 128, 64])   # i8 wraps: -64


@triton.jit
def _pointer_axes(x_ptr, z_ptr, w_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(tl.expand_dims(z_ptr + tl.arange(0, N), axis=1), tl.sum(x, 1, keep_dims=True))
    tl.store(w_ptr[None, None, :], tl.sum(x, None, keep_dims=True))   # (1, 1), as Triton


def test_pointer_tiles_take_new_axes_like_their_values():
    x = np.arange(16, dtype=np.float32)
    z, w = np.zeros(4, np.float32), np.zeros(1, np.float32)
    _pointer_axes.with_options(backend="reference")[(1,)](x, z, w, N=4)
    np.testing.assert_array_equal(z, x.reshape(4, 4).sum(1))
    assert w[0] == x.sum()


@triton.jit
def _unsplat(x_ptr):
    if tl.load(x_ptr + tl.arange(0, 1)) > 42:       # a one-element tile as a condition
        tl.store(x_ptr, 42)
        tl.debug_barrier()                           # accepted: program order already holds


def test_a_one_element_tile_is_a_condition_and_debug_barrier_is_accepted():
    for v, want in ((41, 41), (43, 42)):
        x = np.array([v], np.int32)
        _unsplat.with_options(backend="reference")[(1,)](x)
        assert x[0] == want
