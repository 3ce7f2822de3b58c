"""The llvm backend's scans, sort, top-k, gather and user-function ops
(backends/llvm/lower_select.py): cumsum on both axes and ints, sort with NaN, -0.0 and
ties, top-k with ties and NaN, gather and its out-of-range error, ``nl.reduce`` /
``nl.associative_scan`` (forward and reverse) with user combine functions and
``nl.map_elementwise`` (with ``pack``).

Oracles: numpy, and the reference backend run on the same kernel (bit for bit).
"""
from __future__ import annotations

import doctest

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.errors import OutOfBoundsError

M, N = 4, 8
RNG = np.random.default_rng(7)


def _launch(kernel, backend, *args, **consts):
    kernel.with_options(backend=backend)[(1,)](*args, **consts)


def _both(kernel, args, outs, **consts):
    """Run ``kernel`` on llvm and on the reference backend (fresh copies of ``outs``);
    the llvm results, after checking they equal the reference's bit for bit."""
    got = [o.copy() for o in outs]
    want = [o.copy() for o in outs]
    _launch(kernel, "llvm", *args, *got, **consts)
    _launch(kernel, "reference", *args, *want, **consts)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
    return got


def _rows(M, N):
    return nl.arange(0, M)[:, None] * N + nl.arange(0, N)[None, :]


# --- cumsum --------------------------------------------------------------------------------

@npu_kernel
def _cumsums(x_ptr, i_ptr, f_out, i_out, M: nl.constexpr, N: nl.constexpr):
    r = _rows(M, N)
    x = nl.load(x_ptr + r)
    i = nl.load(i_ptr + r)
    nl.store(f_out + r, nl.cumsum(x, axis=0))
    nl.store(f_out + M * N + r, nl.cumsum(x, axis=1))
    nl.store(i_out + r, nl.cumsum(i, axis=1))
    nl.store(i_out + M * N + r, nl.cumsum(i.to(nl.int8), axis=0))     # widens to i32
    nl.store(i_out + 2 * M * N + r, nl.cumsum(i > 0, axis=1))         # bools: i32 counts


def test_cumsum_on_both_axes_and_ints():
    x = RNG.standard_normal((M, N)).astype(np.float32)
    x[0, 0] = -0.0
    i = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    i[:, 0] = 2 ** 31 - 1                                              # wraps in i32
    f, o = _both(_cumsums, [x, i], [np.zeros(2 * M * N, np.float32),
                                    np.zeros(3 * M * N, np.int32)], M=M, N=N)
    np.testing.assert_array_equal(f[:M * N].reshape(M, N), np.cumsum(x, 0, dtype=np.float32))
    np.testing.assert_array_equal(f[M * N:].reshape(M, N), np.cumsum(x, 1, dtype=np.float32))
    assert np.signbit(f[0])                                            # -0.0 stays -0.0
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(o[:M * N].reshape(M, N), np.cumsum(i, 1, dtype=np.int32))
    np.testing.assert_array_equal(o[M * N:2 * M * N].reshape(M, N),
                                  np.cumsum(i.astype(np.int8).astype(np.int32), 0))
    np.testing.assert_array_equal(o[2 * M * N:].reshape(M, N), np.cumsum(i > 0, 1))


# --- sort and topk -------------------------------------------------------------------------

@npu_kernel
def _sorts(x_ptr, i_ptr, f_out, i_out, M: nl.constexpr, N: nl.constexpr):
    r = _rows(M, N)
    x = nl.load(x_ptr + r)
    i = nl.load(i_ptr + r)
    nl.store(f_out + r, nl.sort(x, axis=1))
    nl.store(f_out + M * N + r, nl.sort(x, axis=1, descending=True))
    nl.store(f_out + 2 * M * N + r, nl.sort(x, axis=0))
    nl.store(i_out + r, nl.sort(i, axis=1))
    nl.store(i_out + M * N + r, nl.sort(i, axis=0, descending=True))


def _awkward_floats():
    x = RNG.integers(-3, 4, (M, N)).astype(np.float32)     # many ties
    x[0, :4] = [np.nan, -0.0, 0.0, np.nan]
    x[1, 5] = -np.inf
    x[2, 1:4] = [0.0, -0.0, 0.0]
    x[3] = np.nan
    x[3, 2] = 1.0
    return x


def test_sort_ascending_descending_nan_signed_zero_and_ties():
    x = _awkward_floats()
    i = RNG.integers(-5, 5, (M, N)).astype(np.int32)
    f, o = _both(_sorts, [x, i], [np.zeros(3 * M * N, np.float32),
                                  np.zeros(2 * M * N, np.int32)], M=M, N=N)
    asc = np.sort(x, axis=1, kind="stable")
    # bit for bit: the order of -0.0 and 0.0 is their input order
    np.testing.assert_array_equal(f[:M * N].reshape(M, N).view(np.int32), asc.view(np.int32))
    np.testing.assert_array_equal(f[M * N:2 * M * N].reshape(M, N).view(np.int32),
                                  asc[:, ::-1].view(np.int32))
    np.testing.assert_array_equal(f[2 * M * N:].reshape(M, N).view(np.int32),
                                  np.sort(x, axis=0, kind="stable").view(np.int32))
    np.testing.assert_array_equal(o[:M * N].reshape(M, N), np.sort(i, axis=1))
    np.testing.assert_array_equal(o[M * N:].reshape(M, N), np.sort(i, axis=0)[::-1])


