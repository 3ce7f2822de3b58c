"""The elementwise ops on one element: LLVM instructions on compute-type values.

``apply(w, op, xs, dts)`` writes what ``op`` (an elementwise kind) does to the operand
values ``xs`` (SSA names or constants, compute types, dtypes ``dts``) and returns the
result's name.  The meaning of every op is the reference interpreter's
(backends/reference/semantics_elementwise.py, docs/semantics.md); where LLVM's own
instruction means something else, the code says how it gets there:

* ``sdiv``/``srem`` are undefined for a zero divisor and for ``INT_MIN / -1``: the
  divisor is replaced by 1 there and the result fixed (``x // 0 = 0``, ``x % 0 = 0``,
  ``INT_MIN // -1`` wraps to ``INT_MIN``);
* shifts by a count outside ``[0, bits)`` are poison in LLVM and defined in npujit (0, or
  the sign fill for ``>>``);
* ``maximum``/``minimum`` are the reference's ``fmax_num``: ``(a > b) | (b != b) ? a : b``;
* float -> int casts saturate (``llvm.fptosi.sat``: NaN -> 0, out of range -> the limit);
* the f32 transcendentals are computed in f64 by the C library and rounded once to f32
  (within the table's 2 ulp of numpy's own f32 kernels, tests/backends/llvm).

Example::

    >>> from npujit.ir.types import float32
    >>> w = Writer()
    >>> apply_kind(w, Kind.ADD, {}, ["%a", "%b"], [float32, float32], float32)
    '%v.1'
"""
from __future__ import annotations

import math

from npujit.ir import Kind
from npujit.ir.types import DType, float32

from . import halfprec
from .ir_text import Writer, compute_type, literal

# The C library functions LLVM calls for f64 math (declared in every module).
LIBM = ("exp", "exp2", "log", "log2", "sin", "cos", "tanh", "erf", "pow", "fmod")
DECLARATIONS = "\n".join(
    [f"declare double @{f}(double{', double' if f in ('pow', 'fmod') else ''})"
     for f in LIBM]
    + [f"declare {t} @llvm.{f}.{s}({t})" for f in ("sqrt", "fabs", "floor", "ceil")
       for t, s in (("float", "f32"), ("double", "f64"))]
    + [f"declare i{b} @llvm.fpto{s}i.sat.i{b}.{f}({t})" for b in (8, 16, 32, 64)
       for s in "su" for t, f in (("float", "f32"), ("double", "f64"))])

_FCMP = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_ICMP = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def apply(w: Writer, op, xs: list[str], dts: list[DType]) -> str:
    """The result of elementwise ``op`` on element values ``xs``."""
    return apply_kind(w, op.kind, op.attrs, xs, dts, op.results[0].type.dtype)


def apply_kind(w: Writer, kind: Kind, attrs: dict, xs: list[str], dts: list[DType],
               out: DType) -> str:
    """``apply`` for a kind and its attributes."""
    r = _apply(w, kind, attrs, xs, dts, out)
    if out is not None and out.is_narrow_float and kind not in _EXACT_ON_HALVES:
        return halfprec.round_to(w, r, out)     # computed in f32, rounded once per op
    return r


# Ops whose f32 result on 16-bit floats is already one of theirs (no rounding needed).
_EXACT_ON_HALVES = frozenset({Kind.CMP, Kind.CAST, Kind.BITCAST, Kind.SELECT, Kind.NEG,
                              Kind.ABS, Kind.MAXIMUM, Kind.MINIMUM, Kind.FLOOR, Kind.CEIL})


def _apply(w: Writer, kind: Kind, attrs: dict, xs: list[str], dts: list[DType],
           out: DType) -> str:
    if kind is Kind.CMP:
        return _cmp(w, attrs["predicate"], xs[0], xs[1], dts[0])
    if kind is Kind.SELECT:
        t = compute_type(dts[1])
        return w.op("select i1", xs[0], f"{t} {xs[1]}", f"{t} {xs[2]}")
    if kind is Kind.CAST:
        return cast(w, xs[0], dts[0], attrs["dtype"])
    if kind is Kind.BITCAST:
        return bitcast(w, xs[0], dts[0], out)
    d = dts[0]
    f = _FLOAT.get(kind) if d.is_float else _INT.get(kind)
    if f is None:
        raise NotImplementedError(kind)
    return f(w, xs, d, attrs)


# --- floats ---------------------------------------------------------------------------

def _fbin(name):
    def f(w, xs, d, attrs):
        return w.op(f"{name} {compute_type(d)}", xs[0], xs[1])
    return f


def _libm(name):
    """A C library function of f64, for f32 through f64 (one rounding back)."""
    def f(w, xs, d, attrs):
        return _call(w, name, xs, d)
    return f


