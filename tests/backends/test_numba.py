"""The numba backend against independent numpy expressions and the reference backend.

Most op kinds are checked in one kernel per dtype (``OPS`` below): it loads two tiles,
applies every op that is defined on the dtype and stores each result to its own output,
so the table costs a few numba compiles per dtype (``CHUNK`` cases each; nothing on a
rerun: disk cache).
Expectations are written from docs/semantics.md with numpy; the same kernel also runs on
the reference backend and the two must agree.

Comparison: ints and bools bit for bit; floats bit for bit (NaN matching NaN) for
arithmetic, casts, shape ops, max/min/sort/topk; transcendentals and pow within 2 ulp
of the dtype, relative (libm / the vectorised exp vs numpy's own kernels); float sums,
products and scans within 4 ulp (f32 accumulation in another order).  Single features
(memory, loops, fused regions, dot) are in test_numba_ops.py, the runtime in
test_numba_runtime.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from npujit.backends import get_backend
from npujit.backends.numba import NumbaBackend
from npujit.ir import Kind
from npujit.ir import types as T

from numba_support import (BF16, EPS, F16, F32, ReferenceBackend, _isfloat, f32, irt, kernel,
                           offsets, rnd, run_numba, run_reference, same, wrap)

R, C = 4, 16                      # tile shape of the op table
_compiled: dict = {}              # dtype -> results of its table kernels, run once
# Cases per table kernel: numba's compile time grows faster than the kernel, so eight
# kernels of 8 cases compile in about half the time of one of 65 (f32: 10.6 s vs 19.2 s).
CHUNK = 8


# --- inputs -------------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 1e-6, 65504.0, 7e4, np.inf,
           -np.inf, np.nan, 1.0 / 3]


def inputs(dt):
    rng = np.random.default_rng(7)
    if np.dtype(dt).kind == "u":
        info = np.iinfo(dt)
        x = rng.integers(0, 200, (R, C)).astype(dt)
        y = rng.integers(0, 9, (R, C)).astype(dt)
        x.flat[:4] = [info.max, info.max - 1, 0, 1 << (info.bits - 1)]
        y.flat[:6] = [0, 1, 3, info.bits - 1, info.bits, info.max]  # x // 0, shifts out of range
        return x, y
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


# --- the op table -------------------------------------------------------------------------

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
        if kind == "u":        # unsigned: the few cases of UNSIGNED_CASES only
            return self.name in UNSIGNED_CASES
        return {"f": "f", "V": "f", "i": "i", "b": "b"}.get(kind, "f") in self.kinds


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


def _cdiv(a, c):
    """C's integer division on Python ints: the quotient toward zero."""
    q = abs(a) // abs(c)
    return q if (a < 0) == (c < 0) else -q


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
    if kind in ("max", "min"):      # NaN skipped, as Triton's max (docs/semantics.md)
        return (np.fmax if kind == "max" else np.fmin).reduce(xf, axis).astype(x.dtype)
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
    Case("idiv", binop(Kind.IDIV), ibin(lambda a, c: _cdiv(a, c) if c else 0), "i"),
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
        return fbin(np.fmod)(x, y) if isf else ibin(lambda a, c: a - c * _cdiv(a, c) if c else 0)(x, y)
    if n in ("maximum", "minimum"):
        return (np.fmax if n == "maximum" else np.fmin)(x, y)
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
        row = _reduce(x, "max", 0)[None, :]
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


DTYPES = [F32, F16, BF16, np.int8, np.int32, np.int64, np.bool_, np.uint32]
# uint32 runs one table kernel of the ops where unsigned differs from signed (division,
# remainder, logical shift, compares, wrap-around negation, max and the sum's width).
UNSIGNED_CASES = ("idiv", "rem", "shl", "shr", "cmp_lt", "neg", "max_axis0", "sum_axis1")


def _results(case, x, y):
    want = _expect(case, x, y)
    return want if isinstance(want, tuple) else (want,)


def _run_table(dt):
    """Build, run (numba and reference) and return {case: (got, ref, want)} for ``dt``."""
    if dt in _compiled:
        return _compiled[dt]
    x, y = inputs(dt)
    cases = [c for c in OPS if c.applies(dt)]
    table = {}
    for i in range(0, len(cases), CHUNK):
        table.update(_run_cases(dt, cases[i:i + CHUNK], x, y, i // CHUNK))
    _compiled[dt] = table
    return table


def _run_cases(dt, cases, x, y, part, run=run_numba):
    """One table kernel for ``cases``, launched with ``run`` (numba's by default; the llvm
    backend's table reuses it, tests/backends/test_llvm.py): {case: (got, ref, want, case)}."""
    wants = {c.name: _results(c, x, y) for c in cases}
    out_dtypes = []
    for c in cases:
        out_dtypes += [np.dtype(w.dtype) if w is not None else None for w in wants[c.name]]
    fn, b = kernel(f"table_{np.dtype(dt).name}_{part}",
                   [dt, dt] + [d or np.int64 for d in out_dtypes])
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
    run(fn, (1, 1, 1), args)
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
