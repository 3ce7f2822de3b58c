"""fold: constant folding of scalar arithmetic and exact algebraic identities.

Every rewrite is one pattern (one fact) and is exact: the folded value is bit-for-bit what
the backends compute at run time under ``docs/semantics.md`` (f16/bf16 computed in f32 and
rounded, ints wrapping, float->int casts saturating).  Float operations whose runtime result
could differ (transcendentals, pow, float rem) are never folded.  A folded op is removed;
the constants it read are left for ``dce``.

Example::

    %0 = "arith.constant"() {dtype = i32, value = 2 : i32} : () -> i32
    %1 = "arith.constant"() {dtype = i32, value = 3 : i32} : () -> i32
    %2 = "npu.mul"(%0, %1) : (i32, i32) -> i32
    // after fold: %2 = "arith.constant"() {dtype = i32, value = 6 : i32} : () -> i32
"""
from __future__ import annotations

import math

import numpy as np

from ..core import Block, Function, Op, Value
from ..ops import BINARY, UNARY, Kind
from ..types import DType, scalar

_NO = object()  # "do not fold"
_EXACT_FLOAT_BINARY = {Kind.ADD, Kind.SUB, Kind.MUL, Kind.DIV, Kind.MAXIMUM, Kind.MINIMUM}
# IEEE requires these to be correctly rounded, so numpy, numba and C agree on them.
_EXACT_FLOAT_UNARY = {Kind.NEG, Kind.ABS, Kind.FLOOR, Kind.CEIL, Kind.SQRT}


# --- reading constants ---------------------------------------------------------------------

def _int_range(d: DType) -> tuple[int, int]:
    if d.is_unsigned:
        return 0, (1 << d.bits) - 1
    return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1


def wrap(value: int, d: DType) -> int:
    """Two's-complement wrap of ``value`` to ``d``'s width (modulo 2**bits when unsigned).

    Example::

        >>> from npujit.ir.types import int8
        >>> wrap(128, int8), wrap(-129, int8)
        (-128, 127)
    """
    bits = d.bits
    value &= (1 << bits) - 1
    if d.is_unsigned:
        return value
    return value - (1 << bits) if value >> (bits - 1) else value


def _compute(value: float, d: DType):
    """A float constant in the precision ``d`` computes in: f64 for f64, else f32."""
    return np.float64(value) if d.name == "f64" else np.float32(value)


def _round(value, d: DType) -> float:
    """``value`` rounded (nearest even) to float dtype ``d``, as a Python float."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.array(value, dtype=d.np))


def constant_value(v: Value):
    """The scalar an ``arith.constant`` result holds, as the runtime materialises it in its
    dtype, or ``_NO``.  An int that does not fit its dtype is not treated as a constant.

    Example::

        >>> from npujit.ir import Block, Builder, types as T
        >>> constant_value(Builder(Block()).constant(0.1, T.float16))
        0.0999755859375
    """
    op = v.op
    if op is None or op.kind is not Kind.CONSTANT:
        return _NO
    value, d = op.attrs.get("value"), op.attrs.get("dtype")
    if not isinstance(d, DType) or not isinstance(value, (bool, int, float)):
        return _NO
    if d.is_bool:
        return bool(value) if isinstance(value, bool) or value in (0, 1) else _NO
    if d.is_int:
        if not isinstance(value, int):
            return _NO
        lo, hi = _int_range(d)
        return int(value) if lo <= value <= hi else _NO
    return _round(float(value), d)


def uniform_value(v: Value):
    """Like ``constant_value`` but also sees through splat/broadcast: a tile whose every
    element is one known constant.

    Example::

        >>> from npujit.ir import Block, Builder, Kind, types as T
        >>> b = Builder(Block())
        >>> uniform_value(b.op(Kind.SPLAT, [b.constant(3, T.int32)], {"shape": (4,)}))
        3
    """
    op = v.op
    if op is not None and op.kind in (Kind.SPLAT, Kind.BROADCAST):
        return uniform_value(op.operands[0])
    return constant_value(v)


# --- exact scalar semantics ----------------------------------------------------------------

def _trunc_div(a: int, b: int) -> int:
    """C's integer division: the quotient truncated toward zero (docs/semantics.md)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_binary(kind: Kind, a: int, b: int, d: DType):
    bits = d.bits
    if kind is Kind.ADD:
        r = a + b
    elif kind is Kind.SUB:
        r = a - b
    elif kind is Kind.MUL:
        r = a * b
    elif kind is Kind.IDIV:
        r = 0 if b == 0 else _trunc_div(a, b)
    elif kind is Kind.REM:
        r = 0 if b == 0 else a - b * _trunc_div(a, b)
    elif kind is Kind.MAXIMUM:
        r = max(a, b)
    elif kind is Kind.MINIMUM:
        r = min(a, b)
    elif kind is Kind.AND:
        r = a & b
    elif kind is Kind.OR:
        r = a | b
    elif kind is Kind.XOR:
        r = a ^ b
    elif kind is Kind.SHL:
        r = a << b if 0 <= b < bits else 0
    elif kind is Kind.SHR:
        r = a >> b if 0 <= b < bits else (-1 if a < 0 else 0)
    else:
        return _NO
    return wrap(r, d)


