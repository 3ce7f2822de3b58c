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

from contextlib import ExitStack, contextmanager

from npujit.ir import Kind
from npujit.ir import types as T

from . import affine, deferred, halfprec
from .ir_text import compute_type, gm_type, literal
from .lower_tile import LAZY_READERS
from .values import (Index, Lazy, Scalar, Tile, element, nest, on_factors, row_step,
                     store_element, to_i64)


def gm_element(w, arg, off: str) -> str:
    """``arg[off]`` (an i64 offset) in its compute type: a bool byte is True when
    nonzero, a 16-bit float's bits decode to their f32 value."""
    gt = gm_type(arg.dtype)
    v = w.load(gt, w.gep(gt, arg.data, off))
    if arg.dtype.is_bool:
        return w.op("icmp ne i8", v, "0")
    return halfprec.decode(w, v, arg.dtype) if arg.dtype.is_narrow_float else v


def gm_store(w, arg, off: str, value: str) -> None:
    """``arg[off] = value`` (a compute-type value; see ``gm_element``)."""
    gt = gm_type(arg.dtype)
    if arg.dtype.is_bool:
        value = w.assign(f"zext i1 {value} to i8")
    elif arg.dtype.is_narrow_float:
        value = halfprec.encode(w, value, arg.dtype)
    w.store(gt, value, w.gep(gt, arg.data, off))


def check_offset(cg, op, arg, off: str) -> None:
    """Raise ``OutOfBoundsError`` when ``off`` (i64) is outside ``arg``."""
    if not cg.checking:
        return
    w = cg.w
    outside = w.op("icmp uge i64", off, arg.length)
    if cg.options.get("debug"):
        cg.fail_if(outside, cg.lane_site(op), [off, arg.length])
    else:
        cg.fail_if(outside, cg.oob_site(op, "an active lane has offsets"),
                   [off, off, arg.length])


def _span(cg, op, shape, offs, odt, mask, arg) -> tuple:
    """``(lo, hi, lo_all, hi_all)`` (i64) before the access ``op``: the smallest and
    largest offset of the active lanes (``lo > hi`` when none is) and of all lanes.
    Affine offsets (affine.py) give the all-lanes pair from two corners, offsets whose
    rows are arithmetic progressions (gathered rows, ``tok[:, None] * stride + cols[None,
    :]``) from each row's two ends (``_row_extremes``); when that range is inside the
    argument (every tile but a masked tail or a block's pad rows), it stands for the
    active lanes too and no lane is looked at.  Else one pass over the lanes
    (``_lane_span``), shared by the later accesses of the block with the same offsets
    and mask (``_same_lanes``: a vector add's two loads and its store make one pass, run
    when any of their arguments needs it)."""
    got = cg.spans.pop(id(op), None)
    if got is not None:
        return got
    w = cg.w
    if _affine(offs, shape):
        lo_all, hi_all = affine.extremes(w, offs.affine, shape)
    else:
        step = row_step(offs)
        if step is None or shape[-1] == 1:
            span = _lane_span(cg, shape, offs, odt, mask)
            cg.spans.update((id(g), span) for g in _same_lanes(op))
            return span
        lo_all, hi_all = _row_extremes(cg, shape, offs, odt, step)
    if mask is None:
        return lo_all, hi_all, lo_all, hi_all
    group = _same_lanes(op)
    slots = [w.alloca("i64", n) for n in ("lo", "hi")]
    w.store("i64", lo_all, slots[0])
    w.store("i64", hi_all, slots[1])
    scan, done = w.label("scan"), w.label("spanned")
    inside = _inside(w, arg, lo_all, hi_all)
    for g in group:
        inside = w.op("and i1", inside, _inside(w, cg.val(g.operands[0]), lo_all, hi_all))
    w.line(f"br i1 {inside}, label %{done}, label %{scan}")
    w.start(scan)
    # vectorised: a tail is not always one program (``w_ptr + cols`` with ``cols <
    # n_cols`` over a wider block leaves ``w`` in every program: a layernorm of 777
    # columns took 4x as long with this pass scalar)
    lo, hi = _lane_span(cg, shape, offs, odt, mask, every=False)
    w.store("i64", lo, slots[0])
    w.store("i64", hi, slots[1])
    w.block(done)
    span = w.load("i64", slots[0]), w.load("i64", slots[1]), lo_all, hi_all
    cg.spans.update((id(g), span) for g in group)
    return span


