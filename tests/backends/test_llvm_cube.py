"""The llvm backend's ``npu.dot`` (backends/llvm/lower_cube.py) and ``npu.atomic_rmw``
(backends/llvm/lower_atomic.py), on kernels in the user language.

Oracles: numpy -- f32 products against an f64 matmul within f32 rounding, i8 against an
exact int64 matmul wrapped to i32 -- and, for the atomics, a serial numpy loop that
applies the lanes one at a time in program then row-major order (what the reference's
``memory.atomic_add`` does), compared exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.errors import OutOfBoundsError


def _llvm(kernel):
    return kernel.with_options(backend="llvm")


def _close_f32(got, a, b, acc=None):
    """``got`` is ``acc + a @ b`` up to f32 rounding in any summation order."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    if acc is not None:
        want = want + acc
        scale = scale + np.abs(acc)
    k = a.shape[-1]
    assert got.dtype == np.float32
    assert (np.abs(got - want) <= (k + 2) * 2.0 ** -24 * scale + 1e-30).all()


# --- dot ---------------------------------------------------------------------------------

@npu_kernel
def _tiled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: nl.constexpr, BN: nl.constexpr,
                  BK: nl.constexpr):
    """C = A @ B, one BM x BN tile per program, K in BK steps, masked edges."""
    rm = nl.program_id(0) * BM + nl.arange(0, BM)
    rn = nl.program_id(1) * BN + nl.arange(0, BN)
    acc = nl.zeros((BM, BN), nl.float32)
    for k0 in nl.range(0, K, BK):
        rk = k0 + nl.arange(0, BK)
        a = nl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = nl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = nl.dot(a, b, acc)
    nl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_a_tiled_f32_matmul_with_a_k_loop_matches_numpy():
    rng = np.random.default_rng(0)
    M, N, K = 37, 45, 53
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.full(M * N, np.nan, np.float32)
    _llvm(_tiled_matmul)[(3, 3)](a.reshape(-1), b.reshape(-1), c, M, N, K, BM=16, BN=16, BK=8)
    _close_f32(c.reshape(M, N), a, b)


@npu_kernel
def _dot_shapes(a_ptr, b_ptr, acc_ptr, c_ptr, M: nl.constexpr, K: nl.constexpr,
                N: nl.constexpr, ACC: nl.constexpr):
    """One M x K @ K x N dot of whole tiles (``+ acc`` when ACC)."""
    rm, rk, rn = nl.arange(0, M), nl.arange(0, K), nl.arange(0, N)
    a = nl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = nl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        c = nl.dot(a, b, nl.load(acc_ptr + rm[:, None] * N + rn[None, :]))
    else:
        c = nl.dot(a, b)
    nl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (2, 8, 4), (8, 2, 16), (16, 16, 1),
                                   (4, 32, 8), (1, 64, 2)])
def test_dot_of_every_remainder_of_its_row_and_k_blocks(m, k, n):
    """The lowering takes rows and k steps four at a time: shapes below four and not
    multiples of four on each axis, with and without ``acc``."""
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    acc = rng.standard_normal((m, n)).astype(np.float32)
    for with_acc in (False, True):
        c = np.full(m * n, np.nan, np.float32)
        _llvm(_dot_shapes)[(1,)](a.reshape(-1), b.reshape(-1), acc.reshape(-1), c,
                                 M=m, K=k, N=n, ACC=with_acc)
        _close_f32(c.reshape(m, n), a, b, acc if with_acc else None)


def test_dot_of_small_integers_is_exact_in_f32():
    rng = np.random.default_rng(1)
    a = rng.integers(-8, 8, (16, 32)).astype(np.float32)
    b = rng.integers(-8, 8, (32, 8)).astype(np.float32)
    acc = rng.integers(-100, 100, (16, 8)).astype(np.float32)
    c = np.zeros(128, np.float32)
    _llvm(_dot_shapes)[(1,)](a.reshape(-1), b.reshape(-1), acc.reshape(-1), c,
                             M=16, K=32, N=8, ACC=True)
    np.testing.assert_array_equal(c.reshape(16, 8), acc + a @ b)


