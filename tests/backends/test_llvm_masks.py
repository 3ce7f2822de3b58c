"""Masked stores and gathers on the llvm backend: a mask, or an ``&`` factor of one, the
compiler can prove all-on from its compare's affine sides (backends/llvm/lower_tile.py
``_all_on``) gets a copy of the access loop without that test (backends/llvm/
lower_memory.py ``versioned``); the lanes it reads and writes must be exactly the
masked ones either way.

Oracles: numpy (which elements a mask selects) and the reference backend (the same
kernel interpreted, for the int32 wrap-around case).
"""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel

SENTINEL = -7.0


@npu_kernel
def _box(x_ptr, out_ptr, m, n, first, BM: nl.constexpr, BN: nl.constexpr):
    rows = nl.program_id(0) * BM + nl.arange(0, BM)
    cols = nl.program_id(1) * BN + nl.arange(0, BN)
    # columns from ``first`` on: a third compare keeps this a pointer store (a plain box
    # becomes a block store, which has no mask)
    mask = (rows[:, None] < m) & (cols[None, :] < n) & (cols[None, :] >= first)
    offs = rows[:, None] * n + cols[None, :]
    x = nl.load(x_ptr + offs, mask=mask, other=0.0)
    nl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)


@pytest.mark.parametrize("m,n,first", [(8, 16, 0), (16, 32, 0), (5, 16, 0), (8, 13, 0),
                                       (3, 7, 0), (1, 1, 0), (8, 16, 3), (8, 16, 16)])
