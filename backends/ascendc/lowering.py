"""How each IR op kind becomes Ascend C, and the ONE list of what cannot yet.

The emitter (emit_kernel.py, emit_vector.py, emit_cube.py) looks ops up here; every op
kind is in exactly one of the tables below or in ``NOT_LOWERED``, and a test checks the
tables cover ``ir.ops.Kind``.  Anything the emitter cannot express raises
``not_lowered(op, why)``: a ``NotImplementedError`` naming the op and its source line.

Example::

    >>> VECTOR_BINARY[Kind.ADD]
    ('Add', 'Adds')
"""
from __future__ import annotations

import linecache
import os
import re

from npujit.ir.ops import Kind
from npujit.ir.types import DType

# Elementwise on two tiles -> (tile-tile API, tile-scalar API or None).
VECTOR_BINARY = {
    Kind.ADD: ("Add", "Adds"),
    Kind.SUB: ("Sub", None),          # x - s is emitted as Adds(x, -s)
    Kind.MUL: ("Mul", "Muls"),
    Kind.DIV: ("Div", None),          # no Divs on the 2201 part: the scalar is duplicated
    Kind.MAXIMUM: ("Max", "Maxs"),
    Kind.MINIMUM: ("Min", "Mins"),
}

# Elementwise on one float tile.
VECTOR_UNARY = {
    Kind.EXP: "Exp",
    Kind.LOG: "Ln",
    Kind.ABS: "Abs",
    Kind.SQRT: "Sqrt",
    Kind.RSQRT: "Rsqrt",
    Kind.TANH: "Tanh",                # the high-level math library's
    Kind.ERF: "Erf",
}

# Activations composed from the basic vector API (emit_vector.py ``activation``).
ACTIVATIONS = {Kind.SIGMOID: "1 / (1 + exp(-x))", Kind.SILU: "x / (1 + exp(-x))",
               Kind.GELU: "0.5 x (1 + erf(x / sqrt(2))), or the tanh form"}

# Scalar arithmetic on the scalar unit, as C++ operators.
SCALAR_BINARY = {Kind.ADD: "+", Kind.SUB: "-", Kind.MUL: "*", Kind.DIV: "/",
                 Kind.AND: "&", Kind.OR: "|", Kind.XOR: "^"}

CMP_MODES = {"lt": "LT", "le": "LE", "gt": "GT", "ge": "GE", "eq": "EQ", "ne": "NE"}
CMP_CPP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
CMP_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}

# Kinds handled by dedicated code in the emitter (structure, memory, reductions, Cube).
STRUCTURAL = {Kind.RETURN, Kind.FOR, Kind.IF, Kind.WHILE, Kind.YIELD, Kind.FUSED, Kind.CONSTANT, Kind.PROGRAM_ID,
              Kind.NUM_PROGRAMS, Kind.ARANGE, Kind.CMP, Kind.SELECT, Kind.NEG, Kind.CAST,
              Kind.SPLAT, Kind.REDUCE, Kind.DOT, Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW,
              Kind.BLOCK_LOAD,
              Kind.BLOCK_STORE, Kind.IDIV, Kind.REM,
              Kind.AND, Kind.OR, Kind.XOR,   # and/or/xor: scalars, and `&` of two masks
              Kind.RESHAPE,                  # 1-D to 1-D or to [R, 1] / [1, C], a scalar to one lane
              Kind.BROADCAST,                # [R, 1] / [1, C] to [R, C] (emit_rows.py)
              Kind.HANDOFF,                  # Cube -> Vector outside loops (emit_mixed.py)
              Kind.SCAN,                     # cumsum of a 1-D tile, on the scalar unit
              Kind.TOPK}                     # along the last axis, on the scalar unit (emit_topk.py)

# Element types the vector unit computes on (2201 architecture): anything else is only
# moved and cast.  bf16 arithmetic is emitted on f32 copies (one rounding, as the
# reference does).
VECTOR_DTYPES = ("f32", "f16", "i16", "i32")