def _float_binary(kind: Kind, a: float, b: float, d: DType):
    if kind not in _EXACT_FLOAT_BINARY:
        return _NO
    if kind in (Kind.MAXIMUM, Kind.MINIMUM) and a == 0 and b == 0 and \
            math.copysign(1, a) != math.copysign(1, b):
        return _NO  # which zero comes out is implementation-defined
    x, y = _compute(a, d), _compute(b, d)  # halves compute in f32, then round once
    with np.errstate(all="ignore"):
        r = {Kind.ADD: np.add, Kind.SUB: np.subtract, Kind.MUL: np.multiply,
             Kind.DIV: np.divide, Kind.MAXIMUM: np.fmax, Kind.MINIMUM: np.fmin}[kind](x, y)
    return _round(r, d)


def _binary(kind: Kind, a, b, d: DType):
    if d.is_bool:
        ops = {Kind.AND: lambda: a and b, Kind.OR: lambda: a or b, Kind.XOR: lambda: a != b}
        return ops[kind]() if kind in ops else _NO
    if d.is_int:
        return _int_binary(kind, a, b, d)
    return _float_binary(kind, a, b, d)


def _unary(kind: Kind, a, d: DType):
    if d.is_bool:
        return (not a) if kind is Kind.NOT else _NO
    if d.is_int:
        ops = {Kind.NEG: lambda: -a, Kind.ABS: lambda: abs(a), Kind.NOT: lambda: ~a}
        return wrap(ops[kind](), d) if kind in ops else _NO
    if kind not in _EXACT_FLOAT_UNARY:
        return _NO
    fn = {Kind.NEG: np.negative, Kind.ABS: np.abs, Kind.FLOOR: np.floor, Kind.CEIL: np.ceil,
          Kind.SQRT: np.sqrt}[kind]
    with np.errstate(all="ignore"):
        return _round(fn(_compute(a, d)), d)


def _cmp(predicate: str, a, b):
    ops = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}
    return ops.get(predicate, _NO)


def _cast(a, src: DType, dst: DType):
    if dst.is_bool:
        return a != 0
    if src.is_bool:
        a = int(a)
        return float(a) if dst.is_float else a
    if dst.is_float:
        if src.is_int and dst.name != "f64":  # int -> f32 (one rounding), then f32 -> dst
            a = np.array(a, dtype=src.np).astype(np.float32)   # (int -> f64: once, in _round)
        return _round(a, dst)
    if src.is_int:
        return wrap(a, dst)
    # float -> int saturates (docs/semantics.md, "Casts"): NaN -> 0, clamp to the range
    lo, hi = _int_range(dst)
    if math.isnan(a):
        return 0
    if math.isinf(a):
        return hi if a > 0 else lo
    return min(max(math.trunc(a), lo), hi)


def evaluate(op: Op):
    """The value of a scalar op whose operands are all constants, or ``_NO`` when it is
    not one or its runtime result might differ.

    Example::

        >>> from npujit.ir import Block, Builder, Kind, types as T
        >>> b = Builder(Block())
        >>> evaluate(b.op(Kind.IDIV, [b.constant(-7, T.int32), b.constant(2, T.int32)]).op)
        -3
    """
    if len(op.results) != 1 or not op.operands:
        return _NO
    args = [constant_value(v) for v in op.operands]
    if any(a is _NO for a in args):
        return _NO
    d = op.operands[-1].type.dtype
    if op.kind in BINARY:
        return _binary(op.kind, args[0], args[1], d)
    if op.kind in UNARY:
        return _unary(op.kind, args[0], d)
    if op.kind is Kind.CMP:
        return _cmp(op.attrs.get("predicate"), args[0], args[1])
    if op.kind is Kind.SELECT:
        return args[1] if args[0] else args[2]
    if op.kind is Kind.CAST and isinstance(op.attrs.get("dtype"), DType):
        return _cast(args[0], op.operands[0].type.dtype, op.attrs["dtype"])
    return _NO


# --- patterns: each returns a replacement Value, a new constant Op, or None ---------------

def fold_constant_operands(op: Op):
    """A scalar op on constants becomes a constant."""
    value = evaluate(op)
    if value is _NO:
        return None
    d = op.result.type.dtype
    if d.is_bool:
        value = bool(value)
    return Op(Kind.CONSTANT, [], [scalar(d)], {"value": value, "dtype": d}, loc=op.loc)


def _is(value, target) -> bool:
    """``value`` is exactly ``target`` (for floats: also the same zero sign)."""
    if value is _NO or isinstance(value, bool):
        return False
    return value == target and math.copysign(1, value) == math.copysign(1, target)


def _operand_dtype(op: Op) -> DType:
    return op.operands[0].type.dtype


