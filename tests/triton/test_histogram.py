"""``tl.histogram(x, num_bins, mask)``: counts per bin of width 1 from 0, values outside the
bins and masked-off lanes not counted, against ``np.bincount`` on the reference tier, numba
and the scheduled simulation; bad arguments are refused by name."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.errors import CompilationError


@triton.jit
def _histogram(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    lanes = tl.arange(0, 2 * M)
    z = tl.histogram(tl.load(x_ptr + lanes), N, mask=lanes < M)   # the second half: masked
    tl.store(z_ptr + tl.arange(0, N), z)


def _want(x, M, N):
    head = x[:M]
    return np.bincount(head[(head >= 0) & (head < N)], minlength=N).astype(np.int32)


def test_histogram_counts_in_range_active_lanes(backend):
    M, N = 16, 8
    x = np.random.default_rng(1).integers(-3, N + 3, 2 * M).astype(np.int32)
    z = np.full(N, -1, np.int32)
    _histogram.with_options(backend=backend)[(1,)](x, z, M=M, N=N)
    np.testing.assert_array_equal(z, _want(x, M, N))


def test_histogram_simulates():
    M, N = 8, 4
    x = np.arange(2 * M, dtype=np.int32) % 5
    z = np.zeros(N, np.int32)
    assert _histogram.simulate(x, z, grid=(1,), M=M, N=N).cycles > 0
    np.testing.assert_array_equal(z, _want(x, M, N))


@triton.jit
def _float_histogram(x_ptr, z_ptr):
    tl.store(z_ptr + tl.arange(0, 4), tl.histogram(tl.load(x_ptr + tl.arange(0, 4)), 4))


def test_histogram_of_floats_is_refused():
    with pytest.raises(CompilationError, match=r"histogram needs a 1-D int tile, got f32"):
        _float_histogram.with_options(backend="reference")[(1,)](
            np.zeros(4, np.float32), np.zeros(4, np.int32))
