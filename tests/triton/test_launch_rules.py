"""Launch rules Triton kernels rely on: 0-d arrays are one-element buffers, a kernel may
have no parameters, a grid with a 0 launches nothing (arguments still checked)."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import LaunchError, npu_kernel

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
