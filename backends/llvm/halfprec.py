"""16-bit floats in the llvm backend: computed in f32, rounded to their format after each
op, kept as 16-bit bits only in GM (docs/semantics.md, "Half floats").

A tile of f16 or bf16 holds f32 values that are exactly representable in the format, so
every op reads them as f32.  ``round_to`` rounds an f32 to the format (nearest even)
and back; ``encode``/``decode`` convert between that f32 and the 16 bits of a GM array.

* f16 uses LLVM's ``half`` (``fptrunc``/``fpext``: the F16C instructions on x86-64,
  native conversions on AArch64);
* bf16 is integer code: the top 16 bits of the f32, rounded to nearest even by adding
  ``0x7FFF`` plus the lowest kept bit; a NaN keeps its sign and becomes a quiet NaN
  (``0x7FC0`` pattern), as numpy's and ml_dtypes' conversions give.

The 8-bit floats are not lowered yet (the backend refuses them).

Example::

    >>> from npujit.ir.types import bfloat16
    >>> w = Writer()
    >>> round_to(w, "%x", bfloat16).startswith("%")
    True
"""
from __future__ import annotations

from npujit.ir.types import DType

from .ir_text import Writer


def round_to(w: Writer, x: str, dt: DType) -> str:
    """The f32 ``x`` rounded to ``dt`` (f16 or bf16), as an f32."""
    return decode(w, encode(w, x, dt), dt)


def from_double(w: Writer, x: str, dt: DType) -> str:
    """The f64 ``x`` rounded once to ``dt``, as an f32: first to f32 rounding to odd
    (truncate, then set the last bit when inexact), which keeps enough bits that the
    second rounding, to the 16-bit format, is the correctly rounded one."""
    r = w.assign(f"fptrunc double {x} to float")
    back = w.assign(f"fpext float {r} to double")
    inexact = w.op("fcmp one double", back, x)            # false for NaN and exact values
    away = w.op("fcmp ogt double", w.assign(f"call double @llvm.fabs.f64(double {back})"),
                w.assign(f"call double @llvm.fabs.f64(double {x})"))
    bits = w.assign(f"bitcast float {r} to i32")
    toward_zero = w.op("select i1", away, f"i32 {w.op('sub i32', bits, '1')}", f"i32 {bits}")
    odd = w.op("or i32", toward_zero, "1")
    odd = w.assign(f"bitcast i32 {odd} to float")
    return round_to(w, w.op("select i1", inexact, f"float {odd}", f"float {r}"), dt)


def encode(w: Writer, x: str, dt: DType) -> str:
    """The 16 bits (an i16) of the f32 ``x`` rounded to ``dt``."""
    if dt.name == "f16":
        return w.assign(f"bitcast half {w.assign(f'fptrunc float {x} to half')} to i16")
    bits = w.assign(f"bitcast float {x} to i32")
    lsb = w.op("and i32", w.op("lshr i32", bits, "16"), "1")
    rounded = w.op("lshr i32", w.op("add i32", w.op("add i32", bits, "32767"), lsb), "16")
    nan = w.op("fcmp uno float", x, x)
    quiet = w.op("or i32", w.op("lshr i32", bits, "16"), "64")
    return w.assign(f"trunc i32 {w.op('select i1', nan, f'i32 {quiet}', f'i32 {rounded}')}"
                    " to i16")


def decode(w: Writer, bits: str, dt: DType) -> str:
    """The f32 value of the 16 bits ``bits`` (an i16) of ``dt``."""
    if dt.name == "f16":
        return w.assign(f"fpext half {w.assign(f'bitcast i16 {bits} to half')} to float")
    wide = w.op("shl i32", w.assign(f"zext i16 {bits} to i32"), "16")
    return w.assign(f"bitcast i32 {wide} to float")
