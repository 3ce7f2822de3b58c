"""Elementwise ops as scalar Python expressions: the per-element meaning of each op kind.

Every function takes operand expressions (atoms: names, element accesses or literals)
and returns an expression whose numba type is exactly the op's compute type:
``np.float32`` for f32/f16/bf16/fp8, ``np.float64`` for f64, ``np.intN`` / ``np.uintN`` for
ints, ``bool`` for i1.  f64 math is float64 math (numpy's functions, libm's ``exp``).  Results are
wrapped explicitly because numba widens int32 arithmetic to int64 and a bare Python
literal would make float32 arithmetic float64.  Half results go through
``hp.round_f16`` / ``hp.round_bf16`` (RNE) after the f32 computation, per
docs/semantics.md.  ``exp`` (also inside sigmoid and silu) is ``sl.exp_f32``, a
vectorisable float32 exp within 1.01 ulp; the other transcendentals call libm's float32
functions through numpy.

Example::

    >>> from npujit.ir.types import float16, int32
    >>> binary(Kind.ADD, float16, "x", "y")
    'hp.round_f16(x + y)'
    >>> binary(Kind.MUL, int32, "x", "y")
    'i32(x * y)'
"""
from __future__ import annotations

import math

import numpy as np

from npujit.ir.ops import Kind
from npujit.ir.types import DType

from .values import hp_name, np_type

