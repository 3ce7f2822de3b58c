"""Gathered rows (``x_ptr + idx[:, None] * stride + cols[None, :]``, the row gather of a
grouped GEMM) load and store the same elements as numpy on every tier, in the default
and debug modes: rows whose index is a sentinel past the array are masked off and never
raise; an active lane outside the argument raises ``OutOfBoundsError`` naming it.  On
the numba backend the default mode reads each row as one run (``row_gather.py``); on the
llvm backend the offset range comes from each row's two ends (``lower_memory._span``)."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import OutOfBoundsError, npu_kernel


@npu_kernel
def gather_rows(x_ptr, idx_ptr, out_ptr, R, N, stride, STEP: nl.constexpr,
                BR: nl.constexpr, BN: nl.constexpr):
    """out[r, c] = x[idx[r], STEP * c] for rows with idx[r] >= 0 (others 0)."""
    r = nl.program_id(0) * BR + nl.arange(0, BR)
    c = nl.program_id(1) * BN + nl.arange(0, BN)
    idx = nl.load(idx_ptr + r, mask=r < R, other=-1)
    live = idx >= 0
    # idx * stride written as a row part that is subtracted, plus affine terms
    v = nl.load(x_ptr + c[None, :] * STEP - (-1 - idx[:, None]) * stride - stride,
                mask=live[:, None] & (c[None, :] < N), other=0.0)
    nl.store(out_ptr + r[:, None] * N + c[None, :], v, mask=(r[:, None] < R) & (c[None, :] < N))


@npu_kernel
def scatter_rows(v_ptr, idx_ptr, out_ptr, R, N, BR: nl.constexpr, BN: nl.constexpr):
    """out[idx[r], c] = v[r, c] for rows with idx[r] >= 0."""
    r = nl.program_id(0) * BR + nl.arange(0, BR)
    c = nl.program_id(1) * BN + nl.arange(0, BN)
    idx = nl.load(idx_ptr + r, mask=r < R, other=-1)
    ok = (idx[:, None] >= 0) & (c[None, :] < N)
    v = nl.load(v_ptr + r[:, None] * N + c[None, :], mask=(r[:, None] < R) & (c[None, :] < N))
    nl.store(out_ptr + idx[:, None] * N + c[None, :], v, mask=ok)


MODES = [("reference", False), ("numba", False), ("numba", True), ("llvm", False),
         ("llvm", True)]
IDS = ["reference", "numba", "numba-debug", "llvm", "llvm-debug"]


def _grid(R, N, BR, BN):
    return (-(-R // BR), -(-N // BN))


@pytest.mark.parametrize("backend,debug", MODES, ids=IDS)
@pytest.mark.parametrize("step", [1, 2])
def test_gathered_rows_load_like_numpy(backend, debug, step):
    rng = np.random.default_rng(step)
    T, N, R = 11, 13, 10                              # ragged rows and columns
    stride = N * step + 3
    x = rng.standard_normal(T * stride).astype(np.float32)
    idx = rng.integers(0, T, R).astype(np.int32)
    idx[[2, 7]] = -1                                  # padding rows: off, and past the array
    out = np.full((R, N), 9.0, np.float32)
    k = gather_rows.with_options(backend=backend, debug=debug)
    k[_grid(R, N, 4, 8)](x, idx, out, R, N, stride, STEP=step, BR=4, BN=8)
    rows = x.reshape(T, stride)[:, : N * step : step]
    want = np.where((idx >= 0)[:, None], rows[np.maximum(idx, 0)], 0.0)
    np.testing.assert_array_equal(out, want)
    if backend == "numba" and not debug:
        src = k.inspect(x, idx, out, R, N, stride, STEP=step, BR=4, BN=8)["backend"]
        assert "rs = " in src                         # one start (and one check) per row


@pytest.mark.parametrize("backend,debug", MODES, ids=IDS)
def test_gathered_rows_store_like_numpy(backend, debug):
    rng = np.random.default_rng(5)
    R, N, T = 9, 12, 15
    v = rng.standard_normal((R, N)).astype(np.float32)
    idx = rng.permutation(T)[:R].astype(np.int32)
    idx[4] = -1
    out = np.zeros((T, N), np.float32)
    scatter_rows.with_options(backend=backend, debug=debug)[_grid(R, N, 4, 8)](
        v, idx, out, R, N, BR=4, BN=8)
    want = np.zeros((T, N), np.float32)
    live = idx >= 0
    want[idx[live]] = v[live]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("backend,debug", MODES, ids=IDS)
def test_an_active_row_past_the_array_raises_naming_it(backend, debug):
    T, N, R = 4, 8, 4
    x = np.zeros(T * N, np.float32)
    idx = np.array([0, 1, T, 2], np.int32)            # row 2 is active and past x
    out = np.zeros((R, N), np.float32)
    k = gather_rows.with_options(backend=backend, debug=debug)
    with pytest.raises(OutOfBoundsError, match="x_ptr"):
        k[_grid(R, N, 4, 8)](x, idx, out, R, N, N, STEP=1, BR=4, BN=8)


@pytest.mark.parametrize("start", [1 << 20, (1 << 20) + 1, (1 << 19) - 1])
def test_row_offsets_that_wrap_in_int32_follow_the_reference(start):
    """``idx * stride`` past 2**31 wraps in int32 (the language's semantics): to 0 (rows
    inside x again), to 4096 (inside), or not at all but past x (an active lane outside:
    the error).  The llvm backend's row ends are exact from each row's first lane as the
    lane holds it, so they agree with the reference interpreter either way."""
    T, N, R, stride = 4, 8, 4, 1 << 12
    x = np.arange(T * stride, dtype=np.float32)
    idx = np.array([0, start, 1, 2], np.int32)
    got = {}
    for backend in ("reference", "llvm"):
        out = np.full((R, N), -1.0, np.float32)
        k = gather_rows.with_options(backend=backend)
        try:
            k[_grid(R, N, 4, 8)](x, idx, out, R, N, stride, STEP=1, BR=4, BN=8)
            got[backend] = out
        except OutOfBoundsError as e:
            assert "x_ptr" in str(e)
            got[backend] = "raised"
    wrapped = (idx.astype(np.int64) * stride + 2**31) % 2**32 - 2**31
    if ((wrapped >= 0) & (wrapped + N <= x.size)).all():
        want = x[wrapped[:, None] + np.arange(N)[None, :]]
        np.testing.assert_array_equal(got["reference"], want)
        np.testing.assert_array_equal(got["llvm"], want)
    else:
        assert got == {"reference": "raised", "llvm": "raised"}
