"""The numba backend against independent numpy expressions and the reference backend.

Most op kinds are checked in one kernel per dtype (``OPS`` below): it loads two tiles,
applies every op that is defined on the dtype and stores each result to its own output,
so the table costs one numba compile per dtype (and nothing on a rerun: disk cache).
Expectations are written from docs/semantics.md with numpy; the same kernel also runs on
the reference backend and the two must agree.

Comparison: ints and bools bit for bit; floats bit for bit (NaN matching NaN) for
arithmetic, casts, shape ops, max/min/sort/topk; transcendentals within 2 ulp of the
dtype (f32 libm vs numpy's own kernels); float sums/products/scans/dots within a
relative 1e-5 (f32 accumulation in another order) or 2 ulp of the half type.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

from npujit.backends import get_backend
from npujit.backends.numba import NumbaBackend
from npujit.ir import Block, Builder, Function, Kind, Loc
from npujit.ir import types as T

F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16
LOC = Loc("test_numba.py", 1)
R, C = 4, 16                      # tile shape of the op table
EPS = {F32: 2.0 ** -23, F16: 2.0 ** -10, BF16: 2.0 ** -7}

try:
    from npujit.backends.reference import ReferenceBackend
except ImportError:  # the oracle is optional for this file
    ReferenceBackend = None


# --- building and running kernels ---------------------------------------------------------

def irt(dt) -> T.DType:
    return T.dtype_of_numpy(dt)


def kernel(name, ptr_dtypes, scalars=()):
    types = [T.PtrType(irt(d)) for d in ptr_dtypes] + [T.scalar(s) for s in scalars]
    names = [f"p{i}" for i in range(len(ptr_dtypes))] + [f"s{i}" for i in range(len(scalars))]
    fn = Function(name, types, names)
    return fn, Builder(fn.body, loc=LOC)


def offsets(b, shape):
    """Row-major offsets 0..numel-1 shaped ``shape`` (a constant 0 for a scalar)."""
    if shape == ():
        return b.constant(0, T.int32)
    offs = b.op(Kind.ARANGE, [], {"start": 0, "end": math.prod(shape)})
    return offs if len(shape) == 1 else b.op(Kind.RESHAPE, [offs], {"shape": tuple(shape)})


def splat(b, v, shape):
    return b.op(Kind.SPLAT, [v], {"shape": tuple(shape)})


_compiled: dict = {}


def run_numba(fn, grid, args, **options):
    run = NumbaBackend().compile(fn, options)
    run(grid, args)
    return run


def run_reference(fn, grid, args):
    if ReferenceBackend is not None:
        ReferenceBackend().compile(fn, {})(grid, args)


def same(got, want, tol=0.0):
    """Equal dtype; ints/bools equal; floats: NaN where NaN, and equal bits (tol 0) or
    within ``tol`` relative (infinities equal)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg="NaN positions differ")
    ok = ~np.isnan(g)
    if tol == 0:
        np.testing.assert_array_equal(g[ok], w[ok])
        np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(w[ok]),
                                      err_msg="signs of zero differ")
    else:
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        fin = ok & ~np.isinf(g)
        np.testing.assert_allclose(g[fin], w[fin], rtol=tol, atol=tol)


def wrap(v, dt):
    """Python ints (object array) wrapped to ``dt``'s width."""
    bits = np.dtype(dt).itemsize * 8
    f = np.vectorize(lambda x: (int(x) + (1 << bits - 1)) % (1 << bits) - (1 << bits - 1),
                     otypes=[object])
    return f(v).astype(dt)


def f32(x):
    return np.asarray(x).astype(F32)


def rnd(v, dt):
    """An f32 result rounded to ``dt`` (the half rule)."""
    with np.errstate(all="ignore"):
        return np.asarray(v, F32).astype(dt)


# --- inputs -------------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 1e-6, 65504.0, 7e4, np.inf,
           -np.inf, np.nan, 1.0 / 3]


def inputs(dt):
    rng = np.random.default_rng(7)
    if np.dtype(dt).kind == "b":
        return rng.random((R, C)) < 0.5, rng.random((R, C)) < 0.5
    if np.dtype(dt).kind == "i":
        info = np.iinfo(dt)
        edge = [info.min, info.max, -1, 0, 1, 7, -7, info.min + 1]
        x = rng.integers(-100, 100, (R, C)).astype(dt)
        y = rng.integers(-5, 9, (R, C)).astype(dt)
        x.flat[:len(edge)] = edge
        y.flat[:8] = [-1, 1, 0, 3, 0, -1, 2, 2]            # INT_MIN // -1, x // 0, shifts
        y.flat[8:12] = [info.bits - 1, info.bits, -1, 64]   # shift counts out of range
        return x, y
    x = rng.uniform(-4, 4, (R, C))
    y = rng.uniform(-4, 4, (R, C))
    x.flat[:len(SPECIAL)] = SPECIAL
    y.flat[:len(SPECIAL)] = SPECIAL[::-1]
    with np.errstate(all="ignore"):
        return x.astype(dt), y.astype(dt)


def test_backend_is_registered():
    assert get_backend("numba").name == "numba"
    assert isinstance(get_backend("numba"), NumbaBackend)


# --- the op table ---------------------------------------------------------------------------

class Case:
    def __init__(self, name, build, expect, kinds="fib", tol=0.0, dtypes=None, skip=()):
        self.name, self.build, self.expect = name, build, expect
        self.kinds, self.tol, self.dtypes, self.skip = kinds, tol, dtypes, skip

    def applies(self, dt):
        if self.dtypes is not None:
            return dt in self.dtypes
        if dt in self.skip:
            return False
        kind = np.dtype(dt).kind
        return {"f": "f", "V": "f", "i": "i", "b": "b"}.get(kind, "f") in self.kinds


def _isfloat(dt):
    return dt in (F32, F16, BF16)


def binop(kind, **attrs):
    return lambda b, x, y: b.op(kind, [x, y], attrs)


def unop(kind, **attrs):
    return lambda b, x, y: b.op(kind, [x], attrs)


def fbin(fn):
    """Float binary: f32 math, rounded to the dtype."""
    def expect(x, y):
        with np.errstate(all="ignore"):
            return rnd(fn(f32(x), f32(y)), x.dtype)
    return expect


def fun(fn):
    def expect(x, y):
        with np.errstate(all="ignore"):
            return rnd(fn(f32(x)), x.dtype)
    return expect