_ARITH = {Kind.ADD: "+", Kind.SUB: "-", Kind.MUL: "*", Kind.DIV: "/"}
_BITWISE = {Kind.AND: "&", Kind.OR: "|", Kind.XOR: "^"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_F32_FUNCS = {Kind.EXP: "sl.exp_f32", Kind.EXP2: "np.exp2", Kind.LOG: "np.log",
              Kind.LOG2: "np.log2", Kind.SQRT: "np.sqrt", Kind.SIN: "np.sin",
              Kind.COS: "np.cos", Kind.FLOOR: "np.floor", Kind.CEIL: "np.ceil",
              Kind.TANH: "np.tanh", Kind.ERF: "math.erf"}


def f32(x: float) -> str:
    """A float32 literal (``x`` rounded to f32)."""
    v = float(np.float32(x))
    if math.isnan(v):
        return "f32(np.nan)"
    if math.isinf(v):
        return "f32(np.inf)" if v > 0 else "f32(-np.inf)"
    return f"f32({v!r})"


def fconst(x: float, d: DType) -> str:
    """A float literal in ``d``'s compute type (f64 for f64, else f32)."""
    if d.name != "f64":
        return f32(x)
    v = float(x)
    if math.isnan(v) or math.isinf(v):
        return "f64(np.nan)" if math.isnan(v) else ("f64(np.inf)" if v > 0 else "f64(-np.inf)")
    return f"f64({v!r})"


def result(d: DType, expr: str) -> str:
    """``expr`` (computed in f32 / int64 / bool) converted to ``d``'s compute type:
    rounded for halves, wrapped for ints."""
    if d.is_narrow_float:
        return f"hp.round_{hp_name(d)}({expr})"
    if d.is_bool:
        return f"bool({expr})"
    return f"{np_type(d)}({expr})"


def constant(value, d: DType) -> str:
    """A literal of dtype ``d`` holding ``value`` (rounded / wrapped to the type)."""
    if d.is_bool:
        return "True" if value else "False"
    if d.name == "f16":
        return f32(float(np.float16(value)))
    if d.name == "bf16" or d.is_fp8:
        with np.errstate(over="ignore", invalid="ignore"):   # (ml_dtypes, imported on first use)
            return f32(float(np.array(value, np.float32).astype(d.np).astype(np.float32)))
    if d.is_float:
        return fconst(value, d)
    bits = d.bits
    if d.is_unsigned:
        return f"{np_type(d)}({int(value) % (1 << bits)})"
    v = (int(value) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    return f"{np_type(d)}({v})"


def zero(d: DType) -> str:
    """The 0 of ``d`` (False for i1)."""
    return constant(0, d)


def binary(kind: Kind, d: DType, a: str, b: str) -> str:
    """``a <kind> b`` on dtype ``d``."""
    if kind in _ARITH:
        if d.is_bool:  # add/mul on i1 only arise from atomic_add: logical or / and
            return f"({a} | {b})" if kind is Kind.ADD else f"({a} & {b})"
        return result(d, f"{a} {_ARITH[kind]} {b}")
    if kind in _BITWISE:
        if d.is_bool:
            return f"({a} != {b})" if kind is Kind.XOR else f"({a} {_BITWISE[kind]} {b})"
        return result(d, f"{a} {_BITWISE[kind]} {b}")
    if kind is Kind.IDIV:
        return result(d, f"sl.udivide({a}, {b}, False)" if d.is_unsigned else f"sl.idiv({a}, {b})")
    if kind is Kind.REM:
        if d.is_float:
            return result(d, f"sl.fmod64({a}, {b})" if d.name == "f64" else f"sl.fmod32({a}, {b})")
        return result(d, f"sl.udivide({a}, {b}, True)" if d.is_unsigned else f"sl.irem({a}, {b})")
    if kind is Kind.POW:
        return result(d, f"{a} ** {b}")
    if kind in (Kind.MAXIMUM, Kind.MINIMUM):
        if d.is_float:
            fn = "sl.fmax_num" if kind is Kind.MAXIMUM else "sl.fmin_num"
            return f"{fn}({a}, {b})"
        op = ">" if kind is Kind.MAXIMUM else "<"
        return f"({a} if {a} {op} {b} else {b})"
    if kind in (Kind.SHL, Kind.SHR) and d.is_unsigned:
        return result(d, f"sl.ushift({a}, {b}, {d.bits}, {kind is Kind.SHL})")
    if kind in (Kind.SHL, Kind.SHR):
        fn = "sl.shl" if kind is Kind.SHL else "sl.shr"
        return result(d, f"{fn}({a}, {b}, {d.bits})")
    raise NotImplementedError(f"numba backend: no lowering for {kind.value}")


def unary(kind: Kind, attrs: dict, d: DType, a: str) -> str:
    """``kind(a)`` on dtype ``d``; float math is float32 math (float64 for f64)."""
    one = fconst(1.0, d)
    if kind is Kind.NEG:
        if d.is_unsigned:
            return result(d, f"{zero(d)} - {a}")   # wraps, as -x does on the device
        return f"{np_type(d)}(-{a})" if d.is_float else result(d, f"-{a}")
    if kind is Kind.NOT:
        return f"(not {a})" if d.is_bool else result(d, f"~{a}")
    if kind is Kind.ABS:
        if d.is_unsigned:
            return a
        return f"{np_type(d)}(abs({a}))" if d.is_float else result(d, f"abs({a})")
    if kind in _F32_FUNCS:
        fn = "np.exp" if kind is Kind.EXP and d.name == "f64" else _F32_FUNCS[kind]
        return result(d, f"{fn}({a})")
    if kind is Kind.RSQRT:
        return result(d, f"{one} / np.sqrt({a})")
    exp = "np.exp" if d.name == "f64" else "sl.exp_f32"
    if kind is Kind.SIGMOID:
        return result(d, f"{one} / ({one} + {exp}(-{a}))")
    if kind is Kind.SILU:
        return result(d, f"{a} / ({one} + {exp}(-{a}))")
    if kind is Kind.GELU:
        half = fconst(0.5, d)
        if attrs.get("approximate", "none") == "tanh":
            inner = (f"{fconst(math.sqrt(2 / math.pi), d)} * ({a} + {fconst(0.044715, d)} * "
                     f"({a} * {a} * {a}))")
            return result(d, f"{half} * {a} * ({one} + np.tanh({inner}))")
        return result(d, f"{half} * {a} * ({one} + math.erf({a} / {fconst(math.sqrt(2), d)}))")
    raise NotImplementedError(f"numba backend: no lowering for {kind.value}")


def compare(predicate: str, a: str, b: str) -> str:
    """IEEE comparison (NaN compares false except ``ne``)."""
    return f"({a} {_CMP[predicate]} {b})"


def select(c: str, a: str, b: str) -> str:
    return f"({a} if {c} else {b})"


def cast(src: DType, dst: DType, a: str) -> str:
    """``a`` of ``src`` converted to ``dst`` per docs/semantics.md."""
    if src == dst:
        return a
    if dst.is_bool:
        return f"({a} != 0)"
    if dst.is_float:
        if dst.name == "f64":
            return f"f64({a})"  # exact from a float; one RNE rounding from an int
        if src.name == "f64":
            # one rounding from f64: to f32 directly, to a half through round-to-odd f32
            return f"f32({a})" if dst.name == "f32" else result(dst, f"sl.f64_to_f32_odd({a})")
        if src.is_float and (dst.name == "f32" or dst.itemsize > src.itemsize):
            return a  # widening float casts are exact (f16/bf16 values are f32 already)
        # int -> float goes via f32 (RNE); float -> half rounds once from f32
        return result(dst, f"f32({a})" if not src.is_float else a)
    if src.is_float and dst.is_unsigned:
        # truncation toward zero, saturating at 0 and 2**bits - 1; NaN -> 0
        return f"{np_type(dst)}(sl.float_to_uint({a}, {2.0 ** dst.bits!r}, {(1 << dst.bits) - 1}))"
    if src.is_float:
        # truncation toward zero, saturating; NaN -> 0 (scalar_lib.float_to_int)
        b = dst.bits
        return (f"{np_type(dst)}(sl.float_to_int({a}, {-(2.0 ** (b - 1)) - 1.0!r}, "
                f"{2.0 ** (b - 1)!r}, {1 - (1 << (b - 1))} - 1, {(1 << (b - 1)) - 1}))")
    return result(dst, a)  # int/bool -> int: wraps; bool gives 0 or 1


def bitcast(src: DType, dst: DType, a: str) -> str:
    """``a``'s bits read as ``dst`` (one bit width): halves go through their bit
    patterns (a half is an f32 value here), f32 through numpy's scalar ``view``."""
    if src == dst:
        return a
    if src.is_narrow_float:
        a = f"np.uint{src.bits}(hp.f32_to_{hp_name(src)}_bits({a})).view(np.int{src.bits})"
    elif src.is_float:
        a = f"{np_type(src)}({a}).view(np.int{src.bits})"
    if dst.is_narrow_float:
        return f"hp.{hp_name(dst)}_bits_to_f32({a})"
    if dst.is_float:
        return f"np.int{dst.bits}({a}).view({np_type(dst)})"
    return f"{np_type(dst)}({a})"


def decode(d: DType, bits: str) -> str:
    """Memory element (storage dtype) -> compute value."""
    if d.is_narrow_float:
        return f"hp.{hp_name(d)}_bits_to_f32({bits})"
    return bits


def encode(d: DType, value: str) -> str:
    """Compute value -> memory element (storage dtype).  Encoding rounds to nearest
    even itself, so a value that was just rounded to the type is encoded unrounded
    (same bits, one rounding less per stored element)."""
    if d.is_narrow_float:
        value = _strip_call(value, f"hp.round_{hp_name(d)}")
        return f"hp.f32_to_{hp_name(d)}_bits({value})"
    return value


def is_call(expr: str, fn: str) -> bool:
    """Is ``expr`` exactly one call ``fn(...)``?"""
    if not (expr.startswith(fn + "(") and expr.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(expr[len(fn):], len(fn)):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return i == len(expr) - 1
    return False


def _strip_call(expr: str, fn: str) -> str:
    """``inner`` if ``expr`` is exactly ``fn(inner)``, else ``expr``."""
    return expr[len(fn) + 1:-1] if is_call(expr, fn) else expr