def _same_lanes(op) -> list:
    """The pointer loads and stores after ``op`` in its block with the same offsets and
    mask values (so the same lanes and offsets): they reuse ``op``'s span (``_span``)."""
    ops = op.parent.ops
    at = ops.index(op)
    offs, mask = op.operand("offsets"), op.operand("mask")

    def known(v) -> bool:       # defined before ``op``: a block argument or an op there
        return not isinstance(v.owner, type(op)) or v.owner in ops[:at]

    return [o for o in ops[at + 1:]
            if o.kind in (Kind.LOAD, Kind.STORE) and o.operand("offsets") is offs
            and o.operand("mask") is mask and known(o.operands[0])]


def _affine(offs, shape) -> bool:
    """Are the offsets of an access over ``shape`` affine (affine.py)?"""
    return isinstance(offs, Lazy) and offs.affine is not None and \
        len(offs.affine[1]) == len(shape)


def _row_extremes(cg, shape, offs, odt, step: str) -> tuple:
    """The smallest and largest offset of all lanes of ``offs``, whose rows step by
    ``step`` (``values.row_step``): one element per row (a loop over the leading axes),
    plus the row's reach ``(n - 1) * step``.  Exact (i64) from each row's first offset
    as the lanes hold it, so a row whose lanes wrap around in a narrow type reaches
    past the argument and takes the lane pass (``_span``)."""
    w = cg.w
    reach = w.op("mul i64", step, str(shape[-1] - 1))
    back = w.op("icmp slt i64", reach, "0")
    down = w.op("select i1", back, f"i64 {reach}", "i64 0")
    up = w.op("select i1", back, "i64 0", f"i64 {reach}")
    slots = [w.alloca("i64", n) for n in ("lo_all", "hi_all")]
    w.store("i64", str((1 << 63) - 1), slots[0])
    w.store("i64", str(-(1 << 63)), slots[1])
    with nest(w, shape[:-1], axes=True) as lead:
        first = to_i64(w, element(w, offs, Index(axes=[*lead.axes, "0"])), odt)
        for slot, edge, pred in ((slots[0], down, "slt"), (slots[1], up, "sgt")):
            x = w.op("add i64", first, edge)
            cur = w.load("i64", slot)
            w.store("i64", w.op("select i1", w.op(f"icmp {pred} i64", x, cur), f"i64 {x}",
                                f"i64 {cur}"), slot)
    return w.load("i64", slots[0]), w.load("i64", slots[1])


def _lane_span(cg, shape, offs, odt, mask, every: bool = True) -> tuple:
    """``_span`` by one pass over the lanes: a loop of selects in the offsets' own type,
    which LLVM vectorises (64-bit minimum and maximum have no AVX2 instruction: an i64
    loop stays scalar).  Without ``every`` only ``(lo, hi)`` of the active lanes (the
    caller knows all lanes' range): half the loop, which is code LLVM compiles in every
    kernel with a masked access."""
    w = cg.w
    t = compute_type(odt)
    bits = odt.itemsize * 8
    unsigned = odt.is_unsigned
    top, bottom = ("-1", "0") if unsigned else (str((1 << (bits - 1)) - 1),
                                                   str(-(1 << (bits - 1))))
    count = 4 if every else 2
    slots = [w.alloca(t, n) for n in ("lo", "hi", "lo_all", "hi_all")[:count]]
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
    if cg.options.get("debug"):     # an offending lane's own offset: lo when below 0
        off = w.op("select i1", w.op("icmp slt i64", lo, "0"), f"i64 {lo}", f"i64 {hi}")
        cg.fail_if(bad, cg.lane_site(op), [off, arg.length])
    else:
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
    return reader.kind in LAZY_READERS and _nothing_writes_between(op, reader)