def ibin(fn):
    """Int binary on Python ints, wrapped."""
    def expect(x, y):
        return wrap(np.frompyfunc(fn, 2, 1)(x.astype(object), y.astype(object)), x.dtype)
    return expect


def _shl(a, c, bits):
    return 0 if not 0 <= c < bits else a << c


def _shr(a, c, bits):
    return (-1 if a < 0 else 0) if not 0 <= c < bits else a >> c


def _bits(x):
    return np.dtype(x.dtype).itemsize * 8


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _reduce(x, kind, axis):
    xf = x.astype(np.float64) if _isfloat(x.dtype.type) else x
    if kind == "argmax":
        return np.argmax(x.astype(np.float64) if _isfloat(x.dtype.type) else x, axis).astype(np.int32)
    if kind == "argmin":
        return np.argmin(x.astype(np.float64) if _isfloat(x.dtype.type) else x, axis).astype(np.int32)
    if kind in ("max", "min"):
        return (np.max if kind == "max" else np.min)(x, axis)
    if _isfloat(x.dtype.type):
        with np.errstate(all="ignore"):
            return rnd((np.sum if kind == "sum" else np.prod)(xf, axis), x.dtype)
    out = np.int32 if x.dtype.itemsize < 4 else x.dtype
    xo = x.astype(np.int64).astype(object)
    return wrap((np.sum if kind == "sum" else np.prod)(xo, axis), out)


def _topk(x, k, axis):
    """Largest first, ties to the lower index, NaN above everything."""
    xm = np.moveaxis(x.astype(np.float64), axis, -1)
    idx = np.empty(xm.shape[:-1] + (k,), np.int32)
    for pos in np.ndindex(xm.shape[:-1]):
        row = xm[pos]
        order = sorted(range(len(row)), key=lambda i: (not np.isnan(row[i]),
                                                        -row[i] if not np.isnan(row[i]) else 0, i))
        idx[pos] = order[:k]
    vals = np.take_along_axis(np.moveaxis(x, axis, -1), idx, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def _cmp(pred):
    fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}[pred]
    return Case(f"cmp_{pred}", binop(Kind.CMP, predicate=pred),
                lambda x, y: fn(x.astype(np.float64) if _isfloat(x.dtype.type) else x,
                                y.astype(np.float64) if _isfloat(y.dtype.type) else y))


def _transcendental(name, kind, fn, **attrs):
    return Case(name, unop(kind, **attrs), fun(fn), "f", tol=-2)  # tol<0: ulps of dtype


# Helpers that do not depend on the integer width (max/min/arg*, sort, topk) are checked
# on i32 only: each further dtype is one more numba compile of the helper (~1 s cold).
WIDTH_GENERIC_SKIP = (np.int8, np.int64)


def _row_broadcast(b, x, y):
    row = b.op(Kind.REDUCE, [x], {"kind": "max", "axis": 0})            # (C,)
    row = b.op(Kind.RESHAPE, [row], {"shape": (1, C)})
    return b.op(Kind.SUB, [x, b.op(Kind.BROADCAST, [row], {"shape": (R, C)})])