def test_a_box_mask_writes_exactly_its_lanes(m, n, first):
    """Exact multiples of the block (every program all-on: the unmasked loop) and tails
    in either axis or a skipped column range (the masked loop in those programs)."""
    x = np.random.default_rng(m * 100 + n).standard_normal(m * n).astype(np.float32)
    out = np.full(m * n + 8, SENTINEL, np.float32)       # 8 more: a write past n*m shows
    grid = (-(-m // 4), -(-n // 8))
    _box.with_options(backend="llvm")[grid](x, out, m, n, first, BM=4, BN=8)
    want = np.where(np.arange(m * n) % n >= first, x * np.float32(2.0) + np.float32(1.0),
                    SENTINEL)
    np.testing.assert_array_equal(out[:m * n], want)
    assert (out[m * n:] == SENTINEL).all()


@npu_kernel
def _either(x_ptr, out_ptr, lo, hi, BLOCK: nl.constexpr):
    cols = nl.arange(0, BLOCK)
    keep = (cols < lo) | (cols >= hi)
    nl.store(out_ptr + cols, nl.load(x_ptr + cols), mask=keep)


@pytest.mark.parametrize("lo,hi", [(32, 40), (0, 0), (5, 9), (0, 32), (10, 10)])
def test_an_or_of_compares_writes_exactly_its_lanes(lo, hi):
    x = np.arange(32, dtype=np.float32)
    out = np.full(32, SENTINEL, np.float32)
    _either.with_options(backend="llvm")[(1,)](x, out, lo, hi, BLOCK=32)
    cols = np.arange(32)
    want = np.where((cols < lo) | (cols >= hi), x, SENTINEL)
    np.testing.assert_array_equal(out, want)


@npu_kernel
def _shifted(x_ptr, out_ptr, k, n, BLOCK: nl.constexpr):
    cols = nl.arange(0, BLOCK)
    keep = (k - cols) < n               # int32: wraps below -2**31
    nl.store(out_ptr + cols, nl.load(x_ptr + cols), mask=keep)


@pytest.mark.parametrize("k,n", [(0, 16), (2**31 - 4, 2**31 - 1), (-(2**31) + 4, 0),
                                 (-(2**31), -(2**31) + 8)])
def test_a_compare_of_wrapping_int32_lanes_follows_the_reference(k, n):
    """Where ``k - cols`` wraps in int32 the exact values do not decide the lanes
    (``-2**31 + 4 - cols < 0`` holds for every exact lane, but lanes 5.. wrap to large
    positives): the all-on test must not take the unmasked loop."""
    x = np.arange(16, dtype=np.float32)
    outs = {}
    for backend in ("reference", "llvm"):
        out = np.full(16, SENTINEL, np.float32)
        _shifted.with_options(backend=backend)[(1,)](x, out, k, n, BLOCK=16)
        outs[backend] = out
    np.testing.assert_array_equal(outs["llvm"], outs["reference"])
    lanes = (k - np.arange(16, dtype=np.int64) + 2**31) % 2**32 - 2**31   # int32 wrap
    np.testing.assert_array_equal(outs["reference"], np.where(lanes < n, x, SENTINEL))


@npu_kernel
def _by_flags(x_ptr, flags_ptr, out_ptr, BLOCK: nl.constexpr):
    cols = nl.arange(0, BLOCK)
    keep = nl.load(flags_ptr + cols) != 0
    nl.store(out_ptr + cols, nl.load(x_ptr + cols), mask=keep)


def test_the_unmasked_loop_is_written_only_for_a_provable_mask():
    x = np.arange(16, dtype=np.float32)
    out = np.full(16, SENTINEL, np.float32)
    box = _box.with_options(backend="llvm").compile(x, out, 4, 4, 0, BM=4, BN=8).runnable()
    assert "dense" in box.source
    flags = (np.arange(16) % 3 == 0).astype(np.int32)
    run = _by_flags.with_options(backend="llvm")
    run[(1,)](x, flags, out, BLOCK=16)
    np.testing.assert_array_equal(out, np.where(flags != 0, x, SENTINEL))
    assert "dense" not in run.compile(x, flags, out, BLOCK=16).runnable().source


@npu_kernel
def _rows_by_flags(x_ptr, src_ptr, flags_ptr, out_ptr, m, n, BM: nl.constexpr,
                   BN: nl.constexpr):
    """Gathered rows (``src``) read twice (so the load is a stored tile, not read in
    place) and stored in place, both masked by loaded row flags ``&`` an affine column
    test: only the column factor can be proven all-on."""
    rows = nl.program_id(0) * BM + nl.arange(0, BM)
    cols = nl.program_id(1) * BN + nl.arange(0, BN)
    keep = (nl.load(flags_ptr + rows, mask=rows < m, other=0) != 0)[:, None]
    src = nl.load(src_ptr + rows, mask=rows < m, other=0)
    mask = keep & (cols[None, :] < n)
    x = nl.load(x_ptr + src[:, None] * n + cols[None, :], mask=mask, other=-1.0)
    nl.store(out_ptr + rows[:, None] * n + cols[None, :], x * x + x, mask=mask)


@pytest.mark.parametrize("m,n", [(8, 16), (8, 13), (5, 16), (3, 5)])
def test_a_mask_with_one_provable_factor_reads_and_writes_exactly_its_lanes(m, n):
    """Column tiles inside ``n`` take the loops that test the row flags only (the
    gather's second copy; the store's is the copy for a whole mask, as the rows are not
    known); the tail tile (n 13, 5) the fully masked ones."""
    rng = np.random.default_rng(m * 10 + n)
    x = rng.standard_normal(m * n).astype(np.float32)
    src = rng.permutation(m).astype(np.int32)
    flags = (rng.random(m) < 0.6).astype(np.int32)
    flags[0] = 1
    out = np.full(m * n + 8, SENTINEL, np.float32)
    run = _rows_by_flags.with_options(backend="llvm")
    run[(-(-m // 4), -(-n // 8))](x, src, flags, out, m, n, BM=4, BN=8)
    rows = x.reshape(m, n)[src].reshape(-1)
    on = np.repeat(flags != 0, n)
    np.testing.assert_array_equal(out[:m * n], np.where(on, rows * rows + rows, SENTINEL))
    assert (out[m * n:] == SENTINEL).all()
    source = run.compile(x, src, flags, out, m, n, BM=4, BN=8).runnable().source
    assert source.count("dense") >= 2        # the gather's copy and the store's