def _nothing_writes_between(op, reader) -> bool:
    """``reader`` sits in ``op``'s block and nothing between the two can write GM (a
    store, an atomic, or a loop or branch that may hold one)."""
    if reader.parent is not op.parent:
        return False
    ops = op.parent.ops
    return not any(b.kind in _WRITES or (b.regions and b.kind is not Kind.FUSED)
                   for b in ops[ops.index(op) + 1:ops.index(reader)])


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
    lo, hi, lo_all, hi_all = _span(cg, op, t.shape, offs, odt, mask, arg)
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
                                all(x.contiguous or x.uniform for x in inputs),
                                cost=1 + sum(x.cost for x in inputs if isinstance(x, Lazy))))
        return
    out = cg.new_tile(t.shape, t.dtype)
    tiles = inputs + [out]
    affine_offsets = _affine(offs, t.shape)

    def unmasked():
        with nest(w, t.shape, tiles) as index:
            off = to_i64(w, element(w, offs, index), odt)
            store_element(w, out, index, gm_element(w, arg, off))

    def masked():
        if getattr(mask, "all_on", None) in w.assumed:
            unmasked()
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

    if mask is None:
        unmasked()
    elif affine_offsets:    # the lanes' select (``masked``) costs little: one copy
        masked()
    else:
        versioned(w, mask, masked, gather=True)
    cg.bind(op.result, out)


def versioned(w, mask, emit, gather: bool) -> None:
    """``emit()`` behind branches on the bool ``mask``'s known factors (``Factor``s,
    lower_tile._all_on): once for when every factor holds, written under
    ``Writer.assumed`` holding them and the whole mask's ``all_on`` (those factors read
    true: the loop tests only the rest of the mask, or nothing); for a ``gather`` (lanes
    at offsets not affine, each read behind its own test where the mask is not known),
    also when some factors vary along the last axis and others do not, once for when the
    varying ones hold (a ``[rows, cols]`` mask with a ragged row block tests each row
    once); and once as is.  A masked loop's conditional loads and stores vectorise to
    masked moves, microcoded on some x86 parts (AMD Zen: several times slower), and a
    per-lane test a loop need not make costs as much again.  Each copy is code LLVM
    compiles, so an affine access has at most two (the gallery's matmul compiled in 209
    ms with three copies of each masked load, 193 with one).  No factor: ``emit()``
    once."""
    factors = on_factors(mask)
    if not factors:
        emit()
        return
    every = [f.on for f in factors]
    inner = [f.on for f in factors if not f.varies or f.varies[-1]]
    levels = [(every, every + [mask.all_on] if mask.all_on is not None else every)]
    if gather and 0 < len(inner) < len(factors):
        levels.append((inner, inner))
    done = w.label("versioned")
    for held, known in levels:
        test = held[0]
        for f in held[1:]:
            test = w.op("and i1", test, f)
        dense, rest = w.label("dense"), w.label("sparse")
        w.line(f"br i1 {test}, label %{dense}, label %{rest}")
        w.start(dense)
        added = [f for f in known if f not in w.assumed]
        w.assumed.update(added)
        emit()
        w.assumed.difference_update(added)
        w.line(f"br label %{done}")
        w.start(rest)
    emit()
    w.block(done)