def _call(w: Writer, name: str, xs: list[str], d: DType) -> str:
    args = [_to_double(w, x, d) for x in xs]
    r = w.assign(f"call double @{name}({', '.join('double ' + a for a in args)})")
    return r if d.itemsize == 8 else w.assign(f"fptrunc double {r} to float")


def _to_double(w: Writer, x: str, d: DType) -> str:
    return x if d.itemsize == 8 else w.assign(f"fpext float {x} to double")


def _intrinsic(name):
    def f(w, xs, d, attrs):
        t = compute_type(d)
        return w.assign(f"call {t} @llvm.{name}.{'f64' if d.itemsize == 8 else 'f32'}"
                        f"({t} {xs[0]})")
    return f


def _c(d: DType, v: float) -> str:
    """A constant of a formula, in ``d``'s compute precision (f32 for the halves)."""
    return literal(v, d if d.itemsize == 8 else float32)


def _fmaxmin(greater: bool):
    def f(w, xs, d, attrs):
        t = compute_type(d)
        a, b = xs
        better = w.op(f"fcmp {'ogt' if greater else 'olt'} {t}", a, b)
        nan_b = w.op(f"fcmp uno {t}", b, b)
        take_a = w.op("or i1", better, nan_b)
        return w.op("select i1", take_a, f"{t} {a}", f"{t} {b}")
    return f


def _exp(w, x, d):
    return _call(w, "exp", [x], d) if d.itemsize == 8 else _exp_f32(w, x)


# exp of an f32 in f32 arithmetic only, without branches, so that loops calling it
# vectorise (no vector math library is linked): the numba backend's algorithm
# (backends/numba/scalar_lib.py ``exp_f32``, which says how it is derived; at most 1.01
# ulp from the correctly rounded result), with the same constants.
_EXP = dict(log2e=1.4426950408889634, rounder=12582912.0, ln2_hi=0.693359375,
            ln2_lo=-2.12194440e-4, lo=-104.0, hi=89.0,
            p=(1.3814539415761828e-3, 8.36874544620514e-3, 4.166838899254799e-2,
               1.666652113199234e-1, 4.999999403953552e-1))


def _exp_f32(w: Writer, x: str) -> str:
    def c(v):
        return literal(v, float32)

    def fma(a, b, add):     # a * b + add, contractible into one fused multiply-add
        return w.op("fadd contract float", w.op("fmul contract float", a, b), add)
    k = _EXP
    xc = w.op("select i1", w.op("fcmp olt float", x, c(k["lo"])), f"float {c(k['lo'])}",
              f"float {x}")
    xc = w.op("select i1", w.op("fcmp ogt float", xc, c(k["hi"])), f"float {c(k['hi'])}",
              f"float {xc}")
    t = fma(xc, c(k["log2e"]), c(k["rounder"]))
    n = w.op("fsub float", t, c(k["rounder"]))
    r = w.op("fsub contract float", w.op("fsub contract float", xc,
                                         w.op("fmul contract float", n, c(k["ln2_hi"]))),
             w.op("fmul contract float", n, c(k["ln2_lo"])))
    p4, p3, p2, p1, p0 = (c(v) for v in k["p"])
    q = fma(fma(fma(fma(p4, r, p3), r, p2), r, p1), r, p0)
    y = fma(q, w.op("fmul contract float", r, r), r)
    ni = w.op("sub i32", w.assign(f"bitcast float {t} to i32"), "1262485504")  # 0x4B400000
    n1 = w.op("ashr i32", ni, "1")
    s1 = w.assign(f"bitcast i32 {w.op('shl i32', w.op('add i32', n1, '127'), '23')} to float")
    s2 = w.assign(f"bitcast i32 {w.op('shl i32', w.op('add i32', w.op('sub i32', ni, n1), '127'), '23')} to float")
    return w.op("fmul contract float", fma(y, s1, s1), s2)


def _neg_exp_plus_one(w, x, d):
    """``1 + exp(-x)`` in ``d``'s precision."""
    t = compute_type(d)
    e = _exp(w, w.assign(f"fneg {t} {x}"), d)
    return w.op(f"fadd {t}", _c(d, 1.0), e)


def _sigmoid(w, xs, d, attrs):
    return w.op(f"fdiv {compute_type(d)}", _c(d, 1.0), _neg_exp_plus_one(w, xs[0], d))


def _silu(w, xs, d, attrs):
    return w.op(f"fdiv {compute_type(d)}", xs[0], _neg_exp_plus_one(w, xs[0], d))


