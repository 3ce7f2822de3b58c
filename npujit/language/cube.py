"""The Cube unit: ``dot``, a tile matrix multiply accumulating in f32 (i32 for int8)."""
from __future__ import annotations

from npujit.ir import Kind
from npujit.ir import types as T

from . import semantic as sem
from .core import builtin, tensor, unwrap_constexpr


@builtin
def dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=T.float32) -> tensor:
    """``acc + a @ b`` for 2-D tiles, accumulated in f32 (i32 for int8 inputs).

    ``a`` is M×K, ``b`` is K×N (or, batched, B×M×K and B×K×N, or more leading dims: one
    product per leading index); mixed input dtypes are promoted first.  The result (and
    ``acc``) is f32, or i32 for int8.  Triton's ``input_precision`` ("tf32", "tf32x3",
    "ieee"), ``allow_tf32`` and ``max_num_imprecise_acc`` are accepted and change nothing:
    the Cube multiplies f32 inputs exactly and accumulates every product in f32 (Triton's
    "ieee").

    Example::

        acc = nl.dot(a, b, acc)          # a: (BM, BK) f16, b: (BK, BN) f16, acc f32
    """
    if input_precision not in (None, "tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"):
        raise sem.error(f"dot input_precision must be 'tf32', 'tf32x3' or 'ieee', got "
                        f"{input_precision!r}")
    out_dtype = unwrap_constexpr(out_dtype)
    a, b = sem.to_tensor(a), sem.to_tensor(b)
    if a.ndim != b.ndim or a.ndim < 2:
        raise sem.error(f"dot needs two 2-D tiles (or two batched tiles of one rank), got "
                        f"shapes {list(a.shape)} and {list(b.shape)}")
    if a.shape[:-2] != b.shape[:-2]:
        raise sem.error(f"dot batch dimensions differ: a is {list(a.shape)} and b is "
                        f"{list(b.shape)}; their leading dimensions must be equal")
    if a.shape[-1] != b.shape[-2]:
        raise sem.error(f"dot inner dimensions differ: a is {list(a.shape)} and b is "
                        f"{list(b.shape)}; a.shape[-1] must equal b.shape[-2]")
    if a.dtype != b.dtype:
        d = T.promote(a.dtype, b.dtype)
        a, b = sem.cast(a, d), sem.cast(b, d)
    if a.dtype.is_bool or (a.dtype.is_int and a.dtype != T.int8):
        raise sem.error(f"dot takes float or int8 tiles, got {a.dtype}; cast with .to(nl.float16)")
    res_dtype = T.int32 if a.dtype.is_int else T.float32
    if a.dtype.is_int:
        out_dtype = T.int32      # int8 products are i32 whatever out_dtype says (Triton's rule)
    if out_dtype not in (T.float32, T.int32, T.float16, T.bfloat16):
        raise sem.error(f"dot out_dtype must be nl.float32 (or nl.float16/bfloat16), got {out_dtype!r}")
    operands = [a, b]
    if acc is not None:
        acc = sem.to_tensor(acc)
        want = a.shape[:-1] + b.shape[-1:]
        if acc.shape != want:
            raise sem.error(f"dot accumulator has shape {list(acc.shape)}, expected {list(want)}")
        if acc.dtype != res_dtype:
            raise sem.error(f"dot accumulator must be {res_dtype!r} (the Cube accumulates in "
                            f"{res_dtype}), got {acc.dtype!r}; create it with "
                            f"nl.zeros(..., dtype={res_dtype!r})")
        operands.append(acc)
    out = sem.emit(Kind.DOT, operands)
    if out_dtype in (T.float16, T.bfloat16):
        out = sem.cast(out, out_dtype)
    return out