OPS = [
    Case("add", binop(Kind.ADD), None, "fi"),
    Case("sub", binop(Kind.SUB), None, "fi"),
    Case("mul", binop(Kind.MUL), None, "fi"),
    Case("div", binop(Kind.DIV), fbin(np.divide), "f"),
    Case("pow", binop(Kind.POW), fbin(np.power), "f", tol=-2),
    Case("rem", binop(Kind.REM), None, "fi"),
    Case("floordiv", binop(Kind.FLOORDIV), ibin(lambda a, c: a // c if c else 0), "i"),
    Case("maximum", binop(Kind.MAXIMUM), None, "fi"),
    Case("minimum", binop(Kind.MINIMUM), None, "fi"),
    Case("and", binop(Kind.AND), lambda x, y: x & y, "ib"),
    Case("or", binop(Kind.OR), lambda x, y: x | y, "ib"),
    Case("xor", binop(Kind.XOR), lambda x, y: x ^ y, "ib"),
    Case("not", unop(Kind.NOT), lambda x, y: ~x, "ib"),
    Case("shl", binop(Kind.SHL), None, "i"),
    Case("shr", binop(Kind.SHR), None, "i"),
    *[_cmp(p) for p in ("eq", "ne", "lt", "le", "gt", "ge")],
    Case("select", lambda b, x, y: b.op(Kind.SELECT, [b.op(Kind.CMP, [x, y], {"predicate": "lt"}), x, y]),
         lambda x, y: np.where(x.astype(np.float64) < y.astype(np.float64) if _isfloat(x.dtype.type)
                               else x < y, x, y)),
    Case("neg", unop(Kind.NEG), None, "fi"),
    Case("abs", unop(Kind.ABS), None, "fi"),
    _transcendental("exp", Kind.EXP, np.exp),
    _transcendental("exp2", Kind.EXP2, np.exp2),
    _transcendental("log", Kind.LOG, np.log),
    _transcendental("log2", Kind.LOG2, np.log2),
    _transcendental("sqrt", Kind.SQRT, np.sqrt),
    _transcendental("rsqrt", Kind.RSQRT, lambda v: 1 / np.sqrt(v.astype(np.float64))),
    _transcendental("sin", Kind.SIN, np.sin),
    _transcendental("cos", Kind.COS, np.cos),
    Case("floor", unop(Kind.FLOOR), fun(np.floor), "f"),
    Case("ceil", unop(Kind.CEIL), fun(np.ceil), "f"),
    _transcendental("tanh", Kind.TANH, np.tanh),
    _transcendental("erf", Kind.ERF, lambda v: _erf(v.astype(np.float64))),
    _transcendental("sigmoid", Kind.SIGMOID, lambda v: 1 / (1 + np.exp(-v.astype(np.float64)))),
    _transcendental("silu", Kind.SILU, lambda v: v / (1 + np.exp(-v.astype(np.float64)))),
    _transcendental("gelu", Kind.GELU, lambda v: 0.5 * v * (1 + _erf(v.astype(np.float64) / math.sqrt(2)))),
    _transcendental("gelu_tanh", Kind.GELU, lambda v: 0.5 * v * (1 + np.tanh(
        math.sqrt(2 / math.pi) * (v.astype(np.float64) + 0.044715 * v.astype(np.float64) ** 3))),
        approximate="tanh"),
    *[Case(f"cast_{d.__name__ if hasattr(d, '__name__') else d}",
           (lambda d: lambda b, x, y: b.op(Kind.CAST, [x], {"dtype": irt(d)}))(d), None,
           "fib") for d in (F32, F16, BF16, np.int8, np.int32, np.int64, np.bool_)],
    Case("trans", lambda b, x, y: b.op(Kind.TRANS, [x], {"perm": (1, 0)}), lambda x, y: x.T.copy()),
    Case("reshape_trans", lambda b, x, y: b.op(Kind.RESHAPE, [b.op(Kind.TRANS, [x], {"perm": (1, 0)})],
                                               {"shape": (R * C,)}), lambda x, y: x.T.reshape(-1)),
    Case("row_broadcast_sub", _row_broadcast, None, "fi"),
    *[Case(f"{k}_axis{a}", (lambda k, a: lambda b, x, y: b.op(Kind.REDUCE, [x], {"kind": k, "axis": a}))(k, a),
           (lambda k, a: lambda x, y: _reduce(x, k, a))(k, a),
           "fib" if k in ("max", "min", "argmax", "argmin", "sum") else "fi",
           tol=-4 if k in ("sum", "prod") else 0.0,
           skip=() if k in ("sum", "prod") else WIDTH_GENERIC_SKIP)
      for k in ("sum", "max", "min", "prod", "argmax", "argmin") for a in (0, 1)],
    Case("sum_1d", lambda b, x, y: b.op(Kind.REDUCE, [b.op(Kind.RESHAPE, [x], {"shape": (R * C,)})],
                                        {"kind": "sum", "axis": 0}),
         lambda x, y: _reduce(x.reshape(-1), "sum", 0), "fib", tol=-4),
    Case("max_1d", lambda b, x, y: b.op(Kind.REDUCE, [b.op(Kind.RESHAPE, [x], {"shape": (R * C,)})],
                                        {"kind": "max", "axis": 0}),
         lambda x, y: _reduce(x.reshape(-1), "max", 0), "fib"),
    *[Case(f"cumsum_axis{a}", (lambda a: lambda b, x, y: b.op(Kind.SCAN, [x], {"kind": "sum", "axis": a}))(a),
           None, "fi", tol=-4, skip=WIDTH_GENERIC_SKIP if a else ()) for a in (0, 1)],
    *[Case(f"sort_axis{a}_{'desc' if d else 'asc'}",
           (lambda a, d: lambda b, x, y: b.op(Kind.SORT, [x], {"axis": a, "descending": d}))(a, d),
           (lambda a, d: lambda x, y: np.flip(np.sort(x, axis=a, kind="stable"), a) if d
            else np.sort(x, axis=a, kind="stable"))(a, d), "fib", skip=WIDTH_GENERIC_SKIP)
      for a in (0, 1) for d in (False, True)],
    *[Case(f"topk3_axis{a}", (lambda a: lambda b, x, y: b.create(Kind.TOPK, [x], {"k": 3, "axis": a}).results)(a),
           (lambda a: lambda x, y: _topk(x, 3, a))(a), "fi", skip=WIDTH_GENERIC_SKIP) for a in (0, 1)],
]


def _expect(case, x, y):
    """Expectations for the cases written generically over ints and floats."""
    if case.expect is not None:
        return case.expect(x, y)
    isf = _isfloat(x.dtype.type)
    n = case.name
    if n in ("add", "sub", "mul"):
        op = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[n]
        return fbin(op)(x, y) if isf else ibin({"add": lambda a, c: a + c, "sub": lambda a, c: a - c,
                                                "mul": lambda a, c: a * c}[n])(x, y)
    if n == "rem":
        return fbin(np.mod)(x, y) if isf else ibin(lambda a, c: a % c if c else 0)(x, y)
    if n in ("maximum", "minimum"):
        return (np.maximum if n == "maximum" else np.minimum)(x, y)
    if n == "shl":
        return ibin(lambda a, c: _shl(a, c, _bits(x)))(x, y)
    if n == "shr":
        return ibin(lambda a, c: _shr(a, c, _bits(x)))(x, y)
    if n == "neg":
        return -x if isf else ibin(lambda a, c: -a)(x, y)
    if n == "abs":
        return np.abs(x) if isf else ibin(lambda a, c: abs(a))(x, y)
    if n.startswith("cast_"):
        return _cast(x, n[5:])
    if n == "row_broadcast_sub":
        row = np.max(x, axis=0, keepdims=True)
        return fbin(np.subtract)(x, np.broadcast_to(row, x.shape)) if isf else \
            ibin(lambda a, c: a - c)(x, np.broadcast_to(row, x.shape))
    if n.startswith("cumsum"):
        a = int(n[-1])
        if isf:
            return rnd(np.cumsum(f32(x), axis=a, dtype=F32), x.dtype)
        out = np.int32 if x.dtype.itemsize < 4 else x.dtype
        return wrap(np.cumsum(x.astype(object), axis=a), out)
    raise KeyError(n)


def _cast(x, to):
    dst = {"float32": F32, "float16": F16, "bfloat16": BF16, "int8": np.int8, "int32": np.int32,
           "int64": np.int64, "bool": np.bool_, "bool_": np.bool_}[to]
    if dst is np.bool_:
        return x != 0
    if _isfloat(x.dtype.type) and not _isfloat(dst):
        return None  # float -> int: checked separately on in-range values
    if _isfloat(dst):
        with np.errstate(all="ignore"):
            return x.astype(F32).astype(dst)    # ints go via f32; floats round once
    return x.astype(dst)                        # int -> int wraps; bool -> 0/1


DTYPES = [F32, F16, BF16, np.int8, np.int32, np.int64, np.bool_]


def _results(case, x, y):
    want = _expect(case, x, y)
    return want if isinstance(want, tuple) else (want,)


def _run_table(dt):
    """Build, run (numba and reference) and return {case: (got, ref, want)} for ``dt``."""
    if dt in _compiled:
        return _compiled[dt]
    x, y = inputs(dt)
    cases = [c for c in OPS if c.applies(dt)]
    wants = {c.name: _results(c, x, y) for c in cases}
    out_dtypes = []
    for c in cases:
        out_dtypes += [np.dtype(w.dtype) if w is not None else None for w in wants[c.name]]
    fn, b = kernel(f"table_{np.dtype(dt).name}", [dt, dt] + [d or np.int64 for d in out_dtypes])
    xv = b.op(Kind.LOAD, [fn.args[0], offsets(b, (R, C))])
    yv = b.op(Kind.LOAD, [fn.args[1], offsets(b, (R, C))])
    outs, k = [], 2
    for c in cases:
        res = c.build(b, xv, yv)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        for r in res:
            p = fn.args[k]
            if p.type.dtype == r.type.dtype:
                b.create(Kind.STORE, [p, offsets(b, r.type.shape), r])
            else:  # float -> int cast, stored to an i64 buffer nobody checks here
                b.create(Kind.STORE, [p, offsets(b, r.type.shape),
                                      b.op(Kind.CAST, [r], {"dtype": T.int64})])
            outs.append(np.zeros(max(r.type.numel, 1), p.type.dtype.np))
            k += 1
    b.create(Kind.RETURN, [])
    args = [x.reshape(-1).copy(), y.reshape(-1).copy()] + outs
    ref_args = [a.copy() for a in args]
    run_numba(fn, (1, 1, 1), args)
    with np.errstate(all="ignore"):
        run_reference(fn, (1, 1, 1), ref_args)
    table, k = {}, 2
    for c in cases:
        got, ref = [], []
        for w in wants[c.name]:
            shape = w.shape if w is not None else None
            got.append(args[k] if shape is None else args[k][:max(w.size, 1)].reshape(shape))
            ref.append(ref_args[k] if shape is None else ref_args[k][:max(w.size, 1)].reshape(shape))
            k += 1
        table[c.name] = (got, ref, wants[c.name], c)
    _compiled[dt] = table
    return table


def _tol(case, dt):
    if case.tol >= 0:
        return case.tol
    return -case.tol * EPS.get(dt, 0.0) if _isfloat(dt) else 0.0


PARAMS = [(c.name, dt) for dt in DTYPES for c in OPS if c.applies(dt)]


@pytest.mark.parametrize("name,dt", PARAMS, ids=[f"{n}-{np.dtype(d).name}" for n, d in PARAMS])
def test_op_table(name, dt):
    got, ref, want, case = _run_table(dt)[name]
    tol = _tol(case, dt)
    for g, r, w in zip(got, ref, want):
        if w is None:
            continue
        same(g, w, tol)
        if ReferenceBackend is not None:
            same(g, r, tol)


# --- memory: masks, bounds, block pointers, atomics -------------------------------------------

def _masked_copy_kernel(dt):
    """out[i] = load(x, offs[i], mask[i], other=-1) for 8 lanes; store under the same mask
    to out2 at the same (possibly wild) offsets."""
    fn, b = kernel("masked", [np.int64, np.bool_, dt, dt, dt])
    offs_p, mask_p, x, out, out2 = fn.args
    lanes = offsets(b, (8,))
    offs = b.op(Kind.LOAD, [offs_p, lanes])
    mask = b.op(Kind.LOAD, [mask_p, lanes])
    other = splat(b, b.constant(-1, irt(dt)), (8,))
    v = b.op(Kind.LOAD, [x, offs, mask, other])
    b.create(Kind.STORE, [out, lanes, v])
    b.create(Kind.STORE, [out2, offs, v, mask])
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("debug", [False, True], ids=["fast", "debug"])
@pytest.mark.parametrize("dt", [F32, F16, np.int8], ids=["f32", "f16", "i8"])
def test_masked_off_lanes_never_touch_memory(dt, debug):
    fn = _masked_copy_kernel(dt)
    offs = np.array([0, 10**12, -5, 3, -(10**12), 2, 1 << 40, 7], np.int64)
    mask = np.array([1, 0, 0, 1, 0, 1, 0, 1], np.bool_)
    x = np.arange(8).astype(dt)
    args = [offs, mask, x, np.zeros(8, dt), np.zeros(8, dt)]
    ref = [a.copy() for a in args]
    run_numba(fn, (1, 1, 1), args, debug=debug)
    run_reference(fn, (1, 1, 1), ref)
    want = np.where(mask, x[np.where(mask, offs, 0)], -1).astype(dt)
    same(args[3], want)
    same(args[4], np.where(np.isin(np.arange(8), offs[mask]), x, 0).astype(dt))
    same(args[3], ref[3])
    same(args[4], ref[4])


def test_debug_mode_names_the_op_of_an_out_of_bounds_access():
    fn, b = kernel("oob", [F32, F32])
    lanes = offsets(b, (4,))
    far = b.op(Kind.ADD, [lanes, splat(b, b.constant(100, T.int32), (4,))])
    b.create(Kind.STORE, [fn.args[1], lanes, b.op(Kind.LOAD, [fn.args[0], far])])
    b.create(Kind.RETURN, [])
    with pytest.raises(IndexError, match=r"npu.load at test_numba.py:1"):
        run_numba(fn, (1, 1, 1), [np.zeros(4, F32), np.zeros(4, F32)], debug=True)


def _block_kernel(dt, padding, check):
    """Load a 4x4 block at (r0, c0) of an R x C matrix (shape/strides/offsets as scalar
    arguments), store it to out (4x4), and store it back into y at the same place."""
    fn, b = kernel("blocks", [dt, dt, dt], [T.int32] * 4)
    x, out, y, rows, cols, r0, c0 = fn.args
    one = b.constant(1, T.int32)
    attrs = {"block_shape": (4, 4), "boundary_check": check, "padding": padding}
    blk = b.op(Kind.BLOCK_LOAD, [x, rows, cols, cols, one, r0, c0], attrs)
    b.create(Kind.STORE, [out, offsets(b, (4, 4)), blk])
    b.create(Kind.BLOCK_STORE, [y, rows, cols, cols, one, r0, c0, blk],
             {"block_shape": (4, 4), "boundary_check": check})
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_block_load_store_boundary_check_and_padding(padding):
    fn = _block_kernel(F16, padding, (0, 1))
    rows, cols = 5, 6
    x = np.arange(rows * cols).astype(F16)
    for r0, c0 in [(0, 0), (3, 4), (-2, -1)]:
        args = [x, np.zeros(16, F16), np.zeros(rows * cols, F16), rows, cols, r0, c0]
        ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        run_numba(fn, (1, 1, 1), args)
        run_reference(fn, (1, 1, 1), ref)
        pad = np.nan if padding == "nan" else 0.0
        want = np.full((4, 4), pad, F16)
        back = np.zeros((rows, cols), F16)
        for i in range(4):
            for j in range(4):
                r, c = r0 + i, c0 + j
                if 0 <= r < rows and 0 <= c < cols:
                    want[i, j] = x[r * cols + c]
                    back[r, c] = x[r * cols + c]
        same(args[1].reshape(4, 4), want)
        same(args[2].reshape(rows, cols), back)
        same(args[1], ref[1])
        same(args[2], ref[2])


def test_block_coordinates_outside_an_unchecked_axis_raise_in_debug_mode():
    fn = _block_kernel(F32, "zero", (0,))
    args = [np.zeros(30, F32), np.zeros(16, F32), np.zeros(30, F32), 5, 6, 0, 4]
    with pytest.raises(IndexError, match="no boundary check"):
        run_numba(fn, (1, 1, 1), args, debug=True)


@pytest.mark.parametrize("dt", [F32, F16, np.int32], ids=["f32", "f16", "i32"])
def test_atomic_add_applies_lanes_in_order_and_returns_old_values(dt):
    """8 programs each add 8 lanes into 3 cells (duplicates within a program too)."""
    fn, b = kernel("atomics", [dt, dt, dt])
    mem, vals, old_p = fn.args
    lanes = offsets(b, (8,))
    three = splat(b, b.constant(3, T.int32), (8,))
    cell = b.op(Kind.REM, [lanes, three])
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    base = splat(b, b.op(Kind.MUL, [pid, b.constant(8, T.int32)]), (8,))
    where = b.op(Kind.ADD, [base, lanes])
    mask = b.op(Kind.CMP, [lanes, splat(b, b.constant(7, T.int32), (8,))], {"predicate": "lt"})
    v = b.op(Kind.LOAD, [vals, where])
    old = b.op(Kind.ATOMIC_ADD, [mem, cell, v, mask])
    b.create(Kind.STORE, [old_p, where, old])
    b.create(Kind.RETURN, [])
    vals = (np.arange(64) % 5 + 0.25 if _isfloat(dt) else np.arange(64) % 5).astype(dt)
    args = [np.zeros(3, dt), vals, np.full(64, 99, dt)]
    run = run_numba(fn, (8, 1, 1), args, parallel=True)
    assert run.has_atomics and not run.parallel
    # sequential model: programs in order, lanes in row-major order, rounding per add
    mem = np.zeros(3, dt)
    old = np.zeros(64, dt)
    for p in range(8):
        for i in range(7):
            c = i % 3
            old[p * 8 + i] = mem[c]
            mem[c] = rnd(np.float32(mem[c]) + np.float32(vals[p * 8 + i]), dt) if _isfloat(dt) \
                else mem[c] + vals[p * 8 + i]
    same(args[0], mem)
    same(args[2], old)


# --- control flow ------------------------------------------------------------------------------

def _loop_kernel(step):
    """acc (a 4-tile) and s (a scalar) carried through for i in range(lb, ub, step):
    acc = acc * 0.5 + i; (a, b) swapped every iteration; s += 1."""
    fn, b = kernel("loop", [F32, F32, F32, np.int32], [T.int32, T.int32])
    out_acc, out_a, out_b, out_s, lb, ub = fn.args
    lanes = offsets(b, (4,))
    zeros = splat(b, b.constant(0.0, T.float32), (4,))
    ones = splat(b, b.constant(1.0, T.float32), (4,))
    loop = b.for_loop(lb, ub, b.constant(step, T.int32),
                      [zeros, ones, b.op(Kind.NEG, [ones]), b.constant(0, T.int32)])
    iv, acc, ta, tb, s = loop.body.args
    with b.at(loop.body):
        half = splat(b, b.constant(0.5, T.float32), (4,))
        ivf = splat(b, b.op(Kind.CAST, [iv], {"dtype": T.float32}), (4,))
        nxt = b.op(Kind.ADD, [b.op(Kind.MUL, [acc, half]), ivf])
        s1 = b.op(Kind.ADD, [s, b.constant(1, T.int32)])
        b.create(Kind.YIELD, [nxt, tb, ta, s1])
    acc_r, a_r, b_r, s_r = loop.results
    b.create(Kind.STORE, [out_acc, lanes, acc_r])
    b.create(Kind.STORE, [out_a, lanes, a_r])
    b.create(Kind.STORE, [out_b, lanes, b_r])
    b.create(Kind.STORE, [out_s, b.constant(0, T.int32), s_r])
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("step,lb,ub", [(1, 0, 5), (2, 1, 8), (-1, 4, -1), (-3, 10, 0),
                                        (1, 5, 5), (1, 7, 2), (-1, 0, 3)])
def test_loop_carries_tiles_and_scalars(step, lb, ub):
    fn = _loop_kernel(step)
    args = [np.zeros(4, F32), np.zeros(4, F32), np.zeros(4, F32), np.zeros(1, np.int32), lb, ub]
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_numba(fn, (1, 1, 1), args)
    run_reference(fn, (1, 1, 1), ref)
    acc, a, bb, s = np.float32(0), np.float32(1), np.float32(-1), 0
    for i in range(lb, ub, step):
        acc = np.float32(np.float32(acc * np.float32(0.5)) + np.float32(i))
        a, bb = bb, a
        s += 1
    same(args[0], np.full(4, acc, F32))
    same(args[1], np.full(4, a, F32))
    same(args[2], np.full(4, bb, F32))
    assert args[3][0] == s
    for g, r in zip(args[:4], ref[:4]):
        same(g, r)


def test_loop_step_zero_is_an_error():
    fn = _loop_kernel(0)
    with pytest.raises(ValueError, match="step is 0"):
        run_numba(fn, (1, 1, 1), [np.zeros(4, F32), np.zeros(4, F32), np.zeros(4, F32),
                                  np.zeros(1, np.int32), 0, 4])


# --- fused regions ------------------------------------------------------------------------------

def test_fused_region_reads_broadcast_inputs_in_place():
    """fused(x: RxC, row: 1xC, s: scalar) { u = x * broadcast(row) + splat(s); e = exp(u) }
    with u also reduced (so the region is computed into tiles)."""
    fn, b = kernel("fused", [F32, F32, F32, F32, F32])
    xp, rowp, out_u, out_e, out_sum = fn.args
    x = b.op(Kind.LOAD, [xp, offsets(b, (R, C))])
    row = b.op(Kind.LOAD, [rowp, offsets(b, (1, C))])
    s = b.constant(0.25, T.float32)
    body = Block([x.type, row.type, s.type])
    with b.at(body):
        bx, brow, bs = body.args
        t = b.op(Kind.MUL, [bx, b.op(Kind.BROADCAST, [brow], {"shape": (R, C)})])
        u = b.op(Kind.ADD, [t, b.op(Kind.SPLAT, [bs], {"shape": (R, C)})])
        e = b.op(Kind.EXP, [u])
        b.create(Kind.YIELD, [u, e])
    fused = b.create(Kind.FUSED, [x, row, s], result_types=[u.type, e.type], regions=[body])
    u_r, e_r = fused.results
    b.create(Kind.STORE, [out_u, offsets(b, (R, C)), u_r])
    b.create(Kind.STORE, [out_e, offsets(b, (R, C)), e_r])
    total = b.op(Kind.REDUCE, [b.op(Kind.REDUCE, [e_r], {"kind": "sum", "axis": 1})],
                 {"kind": "sum", "axis": 0})
    b.create(Kind.STORE, [out_sum, b.constant(0, T.int32), total])
    b.create(Kind.RETURN, [])
    rng = np.random.default_rng(3)
    xv = rng.uniform(-2, 2, (R, C)).astype(F32)
    rv = rng.uniform(-2, 2, (1, C)).astype(F32)
    args = [xv.reshape(-1), rv.reshape(-1), np.zeros(R * C, F32), np.zeros(R * C, F32),
            np.zeros(1, F32)]
    run = run_numba(fn, (1, 1, 1), args)
    u = (xv * rv + np.float32(0.25)).astype(F32)
    same(args[2].reshape(R, C), u)
    same(args[3].reshape(R, C), np.exp(u), tol=2 * EPS[F32])
    same(args[4], np.array([np.exp(u.astype(np.float64)).sum()], F32), tol=1e-5)
    # one nest for the region; the broadcast row and the splat are never materialised
    fused_code = run.source.split("# npu.fused")[1].split("# npu.")[0]
    assert fused_code.count("for ") == 2 and "np.empty" not in fused_code
    assert "np.empty(64" not in run.source.replace(f"np.empty({R * C}", "")  # no (R,C) row copy


def test_unfused_elementwise_and_fused_give_the_same_bits():
    """The same f16 chain, once as separate ops and once inside npu.fused."""
    def build(fuse):
        fn, b = kernel("chain", [F16, F16])
        x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (R, C))])
        if fuse:
            body = Block([x.type])
            with b.at(body):
                y = b.op(Kind.SIGMOID, [b.op(Kind.MUL, [body.args[0], body.args[0]])])
                b.create(Kind.YIELD, [y])
            y = b.create(Kind.FUSED, [x], result_types=[y.type], regions=[body]).result
        else:
            y = b.op(Kind.SIGMOID, [b.op(Kind.MUL, [x, x])])
        b.create(Kind.STORE, [fn.args[1], offsets(b, (R, C)), y])
        b.create(Kind.RETURN, [])
        return fn
    x = inputs(F16)[0].reshape(-1)
    outs = []
    for fuse in (False, True):
        out = np.zeros(R * C, F16)
        run_numba(build(fuse), (1, 1, 1), [x, out])
        outs.append(out)
    same(outs[0], outs[1])


