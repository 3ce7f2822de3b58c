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

from . import affine, halfprec
from .ir_text import compute_type, gm_type, literal
from .lower_tile import LAZY_READERS
from .values import Index, Lazy, Scalar, Tile, element, nest, store_element, to_i64


def gm_element(w, arg, off: str) -> str:
    """``arg[off]`` (an i64 offset) in its compute type: a bool byte is True when
    nonzero, a 16-bit float's bits decode to their f32 value."""
    gt = gm_type(arg.dtype)
    v = w.load(gt, w.gep(gt, arg.data, off))
    if arg.dtype.is_bool:
        return w.op("icmp ne i8", v, "0")
    return halfprec.decode(w, v, arg.dtype) if arg.dtype.is_half else v


def gm_store(w, arg, off: str, value: str) -> None:
    """``arg[off] = value`` (a compute-type value; see ``gm_element``)."""
    gt = gm_type(arg.dtype)
    if arg.dtype.is_bool:
        value = w.assign(f"zext i1 {value} to i8")
    elif arg.dtype.is_half:
        value = halfprec.encode(w, value, arg.dtype)
    w.store(gt, value, w.gep(gt, arg.data, off))


def check_offset(cg, op, arg, off: str) -> None:
    """Raise ``OutOfBoundsError`` when ``off`` (i64) is outside ``arg``."""
    if not cg.checking:
        return
    w = cg.w
    outside = w.op("icmp uge i64", off, arg.length)
    cg.fail_if(outside, cg.oob_site(op, "an active lane has offsets"), [off, off, arg.length])


def _span(cg, shape, offs, odt, mask, arg) -> tuple:
    """``(lo, hi, lo_all, hi_all)`` (i64) before an access: the smallest and largest
    offset of the active lanes (``lo > hi`` when none is) and of all lanes.  Affine
    offsets (affine.py) give the all-lanes pair from two corners; when that range is
    inside ``arg`` (every tile but a masked tail), it stands for the active lanes too
    and no lane is looked at.  Else one pass over the lanes (``_lane_span``)."""
    w = cg.w
    form = offs.affine if isinstance(offs, Lazy) else None
    if form is None or len(form[1]) != len(shape):
        return _lane_span(cg, shape, offs, odt, mask)
    lo_all, hi_all = affine.extremes(w, form, shape)
    if mask is None:
        return lo_all, hi_all, lo_all, hi_all
    slots = [w.alloca("i64", n) for n in ("lo", "hi")]
    w.store("i64", lo_all, slots[0])
    w.store("i64", hi_all, slots[1])
    scan, done = w.label("scan"), w.label("spanned")
    w.line(f"br i1 {_inside(w, arg, lo_all, hi_all)}, label %{done}, label %{scan}")
    w.start(scan)
    lo, hi, _, _ = _lane_span(cg, shape, offs, odt, mask)
    w.store("i64", lo, slots[0])
    w.store("i64", hi, slots[1])
    w.block(done)
    return w.load("i64", slots[0]), w.load("i64", slots[1]), lo_all, hi_all


def _lane_span(cg, shape, offs, odt, mask) -> tuple:
    """``_span`` by one pass over the lanes: a loop of selects in the offsets' own type,
    which LLVM vectorises (64-bit minimum and maximum have no AVX2 instruction: an i64
    loop stays scalar)."""
    w = cg.w
    t = compute_type(odt)
    bits = odt.itemsize * 8
    unsigned = odt.is_unsigned
    top, bottom = ("-1", "0") if unsigned else (str((1 << (bits - 1)) - 1),
                                                   str(-(1 << (bits - 1))))
    slots = [w.alloca(t, n) for n in ("lo", "hi", "lo_all", "hi_all")]
    for slot, init in zip(slots, (top, bottom, top, bottom)):
        w.store(t, init, slot)
    tiles = [x for x in (offs, mask) if isinstance(x, (Tile, Lazy))]
    sign = "u" if unsigned else "s"
    with nest(w, shape, tiles) as index:
        off = element(w, offs, index)
        on = element(w, mask, index) if mask is not None else "true"
        for slot, smaller, gated in zip(slots, (True, False, True, False),
                                        (True, True, False, False)):
            # an inactive lane offers the start value: a plain min/max reduction
            x = w.op("select i1", on, f"{t} {off}", f"{t} {top if smaller else bottom}") \
                if gated and on != "true" else off
            cur = w.load(t, slot)
            better = w.op(f"icmp {sign}{'lt' if smaller else 'gt'} {t}", x, cur)
            w.store(t, w.op("select i1", better, f"{t} {x}", f"{t} {cur}"), slot)
    return tuple(to_i64(w, w.load(t, slot), odt) for slot in slots)