def store(cg, op) -> None:
    """A pointer store: a tile's lanes checked in one pass, then each active lane
    written (behind its mask).  Operands that would load from GM as the lanes are
    written (deferred loads) are copied into tiles first unless ``deferred.assume_apart``
    allows it."""
    arg = cg.val(op.operands[0])
    names = ("offsets", "value", "mask")
    offs, value, mask = (cg.lazy(op.operand(n)) if op.operand(n) is not None else None
                         for n in names)
    w = cg.w
    odt = op.operand("offsets").type.dtype
    shape = op.operand("value").type.shape or op.operand("offsets").type.shape

    def lane(index, offs, value, mask) -> None:
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
        lane(None, offs, value, mask)
        return
    lo, hi, _, _ = _span(cg, op, shape, offs, odt, mask, arg)
    _check_span(cg, op, arg, lo, hi)

    def lanes(offs, value, mask):
        tiles = [x for x in (offs, mask, value) if isinstance(x, (Tile, Lazy))]
        with nest(w, shape, tiles) as index:
            lane(index, offs, value, mask)

    loads = deferred.store_reads(cg, [op.operand(n) for n in names])
    if not loads or deferred.assume_apart(cg, op, loads):
        versioned(w, mask, lambda: lanes(offs, value, mask), gather=not _affine(offs, shape))
        return
    lanes(*[cg.materialise(x) if isinstance(x, Lazy) and deferred.store_reads(cg, [v]) else x
            for x, v in zip((offs, value, mask), (op.operand(n) for n in names))])


def _block(cg, op):
    """The block's layout as i64 values: shapes, strides, offsets (``op.block_layout``)."""
    w = cg.w
    shape, strides, offsets = op.block_layout()
    return [[to_i64(w, cg.val(v).ref, v.type.dtype) for v in part]
            for part in (shape, strides, offsets)]


def _smax(w, a: str, b: str) -> str:
    return w.op("select i1", w.op("icmp sgt i64", a, b), f"i64 {a}", f"i64 {b}")


def _smin(w, a: str, b: str) -> str:
    return w.op("select i1", w.op("icmp slt i64", a, b), f"i64 {a}", f"i64 {b}")


def _valid_box(cg, op, arg, layout, checked, block_shape) -> tuple:
    """The part of the block inside its tensor, per axis ``(first, count)`` (i64
    operands): a boundary-checked axis keeps the indices ``i`` with ``0 <= offset + i <
    shape``, another axis all of them.  The box's GM addresses are checked here, from
    its corners (the lanes a block access reads or writes; padded lanes touch nothing),
    so the copy loops test nothing per element.  Also returns whether the box is the
    whole block (an i1; "true" when no axis is checked)."""
    w = cg.w
    shape, strides, offsets = layout
    box, whole = [], "true"
    for d, n in enumerate(block_shape):
        if d not in checked:
            if cg.options.get("debug"):
                _unchecked_axis(cg, op, d, n, shape[d], offsets[d])
            box.append(("0", n))
            continue
        first = _smin(w, _smax(w, w.op("sub i64", "0", offsets[d]), "0"), str(n))
        last = _smax(w, _smin(w, w.op("sub i64", shape[d], offsets[d]), str(n)), first)
        count = w.op("sub i64", last, first)
        box.append((first, count))
        full = w.op("icmp eq i64", count, str(n))
        whole = full if whole == "true" else w.op("and i1", whole, full)
    if cg.checking:
        # the box's lowest and highest address from its corners (affine.extremes); an
        # empty box (a checked axis wholly outside) touches nothing
        base = "0"
        for d, (first, _) in enumerate(box):
            base = w.op("add i64", base, w.op("mul i64", w.op("add i64", offsets[d], first),
                                              strides[d]))
        lo, hi = affine.extremes(w, (base, tuple(strides)), [c for _, c in box])
        outside = w.op("or i1", w.op("icmp slt i64", lo, "0"),
                       w.op("icmp sge i64", hi, arg.length))
        for _, count in box:
            if not isinstance(count, int):
                outside = w.op("and i1", outside, w.op("icmp sgt i64", count, "0"))
        cg.fail_if(outside, cg.oob_site(op, "block addresses span"), [lo, hi, arg.length])
    return box, whole


