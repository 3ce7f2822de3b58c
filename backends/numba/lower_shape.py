"""Constants, ``arange`` and shape ops: they make views, not code.

``splat``/``broadcast`` set strides to 0, ``trans`` permutes strides, ``reshape`` of a
row-major tile reuses its array and ``arange`` is an ``iota`` computed where it is read
(see ``values.py``).  Only a ``reshape`` of a non-row-major view copies.

Example: ``offs = pid * 128 + arange(0, 128)`` costs one loop (the add), not three.
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from .lower_elementwise import cheap_expr
from .lower_scalar import constant
from .values import Val, row_major


def lower_constant(cg, op) -> None:
    d = op.attrs["dtype"]
    cg.bind(op.result, Val.scalar(constant(op.attrs["value"], d), d))


def lower_arange(cg, op) -> None:
    start, end = op.attrs["start"], op.attrs["end"]
    cg.bind(op.result, Val.iota(start, end - start, op.result.type.dtype))


def lower_splat(cg, op) -> None:
    src = cg.val(op.operands[0])
    cg.bind(op.result, src.broadcast_to(op.result.type.shape))


def lower_broadcast(cg, op) -> None:
    src = cg.val(op.operands[0])
    cg.bind(op.result, src.broadcast_to(op.result.type.shape))


def lower_reshape(cg, op) -> None:
    src = cg.val(op.operands[0])
    shape = op.result.type.shape
    if src.kind == "scalar" and not src.is_scalar:
        cg.bind(op.result, Val.scalar(src.name, src.dtype, shape))  # a splat stays one
        return
    if src.is_scalar:
        cg.bind(op.result, src.broadcast_to(shape))
        return
    if src.kind == "iota" and src.strides == row_major(src.shape):
        cg.bind(op.result, src.with_layout(shape, row_major(shape)))
        return
    view = src.unit_reshaped(shape)
    if view is not None and (src.kind != "expr" or cheap_expr(src)):
        cg.bind(op.result, view)    # x[:, None] of a tile or a cheap expression: a view
        return
    flat = cg.materialise(src, cg.hint(op.operands[0]))
    cg.bind(op.result, flat.with_layout(shape, row_major(shape)))


def lower_trans(cg, op) -> None:
    cg.bind(op.result, cg.val(op.operands[0]).permuted(op.attrs["perm"]))


def lower_handoff(cg, op) -> None:
    """An AIC <-> AIV hand-off moves a tile between cores: the same value on a CPU."""
    cg.bind(op.result, cg.val(op.operands[0]))


LOWERINGS = {Kind.HANDOFF: lower_handoff, Kind.CONSTANT: lower_constant, Kind.ARANGE: lower_arange,
             Kind.SPLAT: lower_splat, Kind.BROADCAST: lower_broadcast,
             Kind.RESHAPE: lower_reshape, Kind.TRANS: lower_trans}
