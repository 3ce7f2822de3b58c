"""Loops versioned on prefix masks (backends/numba/prefix_mask.py): the copy without the
mask runs only when every lane is active, and both copies give numpy's answer, for the
row idiom (``cols < n_cols``) and the offset one (``pid * BLOCK + arange < n``)."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.backends.numba.prefix_mask import version_prefix_masks


@npu_kernel
def row_shift(x_ptr, out_ptr, n_cols, BLOCK: nl.constexpr):
    """out[row] = x[row] - max(x[row]) over the first n_cols columns; the rest untouched."""
    row = nl.program_id(0)
    cols = nl.arange(0, BLOCK)
    mask = cols < n_cols
    x = nl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    nl.store(out_ptr + row * n_cols + cols, x - nl.max(x, axis=0), mask=mask)


@npu_kernel
def scaled_copy(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=mask) * 2.0 + 1.0, mask=mask)


@pytest.mark.parametrize("n_cols", [256, 255, 130])
def test_row_mask_both_copies_match_numpy(n_cols):
    rng = np.random.default_rng(n_cols)
    x = rng.standard_normal((3, n_cols)).astype(np.float32)
    out = np.full(3 * n_cols + 8, 7.0, np.float32)
    row_shift.with_options(backend="numba")[(3,)](x, out, n_cols, BLOCK=256)
    want = x - x.max(axis=1, keepdims=True)
    np.testing.assert_array_equal(out[:3 * n_cols].reshape(3, n_cols), want)
    np.testing.assert_array_equal(out[3 * n_cols:], 7.0)       # past the last row: untouched
    src = row_shift.with_options(backend="numba").inspect(x, out, n_cols, BLOCK=256)["backend"]
    assert "if 256 <= i64(n_cols):" in src


@pytest.mark.parametrize("n", [1024, 1000, 513])
def test_offset_mask_versions_per_program(n):
    """Programs wholly inside n take the unmasked copy, the last one (n 1000, 513) the
    masked copy; nothing past n is written."""
    x = np.arange(n, dtype=np.float32)
    out = np.full(1024 + 16, -1.0, np.float32)
    scaled_copy.with_options(backend="numba")[(-(-n // 256),)](x, out, n, BLOCK=256)
    np.testing.assert_array_equal(out[:n], 2 * x + 1)
    np.testing.assert_array_equal(out[n:], -1.0)
    src = scaled_copy.with_options(backend="numba").inspect(x, out, n, BLOCK=256)["backend"]
    assert "if i64(mul) + 256 <= i64(n):" in src


def test_only_long_loops_without_error_paths_are_versioned():
    body = ["        for i in range(u64(16)):",                       # too short
            "            o[i] = x[i] if (i32(i64(i)) < n) else f32(0.0)",
            "        for j in range(u64(512)):",                      # an error path
            "            if (i32(i64(j)) < n):",
            "                ck.out_of_bounds(j)",
            "        for k in range(u64(512)):",                      # limit assigned inside
            "            n = k",
            "            o[k] = x[k] if (i32(i64(k)) < n) else f32(0.0)",
            "        for q in range(u64(512)):",                      # a longer name shares the prefix
            "            t[q] = x[q] if (i32(i64(q)) < nn) and (i32(i64(q)) < n) else f32(0.0)"]
    out = version_prefix_masks(body)
    assert out[:8] == body[:8]
    assert out[8] == "        if 512 <= i64(nn) and 512 <= i64(n):"
    assert out[10] == "                t[q] = x[q] if (True) and (True) else f32(0.0)"
    assert out[11:] == ["        else:", "    " + body[8], "    " + body[9]]


def test_a_loop_that_only_streams_arguments_is_versioned_too():
    """The vector add's store: its masked copy is a masked vector store, microcoded on
    AMD Zen (prefix_mask's module doc)."""
    body = ["        for s in range(u64(512)):",
            "            o[s] = f32((x[s] if (i32(i64(s)) < n) else f32(0.0)) + y[s])"]
    out = version_prefix_masks(body)
    assert out[0] == "        if 512 <= i64(n):"
    assert out[2] == "                o[s] = f32((x[s] if (True) else f32(0.0)) + y[s])"
    assert out[3:] == ["        else:", "    " + body[0], "    " + body[1]]
