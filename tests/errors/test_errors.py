"""Bad kernels and bad launches: each raises a clear error that names the source line
(CompilationError, with the line's text) or the argument (LaunchError)."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import CompilationError, LaunchError, npu_kernel

X = np.zeros(16, np.float32)


def _compile_error(kernel, *args, **kw) -> str:
    with pytest.raises(CompilationError) as e:
        kernel.with_options(backend="reference")[(1,)](*args, **kw)
    return str(e.value)


@npu_kernel
def good(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


# --- launch errors name the argument ---------------------------------------------------

def test_too_many_arguments():
    with pytest.raises(LaunchError, match="takes 4 arguments .* but 5 were given"):
        good[(1,)](X, X, 16, 16, 3)


def test_missing_argument():
    with pytest.raises(LaunchError, match="missing the argument 'n'"):
        good[(1,)](X, X, BLOCK=16)


def test_missing_constexpr():
    with pytest.raises(LaunchError, match="missing the constexpr argument 'BLOCK'"):
        good[(1,)](X, X, 16)


def test_unknown_keyword():
    with pytest.raises(LaunchError, match="unknown keyword argument 'BLOK'"):
        good[(1,)](X, X, 16, BLOK=16)


def test_unsupported_array_dtype_names_argument():
    with pytest.raises(LaunchError, match="argument 'out_ptr': arrays of dtype complex64"):
        good[(1,)](X, np.zeros(16, np.complex64), 16, BLOCK=16)


def test_wrong_argument_type():
    with pytest.raises(LaunchError, match="argument 'n': expected an array, a number or None"):
        good[(1,)](X, X, "16", BLOCK=16)



def test_negative_strides():
    with pytest.raises(LaunchError, match="argument 'x_ptr': strides"):
        good[(1,)](X[::-1], X, 16, BLOCK=16)


def test_launch_without_grid():
    with pytest.raises(LaunchError, match=r"must be launched with a grid: good\[grid\]"):
        good(X, X, 16, BLOCK=16)


def test_negative_grid():
    with pytest.raises(LaunchError, match=r"grid\[0\] = -1; a grid dimension cannot be negative"):
        good[(-1,)](X, X, 16, BLOCK=16)


def test_grid_of_wrong_arity():
    with pytest.raises(LaunchError, match="grid must be an int or a tuple of 1 to 3 ints"):
        good[(1, 1, 1, 1)](X, X, 16, BLOCK=16)


def test_grid_callable_returning_float():
    with pytest.raises(LaunchError, match=r"grid\[0\] must be an int"):
        good[lambda meta: (meta["n"] / 4,)](X, X, 16, BLOCK=16)


LIMIT = 4


@npu_kernel
def reads_global(out_ptr):
    nl.store(out_ptr + nl.arange(0, 4), nl.zeros((4,), nl.float32) + LIMIT)


def test_global_changed_after_compile():
    global LIMIT
    out = np.zeros(4, np.float32)
    k = reads_global.with_options(backend="reference")
    k[(1,)](out)
    assert (out == 4).all()
    LIMIT = 5
    try:
        with pytest.raises(LaunchError, match="global 'LIMIT' was 4, but it is now 5"):
            k[(1,)](out)
    finally:
        LIMIT = 4


# --- compile errors name the source line --------------------------------------------------

def test_while_on_a_tile():
    @npu_kernel
    def k(x_ptr):
        v = nl.load(x_ptr + nl.arange(0, 4))
        while v > 0:
            v = v - 1.0
    msg = _compile_error(k, X)
    assert "while v > 0:" in msg and "must be a scalar" in msg and "nl.where" in msg


def test_shapes_do_not_broadcast():
    @npu_kernel
    def k(x_ptr):
        a = nl.load(x_ptr + nl.arange(0, 4))
        b = nl.load(x_ptr + nl.arange(0, 8))
        nl.store(x_ptr + nl.arange(0, 4), a + b)
    msg = _compile_error(k, X)
    assert "a + b" in msg and "do not broadcast" in msg


def test_dot_inner_dims():
    @npu_kernel
    def k(x_ptr):
        a = nl.zeros((4, 8), nl.float16)
        b = nl.zeros((4, 8), nl.float16)
        c = nl.dot(a, b)
    msg = _compile_error(k, X)
    assert "c = nl.dot(a, b)" in msg and "inner dimensions differ" in msg


def test_dot_accumulator_dtype():
    @npu_kernel
    def k(x_ptr):
        acc = nl.zeros((4, 4), nl.float16)
        acc = nl.dot(nl.zeros((4, 8), nl.float16), nl.zeros((8, 4), nl.float16), acc)
    msg = _compile_error(k, X)
    assert "accumulator must be nl.float32" in msg and "acc = nl.dot" in msg



def test_a_dot_result_chosen_in_a_branch_says_to_pick_it_with_where():
    @npu_kernel
    def k(x_ptr, out_ptr, mode):
        r = nl.arange(0, 16)
        a = nl.load(x_ptr + r[:, None] * 16 + r[None, :])
        d = nl.dot(a, a)
        if mode == 0:
            c = d
        else:
            c = d * 0.0
        nl.store(out_ptr + r[:, None] * 16 + r[None, :], c)
    a = np.eye(16, dtype=np.float32).ravel()
    msg = _compile_error(k, a, np.zeros(256, np.float32), 0)
    assert "if mode == 0:" in msg and "nl.where(cond, a, b) instead of assigning" in msg
    out = np.zeros(256, np.float32)
    _pick_with_where.with_options(backend="reference")[(1,)](a, out, 0)
    np.testing.assert_array_equal(out, a)

def test_topk_k_too_large():
    @npu_kernel
    def k(x_ptr):
        v, i = nl.topk(nl.load(x_ptr + nl.arange(0, 8)), 9)
    msg = _compile_error(k, X)
    assert "k=9 must be between 1 and the size of axis 0 (8)" in msg and "nl.topk" in msg


def test_axis_out_of_range():
    @npu_kernel
    def k(x_ptr):
        s = nl.sum(nl.zeros((4, 4), nl.float32), axis=2)
    msg = _compile_error(k, X)
    assert "axis 2 is out of range" in msg and "s = nl.sum" in msg


def test_arange_needs_constants():
    @npu_kernel
    def k(x_ptr, n):
        offs = nl.arange(0, n)
    msg = _compile_error(k, X, 4)
    assert "arange end must be a constant int" in msg and "offs = nl.arange(0, n)" in msg


def test_mask_must_be_bool():
    @npu_kernel
    def k(x_ptr):
        offs = nl.arange(0, 8)
        v = nl.load(x_ptr + offs, mask=offs)
    msg = _compile_error(k, X)
    assert "mask must be a bool tile" in msg and "mask=offs" in msg


def test_break_in_ir_loop():
    @npu_kernel
    def k(x_ptr, n):
        for i in nl.range(0, n):
            break
    msg = _compile_error(k, X, 4)
    assert "cannot contain `break`" in msg and "for i in nl.range(0, n):" in msg


def test_carried_value_changes_dtype():
    @npu_kernel
    def k(x_ptr, n):
        acc = nl.zeros((4,), nl.float16)
        for i in nl.range(0, n):
            acc = acc + nl.zeros((4,), nl.float32)
    msg = _compile_error(k, X, 4)
    assert "loop-carried variable 'acc'" in msg and "keep its type" in msg


def test_variable_assigned_only_in_loop():
    @npu_kernel
    def k(x_ptr, n):
        for i in nl.range(0, n):
            last = nl.load(x_ptr + i)
        nl.store(x_ptr, last)
    msg = _compile_error(k, X, 4)
    assert "variable 'last'" in msg and "initialise it before the loop" in msg
    assert "nl.store(x_ptr, last)" in msg


def test_static_assert():
    @npu_kernel
    def k(x_ptr, BLOCK: nl.constexpr):
        nl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    msg = _compile_error(k, X, BLOCK=10)
    assert "static_assert failed: BLOCK must be a multiple of 16" in msg
    assert "nl.static_assert(BLOCK % 16 == 0" in msg


def test_store_to_a_tensor():
    @npu_kernel
    def k(x_ptr):
        v = nl.load(x_ptr)
        nl.store(v, 1.0)
    msg = _compile_error(k, X)
    assert "expected a pointer" in msg and "nl.store(v, 1.0)" in msg


def test_integer_indexing_a_tile():
    @npu_kernel
    def k(x_ptr):
        v = nl.load(x_ptr + nl.arange(0, 8))
        w = v[0]
    msg = _compile_error(k, X)
    assert "supports only None and ':'" in msg and "w = v[0]" in msg


def test_kernel_returning_a_value():
    @npu_kernel
    def k(x_ptr):
        return nl.load(x_ptr)
    assert "kernels write their results with nl.store" in _compile_error(k, X)


def test_language_function_outside_a_kernel():
    with pytest.raises(RuntimeError, match=r"nl.load can only be called inside an @npu_kernel"):
        nl.load(X)


def test_none_passed_for_a_pointer():
    msg = _compile_error(good, None, X, 16, BLOCK=16)
    assert "passed as None" in msg and "nl.load(x_ptr + offs" in msg


# --- more of the catalogue (issue 4) -----------------------------------------------------

def test_unknown_decorator_option():
    with pytest.raises(TypeError, match="unknown option 'stages'"):
        npu_kernel(stages=2)(good.fn)


def test_var_args_kernel():
    def k(*ptrs):
        pass
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs parameters are not supported"):
        npu_kernel(k)


def test_unhashable_constexpr():
    with pytest.raises(LaunchError, match="constexpr argument 'BLOCK' must be hashable"):
        good[(1,)](X, X, 16, BLOCK=[16])


def test_negative_grid_on_a_later_axis():
    with pytest.raises(LaunchError, match=r"grid\[1\] = -2"):
        good[(1, -2)](X, X, 16, BLOCK=16)


def test_reshape_size_mismatch():
    @npu_kernel
    def k(x_ptr):
        v = nl.reshape(nl.zeros((4, 8), nl.float32), (5, 8))
    msg = _compile_error(k, X)
    assert "cannot reshape a tile of shape [4, 8] (32 elements) to [5, 8]" in msg
    assert "v = nl.reshape" in msg


def test_trans_bad_permutation():
    @npu_kernel
    def k(x_ptr):
        v = nl.trans(nl.zeros((4, 8), nl.float32), (0, 0))
    msg = _compile_error(k, X)
    assert "is not a permutation" in msg and "v = nl.trans" in msg


def test_cast_to_a_non_dtype():
    @npu_kernel
    def k(x_ptr):
        v = nl.load(x_ptr).to("float16")
    msg = _compile_error(k, X)
    assert ".to() needs an nl dtype such as nl.float16" in msg and 'v = nl.load(x_ptr).to("float16")' in msg


def test_other_without_mask():
    @npu_kernel
    def k(x_ptr):
        v = nl.load(x_ptr + nl.arange(0, 4), other=0.0)
    msg = _compile_error(k, X)
    assert "other= needs a mask=" in msg and "v = nl.load" in msg


def test_float_loop_bounds():
    @npu_kernel
    def k(x_ptr, n):
        for i in nl.range(0, 2.5):
            pass
    msg = _compile_error(k, X, 4)
    assert "nl.range bounds must be ints" in msg and "for i in nl.range(0, 2.5):" in msg


def test_block_pointer_rank_mismatch():
    @npu_kernel
    def k(x_ptr, n):
        b = nl.make_block_ptr(x_ptr, shape=(n, n), strides=(n,), offsets=(0, 0),
                              block_shape=(4, 4))
    msg = _compile_error(k, X, 4)
    assert "strides has 1 entries but block_shape has 2" in msg and "nl.make_block_ptr" in msg


def test_block_shape_must_be_constant():
    @npu_kernel
    def k(x_ptr, n):
        b = nl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(0,), block_shape=(n,))
    msg = _compile_error(k, X, 4)
    assert "block_shape entries must be positive constant ints" in msg


def test_advance_with_wrong_arity():
    @npu_kernel
    def k(x_ptr, n):
        b = nl.make_block_ptr(x_ptr, shape=(n, n), strides=(n, 1), offsets=(0, 0),
                              block_shape=(4, 4))
        b = nl.advance(b, (4,))
    msg = _compile_error(k, X, 4)
    assert "advance: 1 offsets for a rank-2 block pointer" in msg and "b = nl.advance(b, (4,))" in msg


def test_dot_on_int32_tiles():
    @npu_kernel
    def k(x_ptr):
        c = nl.dot(nl.zeros((4, 4), nl.int32), nl.zeros((4, 4), nl.int32))
    msg = _compile_error(k, X)
    assert "dot takes float or int8 tiles, got i32" in msg and "c = nl.dot" in msg


def test_integer_literal_overflow():
    @npu_kernel
    def k(x_ptr):
        v = nl.zeros((4,), nl.int8) + 1000
    msg = _compile_error(k, X)
    assert "integer literal 1000 is out of range for i8" in msg and "v = nl.zeros((4,), nl.int8) + 1000" in msg


def test_tiles_over_the_ub_budget():
    from npujit import OutOfResources

    @npu_kernel
    def k(x_ptr, BLOCK: nl.constexpr):
        offs = nl.arange(0, BLOCK)
        v = nl.load(x_ptr + offs)
        nl.store(x_ptr + offs, v * 2.0)
    with pytest.raises(OutOfResources) as e:
        k.with_options(backend="reference")[(1,)](X, BLOCK=1 << 20)
    msg = str(e.value)
    assert "v = nl.load(x_ptr + offs)" in msg and "UB holds" in msg and "try BLOCK <=" in msg


@pytest.mark.parametrize("batch,m,k,n,scope", [(2, 256, 256, 16, "L0A"),
                                               (2, 16, 256, 256, "L0B"),
                                               (1, 128, 32, 512, "L0C")])
def test_dot_tiles_over_the_l0_budgets(batch, m, k, n, scope):
    """(A 2-D dot whose A or B tile is too big runs in L0 K-chunks, allocate.py
    ``split_l0_k``; a batched one's tiles and any dot's L0C accumulator are not split.)"""
    from npujit import OutOfResources

    @npu_kernel
    def mm(c_ptr, B: nl.constexpr, M: nl.constexpr, K: nl.constexpr, N: nl.constexpr):
        a = nl.zeros((B, M, K), nl.float16)
        b = nl.zeros((B, K, N), nl.float16)
        c = nl.dot(a, b)
        nl.store(c_ptr + nl.arange(0, B)[:, None, None] * (M * N)
                 + nl.arange(0, M)[None, :, None] * N + nl.arange(0, N)[None, None, :], c)
    with pytest.raises(OutOfResources) as e:
        mm.with_options(backend="reference")[(1,)](np.zeros(batch * m * n, np.float32),
                                                   B=batch, M=m, K=k, N=n)
    msg = str(e.value)
    assert "c = nl.dot(a, b)" in msg and f"but {scope} holds" in msg and "try " in msg


def test_a_store_wider_than_its_pointer_tile_is_refused():
    # Each address would be written by several lanes (the last winning): Triton refuses it.
    @npu_kernel
    def wide_value(x_ptr):
        offs = nl.arange(0, 8)
        nl.store(x_ptr + offs, nl.zeros((2, 8), nl.float32) + offs)

    @npu_kernel
    def wide_mask(x_ptr):
        offs = nl.arange(0, 8)
        nl.store(x_ptr + offs, 1.0, mask=(nl.arange(0, 2)[:, None] + offs) < 8)

    @npu_kernel
    def tile_into_scalar(x_ptr):
        nl.store(x_ptr, nl.arange(0, 4).to(nl.float32))

    msg = _compile_error(wide_value, X)
    assert "store: the value's shape [2, 8] is wider than the pointer tile's [8]" in msg
    assert "nl.store(x_ptr + offs, nl.zeros((2, 8)" in msg
    assert "the mask's shape [2, 8] is wider" in _compile_error(wide_mask, X)
    assert "the value's shape [4] is wider than the pointer tile's []" in \
        _compile_error(tile_into_scalar, X)


@npu_kernel
def _pick_with_where(x_ptr, out_ptr, mode):
    r = nl.arange(0, 16)
    a = nl.load(x_ptr + r[:, None] * 16 + r[None, :])
    d = nl.dot(a, a)
    nl.store(out_ptr + r[:, None] * 16 + r[None, :], nl.where(mode == 0, d, d * 0.0))


def test_unpacking_a_tensor_says_which_functions_return_tuples():
    import npujit.triton.language as tl

    @npu_kernel
    def k(x_ptr):
        v, i = tl.topk(nl.load(x_ptr + nl.arange(0, 16)), 4)
    msg = _compile_error(k, X)
    assert "v, i = tl.topk" in msg and "unpack a traced tensor (tensor<4xf32>)" in msg
    assert "Triton's tl.topk (npujit.triton.language) returns the values alone" in msg


def test_pointer_arithmetic_other_than_an_offset_names_the_line():
    @npu_kernel
    def k(x_ptr, out_ptr, BLOCK: nl.constexpr):
        offs = nl.arange(0, BLOCK)
        nl.store(out_ptr + offs, nl.load((x_ptr + offs) * 2))
    msg = _compile_error(k, X, X.copy(), BLOCK=16)
    assert "nl.load((x_ptr + offs) * 2)" in msg and "ptr + offs * 2" in msg
