"""Block loads and stores (``make_block_ptr``) on the llvm backend: the part of the block
inside its tensor is copied with no per-element test and the rest padded
(backends/llvm/lower_memory.py ``_valid_box``); the GM check looks at that part's
corners.  Oracle: the reference backend on the same kernel and inputs.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.errors import OutOfBoundsError


@npu_kernel
def _tile_copy(x_ptr, out_ptr, M, N, sm, sn, r0, c0, BM: nl.constexpr, BN: nl.constexpr,
               CHECK: nl.constexpr, PAD: nl.constexpr):
    src = nl.make_block_ptr(x_ptr, shape=(M, N), strides=(sm, sn), offsets=(r0, c0),
                            block_shape=(BM, BN))
    if CHECK == 2:
        t = nl.load(src, boundary_check=(0, 1), padding_option=PAD)
    elif CHECK == 1:
        t = nl.load(src, boundary_check=(1,), padding_option=PAD)
    else:
        t = nl.load(src)
    dst = nl.make_block_ptr(out_ptr, shape=(M, N), strides=(N, 1), offsets=(r0, c0),
                            block_shape=(BM, BN))
    nl.store(dst, t + 1.0, boundary_check=(0, 1))
    whole = nl.make_block_ptr(out_ptr, shape=(BM, BN), strides=(BN, 1),
                              offsets=(0, 0), block_shape=(BM, BN))
    nl.store(nl.advance(whole, (0, 0)), t * 0.0 + t, boundary_check=())


def _both(m, n, strides, r0, c0, check, pad, transposed=False):
    rng = np.random.default_rng(m * 31 + n)
    x = rng.standard_normal(m * n).astype(np.float32)
    outs = {}
    for backend in ("reference", "llvm"):
        out = np.full(max(m * n, 4 * 8), -7.0, np.float32)
        _tile_copy.with_options(backend=backend)[(1,)](
            x, out, m, n, *strides, r0, c0, BM=4, BN=8, CHECK=check, PAD=pad)
        outs[backend] = out
    return outs


@pytest.mark.parametrize("m,n,r0,c0", [(4, 8, 0, 0), (6, 10, 2, 2), (3, 5, 0, 0),
                                       (6, 10, -2, -3), (6, 10, 5, 9), (6, 10, 7, 0),
                                       (6, 10, -4, 0)])
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_a_checked_block_pads_outside_and_copies_inside(m, n, r0, c0, pad):
    outs = _both(m, n, (n, 1), r0, c0, 2, pad)
    np.testing.assert_array_equal(outs["llvm"], outs["reference"])


def test_a_transposed_view_and_one_checked_axis():
    """Strides (1, M) read the array as its transpose; only the column axis checked, so
    the rows must stay inside (they do)."""
    m, n = 8, 6
    outs = _both(m, n, (1, m), 2, 3, 1, "zero")
    np.testing.assert_array_equal(outs["llvm"], outs["reference"])


@npu_kernel
def _strided_copy(x_ptr, out_ptr, M, N, sxm, sxn, som, son, BM: nl.constexpr,
                  BN: nl.constexpr):
    pm, pn = nl.program_id(0) * BM, nl.program_id(1) * BN
    src = nl.make_block_ptr(x_ptr, shape=(M, N), strides=(sxm, sxn), offsets=(pm, pn),
                            block_shape=(BM, BN))
    dst = nl.make_block_ptr(out_ptr, shape=(M, N), strides=(som, son), offsets=(pm, pn),
                            block_shape=(BM, BN))
    nl.store(dst, nl.load(src, boundary_check=(0, 1)) * 2.0, boundary_check=(0, 1))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("x_step,out_order", [(1, "C"), (2, "C"), (1, "F"), (3, "F")])
def test_block_copies_with_run_time_strides_of_one_and_more(dtype, x_step, out_order):
    """The innermost GM stride is a launch argument: 1 takes the contiguous copy loop
    (lower_memory._copy_box), anything else the strided one; both read and write exactly
    numpy's elements, ragged blocks included."""
    m, n = 7, 19
    rng = np.random.default_rng(x_step)
    base = rng.standard_normal((m, n * x_step)).astype(dtype)
    x = base[:, ::x_step]                          # a strided view when x_step > 1
    out = np.zeros((m, n), dtype, order=out_order)
    so = [st // out.itemsize for st in out.strides]
    _strided_copy.with_options(backend="llvm")[(-(-m // 4), -(-n // 8))](
        base, out, m, n, n * x_step, x_step, so[0], so[1], BM=4, BN=8)
    np.testing.assert_array_equal(out, (x.astype(np.float32) * 2).astype(dtype))


def test_an_unchecked_block_past_the_end_is_an_error_naming_the_argument():
    x = np.zeros(4 * 8, np.float32)
    out = np.zeros(4 * 8, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"block addresses span \[8, 39\], outside "
                                               r"\[0, 32\) of argument 'x_ptr'"):
        _tile_copy.with_options(backend="llvm")[(1,)](
            x, out, 4, 8, 8, 1, 1, 0, BM=4, BN=8, CHECK=0, PAD="zero")


@npu_kernel
def _dot_nt(x_ptr, w_ptr, out_ptr, M, N, K, BM: nl.constexpr, BN: nl.constexpr,
            BK: nl.constexpr, CHECK: nl.constexpr, OVERWRITE: nl.constexpr):
    """out = x @ w.T with w [N, K] read through a transposed block pointer, as the MoE
    experts read their weights; ``OVERWRITE`` stores into w between the block's load and
    the dot that reads it."""
    rows = nl.program_id(0) * BM + nl.arange(0, BM)
    cols = nl.program_id(1) * BN + nl.arange(0, BN)
    acc = nl.zeros((BM, BN), dtype=nl.float32)
    blk = nl.make_block_ptr(w_ptr, shape=(K, N), strides=(1, K),
                            offsets=(0, nl.program_id(1) * BN), block_shape=(BK, BN))
    for k in nl.range(0, K, BK):
        ks = k + nl.arange(0, BK)
        xt = nl.load(x_ptr + rows[:, None] * K + ks[None, :],
                     mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        if CHECK:
            wt = nl.load(blk, boundary_check=(0, 1))
        else:
            wt = nl.load(blk)
        if OVERWRITE:
            nl.store(w_ptr + cols * K + k, nl.zeros((BN,), dtype=nl.float32) + 100.0,
                     mask=cols < N)
        acc = nl.dot(xt, wt, acc)
        blk = nl.advance(blk, (BK, 0))
    nl.store(out_ptr + rows[:, None] * N + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


@pytest.mark.parametrize("n,k,check", [(32, 64, False), (40, 72, True), (16, 8, True)],
                         ids=["whole", "ragged", "one-k-step"])
def test_a_dot_reads_a_transposed_weight_block_where_it_lies(n, k, check):
    """Whole blocks are read in GM by the dot (no copy: lower_memory._read_in_place), a
    block that leaves the weight is padded and copied; both against numpy."""
    rng = np.random.default_rng(n + k)
    m = 12
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    kern = _dot_nt.with_options(backend="llvm")
    meta = dict(BM=8, BN=16, BK=8 if k == 8 else 32, CHECK=check, OVERWRITE=False)
    kern[(2, -(-n // 16))](x, w, out, m, n, k, **meta)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-5)
    llir = kern.inspect(x, w, out, m, n, k, **meta)["backend"]     # the LLVM IR made
    assert re.search(r"= select i1 %\S+, ptr %\S+, ptr %", llir) or not check, \
        "a checked block picks GM or its padded copy at run time"


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_a_store_between_a_block_load_and_its_dot_does_not_change_what_the_dot_reads(
        backend):
    """The block's values are those at its load: a store into the weight between the
    load and the dot keeps the block from being read in place."""
    rng = np.random.default_rng(5)
    m, n, k = 8, 16, 32
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    want = x @ w.T
    out = np.zeros((m, n), np.float32)
    _dot_nt.with_options(backend=backend)[(1, 1)](
        x, w, out, m, n, k, BM=8, BN=16, BK=32, CHECK=False, OVERWRITE=True)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert (w[:, 0] == 100.0).all()          # the store happened


@npu_kernel
def _panel_rows(src_ptr, out_ptr, R, PANEL: nl.constexpr, BM: nl.constexpr,
                BK: nl.constexpr):
    """Rows of a panel-major workspace (column c of row r at (c // P) * R * P + r * P +
    c % P, as the MoE down kernel reads its activations)."""
    rows = nl.arange(0, BM)
    cols = nl.program_id(0) * BK + nl.arange(0, BK)
    a = nl.load(src_ptr + ((cols // PANEL) * (R * PANEL) + cols % PANEL)[None, :]
                + rows[:, None] * PANEL)
    nl.store(out_ptr + rows[:, None] * (BK * 2) + cols[None, :], a)


def test_a_costly_value_read_through_a_broadcast_is_computed_once_per_element():
    """The panel offsets (a division and a remainder per column) are stored once, not
    recomputed for every row that reads them through the broadcast
    (lower_tile._read_broadcast); the gathered rows match numpy."""
    from npujit.backends.llvm.lower_tile import _lazy_ok, _read_broadcast
    R, P, BM, BK = 8, 4, 8, 16
    src = np.arange(R * BK * 2, dtype=np.float32)
    out = np.zeros((BM, BK * 2), np.float32)
    k = _panel_rows.with_options(backend="llvm")
    k[(2,)](src, out, R, PANEL=P, BM=BM, BK=BK)
    c, r = np.arange(BK * 2)[None, :], np.arange(BM)[:, None]
    np.testing.assert_array_equal(out, src[(c // P) * R * P + r * P + c % P])
    fn = k.compile(src, out, R, PANEL=P, BM=BM, BK=BK).ir
    costly = [op for op in fn.walk() if op.kind.value == "npu.fused"
              and any(o.kind.value == "npu.idiv" for o in op.regions[0].ops)]
    assert costly and all(_read_broadcast(op.results[1] if len(op.results) > 1
                                          else op.result) for op in costly)
    assert not any(_lazy_ok(None, op, list(op.regions[0].ops), {}) for op in costly)


@npu_kernel
def _dot_blocks_both(x_ptr, w_ptr, out_ptr, M, N, K, BM: nl.constexpr, BN: nl.constexpr,
                     BK: nl.constexpr):
    """out = x @ w.T with both operands block pointers: x's rows along k, w transposed."""
    xb = nl.make_block_ptr(x_ptr, shape=(M, K), strides=(K, 1),
                           offsets=(nl.program_id(0) * BM, 0), block_shape=(BM, BK))
    wb = nl.make_block_ptr(w_ptr, shape=(K, N), strides=(1, K),
                           offsets=(0, nl.program_id(1) * BN), block_shape=(BK, BN))
    acc = nl.zeros((BM, BN), dtype=nl.float32)
    for k in nl.range(0, K, BK):
        acc = nl.dot(nl.load(xb, boundary_check=(0, 1)), nl.load(wb, boundary_check=(0, 1)),
                     acc)
        xb = nl.advance(xb, (0, BK))
        wb = nl.advance(wb, (BK, 0))
    ob = nl.make_block_ptr(out_ptr, shape=(M, N), strides=(N, 1),
                           offsets=(nl.program_id(0) * BM, nl.program_id(1) * BN),
                           block_shape=(BM, BN))
    nl.store(ob, acc, boundary_check=(0, 1))


@pytest.mark.parametrize("m,n,k", [(16, 32, 64), (13, 40, 72)], ids=["whole", "ragged"])
def test_a_dot_reads_both_operand_blocks_where_they_lie(m, n, k):
    """x's row block and w's transposed block are both read in GM by the dot when whole
    (each picks GM or its padded copy at run time when checked); against numpy."""
    rng = np.random.default_rng(m + n + k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    kern = _dot_blocks_both.with_options(backend="llvm")
    meta = dict(BM=8, BN=16, BK=32)
    kern[(-(-m // 8), -(-n // 16))](x, w, out, m, n, k, **meta)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-5)
    ir = kern.inspect(x, w, out, m, n, k, **meta)["backend"]
    assert len(re.findall(r"= select i1 %\S+, ptr %\S+, ptr %", ir)) >= 2


@npu_kernel
def _scores(x_ptr, w_ptr, out_ptr, M, N, K, BM: nl.constexpr, BN: nl.constexpr,
            BK: nl.constexpr):
    """out[:, :BN] = x @ w.T with w [N, K] in a BN-wide block (N <= BN: the MoE router's
    experts), every column of the block stored, the padding's too."""
    rows = nl.program_id(0) * BM + nl.arange(0, BM)
    acc = nl.zeros((BM, BN), dtype=nl.float32)
    xb = nl.make_block_ptr(x_ptr, shape=(M, K), strides=(K, 1), offsets=(nl.program_id(0) * BM, 0),
                           block_shape=(BM, BK))
    wb = nl.make_block_ptr(w_ptr, shape=(K, N), strides=(1, K), offsets=(0, 0),
                           block_shape=(BK, BN))
    for k in nl.range(0, K, BK):
        acc = nl.dot(nl.load(xb, boundary_check=(0, 1)), nl.load(wb, boundary_check=(0, 1)),
                     acc)
        xb = nl.advance(xb, (0, BK))
        wb = nl.advance(wb, (BK, 0))
    nl.store(out_ptr + rows[:, None] * BN + nl.arange(0, BN)[None, :], acc,
             mask=rows[:, None] < M)


@pytest.mark.parametrize("n,k", [(8, 64), (5, 64), (16, 64), (8, 40)],
                         ids=["router", "odd", "whole", "ragged-k"])
def test_a_dots_zero_padding_columns_are_the_padded_product(n, k):
    """A 16-wide weight block over ``n`` rows, read in place where whole and padded
    where not (lower_memory._read_in_place): each padding column of the product is the
    row's ``sum(a * 0)``, 0, or NaN in a row with an inf or a NaN.  The padding columns
    bit for bit against the reference interpreter, the rest within f32 summation order
    (docs/semantics.md: a dot sums in no fixed order) and against numpy."""
    rng = np.random.default_rng(n * 100 + k)
    m, bn = 10, 16
    x = rng.standard_normal((m, k)).astype(np.float32)
    x[3, 5], x[7, 0] = np.inf, np.nan
    w = rng.standard_normal((n, k)).astype(np.float32)
    outs = {}
    for backend in ("reference", "llvm"):
        out = np.full((m, bn), -1.0, np.float32)
        _scores.with_options(backend=backend)[(-(-m // 4),)](x, w, out, m, n, k, BM=4, BN=bn,
                                                            BK=8)
        outs[backend] = out
    np.testing.assert_array_equal(outs["llvm"][:, n:], outs["reference"][:, n:])
    np.testing.assert_allclose(outs["llvm"], outs["reference"], rtol=1e-5, atol=1e-5)
    good = np.isfinite(x).all(axis=1)
    want = np.zeros((m, bn), np.float32)
    want[:, :n] = x @ w.T
    np.testing.assert_allclose(outs["llvm"][good], want[good], rtol=1e-5, atol=1e-5)
    assert np.isnan(outs["llvm"][~good][:, n:]).all()          # inf * 0, nan * 0
    assert not np.isfinite(outs["llvm"][~good][:, :n]).any()


@npu_kernel
def _binary_search(sorted_ptr, n_sorted, q_ptr, out_ptr, nq, STEPS: nl.constexpr,
                   BLOCK: nl.constexpr):
    """A per-lane binary search unrolled while tracing: ``lo`` and ``hi`` are each built
    from the last step's two, and every step gathers at ``mid``."""
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    m = offs < nq
    q = nl.load(q_ptr + offs, mask=m, other=0.0)
    lo = nl.zeros((BLOCK,), nl.int32)
    hi = nl.zeros((BLOCK,), nl.int32) + n_sorted
    for _ in nl.static_range(STEPS):
        active = lo < hi
        mid = (lo + hi) // 2
        right = active & (nl.load(sorted_ptr + mid, mask=active & m, other=0.0) < q)
        lo = nl.where(right, mid + 1, lo)
        hi = nl.where(active & ~right, mid, hi)
    nl.store(out_ptr + offs, lo, mask=m)


def test_an_unrolled_chain_of_lazy_values_compiles_to_code_linear_in_its_length():
    """Values read twice (or read together with another built on the same ones) are
    stored once their work passes lower_tile.RECOMPUTE_LIMIT / LAZY_LIMIT: the generated
    module grows by a step's worth per step, not doubling (6 steps took 10 s before)."""
    rng = np.random.default_rng(7)
    srt = np.sort(rng.standard_normal(200)).astype(np.float32)
    qs = np.concatenate([rng.standard_normal(60), srt[:5], [-10, 10]]).astype(np.float32)
    k = _binary_search.with_options(backend="llvm")
    sizes = {}
    for steps in (4, 6, 9):
        out = np.zeros(qs.size, np.int32)
        k[(2,)](srt, srt.size, qs, out, qs.size, STEPS=steps, BLOCK=64)
        want = np.searchsorted(srt, qs) if 2 ** steps > srt.size else None
        if want is not None:
            np.testing.assert_array_equal(out, want)
        sizes[steps] = len(k.compile(srt, srt.size, qs, out, qs.size, STEPS=steps,
                                     BLOCK=64).artifact("backend"))
    assert sizes[6] < 1.8 * sizes[4] and sizes[9] < 1.8 * sizes[6], sizes