def test_dot_of_f64_is_computed_in_f64():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((8, 16)), rng.standard_normal((16, 4))
    c = np.zeros(32, np.float64)
    _llvm(_dot_shapes)[(1,)](a.reshape(-1), b.reshape(-1), c, c, M=8, K=16, N=4, ACC=False)
    np.testing.assert_allclose(c.reshape(8, 4), a @ b, rtol=1e-13, atol=1e-13)


def test_i8_dot_sums_exact_products_with_i32_wraparound():
    """Extreme i8 inputs (-128 * -128 = 16384 needs 15 bits) and an accumulator near
    the i32 limits, so the sum wraps; the oracle is the exact int64 result wrapped."""
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (8, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 16)).astype(np.int8)
    a[0, :], b[:, 0] = -128, -128
    acc = rng.choice(np.array([2 ** 31 - 5, -2 ** 31 + 7, 0, 1 << 30], np.int64),
                     (8, 16)).astype(np.int32)
    c = np.zeros(128, np.int32)
    _llvm(_dot_shapes)[(1,)](a.reshape(-1), b.reshape(-1), acc.reshape(-1), c,
                             M=8, K=64, N=16, ACC=True)
    exact = acc.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    assert (exact > 2 ** 31 - 1).any() and (exact < -2 ** 31).any()
    np.testing.assert_array_equal(c.reshape(8, 16), exact.astype(np.int32))


def test_f16_inputs_multiply_in_f32():
    rng = np.random.default_rng(4)
    a = (rng.integers(-64, 64, (8, 16)) / 8).astype(np.float16)
    b = (rng.integers(-64, 64, (16, 8)) / 8).astype(np.float16)
    c = np.zeros(64, np.float32)
    _llvm(_dot_shapes)[(1,)](a.reshape(-1), b.reshape(-1), c, c, M=8, K=16, N=8, ACC=False)
    np.testing.assert_array_equal(c.reshape(8, 8), a.astype(np.float32) @ b.astype(np.float32))


@npu_kernel
def _batched(a_ptr, b_ptr, c_ptr, B: nl.constexpr, M: nl.constexpr, K: nl.constexpr,
             N: nl.constexpr):
    a = nl.reshape(nl.load(a_ptr + nl.arange(0, B * M * K)), (B, M, K))
    b = nl.reshape(nl.load(b_ptr + nl.arange(0, B * K * N)), (B, K, N))
    nl.store(c_ptr + nl.arange(0, B * M * N), nl.reshape(nl.dot(a, b), (B * M * N,)))


def test_batched_dot_of_3d_tiles():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 8, 2)).astype(np.float32)
    b = rng.standard_normal((4, 2, 16)).astype(np.float32)
    c = np.zeros(4 * 8 * 16, np.float32)
    _llvm(_batched)[(1,)](a.reshape(-1), b.reshape(-1), c, B=4, M=8, K=2, N=16)
    for i in range(4):
        _close_f32(c.reshape(4, 8, 16)[i], a[i], b[i])


@npu_kernel
def _dot_transposed(at_ptr, bt_ptr, c_ptr, M: nl.constexpr, K: nl.constexpr,
                    N: nl.constexpr):
    """``trans(At) @ trans(Bt)``: both operands are strided views of loaded tiles."""
    rm, rk, rn = nl.arange(0, M), nl.arange(0, K), nl.arange(0, N)
    at = nl.load(at_ptr + rk[:, None] * M + rm[None, :])        # K x M
    bt = nl.load(bt_ptr + rn[:, None] * K + rk[None, :])        # N x K
    nl.store(c_ptr + rm[:, None] * N + rn[None, :], nl.dot(nl.trans(at), nl.trans(bt)))


def test_dot_of_transposed_operands():
    rng = np.random.default_rng(6)
    at = rng.standard_normal((16, 8)).astype(np.float32)        # A is 8 x 16
    bt = rng.standard_normal((32, 16)).astype(np.float32)       # B is 16 x 32
    c = np.zeros(8 * 32, np.float32)
    _llvm(_dot_transposed)[(1,)](at.reshape(-1), bt.reshape(-1), c, M=8, K=16, N=32)
    _close_f32(c.reshape(8, 32), at.T, bt.T)


