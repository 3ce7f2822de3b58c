"""Types of the npujit IR: element dtypes, tensors (tiles and scalars) and GM pointers.

A scalar is a tensor of shape ``()``.  Tiles are tensors with a static shape.  A GM pointer
(``!npu.ptr<f16>``) is what a kernel receives for an array argument; pointer arithmetic is a
front-end notion: the IR carries a base pointer plus an integer offset tensor.

Example::

    >>> from npujit.ir.types import tensor, float16
    >>> str(tensor((64, 64), float16))
    'tensor<64x64xf16>'
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """An element type.  ``name`` is the MLIR spelling (f64, f32, f16, bf16, f8E4M3FN,
    f8E5M2, i8 ... i64, ui8 ... ui64, i1).  Unsigned ints are ints (``is_int``) with
    ``is_unsigned`` set."""

    name: str
    itemsize: int
    kind: str  # "float", "int", "uint" or "bool"
    np_name: str  # numpy storage dtype name (bf16 and the fp8s are ml_dtypes' types)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "uint"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_half(self) -> bool:
        """16-bit floats: kept as 16-bit storage, computed in fp32 and rounded at each op."""
        return self.name in ("f16", "bf16")

    @property
    def is_fp8(self) -> bool:
        """8-bit floats (Triton's float8e4nv = OCP E4M3FN, float8e5 = OCP E5M2)."""
        return self.name in FP8_FORMATS

    @property
    def is_narrow_float(self) -> bool:
        """Floats narrower than f32 (f16, bf16, fp8): kept as storage bits, computed in f32
        and rounded back at each op (docs/semantics.md, "Half floats")."""
        return self.is_half or self.is_fp8

    @property
    def np(self) -> np.dtype:
        if self.name == "bf16" or self.is_fp8:
            return ml_dtypes_numpy(self.np_name)
        return np.dtype(self.np_name)

    @property
    def bits(self) -> int:
        return 1 if self.is_bool else self.itemsize * 8

    # --- Triton's introspection names (tl.float32.primitive_bitwidth, x.dtype.is_floating())
    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    @property
    def fp_mantissa_width(self) -> int:
        """Explicit mantissa bits of a float type (f32 23, f16 10, bf16 7, fp8 3 or 2)."""
        if not self.is_float:
            raise TypeError(f"{self!r} is not a floating-point type")
        return FLOAT_FORMATS[self.name].mbits

    @property
    def exponent_bias(self) -> int:
        """The exponent bias of a float type (f32 127, f16 15, float8e4nv 7, float8e5 15)."""
        if not self.is_float:
            raise TypeError(f"{self!r} is not a floating-point type")
        return FLOAT_FORMATS[self.name].bias

    def is_floating(self) -> bool:
        return self.is_float

    def is_int_signed(self) -> bool:
        return self.kind == "int"

    def is_int_unsigned(self) -> bool:
        return self.is_unsigned

    def __repr__(self) -> str:
        return f"nl.{PUBLIC_NAMES[self.name]}"

    def __str__(self) -> str:
        return self.name


float64 = DType("f64", 8, "float", "float64")
float32 = DType("f32", 4, "float", "float32")
float16 = DType("f16", 2, "float", "float16")
bfloat16 = DType("bf16", 2, "float", "bfloat16")
int8 = DType("i8", 1, "int", "int8")
int16 = DType("i16", 2, "int", "int16")
int32 = DType("i32", 4, "int", "int32")
int64 = DType("i64", 8, "int", "int64")
uint8 = DType("ui8", 1, "uint", "uint8")
uint16 = DType("ui16", 2, "uint", "uint16")
uint32 = DType("ui32", 4, "uint", "uint32")
uint64 = DType("ui64", 8, "uint", "uint64")
bool_ = DType("i1", 1, "bool", "bool")
float8e4nv = DType("f8E4M3FN", 1, "float", "float8_e4m3fn")
float8e5 = DType("f8E5M2", 1, "float", "float8_e5m2")

ALL_DTYPES = (float32, float16, bfloat16, int8, int16, int32, int64, bool_,
              float64, uint8, uint16, uint32, uint64, float8e4nv, float8e5)
BY_NAME = {d.name: d for d in ALL_DTYPES}
PUBLIC_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i8": "int8",
                "i16": "int16", "i32": "int32", "i64": "int64", "i1": "bool_",
                "f64": "float64", "ui8": "uint8", "ui16": "uint16", "ui32": "uint32",
                "ui64": "uint64", "f8E4M3FN": "float8e4nv", "f8E5M2": "float8e5"}


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: exponent and explicit mantissa bits, exponent bias, and how
    the all-ones exponent is used.  ``ieee``: infinities and NaNs as in IEEE 754 (f16,
    f32, float8e5); otherwise (float8e4nv = OCP E4M3FN) there is no infinity and only
    S.1111.111 is NaN, so the largest finite value is 448."""

    ebits: int
    mbits: int
    bias: int
    ieee: bool = True

    @property
    def emin(self) -> int:
        """The exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        top = (1 << self.ebits) - 1 - self.bias            # the all-ones exponent's value
        if self.ieee:
            return (2.0 - 2.0 ** -self.mbits) * 2.0 ** (top - 1)
        return (2.0 - 2.0 ** (1 - self.mbits)) * 2.0 ** top  # all-ones mantissa is NaN