# --- the Cube, selection ---------------------------------------------------------------------

@pytest.mark.parametrize("m,k,n", [(4, 8, 16), (33, 63, 30)], ids=["even", "odd"])
@pytest.mark.parametrize("dt", [F16, BF16, F32, np.int8], ids=["f16", "bf16", "f32", "i8"])
def test_dot_accumulates_in_f32_or_i32(dt, m, k, n):
    acc_dt = np.int32 if dt is np.int8 else F32
    fn, b = kernel("dot", [dt, dt, acc_dt, acc_dt])
    a = b.op(Kind.LOAD, [fn.args[0], offsets(b, (m, k))])
    bb = b.op(Kind.LOAD, [fn.args[1], offsets(b, (k, n))])
    acc = b.op(Kind.LOAD, [fn.args[2], offsets(b, (m, n))])
    b.create(Kind.STORE, [fn.args[3], offsets(b, (m, n)), b.op(Kind.DOT, [a, bb, acc])])
    b.create(Kind.RETURN, [])
    rng = np.random.default_rng(5)
    if dt is np.int8:
        av = rng.integers(-128, 128, (m, k)).astype(dt)
        bv = rng.integers(-128, 128, (k, n)).astype(dt)
        accv = rng.integers(-2**31, 2**31, (m, n)).astype(np.int32)
        want = wrap(accv.astype(object) + av.astype(object) @ bv.astype(object), np.int32)
    else:
        av = rng.uniform(-1, 1, (m, k)).astype(dt)
        bv = rng.uniform(-1, 1, (k, n)).astype(dt)
        accv = rng.uniform(-1, 1, (m, n)).astype(F32)
        want = (accv.astype(np.float64) + av.astype(np.float64) @ bv.astype(np.float64))
    args = [av.reshape(-1), bv.reshape(-1), accv.reshape(-1), np.zeros(m * n, acc_dt)]
    run_numba(fn, (1, 1, 1), args)
    got = args[3].reshape(m, n)
    if dt is np.int8:
        same(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=k * 2.0 ** -22)