@npu_kernel
def _scores(x_ptr, w_ptr, out_ptr, T, H, E, BT: nl.constexpr, BE: nl.constexpr,
            BH: nl.constexpr):
    """``x [T, H] @ w [E, H].T``, the weight read through a transposed block pointer
    (as the MoE router reads ``router_weight``): its tile is stored k-contiguous and the
    dot sums along k (lower_cube ``_dot_blocks``)."""
    pid = nl.program_id(0)
    x_blk = nl.make_block_ptr(x_ptr, shape=(T, H), strides=(H, 1), offsets=(pid * BT, 0),
                              block_shape=(BT, BH))
    w_blk = nl.make_block_ptr(w_ptr, shape=(H, E), strides=(1, H), offsets=(0, 0),
                              block_shape=(BH, BE))
    acc = nl.zeros((BT, BE), dtype=nl.float32)
    for h in nl.range(0, H, BH):
        acc = nl.dot(nl.load(x_blk, boundary_check=(0, 1)),
                     nl.load(w_blk, boundary_check=(0, 1)), acc)
        x_blk = nl.advance(x_blk, (0, BH))
        w_blk = nl.advance(w_blk, (BH, 0))
    out = nl.make_block_ptr(out_ptr, shape=(T, E), strides=(E, 1), offsets=(pid * BT, 0),
                            block_shape=(BT, BE))
    nl.store(out, acc, boundary_check=(0, 1))