def _unchecked_axis(cg, op, d: int, n: int, extent: str, first: str) -> None:
    """Debug mode: the block's coordinates ``first .. first + n - 1`` on axis ``d``, not
    in ``boundary_check``, must lie in the declared shape ``[0, extent)``; the error
    names the first coordinate outside (the numba backend's and the reference's text)."""
    w = cg.w
    last = w.op("add i64", first, str(n - 1))
    below = w.op("icmp slt i64", first, "0")
    bad = w.op("or i1", below, w.op("icmp sge i64", last, extent))
    coord = w.op("select i1", below, f"i64 {first}", f"i64 {_smax(w, first, extent)}")
    site = cg.op_site(op, f"block coordinate %d on axis {d} is outside the declared shape "
                          f"[0, %d), and axis {d} is not in boundary_check")
    cg.fail_if(bad, site, [coord, extent])


@contextmanager
def _box_nest(w, layout, box, order=None):
    """Loops over the valid box, yielding ``(index, offset)``: the block element's
    ``Index`` and its i64 element offset in the argument.  ``order``: the axes from the
    outermost loop to the innermost (default: in order)."""
    shape, strides, offsets = layout
    order = range(len(box)) if order is None else order
    with ExitStack() as stack:
        axes, off = [None] * len(box), "0"
        for d in order:
            first, count = box[d]
            j = stack.enter_context(w.loop(f"i64 {count}", f"a{d}"))
            i = j if first == "0" else w.op("add nsw i64", first, j)
            axes[d] = i
            off = w.op("add i64", off, w.op("mul i64", w.op("add i64", offsets[d], i),
                                            strides[d]))
        yield Index(axes=axes), off


def _copy_box(w, layout, box, order, copy) -> None:
    """``copy(index, off)`` for each element of the valid box (``_box_nest``), twice
    when the innermost loop's GM stride is a run-time value (a stride passed as an
    argument, as Triton kernels do): once for a stride of 1, a contiguous copy LLVM
    vectorises (an f16 block: vector loads and conversions, where a variable stride
    gathers element by element: the 512^3 f16 matmul 5.2 -> 3.5 ms at 1 thread), and
    once for any other."""
    shape, strides, offsets = layout
    inner = (range(len(box)) if order is None else order)[-1]
    stride = strides[inner]
    if stride.lstrip("-").isdigit():
        with _box_nest(w, layout, box, order) as (index, off):
            copy(index, off)
        return
    unit = (shape, tuple("1" if d == inner else s for d, s in enumerate(strides)), offsets)
    one, other, done = w.label("unit"), w.label("strided"), w.label("copied")
    w.line(f"br i1 {w.op('icmp eq i64', stride, '1')}, label %{one}, label %{other}")
    for lay, label in ((unit, one), (layout, other)):
        w.start(label)
        with _box_nest(w, lay, box, order) as (index, off):
            copy(index, off)
        w.line(f"br label %{done}")
    w.start(done)


def _tile_order(strides) -> list:
    """The block's axes from the outermost copy loop to the innermost: in order, but the
    axis whose GM stride is the constant 1 innermost when it is not the last one (a
    block read through a transposed view: ``make_block_ptr(w, strides=(1, H))``), so the
    copy reads GM contiguously and the tile keeps that axis contiguous too."""
    r = len(strides)
    unit = [d for d in range(r) if strides[d] == "1"]
    if r < 2 or not unit or unit[-1] == r - 1 or strides[r - 1] == "1":
        return list(range(r))
    d = unit[-1]
    return [x for x in range(r) if x != d] + [d]


