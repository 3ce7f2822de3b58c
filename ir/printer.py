"""Printing IR as text in MLIR's *generic* op syntax, so ``mlir-opt
--allow-unregistered-dialect`` could read our dumps and ``ir.parser`` reads them back.

Every op prints as ``%r = "dialect.name"(%operands) ({regions}) {attrs} : (types) -> types``.
Block arguments keep their name hints (``%x``) when those are unique, else ``%argN``; op
results are numbered ``%0, %1, ...`` in print order; a multi-result op prints ``%5:2 = ...``
and its results are used as ``%5#0``, ``%5#1``.

Example::

    >>> from npujit.ir import Builder, Function, Kind, types as T
    >>> fn = Function("k", [T.PtrType(T.float32)], ["x"])
    >>> b = Builder(fn.body)
    >>> pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    >>> _ = b.create(Kind.RETURN, [])
    >>> print(print_function(fn))
    "func.func"() ({
    ^bb0(%x: !npu.ptr<f32>):
      %0 = "npu.program_id"() {axis = 0 : i64} : () -> i32
      "func.return"() : () -> ()
    }) {function_type = (!npu.ptr<f32>) -> (), sym_name = "k"} : () -> ()
"""
from __future__ import annotations

import math
import re
import struct

import numpy as np

from .core import UNKNOWN_LOC, Block, Function, Loc, Op, Value
from .ops import Kind
from .schedule.model import Flag
from .types import BY_NAME, DType, PtrType, TensorType

INDENT = "  "
# An attribute key or a value name that needs no quoting (MLIR's bare-id / suffix-id).
BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")
# Names the printer generates itself; a hint that looks like one is not used as a name.
GENERATED_NAME = re.compile(r"(arg|v)?[0-9]+\Z")
FUNC_ATTRS = ("sym_name", "function_type")


# --- attributes ----------------------------------------------------------------------------

def format_type(t) -> str:
    """The text of an IR type (a dtype prints as the scalar type).

    Example::

        >>> from npujit.ir import types as T
        >>> format_type(T.tensor((64, 64), T.float16)), format_type(T.PtrType(T.float32))
        ('tensor<64x64xf16>', '!npu.ptr<f32>')
    """
    if isinstance(t, (DType, TensorType, PtrType)):
        return str(t)
    raise TypeError(f"not an IR type: {t!r}")


def format_string(s: str) -> str:
    """A quoted MLIR string; bytes outside printable ASCII (and ``"`` ``\\``) as ``\\XX``.

    Example::

        >>> print(format_string('say "hi"'))
        "say \\22hi\\22"
    """
    out = []
    for byte in s.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\' or not (32 <= byte < 127):
            out.append(f"\\{byte:02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def float_bits(value: float, dtype_name: str) -> int:
    """The bit pattern of ``value`` stored as ``dtype_name`` (f64, f32, f16 or bf16).

    Example::

        >>> hex(float_bits(float("inf"), "f16"))
        '0x7c00'
    """
    if dtype_name == "f64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    np_dtype = BY_NAME[dtype_name].np
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32}[np_dtype.itemsize]
    with np.errstate(over="ignore", invalid="ignore"):
        return int(np.array(value, dtype=np_dtype).view(uint))


def format_float(value: float, dtype_name: str = "f64") -> str:
    """An MLIR float attribute.  Finite values print with ``repr`` (exact round trip) and
    always carry a ``.`` as MLIR's float literal needs; inf and NaN print as the hex bit
    pattern of ``dtype_name``, which is how MLIR spells them.

    Example::

        >>> format_float(1e-05, "f32"), format_float(float("inf"), "f32")
        ('1.0e-05 : f32', '0x7F800000 : f32')
    """
    if math.isfinite(value):
        text = repr(float(value))
        mantissa, e, exponent = text.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        text = mantissa + e + exponent
    else:
        width = 16 if dtype_name == "f64" else 2 * BY_NAME[dtype_name].itemsize
        text = f"0x{float_bits(value, dtype_name):0{width}X}"
    return f"{text} : {dtype_name}"