def fold_add_zero(op: Op):
    """x + 0 -> x for ints; x + (-0.0) -> x for floats (x + 0.0 is not x when x is -0.0)."""
    if op.kind is not Kind.ADD:
        return None
    d = _operand_dtype(op)
    zero = -0.0 if d.is_float else 0
    a, b = op.operands
    if _is(uniform_value(b), zero):
        return a
    if _is(uniform_value(a), zero):
        return b
    return None


def fold_sub_zero(op: Op):
    """x - 0 -> x (floats: x - (+0.0) is x even for -0.0)."""
    if op.kind is not Kind.SUB:
        return None
    zero = 0.0 if _operand_dtype(op).is_float else 0
    return op.operands[0] if _is(uniform_value(op.operands[1]), zero) else None


def fold_mul_one(op: Op):
    """x * 1 -> x and 1 * x -> x (exact for floats too, NaN and -0.0 included)."""
    if op.kind is not Kind.MUL:
        return None
    a, b = op.operands
    if _is(uniform_value(b), 1):
        return a
    if _is(uniform_value(a), 1):
        return b
    return None


def fold_mul_zero(op: Op):
    """x * 0 -> 0 for ints only (for floats NaN * 0 and inf * 0 are NaN, -1 * 0 is -0.0)."""
    if op.kind is not Kind.MUL or not _operand_dtype(op).is_int:
        return None
    for zero in op.operands:
        if _is(uniform_value(zero), 0):
            return zero
    return None


def fold_div_one(op: Op):
    """x / 1.0 -> x for floats and x // 1 -> x for ints."""
    if op.kind in (Kind.DIV, Kind.IDIV) and _is(uniform_value(op.operands[1]), 1):
        return op.operands[0]
    return None


def fold_select_constant_condition(op: Op):
    """select(true, a, b) -> a and select(false, a, b) -> b (also a splat condition)."""
    if op.kind is not Kind.SELECT:
        return None
    c = uniform_value(op.operands[0])
    if c is _NO:
        return None
    return op.operands[1] if c else op.operands[2]


def fold_select_same_arms(op: Op):
    """select(c, a, a) -> a."""
    if op.kind is Kind.SELECT and op.operands[1] is op.operands[2]:
        return op.operands[1]
    return None


def fold_cast_same_dtype(op: Op):
    """cast of x to x's own dtype -> x."""
    if op.kind is Kind.CAST and op.attrs.get("dtype") == op.operands[0].type.dtype:
        return op.operands[0]
    return None


def fold_shape_noop(op: Op):
    """broadcast / reshape to the operand's own shape -> the operand."""
    if op.kind in (Kind.BROADCAST, Kind.RESHAPE) and op.result.type == op.operands[0].type:
        return op.operands[0]
    return None


PATTERNS = [fold_constant_operands, fold_add_zero, fold_sub_zero, fold_mul_one, fold_mul_zero,
            fold_div_one, fold_select_constant_condition, fold_select_same_arms,
            fold_cast_same_dtype, fold_shape_noop]


class Fold:
    """Constant folding plus exact identities, in one program-order sweep (a folded value
    is seen by the ops after it, so chains fold at once).

    Example::

        >>> from npujit.ir.parser import parse_function
        >>> from npujit.ir.printer import print_function
        >>> fn = parse_function('''"func.func"() ({
        ... ^bb0(%x: i32):
        ...   %0 = "arith.constant"() {dtype = i32, value = 0 : i32} : () -> i32
        ...   %1 = "npu.add"(%x, %0) : (i32, i32) -> i32
        ...   "npu.print"(%1) {prefix = ""} : (i32) -> ()
        ...   "func.return"() : () -> ()
        ... }) {function_type = (i32) -> (), sym_name = "k"} : () -> ()''')
        >>> Fold().run(fn)
        True
        >>> print(print_function(fn).splitlines()[3])
          "npu.print"(%x) {prefix = ""} : (i32) -> ()
    """

    name = "fold"

    def run(self, fn: Function, ctx=None) -> bool:
        return self._fold_block(fn.body)

    def _fold_block(self, block: Block) -> bool:
        changed = False
        new_ops: list[Op] = []
        for op in block.ops:
            for region in op.regions:
                changed |= self._fold_block(region)
            replacement = self._rewrite(op)
            if replacement is None:
                new_ops.append(op)
                continue
            if isinstance(replacement, Op):
                replacement.parent = block
                new_ops.append(replacement)
                replacement = replacement.result
            op.result.replace_all_uses_with(replacement)
            op.drop_uses()
            op.parent = None
            changed = True
        block.ops = new_ops
        return changed

    @staticmethod
    def _rewrite(op: Op):
        if len(op.results) != 1 or op.regions or not op.info.pure:
            return None
        for pattern in PATTERNS:
            new = pattern(op)
            if new is None:
                continue
            new_type = new.result.type if isinstance(new, Op) else new.type
            if new_type == op.result.type:  # a pattern never changes a type
                return new
        return None

