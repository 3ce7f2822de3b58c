"""``dot_scaled``: a matrix product of microscaling (MX) operands, Triton's ``tl.dot_scaled``.

An MX operand is a tile of narrow floats plus one shared power-of-two scale per 32
consecutive elements along K (the OCP Microscaling format; MXFP4 MoE weights are stored
this way).  Element formats, given by name:

======== =============================================================================
``e2m1`` FP4 (sign, 2 exponent bits with bias 1, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3,
         4, 6), two per uint8 along K: the low nibble is the even K index
``e4m3`` float8e4nv, as its uint8 bits or as an ``nl.float8e4nv`` tile
``e5m2`` float8e5, likewise
``bf16`` / ``fp16`` a plain bfloat16 / float16 tile (such an operand takes no scale)
======== =============================================================================

A scale is a uint8 tile of E8M0 exponents, ``[M, K // 32]`` for the left operand and
``[N, K // 32]`` for the right one: the code ``s`` means 2**(s - 127) (``s = 0`` is
2**-127) and 255 is NaN.  ``None`` means no scale.

As in Triton, both operands are dequantised to bf16 (to fp16 when either format is
``fp16``): decoded exactly in f32, multiplied by the scale, rounded once; then multiplied
on the Cube with f32 accumulation.  The decoding is ordinary tile arithmetic in the IR, so
every tier and the simulator run it as written here.

Example (inside a kernel)::

    w = nl.load(w_ptrs)                       # [K // 2, N] uint8: MXFP4 weights, packed on K
    ws = nl.load(ws_ptrs)                     # [N, K // 32] uint8 scales
    y = nl.dot_scaled(x, None, "bf16", w, ws, "e2m1")     # [M, N] f32
"""
from __future__ import annotations

from npujit.ir import types as T

from . import semantic as sem
from .core import builtin, unwrap_constexpr
from .cube import dot
from .math import where
from .shape import interleave, reshape, trans, broadcast_to, expand_dims

FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
_FP8 = {"e4m3": T.float8e4nv, "e5m2": T.float8e5}
_PLAIN = {"bf16": T.bfloat16, "fp16": T.float16}
SCALE_BLOCK = 32            # elements along K sharing one scale (OCP MX)


def _value(v):
    return unwrap_constexpr(v)


def _e2m1(n):
    """f32 values of the FP4 E2M1 codes in the low 4 bits of the int tile ``n``."""
    e = (n >> 1) & 3
    m = (n & 1).to(T.float32)
    mag = where(e == 0, 0.5 * m, where(e == 1, 1.0 + 0.5 * m, where(e == 2, 2.0 + m, 4.0 + 2.0 * m)))
    return where((n & 8) != 0, -mag, mag)


def _as_bits(x, fmt: str, side: str):
    if x.dtype not in (T.uint8, T.int8):
        raise sem.error(f"dot_scaled: the {side} operand in format {fmt!r} must be a uint8 tile "
                        f"of packed codes, got {x.dtype!r}")
    return x.to(T.uint8, bitcast=True) if x.dtype == T.int8 else x


