"""Launch rules Triton kernels rely on: 0-d arrays are one-element buffers, a kernel may
have no parameters, a grid with a 0 launches nothing (arguments still checked), a launch
returns the compiled kernel that ran."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import LaunchError, npu_kernel
from npujit.jit.compiled import CompiledKernel

calls = np.zeros(1, np.int32)


@npu_kernel(backend="reference")
def _double_scalar(x_ptr, out_ptr):
    nl.store(out_ptr, nl.load(x_ptr) * 2)


@npu_kernel(backend="reference")
def _no_parameters():
    nl.static_assert(True)


@npu_kernel(backend="reference")
def _bump(counter_ptr, n):
    nl.atomic_add(counter_ptr, n)


def test_zero_d_arrays_are_one_element_buffers():
    x, out = np.array(21.0, np.float32), np.zeros((), np.float32)
    _double_scalar[(1,)](x, out)
    assert out.shape == () and float(out) == 42.0


def test_a_kernel_with_no_parameters_launches():
    _no_parameters[(2,)]()
    _no_parameters[(1,)]()


def test_a_grid_with_a_zero_launches_nothing_but_still_checks_arguments():
    counter = np.zeros(1, np.int32)
    _bump[(0,)](counter, 5)
    _bump[(3, 0)](counter, 5)
    assert counter[0] == 0
    _bump[(2,)](counter, 5)
    assert counter[0] == 10
    with pytest.raises(LaunchError, match="argument 'counter_ptr'"):
        _bump[(0,)](np.zeros(1, np.complex64), 5)


@npu_kernel(backend="reference")
def _add_one(x_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(x_ptr + offs, nl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_a_launch_returns_the_compiled_kernel_that_ran():
    x = np.zeros(8, np.float32)
    first = _add_one[(1,)](x, 8, BLOCK=8)           # compiled, then launched
    again = _add_one[(1,)](x, 8, BLOCK=8)           # the warm launch path
    empty = _add_one[(0,)](x, 8, BLOCK=8)           # launches nothing
    assert isinstance(first, CompiledKernel) and again is first and empty is first
    assert "npu.store" in first.asm["ir"] and first.constexprs == {"BLOCK": 8}
    np.testing.assert_array_equal(x, 2.0)