def _rsqrt(w, xs, d, attrs):
    s = _intrinsic("sqrt")(w, xs, d, attrs)
    return w.op(f"fdiv {compute_type(d)}", _c(d, 1.0), s)


def _gelu(w, xs, d, attrs):
    """The reference's formulas, step by step in ``d``'s precision."""
    t = compute_type(d)
    x = xs[0]
    if attrs.get("approximate", "none") == "tanh":
        x3 = w.op(f"fmul {t}", w.op(f"fmul {t}", x, x), x)
        inner = w.op(f"fadd {t}", x, w.op(f"fmul {t}", _c(d, 0.044715), x3))
        inner = w.op(f"fmul {t}", _c(d, math.sqrt(2.0 / math.pi)), inner)
        g = _call(w, "tanh", [inner], d)
    else:
        g = _call(w, "erf", [w.op(f"fdiv {t}", x, _c(d, math.sqrt(2.0)))], d)
    half_x = w.op(f"fmul {t}", _c(d, 0.5), x)
    return w.op(f"fmul {t}", half_x, w.op(f"fadd {t}", _c(d, 1.0), g))


_FLOAT = {
    Kind.ADD: _fbin("fadd"), Kind.SUB: _fbin("fsub"), Kind.MUL: _fbin("fmul"),
    Kind.DIV: _fbin("fdiv"), Kind.REM: _libm("fmod"), Kind.POW: _libm("pow"),
    Kind.MAXIMUM: _fmaxmin(True), Kind.MINIMUM: _fmaxmin(False),
    Kind.NEG: lambda w, xs, d, a: w.assign(f"fneg {compute_type(d)} {xs[0]}"),
    Kind.ABS: _intrinsic("fabs"), Kind.SQRT: _intrinsic("sqrt"),
    Kind.FLOOR: _intrinsic("floor"), Kind.CEIL: _intrinsic("ceil"),
    Kind.EXP: lambda w, xs, d, a: _exp(w, xs[0], d), Kind.EXP2: _libm("exp2"), Kind.LOG: _libm("log"),
    Kind.LOG2: _libm("log2"), Kind.SIN: _libm("sin"), Kind.COS: _libm("cos"),
    Kind.TANH: _libm("tanh"), Kind.ERF: _libm("erf"), Kind.RSQRT: _rsqrt,
    Kind.SIGMOID: _sigmoid, Kind.SILU: _silu, Kind.GELU: _gelu,
}


# --- ints and bools --------------------------------------------------------------------

def _ibin(name):
    def f(w, xs, d, attrs):
        return w.op(f"{name} {compute_type(d)}", xs[0], xs[1])
    return f


def _min_int(d: DType) -> str:
    return str(-(1 << (d.itemsize * 8 - 1)))


def _divide(remainder: bool):
    """``idiv``/``rem`` with the reference's answers where LLVM's are undefined."""
    def f(w, xs, d, attrs):
        t = compute_type(d)
        a, b = xs
        zero = w.op(f"icmp eq {t}", b, "0")
        if d.is_unsigned:
            safe = w.op("select i1", zero, f"{t} 1", f"{t} {b}")
            r = w.op(f"{'urem' if remainder else 'udiv'} {t}", a, safe)
            return w.op("select i1", zero, f"{t} 0", f"{t} {r}")
        wraps = w.op("and i1", w.op(f"icmp eq {t}", a, _min_int(d)),
                     w.op(f"icmp eq {t}", b, "-1"))
        bad = w.op("or i1", zero, wraps)
        safe = w.op("select i1", bad, f"{t} 1", f"{t} {b}")
        r = w.op(f"{'srem' if remainder else 'sdiv'} {t}", a, safe)
        if remainder:
            return r      # a % 1 == 0: right for a zero divisor and for INT_MIN % -1
        # a // 1 == a: INT_MIN // -1 wraps to INT_MIN; a zero divisor gives 0
        return w.op("select i1", zero, f"{t} 0", f"{t} {r}")
    return f


def _shift(left: bool):
    def f(w, xs, d, attrs):
        t = compute_type(d)
        a, n = xs
        bits = str(d.itemsize * 8)
        inside = w.op(f"icmp ult {t}", n, bits)   # unsigned: a negative count is huge
        if left:
            r = w.op(f"shl {t}", a, n)
            return w.op("select i1", inside, f"{t} {r}", f"{t} 0")
        if d.is_unsigned:
            r = w.op(f"lshr {t}", a, n)
            return w.op("select i1", inside, f"{t} {r}", f"{t} 0")
        r = w.op(f"ashr {t}", a, n)
        fill = w.op(f"ashr {t}", a, str(d.itemsize * 8 - 1))
        return w.op("select i1", inside, f"{t} {r}", f"{t} {fill}")
    return f


