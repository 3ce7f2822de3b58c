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
    """An element type.  ``name`` is the MLIR spelling (f64, f32, f16, bf16, i8 ... i64,
    ui8 ... ui64, i1).  Unsigned ints are ints (``is_int``) with ``is_unsigned`` set."""

    name: str
    itemsize: int
    kind: str  # "float", "int", "uint" or "bool"
    np_name: str  # numpy storage dtype name (bf16 uses ml_dtypes.bfloat16)

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
    def np(self) -> np.dtype:
        return bfloat16_numpy() if self.name == "bf16" else np.dtype(self.np_name)

    @property
    def bits(self) -> int:
        return 1 if self.is_bool else self.itemsize * 8

    # --- Triton's introspection names (tl.float32.primitive_bitwidth, x.dtype.is_floating())
    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    @property
    def fp_mantissa_width(self) -> int:
        """Explicit mantissa bits of a float type (f32 23, f16 10, bf16 7)."""
        if not self.is_float:
            raise TypeError(f"{self!r} is not a floating-point type")
        return {"f64": 52, "f32": 23, "f16": 10, "bf16": 7}[self.name]

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

ALL_DTYPES = (float32, float16, bfloat16, int8, int16, int32, int64, bool_,
              float64, uint8, uint16, uint32, uint64)
BY_NAME = {d.name: d for d in ALL_DTYPES}
PUBLIC_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i8": "int8",
                "i16": "int16", "i32": "int32", "i64": "int64", "i1": "bool_",
                "f64": "float64", "ui8": "uint8", "ui16": "uint16", "ui32": "uint32",
                "ui64": "uint64"}


def bfloat16_numpy() -> np.dtype:
    """numpy's bfloat16 dtype (ml_dtypes'), imported on first use: importing ml_dtypes
    costs ~1 s of CPU with numpy 2.4, and a process that never meets a bf16 array must
    not pay it at ``import npujit``."""
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16_numpy(dt: np.dtype) -> bool:
    """Whether numpy dtype ``dt`` is ml_dtypes' bfloat16 (kind 'V'), without importing
    ml_dtypes: a bfloat16 dtype exists only once it is imported."""
    return dt.kind == "V" and "ml_dtypes" in sys.modules and dt == bfloat16_numpy()


def dtype_of_numpy(dt) -> DType | None:
    """The IR dtype for a numpy dtype, or None when npujit has no such element type."""
    if isinstance(dt, str) and dt == "bfloat16":
        return bfloat16
    dt = np.dtype(dt)
    if is_bfloat16_numpy(dt):
        return bfloat16
    for d in ALL_DTYPES:
        if d.name != "bf16" and np.dtype(d.np_name) == dt:
            return d
    return None


def promote(a: DType, b: DType) -> DType:
    """The dtype of a binary op on ``a`` and ``b`` (Triton's rules).

    Float beats int beats bool; among floats the wider wins and f16 with bf16 gives f32;
    among ints the wider wins, and at equal width unsigned wins (u32 with i32 gives u32,
    u8 with i32 gives i32), as in C and Triton.
    """
    if a == b:
        return a
    if a.is_float and b.is_float:
        if a.itemsize == b.itemsize:  # f16 with bf16
            return float32
        return a if a.itemsize > b.itemsize else b
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


def tensor(shape, dtype: DType) -> TensorType:
    """A tile type; ``tensor((), d)`` is a scalar."""
    return TensorType(tuple(int(s) for s in shape), dtype)


def scalar(dtype: DType) -> TensorType:
    return TensorType((), dtype)
