"""max/min and NaN, as Triton: ``maximum``/``minimum`` skip a NaN operand (np.fmax /
np.fmin, ``propagate_nan=NONE``), ``propagate_nan=ALL`` gives NaN (np.maximum), and the
``max``/``min`` reductions skip NaN (a lane of NaNs gives NaN), on the reference and numba
backends and through the Ascend C twin (docs/semantics.md).
"""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel

NAN, INF = np.nan, np.inf
CPU_TIERS = ["reference", "llvm", "numba"]   # both CPU backends lower NaN-skipping apart
# every pairing: NaN either side, both, with infinities, and plain numbers
X = [NAN, 1.0, NAN, INF, NAN, -INF, 3.0, -2.0]
Y = [2.0, NAN, NAN, NAN, -INF, NAN, -1.0, 5.0]


@npu_kernel
def extremes(x_ptr, y_ptr, out_ptr, N: nl.constexpr):
    offs = nl.arange(0, N)
    x = nl.load(x_ptr + offs)
    y = nl.load(y_ptr + offs)
    outs = (nl.maximum(x, y), nl.minimum(x, y),
            nl.maximum(x, y, propagate_nan=nl.PropagateNan.ALL),
            nl.minimum(x, y, propagate_nan=nl.PropagateNan.ALL),
            nl.maximum(x, y, propagate_nan=nl.PropagateNan.NONE),
            max(x, y),                                   # Python's builtin: nl.maximum
            nl.clamp(x, -1.0, 1.0))
    for i in nl.static_range(len(outs)):
        nl.store(out_ptr + i * N + offs, outs[i])
    # scalars (the numba backend computes them outside any loop)
    a = nl.load(x_ptr)
    b = nl.load(y_ptr)
    nl.store(out_ptr + len(outs) * N, nl.maximum(a, b))
    nl.store(out_ptr + len(outs) * N + 1, nl.minimum(b, a, propagate_nan=nl.PropagateNan.ALL))


@pytest.mark.parametrize("backend", CPU_TIERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=str)
def test_elementwise_maximum_minimum_skip_nan_unless_all(backend, dtype):
    x, y = np.array(X, dtype), np.array(Y, dtype)
    n = len(X)
    out = np.full(7 * n + 2, -7.0, dtype)
    extremes.with_options(backend=backend)[(1,)](x, y, out, N=n)
    want = [np.fmax(x, y), np.fmin(x, y), np.maximum(x, y), np.minimum(x, y), np.fmax(x, y),
            np.fmax(x, y), np.fmin(np.fmax(x, -1.0), 1.0).astype(dtype)]
    for i, w in enumerate(want):
        np.testing.assert_array_equal(out[i * n:(i + 1) * n], w, err_msg=f"output {i}")
    np.testing.assert_array_equal(out[-2:], [2.0, NAN])


@npu_kernel
def reductions(x_ptr, out_ptr, idx_ptr, R: nl.constexpr, C: nl.constexpr):
    rows = nl.arange(0, R)
    cols = nl.arange(0, C)
    x = nl.load(x_ptr + rows[:, None] * C + cols[None, :])
    nl.store(out_ptr + rows, nl.max(x, axis=1))
    nl.store(out_ptr + R + rows, nl.min(x, axis=1))
    nl.store(out_ptr + 2 * R + cols, nl.max(x, axis=0))
    nl.store(out_ptr + 2 * R + C + cols, nl.min(x, axis=0))
    nl.store(out_ptr + 2 * R + 2 * C, nl.max(x))
    nl.store(out_ptr + 2 * R + 2 * C + 1, nl.min(x))
    v, i = nl.max(x, axis=1, return_indices=True)
    nl.store(out_ptr + 2 * R + 2 * C + 2 + rows, v)
    nl.store(idx_ptr + rows, i)


def _grid():
    """4 x 8: a row with NaN and both infinities, a row of NaNs, a column of NaNs, a
    row without NaN."""
    x = np.arange(32, dtype=np.float64).reshape(4, 8) - 10
    x[0, :3] = [NAN, -INF, INF]
    x[1] = NAN
    x[:, 5] = NAN
    x[3, 5] = 4.0
    x[2, 6] = NAN
    return x


@pytest.mark.parametrize("backend", CPU_TIERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=str)
def test_max_min_reductions_skip_nan(backend, dtype):
    x = _grid().astype(dtype)
    R, C = x.shape
    out = np.zeros(2 * R + 2 * C + 2 + R, dtype)
    idx = np.zeros(R, np.int32)
    reductions.with_options(backend=backend)[(1,)](x, out, idx, R=R, C=C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)       # all-NaN slices
        want = np.concatenate([np.nanmax(x, 1), np.nanmin(x, 1), np.nanmax(x, 0),
                               np.nanmin(x, 0), [np.nanmax(x), np.nanmin(x)]])
    np.testing.assert_array_equal(out[:2 * R + 2 * C + 2], want.astype(dtype))
    assert out[0] == INF and out[R] == -INF and np.isnan(out[1]) and np.isnan(out[R + 1])
    # return_indices: argmax's index (the first NaN) and the value at it
    first = np.argmax(x.astype(np.float64), axis=1)
    np.testing.assert_array_equal(idx, first)
    np.testing.assert_array_equal(out[-R:], x[np.arange(R), first])


@npu_kernel
def row_max_min(x_ptr, out_ptr, N: nl.constexpr):
    x = nl.load(x_ptr + nl.arange(0, N))
    nl.store(out_ptr, nl.max(x, axis=0))
    nl.store(out_ptr + 1, nl.min(x, axis=0))


@pytest.mark.parametrize("backend", CPU_TIERS)
def test_triton_max_min_with_nan(backend):
    # Triton's test_max_min_with_nan: 64 floats, x[0] = NaN, x[1] = -inf, x[2] = inf
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    x[:3] = [NAN, -INF, INF]
    out = np.zeros(2, np.float32)
    row_max_min.with_options(backend=backend)[(1,)](x, out, N=64)
    np.testing.assert_array_equal(out, [INF, -INF])


@npu_kernel
def twin_extremes(x_ptr, y_ptr, out_ptr, N: nl.constexpr):
    offs = nl.arange(0, N)
    x = nl.load(x_ptr + offs)
    y = nl.load(y_ptr + offs)
    nl.store(out_ptr + offs, nl.maximum(x, y))              # Max
    nl.store(out_ptr + N + offs, nl.minimum(x, y))          # Min
    nl.store(out_ptr + 2 * N + offs, nl.maximum(x, 0.5))    # Maxs
    nl.store(out_ptr + 3 * N + offs, nl.minimum(x, 0.5))    # Mins
    nl.store(out_ptr + 4 * N, nl.max(x, axis=0))            # ReduceMax
    nl.store(out_ptr + 4 * N + 1, nl.min(x, axis=0))        # ReduceMin


@pytest.mark.skipif(shutil.which("g++") is None, reason="the Ascend C twin needs g++")
def test_ascendc_twin_matches_the_reference():
    n = len(X)
    x, y = np.array(X, np.float32), np.array(Y, np.float32)
    for xs in (x, np.full(n, NAN, np.float32)):        # mixed, then a tile of NaNs
        got = np.zeros(4 * n + 2, np.float32)
        twin_extremes.with_options(backend="ascendc-twin")[(1,)](xs, y, got, N=n)
        want = np.concatenate([np.fmax(xs, y), np.fmin(xs, y), np.fmax(xs, 0.5),
                               np.fmin(xs, 0.5), [np.fmax.reduce(xs), np.fmin.reduce(xs)]])
        np.testing.assert_array_equal(got, want)
