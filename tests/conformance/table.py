"""The shared conformance table: every language op, the dtypes it applies to, and an
independent numpy oracle that follows docs/semantics.md (16-bit floats: compute in f32,
round once per op; ints wrap).

A case is ``Case(name, fn, oracle, dtypes, domain, tol)``: ``fn(x, y)`` runs inside a kernel
on two (4, 32) tiles; ``oracle(x, y)`` computes the same on numpy arrays of the storage
dtype.  Either may return a tuple.  ``tol`` is a relative tolerance for float results
(0 = bit-exact); int and bool results are always compared exactly.

f64 and the unsigned ints are on a few representative cases only (``WIDER`` at the end):
each extra (dtype, domain) costs one more compiled kernel per backend.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace
from typing import Callable

import ml_dtypes
import numpy as np

import npujit.language as nl

SHAPE = (4, 32)
F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16
F8E4, F8E5 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
FLOATS = ("f32", "f16", "bf16")
INTS = ("i32", "i8", "i64")
NP = {"f32": F32, "f16": F16, "bf16": BF16, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "i1": np.bool_, "f64": np.float64, "u8": np.uint8,
      "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f8e4": F8E4, "f8e5": F8E5}
NL = {"f32": nl.float32, "f16": nl.float16, "bf16": nl.bfloat16, "i8": nl.int8,
      "i16": nl.int16, "i32": nl.int32, "i64": nl.int64, "i1": nl.bool_, "f64": nl.float64,
      "u8": nl.uint8, "u16": nl.uint16, "u32": nl.uint32, "u64": nl.uint64,
      "f8e4": nl.float8e4nv, "f8e5": nl.float8e5}


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    oracle: Callable
    dtypes: tuple
    domain: str = "any"
    tol: float = 0.0


def rnd(v, like):
    """Round an exact/f64 result to f32, then to ``like``'s dtype (the half rule); an f64
    ``like`` keeps the f64 result."""
    if like.dtype == np.float64:
        return np.asarray(v, np.float64)
    return np.asarray(v).astype(F32).astype(like.dtype)


def isfloat(x) -> bool:
    return x.dtype.kind == "f" or x.dtype in (BF16, F8E4, F8E5)


def f32(x):
    """``x`` in the compute type of its dtype: f32, except that f64 stays f64."""
    x = np.asarray(x)
    return x if x.dtype == np.float64 else x.astype(F32)


def _erf(v):
    return np.vectorize(math.erf, otypes=[np.float64])(v)


def _gelu(v):
    v = v.astype(np.float64)
    return 0.5 * v * (1 + _erf(v / math.sqrt(2)))


def _gelu_tanh(v):
    v = v.astype(np.float64)
    return 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


def _unary(name, nlfn, npfn, domain="any", tol=2e-6, dtypes=FLOATS):
    return Case(name, lambda x, y: nlfn(x),
                lambda x, y: rnd(npfn(x.astype(np.float64)), x), dtypes, domain, tol)


UNARY = [
    _unary("exp", nl.exp, np.exp),
    _unary("exp2", nl.exp2, np.exp2),
    _unary("log", nl.log, np.log, "positive"),
    _unary("log2", nl.log2, np.log2, "positive"),
    _unary("sqrt", nl.sqrt, np.sqrt, "positive", tol=0),
    _unary("rsqrt", nl.rsqrt, lambda v: 1 / np.sqrt(v), "positive"),
    _unary("sin", nl.sin, np.sin),
    _unary("cos", nl.cos, np.cos),
    _unary("floor", nl.floor, np.floor, tol=0),
    _unary("ceil", nl.ceil, np.ceil, tol=0),
    _unary("sigmoid", nl.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    _unary("tanh", nl.tanh, np.tanh),
    _unary("erf", nl.erf, _erf),
    _unary("gelu", nl.gelu, _gelu, tol=5e-6),
    _unary("gelu_tanh", lambda x: nl.gelu(x, approximate="tanh"), _gelu_tanh, tol=5e-6),
    _unary("silu", nl.silu, lambda v: v / (1 + np.exp(-v)), tol=5e-6),
    Case("neg", lambda x, y: -x, lambda x, y: -x, FLOATS + INTS),
    Case("abs", lambda x, y: nl.abs(x), lambda x, y: np.abs(x), FLOATS + INTS),
    Case("not", lambda x, y: ~x, lambda x, y: ~x, INTS),
]


def _fbin(name, op, npop, domain="any", tol=0.0):
    return Case(name, op, lambda x, y: rnd(npop(f32(x), f32(y)), x), FLOATS, domain, tol)


def _ibin(name, op, npop):
    def oracle(x, y):
        with np.errstate(all="ignore"):
            return npop(x, y).astype(x.dtype)
    return Case(name, op, oracle, INTS)


def _floordiv_int(x, y):
    """C's (Triton's) division: the quotient toward zero; x // 0 = 0."""
    bits = x.dtype.itemsize * 8
    q = [0 if b == 0 else (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1)
         for a, b in zip(x.ravel().tolist(), y.ravel().tolist())]
    wrapped = [(v + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1) for v in q]  # INT_MIN // -1
    if x.dtype.kind == "u":
        wrapped = q
    return np.array(wrapped, x.dtype).reshape(x.shape)