FLOAT_FORMATS = {"f64": FloatFormat(11, 52, 1023), "f32": FloatFormat(8, 23, 127),
                 "f16": FloatFormat(5, 10, 15), "bf16": FloatFormat(8, 7, 127),
                 "f8E4M3FN": FloatFormat(4, 3, 7, ieee=False),
                 "f8E5M2": FloatFormat(5, 2, 15)}
FP8_FORMATS = {n: FLOAT_FORMATS[n] for n in ("f8E4M3FN", "f8E5M2")}
# ml_dtypes' numpy dtype names -> IR dtypes (their numpy kinds are 'V' or 'f')
_ML_DTYPES = {"bfloat16": bfloat16, "float8_e4m3fn": float8e4nv, "float8_e5m2": float8e5}


def ml_dtypes_numpy(name: str) -> np.dtype:
    """ml_dtypes' numpy dtype ``name`` (bfloat16, float8_e4m3fn...), imported on first
    use: importing ml_dtypes costs ~1 s of CPU with numpy 2.4, and a process that never
    meets such an array must not pay it at ``import npujit``."""
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


def bfloat16_numpy() -> np.dtype:
    """numpy's bfloat16 dtype (ml_dtypes')."""
    return ml_dtypes_numpy("bfloat16")


def ml_dtype_of_numpy(dt: np.dtype) -> DType | None:
    """The IR dtype of one of ml_dtypes' numpy dtypes, without importing ml_dtypes (such
    a dtype exists only once it is imported); None for any other dtype."""
    d = _ML_DTYPES.get(dt.name)
    if d is None or dt.kind not in "Vf" or "ml_dtypes" not in sys.modules:
        return None
    return d if dt == ml_dtypes_numpy(d.np_name) else None


def is_bfloat16_numpy(dt: np.dtype) -> bool:
    """Whether numpy dtype ``dt`` is ml_dtypes' bfloat16."""
    return ml_dtype_of_numpy(dt) is bfloat16


def dtype_of_numpy(dt) -> DType | None:
    """The IR dtype for a numpy dtype, or None when npujit has no such element type."""
    if isinstance(dt, str) and dt in _ML_DTYPES:
        return _ML_DTYPES[dt]
    dt = np.dtype(dt)
    d = ml_dtype_of_numpy(dt)
    if d is not None:
        return d
    for d in ALL_DTYPES:
        if d.np_name not in _ML_DTYPES and np.dtype(d.np_name) == dt:
            return d
    return None


def promote(a: DType, b: DType) -> DType:
    """The dtype of a binary op on ``a`` and ``b`` (Triton's rules).

    Float beats int beats bool; among floats f64, then f32 wins; bf16 with f16 or an fp8
    gives f32; f16 with an fp8, and two different fp8s, give f16; among ints the wider wins, and at
    equal width unsigned wins (u32 with i32 gives u32, u8 with i32 gives i32), as in C and
    Triton.
    """
    if a == b:
        return a
    if a.is_float and b.is_float:
        for d in (float64, float32):
            if d in (a, b):
                return d
        if bfloat16 in (a, b):          # bf16 with f16 or an fp8
            return float32
        return float16                  # f16 with an fp8, or two different fp8s
    if a.is_float:
        return a
    if b.is_float:
        return b
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.itemsize == b.itemsize:
        return a if a.is_unsigned else b
    return a if a.itemsize > b.itemsize else b


@dataclass(frozen=True)
class TensorType:
    """A tile (or a scalar when ``shape == ()``) of ``dtype`` elements."""

    shape: tuple
    dtype: DType

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    @property
    def element_ty(self) -> DType:
        """The element dtype, under Triton's name (``x.type.element_ty``)."""
        return self.dtype

    scalar = element_ty         # Triton's other name for it (``x.type.scalar``)

    def with_dtype(self, dtype: DType) -> "TensorType":
        return TensorType(self.shape, dtype)

    def __str__(self) -> str:
        if not self.shape:
            return str(self.dtype)
        return "tensor<" + "x".join(str(s) for s in self.shape) + "x" + str(self.dtype) + ">"


@dataclass(frozen=True)
class PtrType:
    """A pointer into global memory (GM) to ``dtype`` elements: a kernel's array argument."""

    dtype: DType

    def __str__(self) -> str:
        return f"!npu.ptr<{self.dtype}>"


def row_major(shape) -> tuple:
    """Row-major strides (in elements) of ``shape``.

    Example::

        >>> row_major((2, 3, 4))
        (12, 4, 1)
    """
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= s
    return tuple(reversed(strides))


def numel(shape) -> int:
    """The number of elements of ``shape`` (1 for a scalar's ``()``)."""
    n = 1
    for s in shape:
        n *= s
    return n


def tensor(shape, dtype: DType) -> TensorType:
    """A tile type; ``tensor((), d)`` is a scalar."""
    return TensorType(tuple(int(s) for s in shape), dtype)


def scalar(dtype: DType) -> TensorType:
    return TensorType((), dtype)
