"""Triton names npujit answers to: permute, broadcast, umulhi, item, tl.math.div_rn/fdiv/
sqrt_rn, dot's precision keywords, hints, static_print, dtype introspection, and the
message for numpy math in a kernel.  One batched kernel on the reference tier."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl


@triton.jit
def _names(x_ptr, y_ptr, u_ptr, v_ptr, out_ptr, hi_ptr, A: tl.constexpr, B: tl.constexpr):
    rows = tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :]
    x = tl.load(x_ptr + tl.multiple_of(rows, 1))                       # (A, B)
    tl.assume(A > 0)
    tl.static_print("names kernel", A, B)
    t = tl.permute(x, (1, 0))                                         # (B, A)
    col, row = tl.broadcast(tl.arange(0, B)[:, None], tl.arange(0, A)[None, :])
    tl.store(out_ptr + tl.max_contiguous(col * A + row, A), t)        # out: x transposed
    y = tl.load(y_ptr + tl.arange(0, B))
    q = tl.math.div_rn(y, 3.0) + tl.math.fdiv(y, 3.0) + tl.math.sqrt_rn(y * y)
    first = tl.load(x_ptr + tl.arange(0, 1)).item()                   # a scalar
    tl.store(out_ptr + A * B + tl.arange(0, B), q + first)
    d = tl.dot(x, t, input_precision="ieee", allow_tf32=False, max_num_imprecise_acc=0,
               out_dtype=tl.float32)
    tl.store(out_ptr + A * B + B + tl.arange(0, A)[:, None] * A + tl.arange(0, A)[None, :], d)
    u = tl.load(u_ptr + tl.arange(0, 4))
    v = tl.load(v_ptr + tl.arange(0, 4))
    tl.store(hi_ptr + tl.arange(0, 4), tl.umulhi(u, v))


def test_triton_names_compute_what_triton_defines(capsys):
    A, B = 4, 8
    rng = np.random.default_rng(0)
    x = rng.standard_normal((A, B)).astype(np.float32)
    y = rng.uniform(0.5, 2.0, B).astype(np.float32)
    u = np.array([-1, 2**31 - 1, 123456789, -5], np.int32)
    v = np.array([-1, 3, 987654321, 7], np.int32)
    out = np.zeros(A * B + B + A * A, np.float32)
    hi = np.zeros(4, np.int32)
    _names.with_options(backend="reference")[(1,)](x, y, u, v, out, hi, A=A, B=B)
    np.testing.assert_array_equal(out[:A * B].reshape(B, A), x.T)
    want_q = y / np.float32(3) + y / np.float32(3) + np.abs(y) + x[0, 0]
    np.testing.assert_allclose(out[A * B:A * B + B], want_q, rtol=1e-6)
    np.testing.assert_allclose(out[A * B + B:].reshape(A, A), x @ x.T, rtol=1e-5, atol=1e-5)
    unsigned = lambda a: a.astype(np.int64) & 0xFFFFFFFF  # noqa: E731
    np.testing.assert_array_equal(hi, ((unsigned(u) * unsigned(v)) >> 32).astype(np.uint32)
                                  .view(np.int32))
    assert "names kernel 4 8" in capsys.readouterr().out


def test_dtype_introspection():
    assert tl.float32.primitive_bitwidth == 32 and tl.int8.primitive_bitwidth == 8
    assert tl.float16.fp_mantissa_width == 10 and tl.bfloat16.fp_mantissa_width == 7
    assert tl.float32.is_floating() and not tl.int32.is_floating()
    assert tl.int64.is_int_signed() and not tl.int64.is_int_unsigned()


@triton.jit
def _numpy_exp(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(x_ptr + tl.arange(0, N), np.exp(x))


def test_numpy_math_in_a_kernel_names_the_nl_function():
    with pytest.raises(triton.CompilationError, match=r"np.exp cannot run on a traced tensor.*nl.exp"):
        _numpy_exp.with_options(backend="reference")[(1,)](np.zeros(4, np.float32), N=4)


@triton.jit
def _item_of_many(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr + tl.arange(0, N)).item())


def test_item_of_a_tile_of_many_elements_is_refused():
    with pytest.raises(triton.CompilationError, match=r"\.item\(\) needs a tile of one element"):
        _item_of_many.with_options(backend="reference")[(1,)](np.zeros(4, np.float32), N=4)


@triton.jit
def _false_hint(x_ptr, off, N: tl.constexpr):
    o = tl.multiple_of(off, 16)
    tl.store(x_ptr + o + tl.arange(0, N), tl.zeros((N,), tl.float32))


def test_a_false_multiple_of_hint_is_caught_in_debug_mode():
    x = np.ones(64, np.float32)
    _false_hint.with_options(backend="reference")[(1,)](x, 3, N=4)   # trusted
    assert x[3:7].tolist() == [0, 0, 0, 0]
    with pytest.raises(triton.TritonError, match="multiple_of"):
        _false_hint.with_options(backend="reference", debug=True)[(1,)](x, 5, N=4)
