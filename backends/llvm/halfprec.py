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

* the 8-bit floats (float8e4nv = OCP E4M3FN, float8e5 = E5M2) are integer and f64 code:
  ``round_to`` rounds in f64, where every step is exact -- the ulp at the value (its
  exponent, not below the format's smallest normal one), ``rint`` of the quotient, the
  overflow to inf (E5M2) or NaN (E4M3FN) above the largest finite value -- and
  ``encode``/``decode`` build the 8 bits from the rounded value's exponent and mantissa
  and back, as the numba backend's ``halfprec`` and ml_dtypes do.

Example::

    >>> from npujit.ir.types import bfloat16
    >>> w = Writer()
    >>> round_to(w, "%x", bfloat16).startswith("%")
    True
"""
from __future__ import annotations

from npujit.ir.types import FLOAT_FORMATS, DType, float64

from .ir_text import Writer, literal


def round_to(w: Writer, x: str, dt: DType) -> str:
    """The f32 ``x`` rounded to ``dt`` (f16, bf16 or an fp8), as an f32."""
    if dt.is_fp8:
        return from_double(w, w.assign(f"fpext float {x} to double"), dt)
    return decode(w, encode(w, x, dt), dt)


def _round_fp8(w: Writer, x: str, dt: DType) -> str:
    """The f64 ``x`` rounded to the fp8 ``dt`` (nearest even), as an f64 (see the
    module doc); NaN stays NaN."""
    fmt = FLOAT_FORMATS[dt.name]
    a = w.assign(f"call double @llvm.fabs.f64(double {x})")
    bits = w.assign(f"bitcast double {a} to i64")
    e = w.op("sub i64", w.op("lshr i64", bits, "52"), "1023")         # floor(log2 a)
    e = w.op("select i1", w.op("icmp slt i64", e, str(fmt.emin)), f"i64 {fmt.emin}", f"i64 {e}")
    ulp = w.assign(f"bitcast i64 {w.op('shl i64', w.op('add i64', e, str(1023 - fmt.mbits)), '52')} to double")
    q = w.assign(f"call double @llvm.rint.f64(double {w.op('fdiv double', a, ulp)})")
    r = w.op("fmul double", q, ulp)
    over = w.op("fcmp ogt double", r, _double(fmt.max_finite))   # inf too
    top = "0x7FF0000000000000" if fmt.ieee else "0x7FF8000000000000"
    r = w.op("select i1", over, f"double {top}", f"double {r}")
    r = w.assign(f"call double @llvm.copysign.f64(double {r}, double {x})")
    nan = w.op("fcmp uno double", x, x)
    return w.op("select i1", nan, f"double {x}", f"double {r}")


def _double(v: float) -> str:
    """``v`` as an LLVM constant (the exact hex of a double; also a float constant when
    ``v`` is one)."""
    return literal(v, float64)


def _fp8_encode(w: Writer, x: str, dt: DType) -> str:
    """The 8 bits (an i8) of the f32 ``x`` rounded to the fp8 ``dt``."""
    fmt = FLOAT_FORMATS[dt.name]
    r = _round_fp8(w, w.assign(f"fpext float {x} to double"), dt)
    rb = w.assign(f"bitcast double {r} to i64")
    sign = w.op("and i64", w.op("lshr i64", rb, "56"), "128")
    a = w.assign(f"call double @llvm.fabs.f64(double {r})")
    ab = w.assign(f"bitcast double {a} to i64")
    e = w.op("sub i64", w.op("lshr i64", ab, "52"), "1023")
    frac = w.op("lshr i64", w.op("and i64", ab, str((1 << 52) - 1)), str(52 - fmt.mbits))
    normal = w.op("or i64", w.op("shl i64", w.op("add i64", e, str(fmt.bias)), str(fmt.mbits)),
                  frac)
    small = w.assign(f"fptoui double {w.op('fmul double', a, _double(2.0 ** (fmt.mbits - fmt.emin)))} to i64")
    code = w.op("select i1", w.op("icmp slt i64", e, str(fmt.emin)), f"i64 {small}", f"i64 {normal}")
    inf = w.op("fcmp oeq double", a, _double(float("inf")))
    code = w.op("select i1", inf, f"i64 {((1 << fmt.ebits) - 1) << fmt.mbits}", f"i64 {code}")
    nan_code = 0x7F if not fmt.ieee else 0x7E
    code = w.op("select i1", w.op("fcmp uno double", r, r), f"i64 {nan_code}", f"i64 {code}")
    return w.assign(f"trunc i64 {w.op('or i64', code, sign)} to i8")


def _fp8_decode(w: Writer, bits: str, dt: DType) -> str:
    """The f32 value of the 8 bits ``bits`` (an i8) of the fp8 ``dt``."""
    fmt = FLOAT_FORMATS[dt.name]
    c = w.assign(f"zext i8 {bits} to i32")
    sign = w.op("shl i32", w.op("lshr i32", c, "7"), "31")
    e = w.op("and i32", w.op("lshr i32", c, str(fmt.mbits)), str((1 << fmt.ebits) - 1))
    m = w.op("and i32", c, str((1 << fmt.mbits) - 1))
    normal = w.op("or i32", w.op("shl i32", w.op("add i32", e, str(127 - fmt.bias)), "23"),
                  w.op("shl i32", m, str(23 - fmt.mbits)))
    sub = w.op("fmul float", w.assign(f"uitofp i32 {m} to float"),
               _double(2.0 ** (fmt.emin - fmt.mbits)))
    subbits = w.assign(f"bitcast float {sub} to i32")
    mag = w.op("select i1", w.op("icmp eq i32", e, "0"), f"i32 {subbits}", f"i32 {normal}")
    if fmt.ieee:
        top = w.op("icmp eq i32", e, str((1 << fmt.ebits) - 1))
        special = w.op("select i1", w.op("icmp eq i32", m, "0"), "i32 2139095040",
                       "i32 2143289344")                      # inf, quiet NaN
        mag = w.op("select i1", top, f"i32 {special}", f"i32 {mag}")
    else:
        nan = w.op("icmp eq i32", w.op("and i32", c, "127"), "127")
        mag = w.op("select i1", nan, "i32 2143289344", f"i32 {mag}")
    return w.assign(f"bitcast i32 {w.op('or i32', mag, sign)} to float")


def from_double(w: Writer, x: str, dt: DType) -> str:
    """The f64 ``x`` rounded once to ``dt``, as an f32: first to f32 rounding to odd
    (truncate, then set the last bit when inexact), which keeps enough bits that the
    second rounding, to the 16-bit format, is the correctly rounded one.  An fp8 rounds
    the f64 once (``_round_fp8``)."""
    if dt.is_fp8:
        return w.assign(f"fptrunc double {_round_fp8(w, x, dt)} to float")
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
    """The 16 bits (an i16) of the f32 ``x`` rounded to ``dt`` (an fp8: 8 bits, an i8)."""
    if dt.is_fp8:
        return _fp8_encode(w, x, dt)
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
    """The f32 value of the 16 bits ``bits`` (an i16; an fp8's 8 bits, an i8) of ``dt``."""
    if dt.is_fp8:
        return _fp8_decode(w, bits, dt)
    if dt.name == "f16":
        return w.assign(f"fpext half {w.assign(f'bitcast i16 {bits} to half')} to float")
    wide = w.op("shl i32", w.assign(f"zext i16 {bits} to i32"), "16")
    return w.assign(f"bitcast i32 {wide} to float")