@npu_kernel
def _topks(x_ptr, i_ptr, fv, fi, iv, ii, M: nl.constexpr, N: nl.constexpr,
           K: nl.constexpr):
    r = _rows(M, N)
    rk = _rows(M, K)
    v, j = nl.topk(nl.load(x_ptr + r), K, axis=1)
    nl.store(fv + rk, v)
    nl.store(fi + rk, j)
    w, k = nl.topk(nl.load(i_ptr + r), 2, axis=0)
    c = nl.arange(0, 2)[:, None] * N + nl.arange(0, N)[None, :]
    nl.store(iv + c, w)
    nl.store(ii + c, k)


def _topk_oracle(x, k):
    """Per row, a stable Python sort: NaNs first, then larger values first."""
    idx = np.array([sorted(range(len(row)), key=lambda j: (not np.isnan(row[j]),
                                                          -float(row[j])))[:k]
                    for row in x], np.int32)
    return np.take_along_axis(x, idx, axis=1), idx


def test_topk_with_ties_and_nan():
    x = _awkward_floats()
    x[1, :3] = np.inf
    i = RNG.integers(-2, 3, (M, N)).astype(np.int32)
    K = 5
    fv, fi, iv, ii = _both(_topks, [x, i], [np.zeros(M * K, np.float32),
                                            np.zeros(M * K, np.int32),
                                            np.zeros(2 * N, np.int32),
                                            np.zeros(2 * N, np.int32)], M=M, N=N, K=K)
    want_v, want_i = _topk_oracle(x, K)
    np.testing.assert_array_equal(fi.reshape(M, K), want_i)
    np.testing.assert_array_equal(fv.reshape(M, K), want_v)
    order = np.argsort(-i.astype(np.int64), axis=0, kind="stable")[:2]
    np.testing.assert_array_equal(ii.reshape(2, N), order)
    np.testing.assert_array_equal(iv.reshape(2, N), np.take_along_axis(i, order, axis=0))


# --- gather --------------------------------------------------------------------------------

@npu_kernel
def _gathers(x_ptr, i_ptr, j_ptr, out, out1, M: nl.constexpr, N: nl.constexpr,
             K: nl.constexpr):
    x = nl.load(x_ptr + _rows(M, N))
    idx = nl.load(i_ptr + _rows(M, K))
    nl.store(out + _rows(M, K), nl.gather(x, idx, axis=1))
    jdx = nl.load(j_ptr + nl.arange(0, K))
    nl.store(out1 + nl.arange(0, K), nl.gather(nl.load(x_ptr + nl.arange(0, N)), jdx, axis=0))


def test_gather_along_an_axis_and_an_index_outside_it():
    x = RNG.standard_normal((M, N)).astype(np.float32)
    K = 5
    idx = RNG.integers(0, N, (M, K)).astype(np.int32)
    jdx = RNG.integers(0, N, K).astype(np.int32)
    out, out1 = _both(_gathers, [x, idx, jdx], [np.zeros(M * K, np.float32),
                                                np.zeros(K, np.float32)], M=M, N=N, K=K)
    np.testing.assert_array_equal(out.reshape(M, K), np.take_along_axis(x, idx, axis=1))
    np.testing.assert_array_equal(out1, x[0][jdx])
    for bad in (N, -1):
        idx2 = idx.copy()
        idx2[2, 3] = bad
        idx2[3, 0] = N + 5                       # a later bad lane: the first one is named
        with pytest.raises(OutOfBoundsError, match=(
                rf"kernel '_gathers', npu.gather at .*test_llvm_select.py:\d+, program "
                rf"\(0, 0, 0\): gather index {bad} at lane \(2, 3\) is outside \[0, {N}\) "
                r"on axis 1 of the source tile")) as got:
            _launch(_gathers, "llvm", x, idx2, jdx, out, out1, M=M, N=N, K=K)
        with pytest.raises(OutOfBoundsError) as want:
            _launch(_gathers, "reference", x, idx2, jdx, out, out1, M=M, N=N, K=K)
        assert str(got.value) == str(want.value)
    jdx[1] = 99
    with pytest.raises(OutOfBoundsError, match=rf"gather index 99 at lane \(1,\) is "
                                               rf"outside \[0, {N}\) on axis 0"):
        _launch(_gathers, "llvm", x, idx, jdx, out, out1, M=M, N=N, K=K)


# --- user combine functions ------------------------------------------------------------------

@nl.inline
def _max_with_index(v0, i0, v1, i1):
    gt = v0 >= v1                  # ties keep the earlier (accumulated) index
    return nl.where(gt, v0, v1), nl.where(gt, i0, i1)


@nl.inline
def _mul(a, b):
    return a * b


@nl.inline
def _first(a, b):                  # associative, not commutative
    return a