def test_topk_ties_go_to_the_lower_index_and_nan_ranks_first():
    row = np.array([1.0, 3.0, np.nan, 3.0, -np.inf, np.nan, 3.0, 2.0], F32)
    fn, b = kernel("topk", [F32, F32, np.int32])
    x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (8,))])
    for k in (5, 8):
        vals, idx = b.create(Kind.TOPK, [x], {"k": k, "axis": 0}).results
        base = b.constant(0 if k == 5 else 5, T.int32)
        where = b.op(Kind.ADD, [splat(b, base, (k,)), offsets(b, (k,))])
        b.create(Kind.STORE, [fn.args[1], where, vals])
        b.create(Kind.STORE, [fn.args[2], where, idx])
    b.create(Kind.RETURN, [])
    args = [row, np.zeros(13, F32), np.zeros(13, np.int32)]
    run_numba(fn, (1, 1, 1), args)
    order = [2, 5, 1, 3, 6, 7, 0, 4]        # NaNs by index, then 3s by index, ...
    np.testing.assert_array_equal(args[2], order[:5] + order)
    same(args[1], row[order[:5] + order])


def test_sort_is_stable_for_signed_zeros():
    row = np.array([0.0, -0.0, 1.0, -0.0, 0.0, np.nan, -1.0, 0.0], F32)
    got = []
    for desc in (False, True):
        fn, b = kernel("sort", [F32, F32])
        x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (8,))])
        b.create(Kind.STORE, [fn.args[1], offsets(b, (8,)),
                              b.op(Kind.SORT, [x], {"axis": 0, "descending": desc})])
        b.create(Kind.RETURN, [])
        out = np.zeros(8, F32)
        run_numba(fn, (1, 1, 1), [row, out])
        got.append(out)
    want = np.sort(row, kind="stable")
    same(got[0], want)
    same(got[1], want[::-1])