def block_load(cg, op) -> None:
    """A block of a tensor (``make_block_ptr``): padding where a boundary-checked axis
    leaves the tensor (the whole tile padded first when the valid box is not all of
    it), then the valid box copied with no per-element test."""
    arg = cg.val(op.operands[0])
    t = op.result.type
    w = cg.w
    layout = _block(cg, op)
    checked = set(op.attrs.get("boundary_check", ()))
    pad = literal(float("nan") if op.attrs.get("padding", "zero") == "nan" else 0, t.dtype)
    order = _tile_order(layout[1])
    # the tile row-major in ``order`` (a transposed view's tile is stored transposed)
    stored = cg.new_tile(tuple(t.shape[d] for d in order), t.dtype)
    out = stored.permuted([order.index(d) for d in range(len(order))])
    box, whole = _valid_box(cg, op, arg, layout, checked, t.shape)
    in_place = _read_in_place(op, arg, layout[1])
    if in_place and whole == "true":        # no axis checked: always the GM view
        cg.bind(op.result, _gm_view(w, arg, layout, out))
        return
    if whole != "true":
        with w.when(w.op("xor i1", whole, "true"), "padded"):
            with nest(w, stored.shape, [stored]) as index:
                store_element(w, stored, index, pad)
            if in_place:                    # the copy only when the box is not whole
                _copy_box(w, layout, box, order, lambda index, off: store_element(
                    w, out, index, gm_element(w, arg, off)))
    if in_place:        # the dot reads GM where the block is whole, else the padded copy
        view = _gm_view(w, arg, layout, out)
        ptr = w.op("select i1", whole, f"ptr {view.ptr}", f"ptr {out.ptr}")
        strides = tuple(1 if v == o == 1 else w.op("select i1", whole, f"i64 {v}", f"i64 {o}")
                        for v, o in zip(view.strides, out.strides))
        cg.bind(op.result, Tile(ptr, out.shape, strides, out.dtype))
        return
    _copy_box(w, layout, box, order, lambda index, off: store_element(
        w, out, index, gm_element(w, arg, off)))
    cg.bind(op.result, out)


# The dot operand and the block axis contiguous in GM that let a dot read a block in
# place: ``a`` (M x K) along k, ``b`` (K x N) along k (a transposed weight).
_IN_PLACE = {0: 1, 1: 0}


def _read_in_place(op, arg, strides) -> bool:
    """May the dot that reads this block read it from GM where it lies, not from a copy
    (the numba backend's ``cube_lib.dot_nt`` does the same)?  For an f32 tensor whose
    block is contiguous along k in GM -- an activation block ``a`` read along its rows
    (``make_block_ptr(x, strides=(H, 1))``), or a weight ``b`` read through a transposed
    view (``make_block_ptr(w, strides=(1, H))``: the MoE experts' and router's) -- whose
    one reader is that dot operand in the same block, with nothing between them that can
    write GM (``_deferrable``'s rule).  lower_cube's dots then load along k from GM."""
    uses = op.result.uses
    if (arg.dtype != T.float32 or len(strides) != 2 or len(uses) != 1
            or uses[0][0].kind is not Kind.DOT or uses[0][1] not in _IN_PLACE
            or strides[_IN_PLACE[uses[0][1]]] != "1"):
        return False
    return _nothing_writes_between(op, uses[0][0])


def _gm_view(w, arg, layout, tile: Tile) -> Tile:
    """The block ``tile`` stands for as a view of GM: its first element's address and
    the GM strides (the unit one as the int 1, which the dots test for)."""
    _, strides, offsets = layout
    base = "0"
    for off, st in zip(offsets, strides):
        base = w.op("add i64", base, w.op("mul i64", off, st))
    return Tile(w.gep(gm_type(arg.dtype), arg.data, base), tile.shape,
                tuple(1 if st == "1" else st for st in strides), tile.dtype)


def block_store(cg, op) -> None:
    """The valid box of the block (see ``block_load``) written, no per-element test."""
    arg = cg.val(op.operands[0])
    value = cg.val(op.operands[-1])
    w = cg.w
    layout = _block(cg, op)
    checked = set(op.attrs.get("boundary_check", ()))
    shape = op.operands[-1].type.shape
    box, _ = _valid_box(cg, op, arg, layout, checked, shape)
    _copy_box(w, layout, box, None, lambda index, off: gm_store(
        w, arg, off, element(w, value, index)))


LOWERINGS = {
    Kind.LOAD: load,
    Kind.STORE: store,
    Kind.BLOCK_LOAD: block_load,
    Kind.BLOCK_STORE: block_store,
}