# What the emitter cannot lower yet, and why: the one place to look.
NOT_LOWERED = {
    Kind.POW: "no Pow in the emitted vector API subset",
    Kind.SHL: "shifts are not emitted yet",
    Kind.SHR: "shifts are not emitted yet",
    Kind.NOT: "bitwise/logical not is not emitted yet",
    Kind.EXP2: "no Exp2 in the emitted vector API subset",
    Kind.LOG2: "no Log2 in the emitted vector API subset",
    Kind.SIN: "no Sin in the emitted vector API subset",
    Kind.COS: "no Cos in the emitted vector API subset",
    Kind.FLOOR: "floor/ceil tiles are not emitted yet",
    Kind.CEIL: "floor/ceil tiles are not emitted yet",
    Kind.TRANS: "2-D vector tiles are not emitted yet",
    Kind.BITCAST: "bitcasts are not emitted yet",
    Kind.REDUCE_COMBINE: "a reduce with a user combine function is not emitted yet",
    Kind.SCAN_COMBINE: "an associative_scan with a user combine function is not emitted yet",
    Kind.MAP_ELEMENTWISE: "map_elementwise (a scalar function per element) is not emitted yet",
    Kind.SORT: "sort is not emitted yet",
    Kind.GATHER: "gather (a tile indexed by a tile) is not emitted yet",
    Kind.PRINT: "device_print is not emitted",
    Kind.ASSERT: "device_assert is not emitted",
}


LOWERED = set(VECTOR_BINARY) | set(VECTOR_UNARY) | set(ACTIVATIONS) | STRUCTURAL


def not_lowered(op, why: str | None = None) -> NotImplementedError:
    """The error for an op the emitter cannot lower, naming it and its source line.

    Example::

        >>> raise not_lowered(op)            # doctest: +SKIP
        NotImplementedError: the Ascend C emitter cannot lower npu.sort (k.py:7: ...)
    """
    reason = why or NOT_LOWERED.get(op.kind, "not supported by the emitter")
    return NotImplementedError(
        f"the Ascend C emitter cannot lower {op.kind.value} at {where(op)}: {reason}. "
        "Run this kernel on a CPU backend ('llvm', the default, or 'numba') or on "
        "'reference', or see docs/ascendc.md "
        "for what the emitter supports")


def where(op) -> str:
    """``file.py:12 (`source text`)`` for an op."""
    loc = op.loc
    text = source_line(op)
    base = f"{os.path.basename(loc.file)}:{loc.line}"
    return f"{base} (`{text}`)" if text else base


def source_line(op) -> str:
    return linecache.getline(op.loc.file, op.loc.line).strip() if op.loc.line else ""


def raw_name(op, default: str) -> str:
    """The name the user's source line assigns to (``x = nl.load(...)`` -> ``x``), for
    the op that computes the line's value; ``default`` for the line's intermediates (ops
    whose result feeds another op of the same line)."""
    if op.results and any(u is not None and u.loc.line == op.loc.line and u.loc.file == op.loc.file
                          for u in _users(op)):
        return default
    # `name = ...` (a keyword argument `name=...` on a continuation line is not a name)
    m = re.match(r"\s*([A-Za-z_]\w*)(?:\s+[-+*/]?=|\s*[-+*/]=)(?!=)", source_line(op))
    if m is None:
        m = re.match(r"\s*for\s+([A-Za-z_]\w*)\s+in\b", source_line(op))
    return m.group(1) if m else default


def _users(op):
    """The ops that read ``op``'s results."""
    return [u for r in op.results for u in r.users]


# Storage types of tile elements in Ascend C.
CPP_TYPES = {"f32": "float", "f16": "half", "bf16": "bfloat16_t", "i8": "int8_t",
             "i16": "int16_t", "i32": "int32_t", "i64": "int64_t", "i1": "bool",
             "u8": "uint8_t"}


def cpp_type(dtype: DType) -> str:
    return CPP_TYPES[dtype.name]


def round_mode(src: DType, dst: DType) -> str:
    """The ``RoundMode`` of a Cast: exact widenings need none, anything that can round
    rounds to nearest even, float -> int truncates toward zero (docs/semantics.md)."""
    if src.is_float and dst.is_int:
        return "CAST_TRUNC"
    if src.is_float and dst.is_float and dst.itemsize >= src.itemsize:
        return "CAST_NONE"
    if src.is_int and dst.is_int and dst.itemsize >= src.itemsize:
        return "CAST_NONE"
    return "CAST_RINT"