# --- numerics ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dt,tie", [(F16, 2.0 ** -11), (BF16, 2.0 ** -8)], ids=["f16", "bf16"])
def test_halves_round_after_every_op(dt, tie):
    """1 + tie + tie: each add is a tie that rounds back to 1 (even); rounding once at
    the end would give 1 + ulp."""
    fn, b = kernel("ties", [dt, dt])
    x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (2,))])
    t = splat(b, b.constant(tie, irt(dt)), (2,))
    b.create(Kind.STORE, [fn.args[1], offsets(b, (2,)), b.op(Kind.ADD, [b.op(Kind.ADD, [x, t]), t])])
    b.create(Kind.RETURN, [])
    out = np.zeros(2, dt)
    run_numba(fn, (1, 1, 1), [np.ones(2, dt), out])
    assert float(out[0]) == 1.0


def test_exp_f32_is_within_one_ulp():
    from numba import njit

    from npujit.backends.numba.scalar_lib import exp_f32

    @njit(cache=True)
    def apply(xs, out):
        for i in range(xs.shape[0]):
            out[i] = exp_f32(xs[i])
    xs = np.concatenate([np.linspace(-104, 89, 1 << 21, dtype=F32),
                         np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72283, 88.7229,
                                   -87.33655, -103.9, -103.98, 1e-30], F32)])
    out = np.empty_like(xs)
    apply(xs, out)
    exact = np.exp(xs.astype(np.float64))
    with np.errstate(all="ignore"):
        r32 = exact.astype(F32)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(xs))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(r32))
    np.testing.assert_array_equal(out == 0, r32 == 0)
    ok = np.isfinite(r32) & (r32 != 0)
    ulps = np.abs(out[ok] - exact[ok]) / np.spacing(r32[ok]).astype(np.float64)
    assert ulps.max() <= 1.0


