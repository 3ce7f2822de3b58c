"""The reference interpreter against independent numpy / Python expressions.

Each test builds a small IR function with ``npujit.ir.Builder``, runs it through
``ReferenceBackend`` and compares with an expectation written here from docs/semantics.md
(never by calling the interpreter's own helpers).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from reference_support import (BF16, F16, F32, FLOATS, apply_op, bits_equal, ir_dtype, new_kernel,
                               offsets_of, run, wrap)

from npujit.backends import get_backend
from npujit.backends.reference import ResultTypeError, missing_kinds
from npujit.ir import Block, Kind, Loc, TypeRuleError
from npujit.ir import types as T


def test_every_kind_has_a_meaning():
    assert missing_kinds() == []
    assert get_backend("reference").name == "reference"


# --- elementwise floats ------------------------------------------------------------------

A = np.array([1.5, -2.25, 3.0, 0.1, -0.0, 7.0, np.nan, np.inf], np.float64)
B = np.array([0.5, 4.0, -1.75, 3.3, 2.0, 0.0, 1.0, 2.0], np.float64)

BINARY_F = {Kind.ADD: lambda a, b: a + b, Kind.SUB: lambda a, b: a - b,
            Kind.MUL: lambda a, b: a * b, Kind.DIV: lambda a, b: a / b,
            Kind.POW: np.power, Kind.MAXIMUM: np.fmax, Kind.MINIMUM: np.fmin,
            Kind.REM: np.fmod}


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("kind", list(BINARY_F), ids=lambda k: k.value)
def test_float_binary_computes_in_f32_and_rounds(kind, dt):
    a, b = A.astype(dt), B.astype(dt)
    with np.errstate(all="ignore"):
        want = BINARY_F[kind](a.astype(F32), b.astype(F32)).astype(dt)
    bits_equal(apply_op(kind, [a, b]), want)


def test_maximum_minimum_skip_nan():
    # Triton's default (np.fmax / np.fmin): NaN only when both operands are
    a = np.array([np.nan, 1.0, 2.0, np.nan], F32)
    b = np.array([0.0, np.nan, 1.0, np.nan], F32)
    bits_equal(apply_op(Kind.MAXIMUM, [a, b]), np.array([0.0, 1.0, 2.0, np.nan], F32))
    bits_equal(apply_op(Kind.MINIMUM, [a, b]), np.array([0.0, 1.0, 1.0, np.nan], F32))


def test_maximum_of_equal_values_is_the_second_operand():
    # np.fmax gives the first one for a single element and the second for longer arrays
    for n in (1, 4):
        a, b = np.full(n, -0.0, F32), np.zeros(n, F32)
        assert not np.signbit(apply_op(Kind.MAXIMUM, [a, b])).any()
        assert np.signbit(apply_op(Kind.MINIMUM, [b, a])).all()


@pytest.mark.parametrize("dt, tie", [(F16, 2.0 ** -11), (BF16, 2.0 ** -8)], ids=["f16", "bf16"])
def test_half_rounds_at_every_op(dt, tie):
    # 1 + tie is exactly half an ulp: each add rounds to even (back to 1.0), twice.  In
    # f32 the two ties add up to a whole ulp, so rounding once at the end would give 1+ulp.
    fn, b = new_kernel("chain", [dt, dt])
    offs = offsets_of(b, (1,))
    x = b.op(Kind.LOAD, [fn.args[0], offs])
    t = b.op(Kind.SPLAT, [b.constant(tie, ir_dtype(dt))], {"shape": (1,)})
    y = b.op(Kind.ADD, [b.op(Kind.ADD, [x, t]), t])
    b.create(Kind.STORE, [fn.args[1], offs, y])
    b.create(Kind.RETURN, [])
    out = np.zeros(1, dt)
    run(fn, (1,), [np.ones(1, dt), out])
    assert float(out[0]) == 1.0
    assert float(np.float32(1.0 + tie + tie).astype(dt)) > 1.0     # the f32-once answer


UNARY_F64 = {
    Kind.EXP: np.exp, Kind.EXP2: np.exp2, Kind.LOG: np.log, Kind.LOG2: np.log2,
    Kind.SQRT: np.sqrt, Kind.RSQRT: lambda x: 1 / np.sqrt(x), Kind.SIN: np.sin,
    Kind.COS: np.cos, Kind.FLOOR: np.floor, Kind.CEIL: np.ceil, Kind.TANH: np.tanh,
    Kind.ERF: np.vectorize(math.erf), Kind.SIGMOID: lambda x: 1 / (1 + np.exp(-x)),
    Kind.SILU: lambda x: x / (1 + np.exp(-x)), Kind.NEG: np.negative, Kind.ABS: np.abs,
}
TOL = {F32: 2e-6, F16: 1e-3, BF16: 8e-3}


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("kind", list(UNARY_F64), ids=lambda k: k.value)
def test_float_unary_matches_f64_math(kind, dt):
    x = np.array([0.25, 0.5, 1.0, 1.7, 2.5, 3.9], dt)        # positive: log/sqrt defined
    if kind not in (Kind.LOG, Kind.LOG2, Kind.SQRT, Kind.RSQRT):
        x = np.concatenate([x, -x])
    got = apply_op(kind, [x])
    assert got.dtype == x.dtype
    want = UNARY_F64[kind](x.astype(np.float64))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=TOL[dt], atol=TOL[dt])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_forms(approximate):
    x = np.linspace(-4, 4, 17).astype(F32)
    xd = x.astype(np.float64)
    if approximate == "none":
        want = 0.5 * xd * (1 + np.vectorize(math.erf)(xd / math.sqrt(2)))
    else:
        want = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3)))
    got = apply_op(Kind.GELU, [x], {"approximate": approximate})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- elementwise integers ----------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64], ids=str)
def test_int_add_sub_mul_wrap(dt):
    info = np.iinfo(dt)
    a = [info.max, info.min, -3, 100, info.max]
    b = [1, -1, 5, 100, info.max]
    ai, bi = np.array(a, dt), np.array(b, dt)
    bits_equal(apply_op(Kind.ADD, [ai, bi]), wrap([x + y for x, y in zip(a, b)], dt))
    bits_equal(apply_op(Kind.SUB, [ai, bi]), wrap([x - y for x, y in zip(a, b)], dt))
    bits_equal(apply_op(Kind.MUL, [ai, bi]), wrap([x * y for x, y in zip(a, b)], dt))


@pytest.mark.parametrize("dt", [np.int8, np.int32], ids=str)
def test_idiv_and_rem_follow_c_and_zero_gives_zero(dt):
    lo = int(np.iinfo(dt).min)
    a = [7, -7, 7, -7, 0, 5, -5, lo, lo, lo + 1]
    b = [2, 2, -2, -2, 3, 0, 0, -1, 0, 2]
    q = [int(x / y) if y else 0 for x, y in zip(a, b)]   # C: toward zero
    r = [x - y * int(x / y) if y else 0 for x, y in zip(a, b)]  # sign of the dividend
    ai, bi = np.array(a, dt), np.array(b, dt)
    bits_equal(apply_op(Kind.IDIV, [ai, bi]), wrap(q, dt))     # INT_MIN // -1 wraps
    bits_equal(apply_op(Kind.REM, [ai, bi]), wrap(r, dt))


def test_float_rem_has_the_sign_of_the_dividend():
    a = np.array([-7.5, 7.5, 7.5, -7.5, -0.0], F32)
    b = np.array([2.0, -2.0, 2.0, -2.0, 3.0], F32)
    bits_equal(apply_op(Kind.REM, [a, b]), np.array([-1.5, 1.5, 1.5, -1.5, -0.0], F32))


@pytest.mark.parametrize("dt", [np.int8, np.int32], ids=str)
def test_shifts_define_out_of_range_counts(dt):
    bits = np.dtype(dt).itemsize * 8
    vals = [1, -1, 5, -100, 64, -128]
    counts = [-1, 0, 2, bits - 1, bits, 100]
    a, n = [], []
    for v in vals:
        for c in counts:
            a.append(v)
            n.append(c)
    shl = [(v << c) if 0 <= c < bits else 0 for v, c in zip(a, n)]
    shr = [(v >> c) if 0 <= c < bits else (-1 if v < 0 else 0) for v, c in zip(a, n)]
    ai, ni = np.array(a, dt), np.array(n, dt)
    bits_equal(apply_op(Kind.SHL, [ai, ni]), wrap(shl, dt))
    bits_equal(apply_op(Kind.SHR, [ai, ni]), np.array(shr, dt))


def test_bitwise_on_ints_and_logical_on_bools():
    a, b = np.array([0b1100, -1, 0], np.int8), np.array([0b1010, 5, 0], np.int8)
    bits_equal(apply_op(Kind.AND, [a, b]), np.array([0b1000, 5, 0], np.int8))
    bits_equal(apply_op(Kind.OR, [a, b]), np.array([0b1110, -1, 0], np.int8))
    bits_equal(apply_op(Kind.XOR, [a, b]), np.array([0b0110, -6, 0], np.int8))
    bits_equal(apply_op(Kind.NOT, [a]), np.array([-13, 0, -1], np.int8))
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    bits_equal(apply_op(Kind.AND, [p, q]), np.array([True, False, False, False]))
    bits_equal(apply_op(Kind.OR, [p, q]), np.array([True, True, True, False]))
    bits_equal(apply_op(Kind.XOR, [p, q]), np.array([False, True, True, False]))
    bits_equal(apply_op(Kind.NOT, [p]), np.array([False, False, True, True]))


def test_neg_and_abs_wrap_at_int_min():
    x = np.array([np.iinfo(np.int32).min, -5, 5], np.int32)
    bits_equal(apply_op(Kind.NEG, [x]), np.array([np.iinfo(np.int32).min, 5, -5], np.int32))
    bits_equal(apply_op(Kind.ABS, [x]), np.array([np.iinfo(np.int32).min, 5, 5], np.int32))


# --- cmp, select, cast -------------------------------------------------------------------

PY_CMP = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
          "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


@pytest.mark.parametrize("dt", [F32, F16, BF16, np.int32], ids=str)
@pytest.mark.parametrize("pred", list(PY_CMP))
def test_cmp_is_ieee(pred, dt):
    a = [1.0, 2.0, float("nan"), 3.0, float("nan"), -0.0]
    b = [1.0, 1.0, 1.0, float("nan"), float("nan"), 0.0]
    if dt is np.int32:
        a, b = [1, 2, -3, 3, 0, 7], [1, 1, 1, 9, 0, -7]
    want = np.array([PY_CMP[pred](x, y) for x, y in zip(a, b)])   # Python floats are IEEE
    bits_equal(apply_op(Kind.CMP, [np.array(a, dt), np.array(b, dt)], {"predicate": pred}), want)


def test_select():
    c = np.array([True, False, True])
    a, b = np.array([1, 2, 3], BF16), np.array([7, 8, 9], BF16)
    bits_equal(apply_op(Kind.SELECT, [c, a, b]), np.array([1, 8, 3], BF16))


@pytest.mark.parametrize("src, dst, values, want", [
    (F32, np.int32, [2.7, -2.7, 0.5, -0.5, 100.0], [2, -2, 0, 0, 100]),      # truncation
    (F16, np.int8, [3.75, -3.75], [3, -3]),
    (F32, np.bool_, [0.0, -0.0, 0.5, float("nan"), float("-inf")], [False, False, True, True, True]),
    (np.int32, np.bool_, [0, 3, -1], [False, True, True]),
    (np.bool_, F32, [True, False], [1.0, 0.0]),
    (np.bool_, np.int8, [True, False], [1, 0]),
    (np.int32, np.int8, [300, -129, 127], [44, 127, 127]),                   # wraps
    (np.int64, np.int32, [2 ** 32 + 5, -(2 ** 31) - 1], [5, 2 ** 31 - 1]),
    (F32, F16, [1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 70000.0], [1.0, 1.0 + 2.0 ** -9, np.inf]),
    (F16, BF16, [1.0 + 2.0 ** -8], [1.0]),                                   # tie to even
    (BF16, F16, [3.140625], [3.140625]),
    # int -> bf16 rounds via f32: 2^24+2^16+1 -> f32 2^24+2^16 (tie, even) -> bf16 2^24.
    # Rounding once (directly) would give 2^24+2^17.
    (np.int32, BF16, [2 ** 24 + 2 ** 16 + 1], [2.0 ** 24]),
    (np.int32, F16, [2049, -7], [2048.0, -7.0]),
])
def test_cast_rules(src, dst, values, want):
    got = apply_op(Kind.CAST, [np.array(values, src)], {"dtype": ir_dtype(dst)})
    bits_equal(got, np.array(want, dst))


# --- shape ops ---------------------------------------------------------------------------

def test_shape_ops_are_numpy():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    bits_equal(apply_op(Kind.RESHAPE, [x], {"shape": (3, 2)}), x.reshape(3, 2))
    bits_equal(apply_op(Kind.TRANS, [x], {"perm": (1, 0)}), x.T)
    col = np.array([[1.5], [2.5]], F16)
    bits_equal(apply_op(Kind.BROADCAST, [col], {"shape": (2, 4)}), np.repeat(col, 4, axis=1))
    bits_equal(apply_op(Kind.SPLAT, [np.array(3, np.int8)], {"shape": (2, 2)}),
               np.full((2, 2), 3, np.int8))


# --- reductions, scans, sort, topk -------------------------------------------------------

def test_half_sum_accumulates_in_f32_and_rounds_once():
    x = np.array([2048, 1, 1], F16)            # in f16 steps: 2048 + 1 = 2048 (tie), twice
    bits_equal(apply_op(Kind.REDUCE, [x], {"kind": "sum", "axis": 0}), np.array(2050, F16))


def test_int_sums_widen_small_types_and_wrap_wide_ones():
    got = apply_op(Kind.REDUCE, [np.array([100, 100, 100], np.int8)], {"kind": "sum", "axis": 0})
    bits_equal(got, np.array(300, np.int32))
    got = apply_op(Kind.REDUCE, [np.array([True, True, False])], {"kind": "sum", "axis": 0})
    bits_equal(got, np.array(2, np.int32))
    big = np.array([2 ** 31 - 1, 1], np.int32)
    bits_equal(apply_op(Kind.REDUCE, [big], {"kind": "sum", "axis": 0}), wrap([2 ** 31], np.int32)[0])
    prod = apply_op(Kind.REDUCE, [np.array([1 << 20, 1 << 12], np.int32)], {"kind": "prod", "axis": 0})
    bits_equal(prod, np.array(0, np.int32))     # 2**32 wraps to 0


@pytest.mark.parametrize("axis", [0, 1])
def test_reduce_2d_along_each_axis(axis):
    x = np.array([[1.0, -4.0, 2.5], [3.0, 0.5, -1.0]], F32)
    for kind, f in [("sum", np.sum), ("max", np.max), ("min", np.min), ("prod", np.prod)]:
        bits_equal(apply_op(Kind.REDUCE, [x], {"kind": kind, "axis": axis}),
                   f(x, axis=axis).astype(F32))
    for kind, f in [("argmax", np.argmax), ("argmin", np.argmin)]:
        bits_equal(apply_op(Kind.REDUCE, [x], {"kind": kind, "axis": axis}),
                   f(x, axis=axis).astype(np.int32))


def test_argmax_argmin_first_extreme_and_first_nan():
    x = np.array([[1, 5, 5, 0, 0], [1, np.nan, 9, np.nan, -9]], BF16)
    got = apply_op(Kind.REDUCE, [x], {"kind": "argmax", "axis": 1})
    bits_equal(got, np.array([1, 1], np.int32))
    got = apply_op(Kind.REDUCE, [x], {"kind": "argmin", "axis": 1})
    bits_equal(got, np.array([3, 1], np.int32))
    got = apply_op(Kind.REDUCE, [x], {"kind": "max", "axis": 1})
    assert float(got[0]) == 5 and float(got[1]) == 9          # max skips NaN


def test_scan_keeps_the_running_sum_unrounded():
    x = np.array([2048, 1, 1, 1], F16)
    # running f32 sums 2048, 2049, 2050, 2051, each rounded to f16 on output only
    bits_equal(apply_op(Kind.SCAN, [x], {"kind": "sum", "axis": 0}),
               np.array([2048, 2048, 2050, 2052], F16))
    x8 = np.array([[100, 100], [100, -100]], np.int8)
    bits_equal(apply_op(Kind.SCAN, [x8], {"kind": "sum", "axis": 0}),
               np.array([[100, 100], [200, 0]], np.int32))


def test_sort_nan_last_and_descending_is_the_reverse():
    x = np.array([[3.0, np.nan, -1.0, 2.0, -0.0, 0.0]], F32)
    asc = apply_op(Kind.SORT, [x], {"axis": 1, "descending": False})
    bits_equal(asc, np.array([[-1.0, -0.0, 0.0, 2.0, 3.0, np.nan]], F32))
    assert np.signbit(asc[0, 1]) and not np.signbit(asc[0, 2])    # stable: input order
    desc = apply_op(Kind.SORT, [x], {"axis": 1, "descending": True})
    np.testing.assert_array_equal(desc.view(np.int32), asc[:, ::-1].view(np.int32))
    cols = np.array([[3, 1], [1, 2], [2, 0]], np.int32)
    bits_equal(apply_op(Kind.SORT, [cols], {"axis": 0}), np.sort(cols, axis=0))


def topk_by_python(row, k):
    """Indices of the k largest, largest first, ties to the lower index, NaN largest."""
    def key(i):
        v = float(row[i])
        return (0, 0.0, i) if math.isnan(v) else (1, -v, i)
    return sorted(range(len(row)), key=key)[:k]


@pytest.mark.parametrize("dt", [F32, F16, np.int32, np.int8], ids=str)
def test_topk_largest_first_ties_low_index_nan_largest(dt):
    if np.dtype(dt).kind == "f":
        row = [1.0, 5.0, np.nan, 5.0, -np.inf, 7.0, np.nan, 5.0]
    else:
        lo = int(np.iinfo(dt).min)
        row = [1, 5, lo, 5, -3, 7, lo, 5]
    x = np.array([row, row[::-1]], dt)
    values, indices = apply_op(Kind.TOPK, [x], {"k": 5, "axis": 1})
    for r in range(2):
        want = topk_by_python(x[r], 5)
        bits_equal(indices[r], np.array(want, np.int32))
        bits_equal(values[r], x[r][want])
    # along axis 0: transpose the problem
    v0, i0 = apply_op(Kind.TOPK, [x.T.copy()], {"k": 5, "axis": 0})
    bits_equal(i0, indices.T.copy())
    bits_equal(v0, values.T.copy())


# --- dot ---------------------------------------------------------------------------------

def test_dot_f16_accumulates_in_f32_with_acc():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 32)).astype(F16)
    b = rng.standard_normal((32, 3)).astype(F16)
    acc = rng.standard_normal((4, 3)).astype(F32)
    got = apply_op(Kind.DOT, [a, b, acc])
    want = acc.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    assert got.dtype == F32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dot_i8_is_exact_i32_and_wraps():
    a = np.full((2, 64), -128, np.int8)
    b = np.full((64, 2), 127, np.int8)
    got = apply_op(Kind.DOT, [a, b])
    bits_equal(got, np.full((2, 2), -128 * 127 * 64, np.int32))
    acc = np.full((2, 2), 2 ** 31 - 1, np.int32)
    one_a, one_b = np.ones((2, 1), np.int8), np.ones((1, 2), np.int8)
    bits_equal(apply_op(Kind.DOT, [one_a, one_b, acc]), np.full((2, 2), -2 ** 31, np.int32))


# --- structure ---------------------------------------------------------------------------

def loop_kernel(lb_dtype=T.int32):
    """acc = init; for i in range(lb, ub, step): acc += x[i]; count += 1 -> out[0:2]."""
    fn, b = new_kernel("loop", [F32, F32], [T.scalar(lb_dtype), T.scalar(T.int32),
                                           T.scalar(T.int32)])
    x, out, lb, ub, step = fn.args
    init = b.op(Kind.SPLAT, [b.constant(0.5, T.float32)], {"shape": (1,)})
    count0 = b.constant(0, T.int32)
    loop = b.for_loop(lb, ub, step, [init, count0], loc=Loc("kern.py", 9))
    iv, acc, count = loop.body.args
    with b.at(loop.body):
        iv32 = b.op(Kind.CAST, [iv], {"dtype": T.int32})
        xi = b.op(Kind.LOAD, [x, b.op(Kind.SPLAT, [iv32], {"shape": (1,)})])
        b.create(Kind.YIELD, [b.op(Kind.ADD, [acc, xi]),
                              b.op(Kind.ADD, [count, b.constant(1, T.int32)])])
    total, n = loop.results
    b.create(Kind.STORE, [out, offsets_of(b, (1,)), total])
    n_f = b.op(Kind.CAST, [b.op(Kind.SPLAT, [n], {"shape": (1,)})], {"dtype": T.float32})
    b.create(Kind.STORE, [out, b.op(Kind.SPLAT, [b.constant(1, T.int32)], {"shape": (1,)}), n_f])
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("lb, ub, step", [(0, 10, 1), (2, 9, 3), (9, -1, -2), (5, 5, 1),
                                          (7, 3, 1), (0, 3, -1)])
def test_for_loop_carries_values_like_python_range(lb, ub, step):
    x = np.arange(10, dtype=F32) * 1.25
    out = np.zeros(2, F32)
    run(loop_kernel(), (1,), [x, out, lb, ub, step])
    idx = list(range(lb, ub, step))
    assert out[0] == np.float32(0.5) + np.sum(x[idx], dtype=F32)    # inits when zero-trip
    assert out[1] == len(idx)


def test_loop_iv_has_the_lower_bound_dtype():
    loop = loop_kernel(T.int64)
    for_op = next(op for op in loop.walk() if op.kind is Kind.FOR)
    assert for_op.body.args[0].type == T.scalar(T.int64)
    out = np.zeros(2, F32)
    run(loop, (1,), [np.arange(10, dtype=F32), out, 1, 4, 1])
    bits_equal(out, np.array([6.5, 3], F32))


def test_loop_step_zero_is_an_error_naming_the_line():
    with pytest.raises(ValueError, match="kern.py:9"):
        run(loop_kernel(), (1,), [np.zeros(10, F32), np.zeros(2, F32), 0, 4, 0])


def test_fused_region_means_its_ops():
    fn, b = new_kernel("fused", [F16, F16, F16])
    offs = offsets_of(b, (3,))
    x, y = (b.op(Kind.LOAD, [p, offs]) for p in fn.args[:2])
    tile = T.tensor((3,), T.float16)
    body = Block([tile, tile])
    fused = b.create(Kind.FUSED, [x, y], result_types=[tile], regions=[body])
    with b.at(body):
        s = b.op(Kind.MUL, [body.args[0], body.args[1]])
        b.create(Kind.YIELD, [b.op(Kind.EXP, [s])])
    b.create(Kind.STORE, [fn.args[2], offs, fused.result])
    b.create(Kind.RETURN, [])
    xs, ys, out = np.array([0.5, 1, 2], F16), np.array([0.1, -1, 1.5], F16), np.zeros(3, F16)
    run(fn, (1,), [xs, ys, out])
    prod = (xs.astype(F32) * ys.astype(F32)).astype(F16)             # rounded after mul
    bits_equal(out, np.exp(prod.astype(F32)).astype(F16))


def test_program_ids_and_grid_sizes():
    fn, b = new_kernel("ids", [np.int32])
    px, py = (b.op(Kind.PROGRAM_ID, [], {"axis": a}) for a in (0, 1))
    nx, ny = (b.op(Kind.NUM_PROGRAMS, [], {"axis": a}) for a in (0, 1))
    where = b.op(Kind.ADD, [px, b.op(Kind.MUL, [py, nx])])
    code = b.op(Kind.ADD, [b.op(Kind.MUL, [py, b.constant(100, T.int32)]),
                           b.op(Kind.ADD, [px, b.op(Kind.MUL, [ny, b.constant(10, T.int32)])])])
    b.create(Kind.STORE, [fn.args[0], where, code])
    b.create(Kind.RETURN, [])
    out = np.zeros(6, np.int32)
    run(fn, (2, 3), [out])
    bits_equal(out, np.array([100 * y + x + 30 for y in range(3) for x in range(2)], np.int32))


def test_print_format(capsys):
    fn, b = new_kernel("show", [])
    b.create(Kind.PRINT, [b.op(Kind.PROGRAM_ID, [], {"axis": 0}),
                          b.op(Kind.ARANGE, [], {"start": 2, "end": 5})], {"prefix": "v:"})
    b.create(Kind.RETURN, [])
    run(fn, (2,), [])
    assert capsys.readouterr().out.splitlines() == [
        "[pid (0, 0, 0)] v: 0", "[pid (0, 0, 0)] v: [2 3 4]",
        "[pid (1, 0, 0)] v: 1", "[pid (1, 0, 0)] v: [2 3 4]"]


@pytest.mark.parametrize("dt, value, want", [
    (F16, 0.1, np.float16(0.1)),
    (F32, 1 / 3, np.float32(1 / 3)),
    # Just above a bf16 tie: rounding once gives 1 + 2^-7; via f32 it would tie to 1.0.
    (BF16, 1 + 2.0 ** -8 + 2.0 ** -30, 1 + 2.0 ** -7),
])
def test_constants_round_once_from_the_python_float(dt, value, want):
    fn, b = new_kernel("const", [dt])
    b.create(Kind.STORE, [fn.args[0], b.constant(0, T.int32), b.constant(value, ir_dtype(dt))])
    b.create(Kind.RETURN, [])
    out = np.zeros(1, dt)
    run(fn, (1,), [out])
    assert float(out[0]) == float(want)


def test_int_constants_must_fit():
    fn, b = new_kernel("const", [np.int8])
    c = b.op(Kind.CONSTANT, [], {"value": 300, "dtype": T.int8})
    b.create(Kind.STORE, [fn.args[0], b.constant(0, T.int32), c])
    b.create(Kind.RETURN, [])
    with pytest.raises(ValueError, match="300 does not fit i8"):
        run(fn, (1,), [np.zeros(1, np.int8)])


def test_arguments_are_checked_by_name():
    fn, b = new_kernel("args", [F32], [T.scalar(T.int8)])
    b.create(Kind.RETURN, [])
    with pytest.raises(TypeError, match="'p0'.*float32.*got float64"):
        run(fn, (1,), [np.zeros(2), 1])
    with pytest.raises(OverflowError, match="'s0'"):
        run(fn, (1,), [np.zeros(2, F32), 1000])
    with pytest.raises(TypeError, match="takes 2 arguments"):
        run(fn, (1,), [np.zeros(2, F32)])


def test_ir_rejects_ops_without_a_meaning():
    fn, b = new_kernel("bad", [np.bool_, np.int32])
    lanes = offsets_of(b, (2,))
    flags = b.op(Kind.LOAD, [fn.args[0], lanes])
    with pytest.raises(TypeRuleError, match="bool"):
        b.op(Kind.ATOMIC_RMW, [fn.args[0], lanes, flags])
    dims = [b.constant(v, T.int32) for v in (2, 1, 0)]
    with pytest.raises(TypeRuleError, match="nan"):
        b.op(Kind.BLOCK_LOAD, [fn.args[1], *dims], {"block_shape": (2,), "padding": "nan"})


def test_a_result_of_the_wrong_type_is_caught_at_its_op():
    fn, b = new_kernel("lying", [F32])
    wrong = b.create(Kind.ARANGE, [], {"start": 0, "end": 2},
                     result_types=[T.tensor((2,), T.float32)])      # arange is i32
    b.create(Kind.STORE, [fn.args[0], offsets_of(b, (2,)), wrong.result])
    b.create(Kind.RETURN, [])
    with pytest.raises(ResultTypeError, match="npu.arange at kern.py:42"):
        run(fn, (1,), [np.zeros(2, F32)])