@nl.inline
def _clamped_add(a, b):            # branches on the scalars
    s = a + b
    if s > 10:
        s = 10
    return s


@npu_kernel
def _combines(x_ptr, i_ptr, f_out, i_out, M: nl.constexpr, N: nl.constexpr):
    r = _rows(M, N)
    x = nl.load(x_ptr + r)
    i = nl.load(i_ptr + r)
    idx = nl.broadcast_to(nl.arange(0, N)[None, :], (M, N))
    best, at = nl.reduce((x, idx), 1, _max_with_index)
    nl.store(f_out + nl.arange(0, M), best)
    nl.store(i_out + nl.arange(0, M), at)
    nl.store(f_out + M + nl.arange(0, N), nl.reduce(x, 0, _mul))
    nl.store(f_out + M + N + r, nl.associative_scan(x, 1, _mul))
    nl.store(f_out + M + N + M * N + r, nl.associative_scan(x, 1, _first, reverse=True))
    nl.store(f_out + M + N + 2 * M * N + r, nl.associative_scan(x, 0, _mul, reverse=True))
    nl.store(i_out + M + r, nl.associative_scan(i, 1, _clamped_add))
    nl.store(i_out + M + M * N + nl.arange(0, 1), nl.reduce(i, None, _clamped_add,
                                                            keep_dims=True).reshape(1))
    nl.store(i_out + M + M * N + 1 + r, nl.cumsum(i, axis=1, reverse=True))


def test_reduce_and_associative_scan_with_user_combine_functions():
    x = RNG.integers(-2, 3, (M, N)).astype(np.float32) + 0.5
    x[1, 2] = x[1, 6] = 9.0                                     # a tie for the max
    i = RNG.integers(-3, 5, (M, N)).astype(np.int32)
    f, o = _both(_combines, [x, i], [np.zeros(M + N + 3 * M * N, np.float32),
                                     np.zeros(M + 2 * M * N + 1, np.int32)], M=M, N=N)
    np.testing.assert_array_equal(f[:M], x.max(1))
    np.testing.assert_array_equal(o[:M], x.argmax(1))          # the first of a tie
    assert o[1] == 2
    np.testing.assert_array_equal(f[M:M + N], np.prod(x, 0, dtype=np.float32))
    s = f[M + N:].reshape(3, M, N)
    np.testing.assert_array_equal(s[0], np.cumprod(x, 1, dtype=np.float32))
    np.testing.assert_array_equal(s[1], np.repeat(x[:, -1:], N, axis=1))
    np.testing.assert_array_equal(s[2], np.flip(np.cumprod(np.flip(x, 0), 0), 0))
    clamped = np.empty_like(i)
    for r in range(M):
        acc = None
        for c in range(N):
            acc = i[r, c] if acc is None else min(acc + i[r, c], 10)
            clamped[r, c] = acc
    np.testing.assert_array_equal(o[M:M + M * N].reshape(M, N), clamped)
    acc = None
    for v in i.reshape(-1):
        acc = v if acc is None else min(acc + v, 10)
    assert o[M + M * N] == acc
    np.testing.assert_array_equal(o[M + M * N + 1:].reshape(M, N),
                                  np.flip(np.cumsum(np.flip(i, 1), 1), 1))


# --- map_elementwise ---------------------------------------------------------------------------

@nl.inline
def _ratio(a, b):
    if b == 0:
        return 0.0
    return nl.minimum(a / b, 1.0)


@nl.inline
def _swap_pairs(a0, a1):           # pack=2: two consecutive elements in, two out
    return a1, a0


@npu_kernel
def _maps(x_ptr, y_ptr, out, M: nl.constexpr, N: nl.constexpr):
    r = _rows(M, N)
    x = nl.load(x_ptr + r)
    y = nl.load(y_ptr + r)
    nl.store(out + r, nl.map_elementwise(_ratio, x, y))
    col = nl.load(y_ptr + nl.arange(0, M) * N)[:, None]          # broadcast along rows
    nl.store(out + M * N + r, nl.map_elementwise(_ratio, x, col))
    nl.store(out + 2 * M * N + r, nl.map_elementwise(_swap_pairs, x, pack=2))
    nl.store(out + 3 * M * N + r, nl.map_elementwise(_ratio, nl.trans(nl.trans(x) * 2.0), y))


def test_map_elementwise_with_branches_broadcast_and_pack():
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = RNG.integers(-2, 3, (M, N)).astype(np.float32)
    (o,) = _both(_maps, [x, y], [np.zeros(4 * M * N, np.float32)], M=M, N=N)

    def ratio(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(b == 0, 0.0, np.minimum(a / b, 1.0)).astype(np.float32)

    o = o.reshape(4, M, N)
    np.testing.assert_array_equal(o[0], ratio(x, y))
    np.testing.assert_array_equal(o[1], ratio(x, np.repeat(y[:, :1], N, axis=1)))
    np.testing.assert_array_equal(o[2].reshape(-1), x.reshape(-1, 2)[:, ::-1].reshape(-1))
    np.testing.assert_array_equal(o[3], ratio(x * 2.0, y))


def test_module_example():
    import npujit.backends.llvm.lower_select as mod
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