def test_half_scalar_arguments_round_once():
    fn, b = kernel("scalar_arg", [F16], [T.float16])
    b.create(Kind.STORE, [fn.args[0], b.constant(0, T.int32), fn.args[1]])
    b.create(Kind.RETURN, [])
    v = 1.0 + 2.0 ** -11 + 2.0 ** -30   # just above a tie: f64 -> f16 rounds up
    out = np.zeros(1, F16)
    run_numba(fn, (1, 1, 1), [out, v])
    assert out[0] == np.float16(v)


# --- runtime: launch, threads, cache, interpreter mode -----------------------------------------

def _vadd(n_block=128, name="vadd"):
    """out = x + y on f16, masked against n."""
    fn, b = kernel(name, [F16, F16, F16], [T.int32])
    x, y, out, n = fn.args
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    start = splat(b, b.op(Kind.MUL, [pid, b.constant(n_block, T.int32)]), (n_block,))
    offs = b.op(Kind.ADD, [start, offsets(b, (n_block,))])
    mask = b.op(Kind.CMP, [offs, splat(b, n, (n_block,))], {"predicate": "lt"})
    s = b.op(Kind.ADD, [b.op(Kind.LOAD, [x, offs, mask]), b.op(Kind.LOAD, [y, offs, mask])])
    b.create(Kind.STORE, [out, offs, s, mask])
    b.create(Kind.RETURN, [])
    return fn


def test_parallel_launch_matches_serial_and_handles_strided_arrays():
    n = 5000
    rng = np.random.default_rng(1)
    x = rng.uniform(-8, 8, n).astype(F16)
    y = rng.uniform(-8, 8, n).astype(F16)
    grid = ((n + 127) // 128, 1, 1)
    want = (x.astype(F32) + y.astype(F32)).astype(F16)
    serial = NumbaBackend().compile(_vadd(), {"parallel": False})
    threaded = NumbaBackend().compile(_vadd(), {"parallel": True, "num_threads": 3})
    for run in (serial, threaded):
        out = np.zeros(n, F16)
        run(grid, [x, y, out, n])
        same(out, want)
    big = np.zeros(2 * n, F16)
    threaded(grid, [x, y, big[::2], n])             # a strided view: its own variant
    same(big[::2], want)
    assert not big[1::2].any()


def test_wrong_argument_dtype_is_named():
    run = NumbaBackend().compile(_vadd(), {})
    with pytest.raises(TypeError, match="vadd: argument 'p1' must be a 1-D float16 array"):
        run((1, 1, 1), [np.zeros(4, F16), np.zeros(4, F32), np.zeros(4, F16), 4])
    with pytest.raises(TypeError, match="vadd takes 4 arguments"):
        run((1, 1, 1), [np.zeros(4, F16), np.zeros(4, F16), np.zeros(4, F16)])


def test_source_is_plain_python_with_source_lines():
    run = NumbaBackend().compile(_vadd(), {})
    assert "def vadd(nprog0, nprog1, nprog2, first, last" in run.source
    assert "# test_numba.py:1" in run.source
    compile(run.source, "<check>", "exec")
    assert run.path and os.path.exists(run.path)


def test_device_print_format(capfd):
    fn, b = kernel("printer", [F32])
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 1})
    b.create(Kind.PRINT, [pid, b.op(Kind.LOAD, [fn.args[0], offsets(b, (2, 2))])], {"prefix": "v:"})
    b.create(Kind.RETURN, [])
    run_numba(fn, (1, 2, 1), [np.arange(4, dtype=F32)], parallel=False)
    out = capfd.readouterr().out
    assert "[pid (0, 1, 0)] v: 1" in out
    assert "[pid (0, 0, 0)] v: [[0. 1.]" in out


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {testdir!r})
    import test_numba as t
    from npujit.backends.numba import NumbaBackend
    run = NumbaBackend().compile(t._vadd(name={name!r}), {{}})
    x = np.arange(300).astype(np.float16); out = np.zeros(300, np.float16)
    run((3, 1, 1), [x, x, out, 300])
    hits = sum(run._entry.stats.cache_hits.values()) if run.jit else -1
    print(json.dumps({{"sum": float(out.astype(np.float64).sum()), "hits": hits}}))
