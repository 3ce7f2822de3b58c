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


def test_triton_names_compute_what_triton_defines(capsys, monkeypatch):
    # static_print prints when the kernel is traced: not on a disk-cache hit
    monkeypatch.setenv("NPUJIT_ALWAYS_COMPILE", "1")
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
def _element_types(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    blk = tl.make_block_ptr(out_ptr, (N,), (1,), (0,), (N,), (0,))
    acc = tl.zeros((N,), dtype=x.type.element_ty) + x.type.scalar.primitive_bitwidth
    tl.store(out_ptr + tl.arange(0, N), acc.to(out_ptr.type.element_ty) + x)
    tl.static_assert(blk.type.element_ty == out_ptr.dtype.element_ty)


def test_element_types_under_their_triton_spellings(backend):
    """Triton's flash-attention tutorial stores ``acc.to(Out.type.element_ty)``."""
    x = np.arange(8, dtype=np.float16)
    out = np.zeros(8, np.float32)
    _element_types.with_options(backend=backend)[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out, x.astype(np.float32) + 16)

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


@triton.jit
def _hinted_pointer_tile(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    ptrs = x_ptr + offs[:, None] * B + offs[None, :]
    ptrs = tl.multiple_of(ptrs, [16, 16])           # as Triton's grouped GEMM hints its tiles
    ptrs = tl.max_contiguous(ptrs, [1, 16])
    tl.store(out_ptr + offs[:, None] * B + offs[None, :], tl.load(ptrs) + 1.0)


@triton.jit
def _pointer_as_value(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(out_ptr + offs, tl.sum(x_ptr + offs, 0))


def test_hints_on_a_pointer_tile_pass_it_through():
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = np.zeros_like(x)
    _hinted_pointer_tile.with_options(backend="reference")[(1,)](x, out, B=16)
    np.testing.assert_array_equal(out, x + 1.0)
    with pytest.raises(triton.CompilationError, match="cannot be used as a value here; read "
                                                      "the memory it points to with nl.load"):
        _pointer_as_value.with_options(backend="reference")[(1,)](x, out, B=16)


@triton.jit
def _keywords(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs, cache_modifier=".cg", eviction_policy="evict_last", volatile=True)
    tl.static_assert(x.shape == [N])                      # a shape equals the same list
    tl.static_assert(tl.constexpr(N) == tl.constexpr(N))  # constexprs compare by value
    v, i = tl.max(x, axis=0, return_indices=True, return_indices_tie_break_left=True)
    j = tl.argmin(x, axis=0, tie_break_left=True)
    tl.store(out_ptr + offs, tl.where(offs == 0, v, tl.where(offs == 1, i, j)).to(tl.float32),
             cache_modifier=".wb", eviction_policy="evict_first", mask=offs < 3)


def test_triton_keywords_of_load_store_and_reductions_are_accepted():
    x = np.array([3.0, 9.0, -4.0, 9.0, -4.0, 1.0, 0.0, 2.0], np.float32)
    out = np.zeros(8, np.float32)
    _keywords.with_options(backend="reference")[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out[:3], [9.0, 1.0, 2.0])    # first index of each tie


@triton.jit
def _nan_modes(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(a, b, propagate_nan=tl.PropagateNan.NONE))
    tl.store(out_ptr + N + offs, tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 2 * N + offs, tl.clamp(a, b, 5.0, propagate_nan=tl.PropagateNan.NONE))


def test_propagate_nan_none_prefers_the_number_and_all_gives_nan():
    a = np.array([np.nan, 1.0, np.nan, 7.0], np.float32)
    b = np.array([2.0, np.nan, np.nan, -1.0], np.float32)
    out = np.zeros(12, np.float32)
    _nan_modes.with_options(backend="reference")[(1,)](a, b, out, N=4)
    np.testing.assert_array_equal(out[:4], np.fmax(a, b))
    np.testing.assert_array_equal(out[4:8], np.minimum(a, b))
    np.testing.assert_array_equal(out[8:], np.fmin(np.fmax(a, b), 5.0))


@triton.jit
def _stacking(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + tl.arange(0, 2 * N), tl.cat(x, y, can_reorder=True))
    tl.store(out_ptr + 2 * N + tl.arange(0, 2 * N), tl.interleave(x, y))
    j = tl.join(x, y)                                              # (N, 2)
    tl.store(out_ptr + 4 * N + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    a, b = tl.split(j)
    tl.store(out_ptr + 6 * N + offs, a)
    tl.store(out_ptr + 7 * N + offs, b)


def test_join_split_interleave_and_cat_move_every_element_exactly():
    x = np.array([-0.0, np.nan, -np.inf, 1.5], np.float32)
    y = np.array([2.0, -3.0, np.inf, -0.0], np.float32)
    out = np.zeros(32, np.float32)
    _stacking.with_options(backend="reference")[(1,)](x, y, out, N=4)
    pairs = np.stack([x, y], axis=1)
    want = np.concatenate([x, y, pairs.ravel(), pairs.ravel(), x, y])
    np.testing.assert_array_equal(out.view(np.int32), want.view(np.int32))   # same bits


@triton.jit
def _loop_hints(out_ptr, n):
    i = 0
    while tl.condition(i < n, disable_licm=True):
        i += 2
    for j in tl.range(0, n, flatten=True, disable_licm=True, warp_specialize=False,
                      disallow_acc_multi_buffer=True, loop_unroll_factor=2):
        i += j
    tl.store(out_ptr, i)


def test_triton_loop_hints_are_accepted_and_change_nothing(backend):
    out = np.zeros(1, np.int32)
    _loop_hints.with_options(backend=backend)[(1,)](out, 7)
    assert out[0] == 8 + sum(range(7))      # the while stops at the first even i >= 7


@triton.jit
def _read_only(in_ptr: tl.const, out_ptr, N: tl.constexpr, WRITE_IN: tl.constexpr):
    offs = tl.arange(0, N)
    target = in_ptr if WRITE_IN else out_ptr
    tl.store(target + offs, tl.load(in_ptr + offs) * 2)


def test_a_const_pointer_reads_and_refuses_stores():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    k = _read_only.with_options(backend="reference")
    k[(1,)](x, out, N=8, WRITE_IN=False)
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(triton.CompilationError) as e:
        k[(1,)](x, out, N=8, WRITE_IN=True)
    assert e.value.error_message.startswith("store: Cannot store to a constant pointer: "
                                            "argument 'in_ptr' is annotated nl.const")


@triton.jit
def _interleave_scalars(x, y, z_ptr):
    z = tl.interleave(x, y)
    tl.static_assert(z.shape == [2])
    tl.store(z_ptr + tl.arange(0, 2), z)


def test_interleaving_two_scalars_gives_a_pair():
    z = np.zeros(2, np.float32)
    _interleave_scalars.with_options(backend="reference")[(1,)](10.0, 20.5, z)
    np.testing.assert_array_equal(z, [10.0, 20.5])


def test_num_warps_is_checked_as_triton_checks_it():
    out = np.zeros(2, np.float32)
    with pytest.raises(AssertionError, match="num_warps must be a power of 2, got 3"):
        _interleave_scalars.warmup(1.0, 2.0, out, grid=(1,), num_warps=3)
    _interleave_scalars.warmup(1.0, 2.0, out, grid=(1,), num_warps=4)


@triton.jit
def _gather(src_ptr, idx_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, M: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    idx = tl.load(idx_ptr + tl.arange(0, R)[:, None] * M + tl.arange(0, M)[None, :])
    tl.store(out_ptr + tl.arange(0, R)[:, None] * M + tl.arange(0, M)[None, :],
             tl.gather(src, idx, axis=1))


def test_gather_picks_along_the_axis_and_refuses_an_index_outside_it(backend):
    rng = np.random.default_rng(4)
    src = rng.standard_normal((4, 16)).astype(np.float32)
    idx = rng.integers(0, 16, (4, 8)).astype(np.int32)
    out = np.zeros((4, 8), np.float32)
    k = _gather.with_options(backend=backend)
    k[(1,)](src, idx, out, R=4, C=16, M=8)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx, axis=1))
    idx[2, 3] = 16
    with pytest.raises(IndexError, match=r"npu.gather at .*test_names.py:\d+.*gather index 16 "
                                         r".*outside \[0, 16\) on axis 1"):
        k[(1,)](src, idx, out, R=4, C=16, M=8)


@triton.jit
def _gather_rows(src_ptr, idx_ptr, out_ptr):
    src = tl.load(src_ptr + tl.arange(0, 2)[:, None] * 16 + tl.arange(0, 16)[None, :])
    idx = tl.load(idx_ptr + tl.arange(0, 2)[:, None] * 8 + tl.arange(0, 8)[None, :])
    tl.store(out_ptr + tl.arange(0, 2)[:, None] * 8 + tl.arange(0, 8)[None, :],
             tl.gather(src, idx, axis=0))


def test_gather_says_what_shape_the_index_must_have():
    with pytest.raises(triton.CompilationError, match=r"index shape \[2, 8\] must have the "
                                                      r"source's rank and its sizes \[2, 16\] "
                                                      r"on every axis but 0"):
        _gather_rows.with_options(backend="reference")[(1,)](
            np.zeros((2, 16), np.float32), np.zeros((2, 8), np.int32), np.zeros((2, 8), np.float32))


@triton.jit
def _sorted_and_top(x_ptr, i_ptr, out_ptr, iout_ptr, N: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    i = tl.load(i_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, N), tl.sort(x, dim=0, descending=True))
    tl.store(out_ptr + N + tl.arange(0, K), tl.topk(x, K))                  # values only
    tl.store(out_ptr + N + K + tl.arange(0, K), tl.topk(x, K, dim=0, descending=False))
    tl.store(iout_ptr + tl.arange(0, K), tl.topk(i, K, descending=False))
    tl.store(iout_ptr + K + tl.arange(0, N), tl.sort(i))


def test_sort_and_topk_take_triton_arguments_and_topk_returns_the_values(backend):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(32).astype(np.float32)
    i = rng.integers(-2**31, 2**31 - 1, 32).astype(np.int32)
    i[:2] = [-2**31, 2**31 - 1]                      # the extremes ~ maps onto each other
    out = np.zeros(32 + 16, np.float32)
    iout = np.zeros(8 + 32, np.int32)
    _sorted_and_top.with_options(backend=backend)[(1,)](x, i, out, iout, N=32, K=8)
    np.testing.assert_array_equal(out[:32], np.sort(x)[::-1])
    np.testing.assert_array_equal(out[32:40], np.sort(x)[::-1][:8])
    np.testing.assert_array_equal(out[40:], np.sort(x)[:8])
    np.testing.assert_array_equal(iout[:8], np.sort(i)[:8])
    np.testing.assert_array_equal(iout[8:], np.sort(i))


@triton.jit
def _toward_zero(x_ptr, h_ptr, b_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(h_ptr + tl.arange(0, N), x.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(b_ptr + tl.arange(0, N), tl.cast(x, tl.bfloat16, fp_downcast_rounding="rtz"))


def test_fp_downcast_rounding_rtz_rounds_toward_zero(backend):
    import ml_dtypes
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(36) * 10, [
        1e5, -1e5, 65519, 65520, 1e-8, -1e-8, 0.0, -0.0, np.inf, -np.inf, 3.0e38, 1.0000001,
        -1.0000001, 6e-8, 2049.0, 2051.0, -2051.0, 1e-40, 2.5, -1e-45, 0.1, -0.1, 7.0, 1.5e-5,
        np.nan, 1.0, 1024.7, -33.3]]).astype(np.float32)
    h = np.zeros(64, np.float16)
    b = np.zeros(64, ml_dtypes.bfloat16)
    _toward_zero.with_options(backend=backend)[(1,)](x, h, b, N=64)
    with np.errstate(over="ignore"):
        near = x.astype(np.float16)                    # nearest even, then one step in
    want_h = np.where(np.abs(near.astype(np.float64)) > np.abs(x.astype(np.float64)),
                      np.nextafter(near, np.float16(0)), near)
    want_b = (x.view(np.uint32) >> 16).astype(np.uint16).view(ml_dtypes.bfloat16)  # truncated
    num = ~np.isnan(x)
    np.testing.assert_array_equal(h.view(np.uint16)[num], want_h.view(np.uint16)[num])
    np.testing.assert_array_equal(b.view(np.uint16)[num], want_b.view(np.uint16)[num])
    assert np.isnan(h[~num]).all() and np.isnan(b[~num].astype(np.float32)).all()