def _imaxmin(greater: bool):
    def f(w, xs, d, attrs):
        t = compute_type(d)
        sign = "u" if d.is_unsigned or d.is_bool else "s"
        better = w.op(f"icmp {sign}{'gt' if greater else 'lt'} {t}", xs[0], xs[1])
        return w.op("select i1", better, f"{t} {xs[0]}", f"{t} {xs[1]}")
    return f


def _iabs(w, xs, d, attrs):
    t = compute_type(d)
    if d.is_unsigned:
        return xs[0]
    neg = w.op(f"icmp slt {t}", xs[0], "0")
    return w.op("select i1", neg, f"{t} {w.op(f'sub {t}', '0', xs[0])}", f"{t} {xs[0]}")


_INT = {
    Kind.ADD: _ibin("add"), Kind.SUB: _ibin("sub"), Kind.MUL: _ibin("mul"),
    Kind.IDIV: _divide(False), Kind.REM: _divide(True),
    Kind.MAXIMUM: _imaxmin(True), Kind.MINIMUM: _imaxmin(False),
    Kind.AND: _ibin("and"), Kind.OR: _ibin("or"), Kind.XOR: _ibin("xor"),
    Kind.NOT: lambda w, xs, d, a: w.op(f"xor {compute_type(d)}", xs[0],
                                       "true" if d.is_bool else "-1"),
    Kind.SHL: _shift(True), Kind.SHR: _shift(False),
    Kind.NEG: lambda w, xs, d, a: w.op(f"sub {compute_type(d)}", "0", xs[0]),
    Kind.ABS: _iabs,
}


# --- compare and cast ------------------------------------------------------------------

def _cmp(w: Writer, pred: str, a: str, b: str, d: DType) -> str:
    t = compute_type(d)
    if d.is_float:
        return w.op(f"fcmp {_FCMP[pred]} {t}", a, b)
    if pred in ("eq", "ne"):
        return w.op(f"icmp {pred} {t}", a, b)
    sign = "u" if d.is_unsigned or d.is_bool else "s"
    return w.op(f"icmp {sign}{_ICMP[pred]} {t}", a, b)


def bitcast(w: Writer, x: str, src: DType, dst: DType) -> str:
    """The same bits read as ``dst`` (a narrow float's bits are its 16- or 8-bit
    pattern)."""
    if src.is_narrow_float:
        x, src = halfprec.encode(w, x, src), None
    width = f"i{dst.itemsize * 8}"
    if dst.is_narrow_float:
        bits = x if src is None else w.assign(f"bitcast {compute_type(src)} {x} to {width}")
        return halfprec.decode(w, bits, dst)
    if src is None:
        return w.assign(f"bitcast {width} {x} to {compute_type(dst)}")
    return w.assign(f"bitcast {compute_type(src)} {x} to {compute_type(dst)}")


def cast(w: Writer, x: str, src: DType, dst: DType) -> str:
    """``x`` of ``src`` converted by the cast rules (backends/reference/
    semantics_elementwise.cast_array)."""
    ts, td = compute_type(src), compute_type(dst)
    if src == dst:
        return x
    if dst.is_bool:
        if src.is_float:
            return w.op(f"fcmp une {ts}", x, literal(0.0, src))      # NaN -> True
        return w.op(f"icmp ne {ts}", x, "0")
    if src.is_float and dst.is_float:
        if dst.is_narrow_float:  # f32 (exact for a half) or f64 rounded once to the format
            if src.itemsize == 8:
                return halfprec.from_double(w, x, dst)
            return halfprec.round_to(w, x, dst)
        if ts == td:
            return x
        return w.assign(f"{'fpext' if dst.itemsize == 8 else 'fptrunc'} {ts} {x} to {td}")
    if src.is_float:
        s = "u" if dst.is_unsigned else "s"
        return w.assign(f"call {td} @llvm.fpto{s}i.sat.{td}.{'f64' if src.itemsize == 8 else 'f32'}"
                        f"({ts} {x})")
    unsigned = src.is_unsigned or src.is_bool
    if dst.is_float:
        # ints -> f32 round once (sitofp rounds to nearest even); -> f64 likewise; to a
        # half via f32, as the reference
        r = w.assign(f"{'uitofp' if unsigned else 'sitofp'} {ts} {x} to {td}")
        return halfprec.round_to(w, r, dst) if dst.is_narrow_float else r
    bs, bd = src.bits, dst.itemsize * 8
    if bs == bd:
        return x
    if bs > bd:
        return w.assign(f"trunc {ts} {x} to {td}")
    return w.assign(f"{'zext' if unsigned else 'sext'} {ts} {x} to {td}")