""")


def _child(env_extra, name):
    env = dict(os.environ, **env_extra)
    code = _CHILD.format(testdir=os.path.dirname(__file__), name=name)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    import json
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_second_process_reuses_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    run = NumbaBackend().compile(_vadd(name="vadd_cached"), {})   # writes the cache
    assert run.path.startswith(str(tmp_path))
    child = _child({"NPUJIT_CACHE_DIR": str(tmp_path)}, "vadd_cached")
    numba_dir = os.environ.get("NUMBA_CACHE_DIR") or str(tmp_path / "numba" / "__pycache__")
    listing = sorted(str(p) for p in __import__("pathlib").Path(numba_dir).rglob("*vadd_cached*"))
    assert child["hits"] >= 1, f"no cache hit in the second process; cache files: {listing}"
    assert child["sum"] == float((np.arange(300).astype(F16).astype(np.float64) * 2).sum())


def test_disable_jit_runs_the_same_code_in_the_interpreter(tmp_path):
    child = _child({"NPUJIT_CACHE_DIR": str(tmp_path), "NUMBA_DISABLE_JIT": "1"}, "vadd")
    assert child["hits"] == -1
    assert child["sum"] == float((np.arange(300).astype(F16).astype(np.float64) * 2).sum())


def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NPUJIT_DISABLE_CACHE", "1")
    run = NumbaBackend().compile(_vadd(64), {})
    out = np.zeros(64, F16)
    run((1, 1, 1), [np.ones(64, F16), np.ones(64, F16), out, 64])
    assert (out == 2).all()
    assert not any(tmp_path.iterdir())


def test_loop_yielding_a_transpose_of_its_own_tile():
    """acc = trans(acc) + acc[0,0]-free update: reading acc at other elements while
    writing it must see the previous iteration's values."""
    fn, b = kernel("transloop", [F32, F32])
    init = b.op(Kind.LOAD, [fn.args[0], offsets(b, (4, 4))])
    loop = b.for_loop(b.constant(0, T.int32), b.constant(3, T.int32), b.constant(1, T.int32), [init])
    _, acc = loop.body.args
    with b.at(loop.body):
        one = splat(b, b.constant(1.0, T.float32), (4, 4))
        b.create(Kind.YIELD, [b.op(Kind.ADD, [b.op(Kind.TRANS, [acc], {"perm": (1, 0)}), one])])
    b.create(Kind.STORE, [fn.args[1], offsets(b, (4, 4)), loop.result])
    b.create(Kind.RETURN, [])
    x = np.arange(16, dtype=F32)
    out = np.zeros(16, F32)
    run_numba(fn, (1, 1, 1), [x, out])
    want = x.reshape(4, 4)
    for _ in range(3):
        want = want.T + 1
    same(out.reshape(4, 4), want.astype(F32))


def test_program_ids_of_a_3d_grid():
    fn, b = kernel("ids", [np.int32])
    ids = [b.op(Kind.PROGRAM_ID, [], {"axis": a}) for a in range(3)]
    nps = [b.op(Kind.NUM_PROGRAMS, [], {"axis": a}) for a in range(3)]
    # linear id = x + nx * (y + ny * z); store x, y, z, nx, ny, nz at 6 * id + k
    lin = b.op(Kind.ADD, [ids[0], b.op(Kind.MUL, [nps[0], b.op(Kind.ADD, [ids[1], b.op(Kind.MUL, [nps[1], ids[2]])])])])
    base = b.op(Kind.MUL, [lin, b.constant(6, T.int32)])
    for k, v in enumerate(ids + nps):
        b.create(Kind.STORE, [fn.args[0], b.op(Kind.ADD, [base, b.constant(k, T.int32)]), v])
    b.create(Kind.RETURN, [])
    grid = (3, 2, 4)
    out = np.full(6 * 24, -1, np.int32)
    run_numba(fn, grid, [out], parallel=True, num_threads=2)
    want = [(x, y, z) + grid for z in range(4) for y in range(2) for x in range(3)]
    np.testing.assert_array_equal(out.reshape(24, 6), np.array(want, np.int32))


def test_a_damaged_cache_file_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    run = NumbaBackend().compile(_vadd(64, name="vadd_damaged"), {})
    with open(run.path, "w") as f:
        f.write("garbage")
    sys.modules.pop(next(m for m in sys.modules if m.startswith("npujit_numba_")
                         and getattr(sys.modules[m], "__file__", None) == run.path))
    again = NumbaBackend().compile(_vadd(64, name="vadd_damaged"), {})
    with open(again.path) as f:
        assert f.read() == again.source
    out = np.zeros(64, F16)
    again((1, 1, 1), [np.ones(64, F16), np.ones(64, F16), out, 64])
    assert (out == 2).all()


@pytest.mark.parametrize("half", [F16, BF16], ids=["f16", "bf16"])
def test_half_encoders_match_numpy_bit_for_bit(half):
    """Every half value, the f32 midpoints between neighbours (the ties) and their f32
    neighbours, plus 1M random f32 bit patterns (NaN payloads included).  The encoders
    were also checked on all 2**32 f32 patterns once (not in the suite: ~15 min)."""
    from numba import njit

    from npujit.backends.numba import halfprec as hp

    name = "f16" if half is F16 else "bf16"
    encode, rounder = getattr(hp, f"f32_to_{name}_bits"), getattr(hp, f"round_{name}")

    @njit(cache=True)
    def apply(xs, bits, rounded):
        for i in range(xs.shape[0]):
            bits[i] = encode(xs[i])
            rounded[i] = rounder(xs[i])
    values = np.arange(1 << 16, dtype=np.uint16).view(half).astype(F32)
    values = np.sort(values[np.isfinite(values)])
    mids = ((values[:-1].astype(np.float64) + values[1:]) / 2).astype(F32)
    rng = np.random.default_rng(11)
    xs = np.concatenate([values, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                         rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(F32)])
    bits = np.empty(xs.size, np.uint16)
    rounded = np.empty(xs.size, F32)
    apply(xs, bits, rounded)
    with np.errstate(all="ignore"):
        want = xs.astype(half)
    np.testing.assert_array_equal(bits, want.view(np.uint16))
    same(rounded, want.astype(F32))
