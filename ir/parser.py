"""Reading IR text back: the generic MLIR syntax ``ir.printer`` writes.

``parse_function(print_function(fn))`` rebuilds an equal function: same op kinds, types,
attributes (arrays come back as tuples of ints, dtypes as ``DType`` objects), locations and
argument names, so printing it again gives the same text.  ``//`` comments (e.g. the
headers of ``NPUJIT_DUMP_IR`` output) are skipped.  Bad input raises ``ParseError`` with the
line and column.

The parser builds what it reads; whether the IR obeys the type rules is the verifier's
question (``ir.verifier.verify``).

Example::

    >>> fn = parse_function('''
    ... "func.func"() ({
    ... ^bb0(%n: i64):
    ...   "func.return"() : () -> ()
    ... }) {function_type = (i64) -> (), sym_name = "k"} : () -> ()''')
    >>> fn.name, [str(a.type) for a in fn.args], fn.args[0].name
    ('k', ['i64'], 'n')
"""
from __future__ import annotations

import re
import struct

import numpy as np

from .core import UNKNOWN_LOC, Block, Function, Loc, Op, Value
from .ops import Kind
from .printer import GENERATED_NAME
from .schedule.model import decode_schedule_attrs
from .types import BY_NAME, DType, PtrType, TensorType

_KINDS = {k.value: k for k in Kind}
_WS = re.compile(r"(?:\s+|//[^\n]*)*")
_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_VALUE_ID = re.compile(r"%([A-Za-z0-9_$.\-]+)(?:#([0-9]+))?")
_RESULT_DEF = re.compile(r"%([A-Za-z0-9_$.\-]+)(?::([0-9]+))?")
_BLOCK_LABEL = re.compile(r"\^[A-Za-z0-9_$.\-]+")
_INT = re.compile(r"-?(?:0x[0-9A-Fa-f]+|[0-9]+)")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?")
_TENSOR = re.compile(r"tensor<((?:[0-9]+x)*)([a-z][a-zA-Z0-9]*)>")
_PTR = re.compile(r"!npu\.ptr<([a-z][a-zA-Z0-9]*)>")
_DTYPE = re.compile(r"[a-z][a-zA-Z0-9]*")


class ParseError(ValueError):
    """Text the parser cannot read; ``line`` and ``col`` are 1-based."""

    def __init__(self, message: str, line: int, col: int, source_line: str = ""):
        self.message, self.line, self.col = message, line, col
        text = f"line {line}:{col}: {message}"
        if source_line:
            text += f"\n  {source_line}\n  {' ' * (col - 1)}^"
        super().__init__(text)