def format_attr(value, number_type: DType | None = None) -> str:
    """The MLIR text of one attribute value.

    ``number_type`` is the element type a number is printed with (an ``arith.constant``'s
    dtype); other ints print as ``i64`` and floats as ``f64``.

    Example::

        >>> format_attr((64, 64)), format_attr(True), format_attr("sum")
        ('array<i64: 64, 64>', 'true', '"sum"')
    """
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        type_name = number_type.name if number_type is not None and number_type.is_int else "i64"
        return f"{int(value)} : {type_name}"
    if isinstance(value, (float, np.floating)):
        type_name = number_type.name if number_type is not None and number_type.is_float else "f64"
        return format_float(float(value), type_name)
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, Flag):      # a typed attribute: printed as its text
        return format_string(value.text())
    if value is None:
        return "unit"
    if isinstance(value, (DType, TensorType, PtrType)):
        return format_type(value)
    if isinstance(value, (tuple, list)):
        return _format_sequence(value)
    if isinstance(value, dict):
        return format_attr_dict(value)
    raise TypeError(f"cannot print attribute value {value!r} of type {type(value).__name__}")


def _format_sequence(items) -> str:
    # Lists of ints (shapes, permutations) are MLIR dense arrays; anything else is a
    # generic array attribute of attributes.
    def is_int(x):
        return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))

    if all(is_int(x) for x in items):
        if not items:
            return "array<i64>"
        return "array<i64: " + ", ".join(str(int(x)) for x in items) + ">"
    if all(isinstance(x, (bool, np.bool_)) for x in items):
        return "array<i1: " + ", ".join("true" if x else "false" for x in items) + ">"
    return "[" + ", ".join(format_attr(x) for x in items) + "]"


def format_attr_key(key: str) -> str:
    """An attribute name, quoted unless it is a bare identifier.

    Example::

        >>> format_attr_key("num_stages"), format_attr_key("two words")
        ('num_stages', '"two words"')
    """
    return key if BARE_ID.match(key) else format_string(key)


def format_attr_dict(attrs: dict, number_type: DType | None = None,
                     extra: dict | None = None) -> str:
    """An attribute dictionary sorted by name; ``extra`` holds pre-formatted entries.

    Example::

        >>> format_attr_dict({"b": "x", "a": 1})
        '{a = 1 : i64, b = "x"}'
    """
    entries = {k: format_attr(v, number_type if k == "value" else None)
               for k, v in attrs.items()}
    entries.update(extra or {})
    return "{" + ", ".join(f"{format_attr_key(k)} = {entries[k]}" for k in sorted(entries)) + "}"


def format_loc(loc: Loc) -> str:
    """An MLIR file/line/column location, or ``loc(unknown)``.

    Example::

        >>> format_loc(Loc("k.py", 12))
        'loc("k.py":12:0)'
    """
    if loc is None or loc == UNKNOWN_LOC:
        return "loc(unknown)"
    return f"loc({format_string(loc.file)}:{loc.line}:{loc.col})"


# --- values, ops and blocks ----------------------------------------------------------------

class _Namer:
    """Gives every value its text name, in print order."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.keep: list[Value] = []     # keeps named values alive so ids stay unique
        self.taken: set[str] = set()
        self.next_result = 0
        self.next_arg = 0
        self.next_unknown = 0

    def name_results(self, op: Op) -> str:
        """Name ``op``'s results and return the ``%N`` / ``%N:k`` result prefix."""
        if not op.results:
            return ""
        n = self.next_result
        self.next_result += 1
        base = f"%{n}"
        if len(op.results) == 1:
            self._set(op.results[0], base)
            return base
        for i, v in enumerate(op.results):
            self._set(v, f"{base}#{i}")
        return f"{base}:{len(op.results)}"

    def name_arg(self, v: Value) -> str:
        hint = v.name
        if (hint and BARE_ID.match(hint) and not GENERATED_NAME.match(hint)
                and hint not in self.taken):
            name = f"%{hint}"
            self.taken.add(hint)
        else:
            name = f"%arg{self.next_arg}"
        self.next_arg += 1
        self._set(v, name)
        return name

    def use(self, v: Value) -> str:
        """The name of a used value; one not defined in the printed text (invalid IR being
        printed for an error message) gets a ``%vN`` name the parser will reject."""
        name = self.names.get(id(v))
        if name is None:
            name = f"%v{self.next_unknown}"
            self.next_unknown += 1
            self._set(v, name)
        return name

    def _set(self, v: Value, name: str) -> None:
        self.names[id(v)] = name
        self.keep.append(v)