def _mod_int(x, y):
    """C's remainder, with the sign of the dividend (np.fmod); x % 0 = 0."""
    with np.errstate(all="ignore"):
        return np.where(y == 0, 0, np.fmod(x, np.where(y == 0, 1, y))).astype(x.dtype)


BINARY = [
    _fbin("add", lambda x, y: x + y, np.add),
    _fbin("sub", lambda x, y: x - y, np.subtract),
    _fbin("mul", lambda x, y: x * y, np.multiply),
    _fbin("div", lambda x, y: x / y, np.divide),
    Case("floordiv_float", lambda x, y: x // y,
         lambda x, y: rnd(np.trunc(f32(rnd(f32(x) / f32(y), x))), x), FLOATS),
    _fbin("mod_float", lambda x, y: x % y, np.fmod),
    _fbin("pow", lambda x, y: x ** y, np.power, "positive", tol=2e-6),
    _fbin("maximum", nl.maximum, np.fmax),        # NaN skipped, as Triton's default
    _fbin("minimum", nl.minimum, np.fmin),
    _ibin("add_int", lambda x, y: x + y, np.add),
    _ibin("sub_int", lambda x, y: x - y, np.subtract),
    _ibin("mul_int", lambda x, y: x * y, np.multiply),
    Case("floordiv_int", lambda x, y: x // y, _floordiv_int, INTS),
    Case("mod_int", lambda x, y: x % y, _mod_int, INTS),
    _ibin("maximum_int", nl.maximum, np.maximum),
    _ibin("minimum_int", nl.minimum, np.minimum),
    _ibin("and", lambda x, y: x & y, np.bitwise_and),
    _ibin("or", lambda x, y: x | y, np.bitwise_or),
    _ibin("xor", lambda x, y: x ^ y, np.bitwise_xor),
    Case("shl", lambda x, y: x << (y & 7), lambda x, y: (x << (y & 7)).astype(x.dtype), INTS),
    Case("shr", lambda x, y: x >> (y & 7), lambda x, y: (x >> (y & 7)).astype(x.dtype), INTS),
]

_CMP = [("lt", lambda x, y: x < y, np.less), ("le", lambda x, y: x <= y, np.less_equal),
        ("gt", lambda x, y: x > y, np.greater), ("ge", lambda x, y: x >= y, np.greater_equal),
        ("eq", lambda x, y: x == y, np.equal), ("ne", lambda x, y: x != y, np.not_equal)]
COMPARE = [Case(f"cmp_{n}", op, (lambda f: lambda x, y: f(f32(x), f32(y)) if isfloat(x)
                                 else f(x, y))(npop), FLOATS + INTS)
           for n, op, npop in _CMP]
COMPARE += [
    Case("where", lambda x, y: nl.where(x > y, x, y), lambda x, y: np.where(f32(x) > f32(y), x, y),
         FLOATS + INTS),
    Case("where_scalar", lambda x, y: nl.where(x > 0, x, 0),
         lambda x, y: np.where(f32(x) > 0, x, np.zeros_like(x)), FLOATS + INTS),
    Case("logical_and", lambda x, y: (x > 0) & (y > 0), lambda x, y: (f32(x) > 0) & (f32(y) > 0),
         FLOATS + INTS),
]


def _cast_case(dst, sources=FLOATS + INTS + ("i1",)):
    def oracle(x, y):
        to = NP[dst]
        if dst == "i1":
            return x != 0
        if x.dtype == np.bool_:
            return x.astype(to)
        if to is np.float64:
            return x.astype(to)           # ints convert in one rounding, floats exactly
        if isfloat(np.empty(0, to)):
            with np.errstate(over="ignore"):    # u64 values past f16's range give inf
                return x.astype(F32).astype(to) if x.dtype.kind in "iu" else x.astype(to)
        if isfloat(x) and np.dtype(to).kind == "u":
            return saturate(x, to)        # negatives give 0
        if isfloat(x):
            return np.trunc(f32(x)).astype(np.int64).astype(to)
        return x.astype(to)
    return Case(f"cast_to_{dst}", lambda x, y: x.to(NL[dst]), oracle, sources, "cast")


# To f64 and u32 from a few sources only: every op added to an existing (dtype, domain)
# kernel makes its compile longer.
CASTS = [_cast_case(d) for d in ("f32", "f16", "bf16", "i8", "i32", "i64", "i1")]
CASTS += [_cast_case("f64", FLOATS + ("i32", "i64")), _cast_case("u32", ("f32",))]
# to the fp8s (RNE; E5M2 overflows to inf, E4M3FN to NaN), from the "cast" domain's +-100
CASTS += [_cast_case("f8e4", ("f32", "f16", "bf16", "i32")), _cast_case("f8e5", ("f32", "i8"))]


def _casts_from(dsts):
    """Casts of one tile to each of ``dsts``, as one case (f64 and u64 sources: in the
    kernel their other ops compile in, not one kernel more)."""
    cases = [_cast_case(d) for d in dsts]
    return Case("casts_to_" + "_".join(dsts), lambda x, y: tuple(x.to(NL[d]) for d in dsts),
                lambda x, y: tuple(c.oracle(x, y) for c in cases), ("f64", "u64"))


CASTS.append(_casts_from(("f32", "f16", "bf16", "i8", "i64", "u32", "i1", "f64")))


def saturate(x, to) -> np.ndarray:
    """The float -> int rule of docs/semantics.md ("Casts"), computed independently with
    Python ints: NaN -> 0, truncate toward zero, clamp to the type's range."""
    info = np.iinfo(to)
    out = [0 if math.isnan(v) else
           info.max if v == math.inf else
           info.min if v == -math.inf else
           min(max(math.trunc(v), info.min), info.max)
           for v in f32(x).astype(np.float64).ravel().tolist()]
    return np.array(out, dtype=to).reshape(np.shape(x))


def _saturating_cast_case(dst, sources=FLOATS):
    return Case(f"cast_saturates_to_{dst}", lambda x, y: x.to(NL[dst]),
                lambda x, y: saturate(x, NP[dst]), sources, "cast_edge")


# NaN, +-inf and values outside every int type (make_input's "cast_edge" pool).
CASTS += [_saturating_cast_case(d) for d in ("i8", "i16", "i32", "i64")]
CASTS += [_saturating_cast_case("u8", ("f16",)), _saturating_cast_case("u64", ("f32",))]


def _red(kind):
    def oracle(x, y, axis):
        xf = f32(x) if isfloat(x) else x
        if kind == "sum":
            if x.dtype.kind in "iub":
                w = np.int64 if x.dtype == np.int64 else np.int32
                if x.dtype.kind == "u":   # ui8/ui16 widen to ui32, as Triton's sum
                    w = np.uint64 if x.dtype == np.uint64 else np.uint32
                return x.astype(w).sum(axis=axis, dtype=w)
            return rnd(xf.astype(np.float64).sum(axis=axis), x)
        if kind == "max":           # NaN skipped (np.fmax), NaN for a lane of NaNs
            return np.fmax.reduce(xf, axis=axis).astype(x.dtype)
        if kind == "min":
            return np.fmin.reduce(xf, axis=axis).astype(x.dtype)
        if kind == "argmax":
            return np.argmax(xf, axis=axis).astype(np.int32)
        return np.argmin(xf, axis=axis).astype(np.int32)
    return oracle


REDUCE = []
for _k, _f in (("sum", nl.sum), ("max", nl.max), ("min", nl.min), ("argmax", nl.argmax),
               ("argmin", nl.argmin)):
    for _ax in (0, 1):
        REDUCE.append(Case(f"{_k}_axis{_ax}", (lambda f, a: lambda x, y: f(x, axis=a))(_f, _ax),
                           (lambda o, a: lambda x, y: o(x, y, a))(_red(_k), _ax),
                           FLOATS + ("i32", "i8"), "any", 1e-5 if _k == "sum" else 0.0))


def _cumsum_oracle(axis):
    def oracle(x, y):
        if x.dtype.kind in "iub":
            w = np.int64 if x.dtype == np.int64 else np.int32
            return np.cumsum(x.astype(w), axis=axis, dtype=w)
        return rnd(np.cumsum(f32(x).astype(np.float64), axis=axis), x)
    return oracle


def _topk_oracle(k):
    def oracle(x, y):
        xf = f32(x).astype(np.float64) if isfloat(x) else x.astype(np.int64)
        idx = np.argsort(-xf, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(x, idx, axis=1), idx.astype(np.int32)
    return oracle


def _sort_oracle(desc):
    def oracle(x, y):
        s = np.sort(f32(x) if x.dtype == BF16 else x, axis=1).astype(x.dtype)
        return s[:, ::-1] if desc else s
    return oracle


def _gather_index():
    """A fixed (4, 32) index into axis 0 of a (4, 32) tile (repeats and every row)."""
    return (np.arange(4)[:, None] * 7 + np.arange(32)[None, :] * 3) % 4


def _gather_index_tile():      # the same index built in the kernel
    return (nl.arange(0, 4)[:, None] * 7 + nl.arange(0, 32)[None, :] * 3) % 4


SCAN_SORT = [
    Case("cumsum_axis0", lambda x, y: nl.cumsum(x, axis=0), _cumsum_oracle(0), FLOATS + ("i32",),
         "any", 1e-5),
    Case("cumsum_axis1", lambda x, y: nl.cumsum(x, axis=1), _cumsum_oracle(1), FLOATS + ("i32",),
         "any", 1e-5),
    Case("sort", lambda x, y: nl.sort(x, axis=1), _sort_oracle(False), FLOATS + ("i32",)),
    Case("sort_desc", lambda x, y: nl.sort(x, axis=1, descending=True), _sort_oracle(True),
         FLOATS + ("i32",)),
    Case("topk3", lambda x, y: nl.topk(x, 3, axis=1), _topk_oracle(3), FLOATS + ("i32",)),
    Case("gather", lambda x, y: nl.gather(x, _gather_index_tile(), axis=0),
         lambda x, y: np.take_along_axis(x, _gather_index(), axis=0), FLOATS + INTS),
    Case("softmax", lambda x, y: nl.softmax(x, axis=1),
         lambda x, y: rnd(np.exp(f32(x) - f32(x).max(1, keepdims=True)) /
                          np.exp(f32(x) - f32(x).max(1, keepdims=True)).sum(1, keepdims=True), x),
         FLOATS, "any", 1e-5),
]


def _dot_oracle(x, y):
    if x.dtype == np.int8:
        return x.astype(np.int32) @ y.T.astype(np.int32)
    return f32(x).astype(np.float64) @ f32(y).T.astype(np.float64)


SHAPE_AND_DOT = [
    Case("dot", lambda x, y: nl.dot(x, nl.trans(y)), _dot_oracle, FLOATS + ("i8",), "any", 1e-5),
    Case("dot_acc", lambda x, y: nl.dot(x, nl.trans(y), nl.full((4, 4), 1.5, nl.float32)),
         lambda x, y: _dot_oracle(x, y) + 1.5, FLOATS, "any", 1e-5),
    Case("reshape", lambda x, y: nl.reshape(x, (8, 16)), lambda x, y: x.reshape(8, 16),
         FLOATS + INTS),
    Case("trans", lambda x, y: nl.trans(x), lambda x, y: x.T, FLOATS + INTS),
    Case("expand_broadcast", lambda x, y: x[:, None, :] + y[None, :, :],
         lambda x, y: rnd(f32(x)[:, None, :] + f32(y)[None, :, :], x)
         if isfloat(x) else (x[:, None, :] + y[None, :, :]).astype(x.dtype),
         FLOATS + ("i32",)),
    Case("row_broadcast", lambda x, y: x - nl.max(x, axis=1)[:, None],
         lambda x, y: rnd(f32(x) - f32(x).max(1, keepdims=True), x)
         if isfloat(x) else (x - x.max(1, keepdims=True)).astype(x.dtype),
         FLOATS + ("i32",)),
    Case("scalar_literals", lambda x, y: x * 2 + 1, lambda x, y: rnd(f32(x) * 2 + 1, x)
         if isfloat(x) else (x * 2 + 1).astype(x.dtype), FLOATS + INTS),
    Case("chain_rounds_each_op", lambda x, y: (x + y) * y - x,
         lambda x, y: rnd(f32(rnd(f32(rnd(f32(x) + f32(y), x)) * f32(y), x)) - f32(x), x), FLOATS),
]

SPECIAL = [  # NaN, ±inf, -0.0 and subnormals (f32 and f16)
    _fbin("add_special", lambda x, y: x + y, np.add, "special"),
    _fbin("mul_special", lambda x, y: x * y, np.multiply, "special"),
    _fbin("maximum_special", nl.maximum, np.fmax, "special"),
    _fbin("minimum_special", nl.minimum, np.fmin, "special"),
    _fbin("maximum_nan_all_special", lambda x, y: nl.maximum(x, y, propagate_nan=nl.PropagateNan.ALL),
          np.maximum, "special"),
    _fbin("minimum_nan_all_special", lambda x, y: nl.minimum(x, y, propagate_nan=nl.PropagateNan.ALL),
          np.minimum, "special"),
    Case("clamp_special", lambda x, y: nl.clamp(x, -1.0, 1.0),
         lambda x, y: np.fmin(np.fmax(f32(x), -1.0), 1.0).astype(x.dtype), FLOATS, "special"),
    Case("cmp_lt_special", lambda x, y: x < y, lambda x, y: f32(x) < f32(y), FLOATS, "special"),
    Case("ne_special", lambda x, y: x != y, lambda x, y: f32(x) != f32(y), FLOATS, "special"),
    Case("max_reduce_special", lambda x, y: nl.max(x, axis=1),
         lambda x, y: np.fmax.reduce(f32(x), axis=1).astype(x.dtype), FLOATS, "special"),
    Case("max_axis0_special", lambda x, y: nl.max(x, axis=0),
         lambda x, y: np.fmax.reduce(f32(x), axis=0).astype(x.dtype), FLOATS, "special"),
    Case("min_axis0_special", lambda x, y: nl.min(x, axis=0),
         lambda x, y: np.fmin.reduce(f32(x), axis=0).astype(x.dtype), FLOATS, "special"),
    Case("max_indices_special", lambda x, y: nl.max(x, axis=1, return_indices=True),
         lambda x, y: (np.take_along_axis(x, np.argmax(f32(x), axis=1)[:, None], 1)[:, 0],
                       np.argmax(f32(x), axis=1).astype(np.int32)), FLOATS, "special"),
    Case("argmax_special", lambda x, y: nl.argmax(x, axis=1),
         lambda x, y: np.argmax(f32(x), axis=1).astype(np.int32), FLOATS, "special"),
    _unary("sqrt_special", nl.sqrt, np.sqrt, "special", tol=0),
    _unary("exp_special", nl.exp, np.exp, "special"),
]

ALL = UNARY + BINARY + COMPARE + CASTS + REDUCE + SCAN_SORT + SHAPE_AND_DOT + SPECIAL

# Triton's dtypes beyond the NPU's own, on a few representative cases (each (dtype, domain)
# is one more compiled kernel per backend): u64 for C-style unsigned division, remainder,
# logical shift, compares, max and sum (u64 is the width numba's helpers compute every
# unsigned type in; tests/backends/test_numba.py runs ui32, test_wider_dtypes.py the ui8
# sum's widening); f64 arithmetic, math, reductions and dot computed in f64 (compared at
# 1e-12, which one f32 step would miss).
WIDER = {name: ("u64",) for name in ("mul_int", "floordiv_int", "mod_int", "cmp_lt",
                                     "max_axis0", "shr")}
WIDER.update({"sum_axis1": ("u64", "f64")})
WIDER.update({name: ("f64",) for name in ("add", "div", "exp", "max_axis0", "dot")})
# fp8 E4M3 (float8e4nv) computes in f32 and rounds once per op, like f16 and bf16: one
# kernel per backend for the arithmetic, math, reductions, casts, shapes and dot
_FP8_CASES = ("add", "sub", "mul", "div", "floordiv_float", "exp", "neg", "abs",
              "cmp_lt", "where", "sum_axis1", "max_axis0", "argmax_axis1", "cumsum_axis1",
              "trans", "dot", "chain_rounds_each_op", "scalar_literals", "cast_to_f32",
              "cast_to_f16", "cast_to_i32", "cast_to_f8e5")
for _name in _FP8_CASES:
    WIDER[_name] = WIDER.get(_name, ()) + ("f8e4",)
ALL = [replace(c, dtypes=c.dtypes + WIDER.get(c.name, ())) for c in ALL]


def make_input(domain: str, dtype: str):
    """Two (4, 32) arrays of ``dtype`` for ``domain``, the same in every process (the
    seed is a checksum of the two names: ``hash`` of a string changes from run to run)."""
    rng = np.random.default_rng(zlib.crc32(f"{domain}/{dtype}".encode()))
    to = NP[dtype]
    if dtype == "i1":
        return rng.random(SHAPE) > 0.5, rng.random(SHAPE) > 0.5
    if np.dtype(to).kind in "iu":
        lo, hi = (-1000, 1000) if domain == "cast" else (-100, 100)
        if dtype == "i8":
            lo, hi = -100, 100
        return (rng.integers(lo, hi, SHAPE).astype(to), rng.integers(lo, hi, SHAPE).astype(to))
    if domain == "positive":
        vals = rng.uniform(0.1, 4.0, (2,) + SHAPE)
    elif domain == "cast":
        vals = rng.uniform(-100, 100, (2,) + SHAPE)
    elif domain == "cast_edge":
        # NaN, +-inf, just inside / outside each int type, beyond i64, fractions
        pool = np.array([np.nan, np.inf, -np.inf, 127.9, 128.0, -128.9, -129.0, 300.5,
                         32767.5, 32768.0, -32769.0, 65504.0, -65504.0, 2.0 ** 31, -2.0 ** 31,
                         -2.0 ** 31 - 512, 3e9, -3e9, 2.0 ** 63, -2.0 ** 63, 1e19, -1e30,
                         1e30, 0.5, -0.5, -7.9, 0.0, -0.0], np.float64)
        vals = rng.choice(pool, (2,) + SHAPE)
        vals[0].ravel()[:pool.size] = pool          # every edge at least once
    elif domain == "special":
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, 6e-8, 1.0, -2.5,
                         65504.0, 1e30], np.float64)
        vals = rng.choice(pool, (2,) + SHAPE)
        vals[:, :, :8] = rng.standard_normal((2, SHAPE[0], 8))
    else:
        vals = rng.standard_normal((2,) + SHAPE) * 3
    with np.errstate(over="ignore"):
        return vals[0].astype(F32).astype(to), vals[1].astype(F32).astype(to)