class _FunctionType:
    """A ``(inputs) -> (results)`` type; only ``func.func``'s ``function_type`` uses it."""

    def __init__(self, inputs, results):
        self.inputs, self.results = tuple(inputs), tuple(results)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.scopes: list[dict[str, Value | list[Value]]] = []

    # --- scanning --------------------------------------------------------------------------

    def error(self, message: str, pos: int | None = None) -> ParseError:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        source = self.text[start:end if end >= 0 else len(self.text)]
        return ParseError(message, line, pos - start + 1, source)

    def skip(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.accept(s):
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of input"
            raise self.error(f"expected {what or repr(s)}, found {found!r}")

    def match(self, regex: re.Pattern):
        self.skip()
        m = regex.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def word(self, w: str) -> bool:
        """Accept the keyword ``w`` only as a whole identifier."""
        self.skip()
        m = _BARE_ID.match(self.text, self.pos)
        if m and m.group() == w:
            self.pos = m.end()
            return True
        return False

    def string(self) -> str:
        self.skip()
        if not self.text.startswith('"', self.pos):
            raise self.error("expected a string")
        start = self.pos
        self.pos += 1
        out = bytearray()
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise self.error("unterminated string", start)
            ch = self.text[self.pos]
            if ch == '"':
                self.pos += 1
                break
            if ch == "\\":
                esc = self.text[self.pos + 1:self.pos + 3]
                simple = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\"}.get(esc[:1])
                if simple is not None:
                    out += simple
                    self.pos += 2
                    continue
                if not re.fullmatch(r"[0-9A-Fa-f]{2}", esc):
                    raise self.error("bad escape in string")
                out.append(int(esc, 16))
                self.pos += 3
                continue
            out += ch.encode("utf-8")
            self.pos += 1
        try:
            return out.decode("utf-8")
        except UnicodeDecodeError:
            raise self.error("string is not valid UTF-8", start) from None

    # --- types -----------------------------------------------------------------------------

    def dtype(self, name: str, pos: int) -> DType:
        d = BY_NAME.get(name)
        if d is None:
            raise self.error(f"unknown element type {name!r}", pos)
        return d

    def type(self):
        self.skip()
        pos = self.pos
        if m := self.match(_TENSOR):
            dims = tuple(int(s) for s in m.group(1).split("x") if s)
            return TensorType(dims, self.dtype(m.group(2), pos))
        if m := self.match(_PTR):
            return PtrType(self.dtype(m.group(1), pos))
        if m := self.match(_DTYPE):
            return TensorType((), self.dtype(m.group(), pos))
        raise self.error("expected a type")

    def type_list(self) -> list:
        self.expect("(")
        types = []
        if not self.accept(")"):
            types.append(self.type())
            while self.accept(","):
                types.append(self.type())
            self.expect(")")
        return types

    def function_type(self) -> _FunctionType:
        inputs = self.type_list()
        self.expect("->")
        results = self.type_list() if self.peek("(") else [self.type()]
        return _FunctionType(inputs, results)

    # --- attributes ------------------------------------------------------------------------

    def attr_dict(self) -> dict:
        self.expect("{")
        attrs: dict = {}
        if self.accept("}"):
            return attrs
        while True:
            self.skip()
            pos = self.pos
            key = self.string() if self.peek('"') else self.match(_BARE_ID)
            if key is None:
                raise self.error("expected an attribute name")
            key = key if isinstance(key, str) else key.group()
            if key in attrs:
                raise self.error(f"duplicate attribute {key!r}", pos)
            attrs[key] = self.attr_value() if self.accept("=") else None
            if self.accept("}"):
                return attrs
            self.expect(",", "',' or '}'")

    def attr_value(self):
        self.skip()
        pos = self.pos
        if self.peek('"'):
            return self.string()
        if self.peek("{"):
            return self.attr_dict()
        if self.accept("["):
            items = []
            if not self.accept("]"):
                items.append(self.attr_value())
                while self.accept(","):
                    items.append(self.attr_value())
                self.expect("]")
            return tuple(items)
        if self.peek("("):
            return self.function_type()
        for word, value in (("true", True), ("false", False), ("unit", None)):
            if self.word(word):
                return value
        if self.word("array"):
            return self.dense_array()
        if (m := self.match(_FLOAT)) or (m := self.match(_INT)):
            return self.number(m.group(), pos)
        t = self.type()
        return t.dtype if isinstance(t, TensorType) and t.is_scalar else t

    def dense_array(self) -> tuple:
        self.expect("<")
        pos = self.pos
        element = self.type()
        if not (isinstance(element, TensorType) and element.is_scalar):
            raise self.error("dense array elements must be a scalar type", pos)
        items = []
        if self.accept(":"):
            while True:
                if element.dtype.is_bool:
                    if self.word("true"):
                        items.append(True)
                    elif self.word("false"):
                        items.append(False)
                    else:
                        raise self.error("expected true or false")
                else:
                    m = self.match(_FLOAT) or self.match(_INT)
                    if m is None:
                        raise self.error("expected a number")
                    items.append(self.number(m.group(), m.start(), element.dtype))
                if not self.accept(","):
                    break
        self.expect(">")
        return tuple(items)

    def number(self, literal: str, pos: int, dtype: DType | None = None):
        """A number literal with an optional ``: type`` suffix."""
        type_name = dtype.name if dtype is not None else None
        if dtype is None and self.accept(":"):
            tpos = self.pos
            m = self.match(_DTYPE)
            if m is None:
                raise self.error("expected a number type")
            type_name = m.group()
            if type_name != "f64":
                self.dtype(type_name, tpos)
        is_float_type = type_name == "f64" or (type_name is not None
                                               and BY_NAME[type_name].is_float)
        if "0x" in literal:
            if not is_float_type:
                return int(literal, 16)
            bits = int(literal, 16)
            width = 64 if type_name == "f64" else BY_NAME[type_name].bits
            if not 0 <= bits < 2 ** width:
                raise self.error(f"hex float literal does not fit {type_name}", pos)
            return _float_from_bits(bits, type_name)
        if "." in literal:
            if type_name is not None and not is_float_type:
                raise self.error(f"float literal with integer type {type_name}", pos)
            return float(literal)
        return float(int(literal)) if is_float_type else int(literal)

    def loc(self) -> Loc:
        self.expect("(")
        if self.word("unknown"):
            self.expect(")")
            return UNKNOWN_LOC
        file = self.string()
        m = self.match(re.compile(r":([0-9]+):([0-9]+)\)"))
        if m is None:
            raise self.error("expected loc(\"file\":line:col)")
        return Loc(file, int(m.group(1)), int(m.group(2)))

    # --- values ----------------------------------------------------------------------------

    def define(self, name: str, value, pos: int) -> None:
        if any(name in scope for scope in self.scopes):
            raise self.error(f"redefinition of %{name}", pos)
        self.scopes[-1][name] = value

    def use(self):
        self.skip()
        pos = self.pos
        m = self.match(_VALUE_ID)
        if m is None:
            raise self.error("expected a value (%name)")
        name, index = m.group(1), m.group(2)
        for scope in reversed(self.scopes):
            if name in scope:
                found = scope[name]
                break
        else:
            raise self.error(f"use of undefined value %{name}", pos)
        if isinstance(found, list):
            if index is None:
                raise self.error(f"%{name} has {len(found)} results; use %{name}#i", pos)
            if int(index) >= len(found):
                raise self.error(f"%{name} has only {len(found)} results", pos)
            return found[int(index)]
        if index is not None:
            raise self.error(f"%{name} has a single result; drop the #{index}", pos)
        return found

    # --- ops and blocks --------------------------------------------------------------------

    def block_header(self) -> list[tuple[str, object, int]]:
        """``^bb0(%a: t, ...):`` -> [(name, type, pos)]."""
        if self.match(_BLOCK_LABEL) is None:
            raise self.error("expected a block label (^bb0)")
        args = []
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    self.skip()
                    pos = self.pos
                    m = self.match(_VALUE_ID)
                    if m is None or m.group(2) is not None:
                        raise self.error("expected a block argument (%name)", pos)
                    self.expect(":")
                    args.append((m.group(1), self.type(), pos))
                    if self.accept(")"):
                        break
                    self.expect(",", "',' or ')'")
        self.expect(":")
        return args

    def block_body(self, block: Block, header) -> None:
        """Define the block's args and parse its ops up to the closing ``}``."""
        for (name, _, pos), value in zip(header, block.args):
            self.define(name, value, pos)
            if not GENERATED_NAME.match(name):
                value.name = name
        while not self.peek("}"):
            if self.pos >= len(self.text):
                raise self.error("expected '}' to close the region")
            block.append(self.op())

    def region(self) -> Block:
        self.expect("{")
        header = self.block_header()
        block = Block([t for _, t, _ in header])
        self.scopes.append({})
        self.block_body(block, header)
        self.scopes.pop()
        self.expect("}")
        return block

    def op(self) -> Op:
        self.skip()
        start = self.pos
        result_name, nresults = None, None
        if m := self.match(_RESULT_DEF):
            result_name, nresults = m.group(1), int(m.group(2) or 1)
            if nresults < 2 and m.group(2) is not None:
                raise self.error("a multi-result prefix needs at least 2 results", start)
            self.expect("=")
        self.skip()
        name_pos = self.pos
        name = self.string()
        kind = _KINDS.get(name)
        if kind is None:
            raise self.error(f"unknown op {name!r}", name_pos)
        self.expect("(")
        operands = []
        if not self.accept(")"):
            operands.append(self.use())
            while self.accept(","):
                operands.append(self.use())
            self.expect(")", "',' or ')'")
        regions = []
        if self.accept("("):
            regions.append(self.region())
            while self.accept(","):
                regions.append(self.region())
            self.expect(")")
        attrs = decode_schedule_attrs(self.attr_dict()) if self.peek("{") else {}
        self.expect(":", "':' and the op's type")
        self.skip()
        type_pos = self.pos
        ftype = self.function_type()
        self.check_operand_types(name, operands, ftype.inputs, type_pos)
        if (nresults or 0) != len(ftype.results):
            raise self.error(f"{name} declares {nresults or 0} results but its type has "
                             f"{len(ftype.results)}", start)
        loc = self.loc() if self.word("loc") else UNKNOWN_LOC
        op = Op(kind, operands, ftype.results, attrs, regions, loc)
        if result_name is not None:
            self.define(result_name, op.results[0] if nresults == 1 else list(op.results), start)
        return op

    def check_operand_types(self, name, operands, types, pos) -> None:
        if len(types) != len(operands):
            raise self.error(f"{name} has {len(operands)} operands but its type lists "
                             f"{len(types)}", pos)
        for i, (v, t) in enumerate(zip(operands, types)):
            if v.type != t:
                raise self.error(f"{name} operand #{i} has type {v.type}, but the op's type "
                                 f"says {t}", pos)

    def function(self) -> Function:
        self.skip()
        if self.string() != "func.func":
            raise self.error("expected \"func.func\"", 0)
        self.expect("(")
        self.expect(")")
        self.expect("(")
        self.expect("{")
        header = self.block_header()
        fn = Function("", [t for _, t, _ in header])
        self.scopes.append({})
        self.block_body(fn.body, header)
        self.scopes.pop()
        self.expect("}")
        self.expect(")")
        self.skip()
        attrs_pos = self.pos
        attrs = self.attr_dict()
        name, ftype = attrs.pop("sym_name", None), attrs.pop("function_type", None)
        if not isinstance(name, str):
            raise self.error("func.func needs a string sym_name", attrs_pos)
        if not isinstance(ftype, _FunctionType):
            raise self.error("func.func needs a function_type", attrs_pos)
        if list(ftype.inputs) != [a.type for a in fn.args] or ftype.results:
            raise self.error("function_type does not match the body's arguments (kernels "
                             "return nothing)", attrs_pos)
        fn.name, fn.attrs = name, attrs
        self.expect(":")
        self.expect("(")
        self.expect(")")
        self.expect("->")
        self.expect("(")
        self.expect(")")
        if self.word("loc"):
            self.loc()
        self.skip()
        if self.pos != len(self.text):
            raise self.error("unexpected text after the function")
        return fn


def _float_from_bits(bits: int, type_name: str) -> float:
    if type_name == "f64":
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    np_dtype = BY_NAME[type_name].np
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32}[np_dtype.itemsize]
    return float(np.array(bits, dtype=uint).view(np_dtype))


def parse_function(text: str) -> Function:
    """Read one kernel printed by ``print_function`` (with or without ``loc``s).

    Example::

        >>> from npujit.ir.printer import print_function
        >>> text = print_function(parse_function('''"func.func"() ({
        ... ^bb0:
        ...   "func.return"() : () -> ()
        ... }) {function_type = () -> (), sym_name = "empty"} : () -> ()'''))
        >>> text.splitlines()[-1]
        '}) {function_type = () -> (), sym_name = "empty"} : () -> ()'
    """
    return _Parser(text).function()
