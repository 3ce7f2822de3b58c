"""Writing LLVM IR text: fresh names, basic blocks, counted loops, and the IR types of
npujit's dtypes.

The generated function keeps every loop counter and every value that outlives a block
(a loop's carried values, an ``scf.if``'s results) in an ``alloca`` of the entry block;
LLVM's first passes (SROA, mem2reg) turn them into SSA registers, so the writer never
places a phi node.  Everything else is an SSA value used in the block that defines it.

Types: a value computes in its dtype's *compute type* -- ``float`` for f32 (the 16-bit
floats too, once the backend takes them), ``double`` for f64, ``iN`` for the ints and
``i1`` for bools -- and a tile keeps its elements in memory as the *memory type*, the
same but ``i8`` for a bool (numpy's bool is one byte).

Example::

    >>> w = Writer()
    >>> with w.loop("i64 16") as i:
    ...     _ = w.op("mul i64", i, "2")
    >>> print(w.entry_text())
      %i.1 = alloca i64
    >>> print(w.body_text().splitlines()[3])
      %i.2 = load i64, ptr %i.1
"""
from __future__ import annotations

import struct
from contextlib import contextmanager

import numpy as np

from npujit.ir.types import DType


def compute_type(dt: DType) -> str:
    """The LLVM type a value of ``dt`` computes in."""
    if dt.is_bool:
        return "i1"
    if dt.is_float:
        return "double" if dt.itemsize == 8 else "float"
    return f"i{dt.itemsize * 8}"


def memory_type(dt: DType) -> str:
    """The LLVM type of one element of ``dt`` in a tile (a 16-bit float's is its f32
    value: halfprec.py)."""
    return "i8" if dt.is_bool else compute_type(dt)


def gm_type(dt: DType) -> str:
    """The LLVM type of one element of ``dt`` in a GM argument (16-bit floats as bits)."""
    return f"i{dt.itemsize * 8}" if dt.is_narrow_float else memory_type(dt)


def tile_bytes(dt: DType) -> int:
    """Bytes of one element of ``dt`` in a tile (``memory_type``)."""
    return 1 if dt.is_bool else (4 if dt.is_narrow_float else dt.itemsize)


def literal(value, dt: DType) -> str:
    """``value`` as an LLVM constant of ``dt``'s compute type (floats rounded once to
    ``dt``, written as the exact hex of a double, LLVM's spelling for float constants)."""
    if dt.is_bool:
        return "true" if value else "false"
    if dt.is_float:
        v = float(value)
        if dt.itemsize != 8:     # rounded once to the format (numpy's nearest even)
            with np.errstate(over="ignore"):
                v = float(np.asarray(v).astype(dt.np))
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]
    bits = dt.itemsize * 8
    v = int(value) & ((1 << bits) - 1)
    return str(v - (1 << bits) if v >= 1 << (bits - 1) else v)


class Writer:
    """The body of one LLVM function being written: ``op`` appends an instruction with a
    fresh result, ``line`` any text; ``alloca`` declares a slot in the entry block."""

    def __init__(self):
        self._lines: list[str] = []
        self._entry: list[str] = []
        self._names: dict[str, int] = {}
        # i1 operands known true where the code being written runs (values.element)
        self.assumed: set[str] = set()

    def fresh(self, hint: str = "v") -> str:
        n = self._names.get(hint, 0) + 1
        self._names[hint] = n
        return f"%{hint}.{n}"

    def label(self, hint: str) -> str:
        """A fresh basic block name (without the ``%``)."""
        return self.fresh(hint)[1:]

    def line(self, text: str) -> None:
        self._lines.append("  " + text)

    def op(self, head: str, *operands: str, hint: str = "v") -> str:
        """``%r = head a, b, ...``; returns ``%r``."""
        r = self.fresh(hint)
        self._lines.append(f"  {r} = {head} {', '.join(operands)}")
        return r

    def assign(self, text: str, hint: str = "v") -> str:
        """``%r = text``; returns ``%r``."""
        r = self.fresh(hint)
        self._lines.append(f"  {r} = {text}")
        return r

    def block(self, label: str) -> None:
        """End the current block with a branch to ``label`` and start ``label``."""
        self._lines.append(f"  br label %{label}")
        self.start(label)

    def start(self, label: str) -> None:
        """Start block ``label`` (the current one must have ended in a terminator)."""
        self._lines.append(f"{label}:")

    def alloca(self, ty: str, hint: str = "slot", init: str | None = None) -> str:
        """A stack slot of type ``ty`` in the entry block (stored ``init`` there)."""
        r = self.fresh(hint)
        self._entry.append(f"  {r} = alloca {ty}")
        if init is not None:
            self._entry.append(f"  store {ty} {init}, ptr {r}")
        return r

    def entry(self, text: str) -> None:
        """An instruction of the entry block (after the allocas)."""
        self._entry.append("  " + text)

    def load(self, ty: str, ptr: str, hint: str = "v") -> str:
        return self.assign(f"load {ty}, ptr {ptr}", hint)

    def store(self, ty: str, value: str, ptr: str) -> None:
        self.line(f"store {ty} {value}, ptr {ptr}")

    def gep(self, ty: str, base: str, index: str, hint: str = "p") -> str:
        """``&base[index]`` for elements of ``ty`` (``index`` an i64)."""
        return self.assign(f"getelementptr inbounds {ty}, ptr {base}, i64 {index}", hint)

    @contextmanager
    def loop(self, count: str, hint: str = "i"):
        """``for i in range(count)`` (``count``: a typed operand such as ``i64 %n``); yields
        ``i`` (an i64 SSA value valid in the body)."""
        slot = self.alloca("i64", hint)
        self.line(f"store i64 0, ptr {slot}")
        head, body, done = self.label("head"), self.label("body"), self.label("done")
        self.block(head)
        i = self.load("i64", slot, hint)
        more = self.assign(f"icmp slt i64 {i}, {count.split()[-1]}", "more")
        self.line(f"br i1 {more}, label %{body}, label %{done}")
        self.start(body)
        yield i
        nxt = self.assign(f"add nuw nsw i64 {i}, 1", hint)
        self.store("i64", nxt, slot)
        self.line(f"br label %{head}")
        self.start(done)

    @contextmanager
    def when(self, cond: str, hint: str = "then"):
        """``if cond:`` (an i1 operand) around the body."""
        then, after = self.label(hint), self.label("endif")
        self.line(f"br i1 {cond}, label %{then}, label %{after}")
        self.start(then)
        yield
        self.block(after)

    def text(self) -> str:
        return "\n".join(self._entry + self._lines)

    def entry_text(self) -> str:
        return "\n".join(self._entry)

    def body_text(self) -> str:
        return "\n".join(self._lines)