def _type_list(types) -> str:
    return "(" + ", ".join(format_type(t) for t in types) + ")"


def _result_types(types) -> str:
    types = list(types)
    return format_type(types[0]) if len(types) == 1 else _type_list(types)


def _number_type(op: Op) -> DType | None:
    d = op.attrs.get("dtype")
    return d if op.kind is Kind.CONSTANT and isinstance(d, DType) else None


def _print_op(op: Op, namer: _Namer, indent: int, locs: bool, lines: list[str]) -> None:
    pad = INDENT * indent
    prefix = namer.name_results(op)
    head = pad + (f"{prefix} = " if prefix else "")
    head += f'"{op.kind.value}"(' + ", ".join(namer.use(v) for v in op.operands) + ")"
    tail = ""
    if op.attrs:
        tail += " " + format_attr_dict(op.attrs, _number_type(op))
    operand_types = _type_list(v.type for v in op.operands)
    tail += f" : {operand_types} -> {_result_types(v.type for v in op.results)}"
    if locs:
        tail += " " + format_loc(op.loc)
    if not op.regions:
        lines.append(head + tail)
        return
    lines.append(head + " ({")
    for i, region in enumerate(op.regions):
        if i:
            lines.append(pad + "}, {")
        _print_block(region, namer, indent, locs, lines)
    lines.append(pad + "})" + tail)


def _print_block(block: Block, namer: _Namer, indent: int, locs: bool, lines: list[str]) -> None:
    pad = INDENT * indent
    args = [f"{namer.name_arg(v)}: {format_type(v.type)}" for v in block.args]
    lines.append(pad + ("^bb0(" + ", ".join(args) + "):" if args else "^bb0:"))
    for op in block.ops:
        _print_op(op, namer, indent + 1, locs, lines)


def print_op(op: Op, locs: bool = False) -> str:
    """One op (and its regions) as generic MLIR text.  Operands defined elsewhere print as
    ``%vN``; use ``print_function`` for text the parser can read back.

    Example::

        >>> from npujit.ir import Builder, Block, Kind, types as T
        >>> c = Builder(Block()).constant(1.5, T.float32)
        >>> print_op(c.op)
        '%0 = "arith.constant"() {dtype = f32, value = 1.5 : f32} : () -> f32'
    """
    lines: list[str] = []
    _print_op(op, _Namer(), 0, locs, lines)
    return "\n".join(lines)


def print_function(fn: Function, locs: bool = False) -> str:
    """A kernel as a generic ``func.func`` op; ``locs=True`` adds ``loc(...)`` to every op.
    ``fn.attrs`` print in the function's attribute dictionary next to ``sym_name`` and
    ``function_type``.  The text is deterministic and ``parse_function`` reads it back.

    Example::

        >>> from npujit.ir import Function, Kind, Op, types as T
        >>> fn = Function("k", [T.scalar(T.int64)], ["n"], attrs={"BLOCK": 64})
        >>> _ = fn.body.append(Op(Kind.RETURN, [], []))
        >>> print(print_function(fn).splitlines()[-1])
        }) {BLOCK = 64 : i64, function_type = (i64) -> (), sym_name = "k"} : () -> ()
    """
    clash = [k for k in FUNC_ATTRS if k in fn.attrs]
    if clash:
        raise ValueError(f"function attribute {clash[0]!r} is reserved for func.func")
    namer = _Namer()
    lines = ['"func.func"() ({']
    _print_block(fn.body, namer, 0, locs, lines)
    function_type = f"{_type_list(v.type for v in fn.args)} -> ()"
    extra = {"sym_name": format_string(fn.name), "function_type": function_type}
    lines.append("}) " + format_attr_dict(fn.attrs, extra=extra) + " : () -> ()")
    return "\n".join(lines)