def _check_span(cg, op, arg, lo: str, hi: str) -> None:
    """Raise when the active lanes' offsets ``[lo, hi]`` leave ``arg`` (none: no error)."""
    if not cg.checking:
        return
    w = cg.w
    outside = w.op("or i1", w.op("icmp slt i64", lo, "0"), w.op("icmp sge i64", hi, arg.length))
    bad = w.op("and i1", w.op("icmp sle i64", lo, hi), outside)
    cg.fail_if(bad, cg.oob_site(op, "active lanes have offsets"), [lo, hi, arg.length])


def _inside(w, arg, lo: str, hi: str) -> str:
    """Whether every offset in ``[lo, hi]`` addresses ``arg`` (i1)."""
    return w.op("and i1", w.op("icmp sge i64", lo, "0"), w.op("icmp slt i64", hi, arg.length))


def _deferrable(op) -> bool:
    """May a load's elements be read where its one reader needs them (a ``Lazy``)?  When
    the reader takes lazy values, sits in the same block, and nothing between the two
    can write GM (a store, an atomic, or a loop or branch that may hold one)."""
    uses = op.result.uses
    if len(uses) != 1:
        return False
    reader = uses[0][0]
    if reader.parent is not op.parent or reader.kind not in LAZY_READERS:
        return False
    ops = op.parent.ops
    for between in ops[ops.index(op) + 1:ops.index(reader)]:
        if between.kind in _WRITES or (between.regions and between.kind is not Kind.FUSED):
            return False
    return True


_WRITES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)


def load(cg, op) -> None:
    """A pointer load.  A tile's lanes are checked in one pass (``_span``), at the load.
    Read once, right after, the elements are loaded where they are read (``_deferrable``:
    one loop for load and use, vectorised with masked loads); else when every lane's
    offset, active or not, is inside the argument the lanes load without a branch and
    the mask selects ``other``, and otherwise each active lane loads behind its mask."""
    arg = cg.val(op.operands[0])
    offs, mask, other = (cg.lazy(v) if v is not None else None
                         for v in (op.operand("offsets"), op.operand("mask"),
                                   op.operand("other")))
    t = op.result.type
    w = cg.w
    ct = compute_type(t.dtype)
    odt = op.operand("offsets").type.dtype

    def fallback(index) -> str:
        return element(w, other, index) if other is not None else literal(0, t.dtype)

    if not t.shape:
        off = to_i64(w, offs.ref, odt)
        if mask is None:
            check_offset(cg, op, arg, off)
            cg.bind(op.result, Scalar(gm_element(w, arg, off), t.dtype))
            return
        slot = w.alloca(ct, "lane")
        w.store(ct, fallback(None), slot)
        with w.when(mask.ref, "active"):
            check_offset(cg, op, arg, off)
            w.store(ct, gm_element(w, arg, off), slot)
        cg.bind(op.result, Scalar(w.load(ct, slot), t.dtype))
        return
    lo, hi, lo_all, hi_all = _span(cg, t.shape, offs, odt, mask, arg)
    _check_span(cg, op, arg, lo, hi)
    inputs = [x for x in (offs, mask, other) if isinstance(x, (Tile, Lazy))]
    if _deferrable(op):
        def gen(w, index):
            off = to_i64(w, element(w, offs, index), odt)
            on = "true" if mask is None else element(w, mask, index)
            if on == "true":
                return gm_element(w, arg, off)
            slot = w.alloca(ct, "lane")
            w.store(ct, fallback(index), slot)
            with w.when(on, "active"):
                w.store(ct, gm_element(w, arg, off), slot)
            return w.load(ct, slot)
        cg.bind(op.result, Lazy(tuple(t.shape), t.dtype, gen,
                                all(x.contiguous or x.uniform for x in inputs)))
        return
    out = cg.new_tile(t.shape, t.dtype)
    tiles = inputs + [out]
    if mask is None:
        with nest(w, t.shape, tiles) as index:
            off = to_i64(w, element(w, offs, index), odt)
            store_element(w, out, index, gm_element(w, arg, off))
        cg.bind(op.result, out)
        return
    fast, slow, done = w.label("allin"), w.label("masked"), w.label("loaded")
    w.line(f"br i1 {_inside(w, arg, lo_all, hi_all)}, label %{fast}, label %{slow}")
    w.start(fast)
    with nest(w, t.shape, tiles) as index:
        off = to_i64(w, element(w, offs, index), odt)
        v = gm_element(w, arg, off)
        on = element(w, mask, index)
        store_element(w, out, index, w.op("select i1", on, f"{ct} {v}",
                                          f"{ct} {fallback(index)}"))
    w.line(f"br label %{done}")
    w.start(slow)
    with nest(w, t.shape, tiles) as index:
        off = to_i64(w, element(w, offs, index), odt)
        slot = w.alloca(ct, "lane")
        w.store(ct, fallback(index), slot)
        with w.when(element(w, mask, index), "active"):
            w.store(ct, gm_element(w, arg, off), slot)
        store_element(w, out, index, w.load(ct, slot))
    w.block(done)
    cg.bind(op.result, out)