def _factor(scale, side: str, rows: int, k: int, k_axis: int, group: int):
    """The f32 factor 2**(s - 127) of E8M0 ``scale`` ([rows, k // 32]) for each of the ``k``
    columns along ``k_axis``, ``group`` columns per scale (32; 16 for packed e2m1)."""
    scale = sem.to_tensor(scale)
    want = [rows, k // SCALE_BLOCK]
    if list(scale.shape) != want or scale.dtype not in (T.uint8, T.int8):
        raise sem.error(f"dot_scaled: the {side} scale must be a uint8 tile of shape {want} "
                        f"(one E8M0 exponent per {SCALE_BLOCK} elements of K), got "
                        f"{scale.dtype!r} {list(scale.shape)}")
    s = scale.to(T.uint8, bitcast=True) if scale.dtype == T.int8 else scale
    bits = (s.to(T.uint32) << 23).to(T.float32, bitcast=True)          # 2**(s - 127), s >= 1
    f = where(s == 255, float("nan"), where(s == 0, 2.0 ** -127, bits))
    cols = (k // SCALE_BLOCK) * group
    f = reshape(broadcast_to(expand_dims(f, 2), (rows, k // SCALE_BLOCK, group)), (rows, cols))
    return f if k_axis == 1 else trans(f)


def _operand(x, fmt: str, scale, k_axis: int, side: str, compute):
    """Operand ``x`` dequantised to ``compute`` with K along ``k_axis`` (1 for the left
    operand, 0 for the right one)."""
    if fmt in _PLAIN:
        if x.dtype != _PLAIN[fmt]:
            raise sem.error(f"dot_scaled: the {side} operand is declared {fmt!r} but is a "
                            f"{x.dtype!r} tile")
        if scale is not None:
            raise sem.error(f"dot_scaled: a {fmt} {side} operand takes no scale; pass None")
        return x.to(compute)
    packed = fmt == "e2m1"
    k = x.shape[k_axis] * (2 if packed else 1)
    rows = x.shape[1 - k_axis]
    if scale is not None and k % SCALE_BLOCK:
        raise sem.error(f"dot_scaled: K = {k} is not a multiple of {SCALE_BLOCK}, the number of "
                        "elements that share one scale")
    if not packed:
        if x.dtype != _FP8[fmt]:
            x = _as_bits(x, fmt, side).to(_FP8[fmt], bitcast=True)
        v = x.to(T.float32)
        if scale is not None:
            v = v * _factor(scale, side, rows, k, k_axis, SCALE_BLOCK)
        return v.to(compute)
    codes = _as_bits(x, fmt, side)
    lo, hi = _e2m1(codes & 15), _e2m1(codes >> 4)           # even and odd K indices
    if scale is not None:                                    # 16 packed columns per scale
        f = _factor(scale, side, rows, k, k_axis, SCALE_BLOCK // 2)
        lo, hi = lo * f, hi * f
    lo, hi = lo.to(compute), hi.to(compute)
    if k_axis == 1:
        return interleave(lo, hi)                            # [M, K/2] -> [M, K]
    return trans(interleave(trans(lo), trans(hi)))           # [K/2, N] -> [K, N]


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None,
               fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=T.float32):
    """``acc + dequant(lhs) @ dequant(rhs)`` for microscaled operands (module docstring):
    ``lhs`` is [M, K] ([M, K // 2] uint8 for ``"e2m1"``), ``rhs`` [K, N] ([K // 2, N]);
    the scales are uint8 ``[M, K // 32]`` / ``[N, K // 32]`` or None.  The result is f32
    (or ``out_dtype``).  ``fast_math`` is accepted and changes nothing.

    Example::

        y = nl.dot_scaled(a, a_scale, "e4m3", b, None, "bf16")
    """
    lhs_format, rhs_format = _value(lhs_format), _value(rhs_format)
    for side, fmt in (("left", lhs_format), ("right", rhs_format)):
        if fmt not in FORMATS:
            raise sem.error(f"dot_scaled: the {side} format must be one of {list(FORMATS)}, "
                            f"got {fmt!r}")
    if not (_value(lhs_k_pack) and _value(rhs_k_pack)):
        raise sem.error("dot_scaled: operands packed along M or N (lhs_k_pack/rhs_k_pack="
                        "False) are not supported; pack the e2m1 codes along K")
    lhs, rhs = sem.to_tensor(lhs), sem.to_tensor(rhs)
    if lhs.ndim != 2 or rhs.ndim != 2:
        raise sem.error(f"dot_scaled takes 2-D operands, got shapes {list(lhs.shape)} and "
                        f"{list(rhs.shape)}")
    compute = T.float16 if "fp16" in (lhs_format, rhs_format) else T.bfloat16
    a = _operand(lhs, lhs_format, lhs_scale, 1, "left", compute)
    b = _operand(rhs, rhs_format, rhs_scale, 0, "right", compute)
    return dot(a, b, acc, out_dtype=_value(out_dtype))
