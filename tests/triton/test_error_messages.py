"""Compile errors say what Triton's say (the phrases Triton users and tests match on), plus
the source line and what to do; an error a language function raises is the cause."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl


@triton.jit
def _pick(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


@triton.jit
def _store_if(x_ptr: tl.const, out, c_out: tl.const, choose):
    if choose:
        dst = c_out
    else:
        dst = out
    tl.store(dst, tl.load(x_ptr))


@triton.jit
def _store_ternary(x_ptr: tl.const, out, c_out: tl.const, choose):
    tl.store(c_out if choose else out, tl.load(x_ptr))


@triton.jit
def _store_call(x_ptr: tl.const, out, c_out: tl.const, choose):
    tl.store(_pick(out, c_out, choose), tl.load(x_ptr))


@pytest.mark.parametrize("kernel, phrase", [
    (_store_if, "Mismatched type for dst"),
    (_store_ternary, "Ternary expression with dynamic condition has inconsistent type"),
    (_store_call, "Return type mismatch: ")])
def test_a_const_and_a_plain_pointer_after_a_runtime_condition(kernel, phrase):
    x = np.zeros(1, np.float32)
    with pytest.raises(triton.CompilationError) as info:
        kernel.with_options(backend="reference").warmup(x, x, x, 0, grid=(1,))
    assert info.value.error_message.startswith(phrase)
    assert "nl.const (read-only) argument 'c_out'" in info.value.error_message
    assert "argument 'out'" in info.value.error_message


@triton.jit
def _different_tiles(x_ptr, choose):
    v = tl.zeros((4,), tl.float32) if choose else tl.zeros((4,), tl.int32)


def test_a_tile_of_another_dtype_in_a_conditional_expression():
    with pytest.raises(triton.CompilationError,
                       match="inconsistent types .*f32.* and .*i32.*; cast one side"):
        _different_tiles.with_options(backend="reference")[(1,)](np.zeros(1), 0)


@triton.jit
def _expand(x_ptr, AXES: tl.constexpr):
    t = tl.expand_dims(tl.arange(0, 8), AXES)


@pytest.mark.parametrize("axes, phrase", [
    (-3, r"invalid axis -3 for a result of rank 2"), (2, r"invalid axis 2"),
    ((0, 0), r"duplicate axes, normalized axes = \[0, 0\]"),
    ((0, -3), r"duplicate axes, normalized axes = \[0, 0\]")])
def test_expand_dims_axis_errors_have_the_value_error_as_cause(axes, phrase):
    with pytest.raises(triton.CompilationError, match=phrase) as info:
        _expand.with_options(backend="reference")[(1,)](np.zeros(1), AXES=axes)
    assert isinstance(info.value.__cause__, ValueError)
    assert "expand_dims" in str(info.value.__cause__)
    assert "tl.expand_dims(tl.arange(0, 8), AXES)" in str(info.value)   # the user's line


@triton.jit
def _program_id(x_ptr, AXIS: tl.constexpr):
    tl.program_id(AXIS)


def test_program_id_axis_error_has_the_value_error_as_cause():
    with pytest.raises(triton.TritonError) as info:
        _program_id.with_options(backend="reference")[(1,)](np.zeros(1), AXIS=20)
    assert "program_id axis must be 0, 1, or 2 but got 20" in str(info.value.__cause__)


@triton.jit
def _slice_pointer(dst):
    dst[10:]


@triton.jit
def _slice_tile(dst):
    tl.arange(0, 8)[2:]


@pytest.mark.parametrize("kernel", [_slice_pointer, _slice_tile])
def test_a_slice_is_an_unsupported_tensor_index(kernel):
    with pytest.raises(triton.TritonError, match="unsupported tensor index slice.*; (add|use)"):
        kernel.with_options(backend="reference")[(1,)](np.zeros(16, np.float32))
