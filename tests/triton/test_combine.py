"""tl.reduce / tl.associative_scan with a user combine function, and what is built on
them (cumprod, xor_sum, cumsum(reverse=True)), against numpy and plain Python loops.

One batched kernel runs on the reference tier and on numba (the two must agree with the
oracle and so with each other); the IR round-trips through the printer and the parser,
and the simulator costs it."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.errors import CompilationError
from npujit.ir.parser import parse_function
from npujit.ir.printer import print_function

M, N = 4, 8


@triton.jit
def _first(a, b):          # associative, not commutative
    return a


@triton.jit
def _cummax(v0, i0, v1, i1):
    gt = v0 > v1
    return tl.where(gt, v0, v1), tl.where(gt, i0, i1)


@triton.jit
def _affine(a1, b1, a2, b2):   # x_i = a_i * x_{i-1} + b_i, composed
    return a1 * a2, b1 * a2 + b2


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _combine_kernel(x_ptr, y_ptr, h_ptr, f_ptr, i_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows)                                   # f32 (M, N)
    y = tl.load(y_ptr + rows)
    h = tl.load(h_ptr + rows)                                   # f16 (M, N)
    mn = M * N
    tl.store(f_ptr + rows, tl.associative_scan(x, 1, _first, reverse=True))
    _, lin = tl.associative_scan((x, y), 1, _affine)
    tl.store(f_ptr + mn + rows, lin)
    tl.store(f_ptr + 2 * mn + rows, tl.cumprod(x, axis=0, reverse=True))
    tl.store(f_ptr + 3 * mn + rows, tl.cumsum(h, axis=1, reverse=True).to(tl.float32))
    tl.store(f_ptr + 4 * mn + tl.arange(0, M), tl.reduce(x, 1, _add))
    s = tl.reduce((x, y), None, _affine, keep_dims=True)[1]     # all axes, kept as (1, 1)
    tl.store(f_ptr + 4 * mn + M + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :], s)
    xi = x.to(tl.int32)
    idx = tl.broadcast_to(tl.arange(0, N)[None, :], (M, N))
    _, arg = tl.associative_scan((xi, idx), 1, _cummax)
    tl.store(i_ptr + rows, arg)
    tl.store(i_ptr + mn + tl.arange(0, N), tl.xor_sum(xi, 0))
    tl.store(i_ptr + mn + N + tl.arange(0, N), tl.xor_sum(xi > 0, 0).to(tl.int32))
    tl.store(i_ptr + mn + 2 * N + rows, tl.cumsum(xi.to(tl.int8), 0, reverse=True))


def _affine_scan(a, b):
    out, acc = np.empty_like(a), None
    for i in range(a.shape[-1]):   # plain sequential recurrence, row by row
        acc = b[:, i] if acc is None else a[:, i] * acc + b[:, i]
        out[:, i] = acc
    return out


def _latest_argmax(row):
    best, out = 0, []
    for j, v in enumerate(row):
        best = best if row[best] > v else j
        out.append(best)
    return out


def test_combine_functions_compute_what_numpy_does(backend="reference"):
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 4, (M, N)).astype(np.float32)
    y = rng.integers(-2, 3, (M, N)).astype(np.float32)
    h = rng.standard_normal((M, N)).astype(np.float16)
    f = np.zeros(4 * M * N + M + 1, np.float32)
    i = np.zeros(2 * M * N + 2 * N, np.int32)
    _combine_kernel.with_options(backend=backend)[(1,)](x, y, h, f, i, M=M, N=N)
    mn = M * N
    np.testing.assert_array_equal(f[:mn].reshape(M, N), np.repeat(x[:, -1:], N, axis=1))
    np.testing.assert_array_equal(f[mn:2 * mn].reshape(M, N), _affine_scan(x, y))
    np.testing.assert_array_equal(f[2 * mn:3 * mn].reshape(M, N),
                                  np.flip(np.cumprod(np.flip(x, 0), 0), 0))
    want = np.flip(np.cumsum(np.flip(h.astype(np.float32), 1), 1), 1).astype(np.float16)
    np.testing.assert_array_equal(f[3 * mn:4 * mn].reshape(M, N), want.astype(np.float32))
    np.testing.assert_array_equal(f[4 * mn:4 * mn + M], x.sum(1))
    flat = _affine_scan(x.reshape(1, -1), y.reshape(1, -1))[0, -1]
    assert f[-1] == flat
    xi = x.astype(np.int32)
    np.testing.assert_array_equal(i[:mn].reshape(M, N), [_latest_argmax(r) for r in xi])
    np.testing.assert_array_equal(i[mn:mn + N], np.bitwise_xor.reduce(xi, 0))
    np.testing.assert_array_equal(i[mn + N:mn + 2 * N], np.logical_xor.reduce(xi > 0, 0))
    np.testing.assert_array_equal(i[mn + 2 * N:].reshape(M, N), np.flip(np.cumsum(np.flip(xi, 0), 0), 0))


@triton.jit
def _combine_numba(x_ptr, y_ptr, f_ptr, i_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows)
    y = tl.load(y_ptr + rows)
    _, lin = tl.associative_scan((x, y), 1, _affine, reverse=True)
    tl.store(f_ptr + rows, lin)
    tl.store(f_ptr + M * N, tl.reduce((x, y), None, _affine)[1])    # one scalar
    xi = x.to(tl.int32)
    idx = tl.broadcast_to(tl.arange(0, M)[:, None], (M, N))
    _, arg = tl.associative_scan((xi, idx), 0, _cummax)
    tl.store(i_ptr + rows, arg)
    tl.store(i_ptr + M * N + tl.arange(0, N), tl.xor_sum(xi > 0, 0).to(tl.int32))


def test_combine_regions_lower_on_every_tier(backend):
    """The region's scalar code inside the axis loop (numba) against the interpreter's
    element-by-element run and numpy: tuples, reverse, a scalar result, ints and bools."""
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (M, N)).astype(np.float32)
    y = rng.integers(-2, 3, (M, N)).astype(np.float32)
    f = np.zeros(M * N + 1, np.float32)
    i = np.zeros(M * N + N, np.int32)
    _combine_numba.with_options(backend=backend)[(1,)](x, y, f, i, M=M, N=N)
    flip = lambda a: np.flip(a, 1)  # noqa: E731
    np.testing.assert_array_equal(f[:M * N].reshape(M, N), flip(_affine_scan(flip(x), flip(y))))
    assert f[-1] == _affine_scan(x.reshape(1, -1), y.reshape(1, -1))[0, -1]
    xi = x.astype(np.int32)
    np.testing.assert_array_equal(i[:M * N].reshape(M, N), np.transpose(
        [_latest_argmax(c) for c in xi.T]))
    np.testing.assert_array_equal(i[M * N:], np.logical_xor.reduce(xi > 0, 0))


def test_combine_ops_round_trip_and_simulate():
    x = np.zeros((M, N), np.float32)
    f = np.zeros(4 * M * N + M + 1, np.float32)
    i = np.zeros(2 * M * N + 2 * N, np.int32)
    k = _combine_kernel.with_options(backend="reference")
    text = k.compile(x, x, x.astype(np.float16), f, i, M=M, N=N).asm["schedule"]
    assert '"npu.scan_combine"' in text and '"npu.reduce_combine"' in text
    assert print_function(parse_function(text)) == text
    report = k.simulate(x, x, x.astype(np.float16), f, i, M=M, N=N, grid=(1,))
    assert report.cycles > 0


@triton.jit
def _bad_combine(x_ptr, WHAT: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    if WHAT == 0:
        tl.store(x_ptr + tl.arange(0, 8), tl.associative_scan((x, x), 0, _add))
    else:
        tl.store(x_ptr, tl.reduce(x, 0, 3))


@pytest.mark.parametrize("what, message", [
    (0, "combine function must take 4 arguments"),
    (1, "combine_fn must be a function"),
])
def test_bad_combine_functions_name_the_problem(what, message):
    with pytest.raises(CompilationError, match=message):
        _bad_combine.with_options(backend="reference")[(1,)](np.zeros(8, np.float32), WHAT=what)


@triton.jit
def _sign_of_difference(x, y):         # branches on the scalars
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def _magnitude(x):                      # an early return, then the fall-through
    if x < 0:
        return -x
    return x


@triton.jit
def _divmod_pairs(a0, a1, b0, b1):     # pack=2: two elements of each tile
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def _mapped(x_ptr, y_ptr, s_ptr, q_ptr, r_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(s_ptr + offs, tl.map_elementwise(_sign_of_difference, x, y) * 100 +
             tl.map_elementwise(_magnitude, x))
    q, r = tl.map_elementwise(_divmod_pairs, x, y, pack=2)
    tl.store(q_ptr + offs, q)
    tl.store(r_ptr + offs, r)


def test_map_elementwise_runs_a_branching_scalar_function_on_each_element(backend):
    rng = np.random.default_rng(8)
    x = rng.integers(-20, 20, 32).astype(np.int32)
    y = rng.integers(1, 20, 32).astype(np.int32)
    y[::5] = x[::5].clip(1)                              # some equal pairs
    s, q, r = (np.zeros(32, np.int32) for _ in range(3))
    k = _mapped.with_options(backend=backend)
    k[(1,)](x, y, s, q, r, N=32)
    np.testing.assert_array_equal(s, np.sign(x - y) * 100 + np.abs(x))
    np.testing.assert_array_equal(q, np.trunc(x / y).astype(np.int32))   # C division
    np.testing.assert_array_equal(r, np.fmod(x, y))
    ir = k.warmup(x, y, s, q, r, N=32, grid=(1,)).asm["ir"]
    assert print_function(parse_function(ir)) == ir        # the region round-trips
    if backend == "reference":
        assert k.simulate(x, y, s, q, r, N=32, grid=(1,)).cycles > 0


@triton.jit
def _bad_pack(x_ptr, N: tl.constexpr, P: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(x_ptr + tl.arange(0, N), tl.map_elementwise(_first, x, x, pack=P))


def test_map_elementwise_says_what_pack_and_arity_must_be():
    x = np.zeros(6, np.float32)
    with pytest.raises(CompilationError, match=r"pack must be a positive int dividing the 6 "
                                               r"elements, got 4"):
        _bad_pack.with_options(backend="reference")[(1,)](x, N=6, P=4)
    with pytest.raises(CompilationError, match=r"the function must take 4 arguments \(2 "
                                               r"element\(s\) of each of the 2 tiles\)"):
        _bad_pack.with_options(backend="reference")[(1,)](x, N=6, P=2)