def store(cg, op) -> None:
    """A pointer store: a tile's lanes checked in one pass, then each active lane
    written (behind its mask)."""
    arg = cg.val(op.operands[0])
    offs, value, mask = (cg.lazy(v) if v is not None else None
                         for v in (op.operand("offsets"), op.operand("value"),
                                   op.operand("mask")))
    w = cg.w
    odt = op.operand("offsets").type.dtype
    shape = op.operand("value").type.shape or op.operand("offsets").type.shape

    def lane(index) -> None:
        off = to_i64(w, element(w, offs, index), odt)
        on = "true" if mask is None else element(w, mask, index)
        if on == "true":
            gm_store(w, arg, off, element(w, value, index))
            return
        with w.when(on, "active"):
            gm_store(w, arg, off, element(w, value, index))

    if not shape:
        off = to_i64(w, offs.ref, odt)
        if mask is None:
            check_offset(cg, op, arg, off)
        else:
            with w.when(mask.ref, "active"):
                check_offset(cg, op, arg, off)
        lane(None)
        return
    lo, hi, _, _ = _span(cg, shape, offs, odt, mask, arg)
    _check_span(cg, op, arg, lo, hi)
    tiles = [x for x in (offs, mask, value) if isinstance(x, (Tile, Lazy))]
    every = mask.all_on if isinstance(mask, Lazy) else None
    if every is None or every == "true":
        with nest(w, shape, tiles) as index:
            lane(index)
        return
    # when every lane is on (lower_tile._all_on: a tile inside the bounds its mask
    # tests), a loop without the mask: the masked loop's conditional stores vectorise
    # to masked stores, microcoded on some x86 parts (AMD Zen: several times slower)
    dense, sparse, done = w.label("dense"), w.label("sparse"), w.label("stored")
    w.line(f"br i1 {every}, label %{dense}, label %{sparse}")
    w.start(dense)
    w.assumed.add(every)
    with nest(w, shape, tiles) as index:
        lane(index)
    w.assumed.discard(every)
    w.line(f"br label %{done}")
    w.start(sparse)
    with nest(w, shape, tiles) as index:
        lane(index)
    w.block(done)


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
            v = gm_element(w, arg, off)
        else:
            slot = w.alloca(ct, "lane")
            w.store(ct, pad, slot)
            with w.when(inside, "inside"):
                _check_block(cg, op, arg, off)
                w.store(ct, gm_element(w, arg, off), slot)
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
            gm_store(w, arg, off, element(w, value, index))
        else:
            with w.when(inside, "inside"):
                _check_block(cg, op, arg, off)
                gm_store(w, arg, off, element(w, value, index))


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
