"""Lowering of the GM ops: pointer ``load``/``store`` and block-pointer ``block_load``/
``block_store``, each element checked against its argument's length.

The meaning is the reference interpreter's (backends/reference/semantics_memory.py):
an active lane (mask on, or no mask) reads or writes ``arg[offset]``; an inactive lane
never touches memory and loads ``other`` (or 0).  A block access addresses
``sum_d (offsets[d] + i_d) * strides[d]``; on a boundary-checked axis a coordinate outside
``[0, shape[d])`` is padding (0, or NaN with ``padding="nan"``) and is not written.

Safety: unless ``bounds_check=False``, every active element's offset is compared with the
argument's length before the access (one unsigned compare: a negative offset is huge);
one outside raises ``OutOfBoundsError`` naming the kernel, the op, its source line, the
program, the offset and the argument.

Example::

    >>> sorted(k.value for k in LOWERINGS)
    ['npu.block_load', 'npu.block_store', 'npu.load', 'npu.store']
"""
from __future__ import annotations

from npujit.ir import Kind

from .ir_text import compute_type, literal, memory_type
from .values import Index, Scalar, Tile, load_element, nest, store_element, to_i64


def _gm_element(w, arg, off: str) -> str:
    """``arg[off]`` in its compute type (a bool byte: nonzero is True)."""
    mt = memory_type(arg.dtype)
    v = w.load(mt, w.gep(mt, arg.data, off))
    return w.op("icmp ne i8", v, "0") if arg.dtype.is_bool else v


def _gm_store(w, arg, off: str, value: str) -> None:
    mt = memory_type(arg.dtype)
    if arg.dtype.is_bool:
        value = w.assign(f"zext i1 {value} to i8")
    w.store(mt, value, w.gep(mt, arg.data, off))


def _check(cg, op, arg, off: str) -> None:
    """Raise ``OutOfBoundsError`` when ``off`` (i64) is outside ``arg``."""
    if not cg.checking:
        return
    w = cg.w
    outside = w.op("icmp uge i64", off, arg.length)
    cg.fail_if(outside, cg.oob_site(op, "an active lane has offsets"), [off, off, arg.length])


def _element(w, val, index) -> str:
    return val.ref if isinstance(val, Scalar) else load_element(w, val, index)


def load(cg, op) -> None:
    arg = cg.val(op.operands[0])
    offs, mask, other = (cg.val(v) if v is not None else None
                         for v in (op.operand("offsets"), op.operand("mask"),
                                   op.operand("other")))
    t = op.result.type
    w = cg.w
    ct = compute_type(t.dtype)
    odt = op.operand("offsets").type.dtype

    def lane(index) -> str:
        off = to_i64(w, _element(w, offs, index), odt)
        if mask is None:
            _check(cg, op, arg, off)
            return _gm_element(w, arg, off)
        slot = w.alloca(ct, "lane")
        w.store(ct, _element(w, other, index) if other is not None
                else literal(0, t.dtype), slot)
        with w.when(_element(w, mask, index), "active"):
            _check(cg, op, arg, off)
            w.store(ct, _gm_element(w, arg, off), slot)
        return w.load(ct, slot)

    if not t.shape:
        cg.bind(op.result, Scalar(lane(None), t.dtype))
        return
    out = cg.new_tile(t.shape, t.dtype)
    tiles = [x for x in (offs, mask, other, out) if isinstance(x, Tile)]
    with nest(w, t.shape, tiles) as index:
        store_element(w, out, index, lane(index))
    cg.bind(op.result, out)


def store(cg, op) -> None:
    arg = cg.val(op.operands[0])
    offs, value, mask = (cg.val(v) if v is not None else None
                         for v in (op.operand("offsets"), op.operand("value"),
                                   op.operand("mask")))
    w = cg.w
    odt = op.operand("offsets").type.dtype
    shape = op.operand("value").type.shape or op.operand("offsets").type.shape

    def lane(index) -> None:
        off = to_i64(w, _element(w, offs, index), odt)
        if mask is None:
            _check(cg, op, arg, off)
            _gm_store(w, arg, off, _element(w, value, index))
            return
        with w.when(_element(w, mask, index), "active"):
            _check(cg, op, arg, off)
            _gm_store(w, arg, off, _element(w, value, index))

    if not shape:
        lane(None)
        return
    tiles = [x for x in (offs, mask, value) if isinstance(x, Tile)]
    with nest(w, shape, tiles) as index:
        lane(index)


def _block(cg, op):
    """The block's layout as i64 values: shapes, strides, offsets (``op.block_layout``)."""
    w = cg.w
    shape, strides, offsets = op.block_layout()
    return [[to_i64(w, cg.val(v).ref, v.type.dtype) for v in part]
            for part in (shape, strides, offsets)]


def _block_lane(cg, op, arg, layout, index: Index, checked):
    """``(inside, offset)`` of the current block element: ``inside`` an i1 (or None when
    no axis is boundary-checked), ``offset`` the i64 element offset."""
    w = cg.w
    shape, strides, offsets = layout
    inside, off = None, "0"
    for d, i in enumerate(index.axes):
        c = w.op("add i64", offsets[d], i)
        if d in checked:
            ok = w.op("and i1", w.op("icmp sge i64", c, "0"),
                      w.op("icmp slt i64", c, shape[d]))
            inside = ok if inside is None else w.op("and i1", inside, ok)
        off = w.op("add i64", off, w.op("mul i64", c, strides[d]))
    return inside, off


def block_load(cg, op) -> None:
    arg = cg.val(op.operands[0])
    t = op.result.type
    w = cg.w
    layout = _block(cg, op)
    checked = set(op.attrs.get("boundary_check", ()))
    ct = compute_type(t.dtype)
    pad = literal(float("nan") if op.attrs.get("padding", "zero") == "nan" else 0, t.dtype)
    out = cg.new_tile(t.shape, t.dtype)
    with nest(w, t.shape, axes=True) as index:
        inside, off = _block_lane(cg, op, arg, layout, index, checked)
        if inside is None:
            _check_block(cg, op, arg, off)
            v = _gm_element(w, arg, off)
        else:
            slot = w.alloca(ct, "lane")
            w.store(ct, pad, slot)
            with w.when(inside, "inside"):
                _check_block(cg, op, arg, off)
                w.store(ct, _gm_element(w, arg, off), slot)
            v = w.load(ct, slot)
        store_element(w, out, index, v)
    cg.bind(op.result, out)


def block_store(cg, op) -> None:
    arg = cg.val(op.operands[0])
    value = cg.val(op.operands[-1])
    w = cg.w
    layout = _block(cg, op)
    checked = set(op.attrs.get("boundary_check", ()))
    shape = op.operands[-1].type.shape
    with nest(w, shape, axes=True) as index:
        inside, off = _block_lane(cg, op, arg, layout, index, checked)
        if inside is None:
            _check_block(cg, op, arg, off)
            _gm_store(w, arg, off, _element(w, value, index))
        else:
            with w.when(inside, "inside"):
                _check_block(cg, op, arg, off)
                _gm_store(w, arg, off, _element(w, value, index))


def _check_block(cg, op, arg, off: str) -> None:
    if not cg.checking:
        return
    outside = cg.w.op("icmp uge i64", off, arg.length)
    cg.fail_if(outside, cg.oob_site(op, "block addresses span"), [off, off, arg.length])


LOWERINGS = {
    Kind.LOAD: load,
    Kind.STORE: store,
    Kind.BLOCK_LOAD: block_load,
    Kind.BLOCK_STORE: block_store,
}