@pytest.mark.parametrize("t,h,e", [(16, 64, 8), (13, 48, 5), (7, 40, 3), (32, 256, 6)])
def test_dot_with_a_weight_read_through_a_transposed_block_pointer(t, h, e):
    """Row blocks of 4 and column pairs with their remainders (5 rows, 3 experts), H not
    a multiple of the block (its last block padded), against numpy."""
    rng = np.random.default_rng(t * 1000 + h + e)
    x = rng.standard_normal((t, h)).astype(np.float32)
    w = rng.standard_normal((e, h)).astype(np.float32)
    out = np.zeros(t * e, np.float32)
    _llvm(_scores)[(-(-t // 8),)](x.reshape(-1), w.reshape(-1), out, t, h, e,
                                  BT=8, BE=8, BH=32)
    _close_f32(out.reshape(t, e), x, w.T)


def test_the_bundled_matmul_on_f32():
    from npujit.kernels import matmul
    rng = np.random.default_rng(7)
    a = rng.standard_normal((70, 50)).astype(np.float32)
    b = rng.standard_normal((50, 40)).astype(np.float32)
    c = matmul.matmul(a, b, backend="llvm", block_m=32, block_n=32, block_k=16)
    _close_f32(c, a, b)


def test_the_gallery_matmul_on_f32():
    """Triton's tutorial kernel (f16 output): within one f16 rounding of the f64 product."""
    from npujit.kernels.triton_gallery import matmul
    rng = np.random.default_rng(8)
    a = rng.standard_normal((40, 24)).astype(np.float32)
    b = rng.standard_normal((24, 33)).astype(np.float32)
    c = matmul.matmul(a, b, block=(16, 16, 16), kernel=_llvm(matmul.matmul_kernel))
    assert c.dtype == np.float16
    want = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, want, rtol=2 ** -10, atol=1e-3)


# --- atomics -----------------------------------------------------------------------------

@npu_kernel
def _histogram(idx_ptr, w_ptr, hist_ptr, old_ptr, n, BLOCK: nl.constexpr):
    i = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    live = i < n
    idx = nl.load(idx_ptr + i, mask=live, other=-1)
    w = nl.load(w_ptr + i, mask=live, other=0)
    nl.store(old_ptr + i, nl.atomic_add(hist_ptr + idx, w, mask=live), mask=live)


def _serial(mem, offs, vals, combine, cmps=None):
    """The oracle: lane by lane (row-major over the whole launch, as programs run in
    order), ``old = mem[o]; mem[o] = combine(old, value)``; masked-off lanes (offset < 0)
    return 0."""
    mem = mem.copy()
    old = np.zeros(offs.shape, mem.dtype)
    for lane, o in enumerate(offs):
        if o < 0:
            continue
        old[lane] = mem[o]
        extra = () if cmps is None else (cmps[lane:lane + 1],)
        mem[o:o + 1] = combine(mem[o:o + 1], vals[lane:lane + 1], *extra)
    return mem, old


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_a_histogram_with_colliding_indices(dtype):
    """Many lanes of one program and of several programs add to the same bins; for
    f32 the adds happen in lane order, so the sums are exactly the serial ones."""
    rng = np.random.default_rng(9)
    n = 100
    idx = rng.integers(0, 5, n).astype(np.int32)
    w = (rng.integers(1, 4, n) if dtype == np.int32
         else rng.standard_normal(n) * 1e3).astype(dtype)
    hist = np.zeros(5, dtype)
    old = np.zeros(n, dtype)
    _llvm(_histogram)[(4,)](idx, w, hist, old, n, BLOCK=32)
    want_hist, want_old = _serial(np.zeros(5, dtype), idx, w, np.add)
    np.testing.assert_array_equal(hist, want_hist)
    np.testing.assert_array_equal(old, want_old)
    if dtype == np.int32:
        np.testing.assert_array_equal(hist, np.bincount(idx, w, 5).astype(np.int32))


@npu_kernel
def _rmw(mem_ptr, off_ptr, val_ptr, cmp_ptr, old_ptr, OP: nl.constexpr,
         BLOCK: nl.constexpr):
    """``old = atomic_<OP>(mem + off, val)``, lanes with a negative offset masked off
    (cas has no mask: every lane of its test is active)."""
    i = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    offs = nl.load(off_ptr + i)
    v = nl.load(val_ptr + i)
    on = offs >= 0
    p = mem_ptr + offs
    if OP == "add":
        old = nl.atomic_add(p, v, mask=on)
    elif OP == "max":
        old = nl.atomic_max(p, v, mask=on)
    elif OP == "min":
        old = nl.atomic_min(p, v, mask=on)
    elif OP == "xchg":
        old = nl.atomic_xchg(p, v, mask=on)
    elif OP == "and":
        old = nl.atomic_and(p, v, mask=on)
    elif OP == "or":
        old = nl.atomic_or(p, v, mask=on)
    elif OP == "xor":
        old = nl.atomic_xor(p, v, mask=on)
    else:
        old = nl.atomic_cas(p, nl.load(cmp_ptr + i), v)
    nl.store(old_ptr + i, old)


def _fmax(a, b):          # the reference's maximum: a NaN operand gives the other one
    return np.where((a > b) | (b != b), a, b)


def _fmin(a, b):
    return np.where((a < b) | (b != b), a, b)


COMBINES = {"add": np.add, "max": _fmax, "min": _fmin, "xchg": lambda a, b: b,
            "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
CASES = [("add", np.int64), ("max", np.int32), ("min", np.int32), ("max", np.uint32),
         ("min", np.uint64), ("max", np.float32), ("min", np.float64),
         ("xchg", np.float32), ("xchg", np.int32), ("and", np.int32), ("or", np.uint32),
         ("xor", np.int64), ("add", np.float64)]


def _values(rng, dtype, n):
    d = np.dtype(dtype)
    if d.kind == "f":
        v = rng.standard_normal(n).astype(dtype)
        v[rng.random(n) < 0.15] = np.nan
        v[rng.random(n) < 0.1] = -0.0
        return v
    info = np.iinfo(d)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{np.dtype(d).name}" for o, d in CASES])
def test_each_combine_against_a_serial_oracle(op, dtype):
    """Colliding offsets inside a program and across the two programs, a quarter of the
    lanes masked off (their offsets are -1, outside the array: they must not be
    touched, nor checked); the old values (0 where masked off) and the memory."""
    rng = np.random.default_rng(10)
    n, size = 64, 6
    offs = rng.integers(0, size, n).astype(np.int32)
    offs[rng.random(n) < 0.25] = -1
    vals = _values(rng, dtype, n)
    mem0 = _values(rng, dtype, size)
    mem = mem0.copy()
    old = np.full(n, 7, dtype)
    _llvm(_rmw)[(2,)](mem, offs, vals, vals, old, OP=op, BLOCK=32)
    with np.errstate(over="ignore", invalid="ignore"):
        want_mem, want_old = _serial(mem0, offs, vals, COMBINES[op])
    np.testing.assert_array_equal(mem, want_mem)
    np.testing.assert_array_equal(old, want_old)
    assert (old[offs < 0] == 0).all()


def _cas(old, value, cmp):
    return np.where(old == cmp, value, old)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_compare_and_swap(dtype):
    """A lane writes where the memory equals its cmp (numerically: -0.0 matches 0.0, NaN
    never matches), seeing the writes of the lanes before it."""
    mem0 = np.array([0, 1, 2, 3], dtype)
    offs = np.array([0, 0, 1, 1, 2, 3, 3, 0], np.int32)
    cmps = np.array([0, 5, 1, 9, 2, 3, 3, 6], dtype)
    vals = np.array([5, 6, 9, 4, 8, 7, 1, 2], dtype)
    if dtype == np.float32:
        mem0[3] = np.nan
        cmps[0] = -0.0
        cmps[5] = np.nan
    mem = mem0.copy()
    old = np.zeros(8, dtype)
    _llvm(_rmw)[(1,)](mem, offs, vals, cmps, old, OP="cas", BLOCK=8)
    want_mem, want_old = _serial(mem0, offs, vals, _cas, cmps)
    np.testing.assert_array_equal(mem, want_mem)
    np.testing.assert_array_equal(old, want_old)
    if dtype == np.int32:
        assert list(mem) == [2, 4, 8, 7]


@npu_kernel
def _ticket(counter_ptr, out_ptr):
    """A scalar atomic: each program takes the next ticket."""
    pid = nl.program_id(0)
    nl.store(out_ptr + pid, nl.atomic_add(counter_ptr, 1))


def test_a_scalar_atomic_returns_its_old_value():
    counter = np.array([10], np.int32)
    out = np.zeros(6, np.int32)
    _llvm(_ticket)[(6,)](counter, out)
    assert counter[0] == 16
    assert sorted(out) == list(range(10, 16))


def test_an_out_of_bounds_atomic_names_the_argument_and_writes_nothing():
    """Lane 5 of program 1 is outside ``mem``: the error names the kernel, the op, its
    line and the argument; the lanes before it in that program have not added."""
    offs = np.zeros(16, np.int32)
    offs[8 + 5] = 4
    mem = np.zeros(4, np.int32)
    vals = np.ones(16, np.int32)
    with pytest.raises(OutOfBoundsError, match=r"kernel '_rmw', npu.atomic_rmw at .*"
                                               r"test_llvm_cube.py:\d+, program \(1, 0, 0\)"
                                               r".*argument 'mem_ptr'"):
        _llvm(_rmw)[(2,)](mem, offs, vals, vals, np.zeros(16, np.int32), OP="add", BLOCK=8)
    assert mem[0] == 8          # program 0 ran; program 1 stopped before its first add


def test_an_out_of_bounds_lane_that_is_masked_off_is_fine():
    offs = np.array([0, -5, 1 << 20, 1], np.int32)      # -5 is masked off, 1 << 20 is not
    mem = np.zeros(2, np.int32)
    with pytest.raises(OutOfBoundsError, match="argument 'mem_ptr'"):
        _llvm(_rmw)[(1,)](mem, offs, np.ones(4, np.int32), offs, np.zeros(4, np.int32),
                          OP="add", BLOCK=4)
    assert (mem == 0).all()
    offs[2] = -1
    _llvm(_rmw)[(1,)](mem, offs, np.ones(4, np.int32), offs, np.zeros(4, np.int32),
                      OP="add", BLOCK=4)
    assert list(mem) == [1, 1]


@pytest.mark.parametrize("module", ["lower_cube", "lower_atomic"])
def test_module_examples(module):
    import doctest
    import importlib
    mod = importlib.import_module(f"npujit.backends.llvm.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
