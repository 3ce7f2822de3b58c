"""Lowering of the scans, the selections and the ops with a user function as their region:
``npu.scan``, ``npu.sort``, ``npu.topk``, ``npu.gather``, ``npu.reduce_combine``,
``npu.scan_combine`` and ``npu.map_elementwise``.

What each op means is the reference interpreter's (backends/reference/semantics_reduce.py,
docs/semantics.md, "Reductions, scans, selection"):

* ``scan {kind=sum, axis}``: the inclusive prefix sum along ``axis``, first to last, in
  the accumulator of ``reduce``'s sum (f32 for floats, f64 for f64, i32 for i1/i8/i16,
  ui32 for ui8/ui16, else the dtype itself, wrapping); each output is the running sum
  converted to the result dtype (the running sum itself is never rounded).
* ``sort {axis, descending}``: ascending with NaN last, stable (equal values such as -0.0
  and 0.0 keep their input order); descending is the exact reverse of ascending.
* ``topk {k, axis}`` -> (values, i32 indices): the k largest along ``axis``, largest
  first, ties to the lower index, NaN above every number (NaNs in index order).
* ``gather {axis}`` (src, index): ``out[.., j, ..] = src[.., index[.., j, ..], ..]``
  (numpy's ``take_along_axis``); an index outside ``[0, src.shape[axis])`` raises
  ``OutOfBoundsError`` naming the op, its line, the program, the index and its lane (the
  first bad lane in row-major order; for an index tile of rank 3 or more the lane is
  its row-major number, since an error site carries three numbers).
* ``reduce_combine {axis}``: per lane ``acc = x[0]``, then ``acc = combine(*acc, *x[i])``
  for i = 1 .. n-1 (the region's block arguments are the accumulated then the next
  scalars, one per input; its ``scf.yield`` gives the new accumulated values).
* ``scan_combine {axis, reverse}``: ``out[0] = x[0]``, ``out[i] = combine(*out[i-1],
  *x[i])``; with ``reverse`` from the last element, ``out[i] = combine(*out[i+1], *x[i])``.
* ``map_elementwise {dtypes, pack}``: the region on each group of ``pack`` consecutive
  elements (row-major) of the inputs: the group's scalars of the first input, then of
  the second...; it yields ``pack`` scalars of each result in turn.

Everything is a plain loop over scratch tiles: a lane along the axis is copied to a
buffer of its own, sorted there by a stable insertion sort and copied out (n is small);
the region of a combine op is lowered once, inside the loop over the lane, with its
block arguments bound to ``Scalar``s loaded from the accumulators (allocas).

Example::

    >>> sorted(k.value for k in LOWERINGS)                    # doctest: +NORMALIZE_WHITESPACE
    ['npu.gather', 'npu.map_elementwise', 'npu.reduce_combine', 'npu.scan',
     'npu.scan_combine', 'npu.sort', 'npu.topk']
    >>> from npujit.ir.types import float32
    >>> w = Writer()
    >>> _before(w, "%a", "%b", float32, descending=False)    # sort's order of two floats
    '%v.6'
    >>> print(w.body_text())                                  # a < b, or b NaN and a not
      %v.1 = fcmp uno float %a, %a
      %v.2 = fcmp uno float %b, %b
      %v.3 = fcmp olt float %a, %b
      %v.4 = xor i1 %v.1, true
      %v.5 = and i1 %v.2, %v.4
      %v.6 = or i1 %v.3, %v.5
"""
from __future__ import annotations

from contextlib import contextmanager

from npujit.ir import Kind
from npujit.ir.ops import reduce_result_dtype
from npujit.ir.types import float32, int32, numel, row_major

from . import elementwise
from .ir_text import Writer, compute_type, literal
from .values import Index, Scalar, Tile, load_element, nest, store_element, to_i64


# --- lanes along an axis ------------------------------------------------------------------

class _Lane:
    """The current lane of a nest over every axis of a shape but ``axis``."""

    def __init__(self, kept: list, axis: int):
        self.kept, self.axis = kept, axis

    def at(self, j: str) -> Index:
        """Element ``j`` (an i64 operand) of the lane."""
        axes = list(self.kept)
        axes.insert(self.axis, j)
        return Index(axes=axes)

    @property
    def index(self) -> Index:
        """The lane itself, as an element of a tile of the kept axes."""
        return Index(axes=list(self.kept))


@contextmanager
def _each_lane(w: Writer, shape, axis: int):
    """Loops over the lanes of ``shape`` along ``axis`` (none for a 1-D shape)."""
    kept = [n for d, n in enumerate(shape) if d != axis]
    with nest(w, kept, axes=True) as index:
        yield _Lane(index.axes, axis)


def _while(w: Writer, cond):
    """``while cond():`` -- ``cond`` writes the test in the loop's head block and returns
    an i1 and values the body may use (the head dominates the body).  Returns ``(values,
    head, done)`` with the body block started: the caller writes the body, ends it with
    ``br label %head`` and starts ``done``."""
    head, body, done = w.label("while"), w.label("whilebody"), w.label("endwhile")
    w.block(head)
    go, values = cond()
    w.line(f"br i1 {go}, label %{body}, label %{done}")
    w.start(body)
    return values, head, done


# --- scan (sum) ---------------------------------------------------------------------------

def scan(cg, op) -> None:
    """``npu.scan {kind=sum, axis}``: a running sum per lane, started from the lane's first
    element (so a lone -0.0 stays -0.0, as numpy's cumsum)."""
    w = cg.w
    src = cg.val(op.operands[0])
    axis, d, out_dt = op.attrs["axis"], src.dtype, op.result.type.dtype
    acc_dt = d if d.is_float and d.itemsize == 8 else (
        float32 if d.is_float else reduce_result_dtype("sum", d))
    t = compute_type(acc_dt)
    out = cg.new_tile(src.shape, out_dt)
    acc = w.alloca(t, "acc")
    with _each_lane(w, src.shape, axis) as lane:
        w.store(t, literal(0, acc_dt), acc)
        with w.loop(f"i64 {src.shape[axis]}", "k") as j:
            x = elementwise.cast(w, load_element(w, src, lane.at(j)), d, acc_dt)
            s = w.op(f"{'fadd' if acc_dt.is_float else 'add'} {t}", w.load(t, acc), x)
            first = w.op("icmp eq i64", j, "0")
            s = w.op("select i1", first, f"{t} {x}", f"{t} {s}")
            w.store(t, s, acc)
            store_element(w, out, lane.at(j), elementwise.cast(w, s, acc_dt, out_dt))
    cg.bind(op.result, out)


# --- sort and topk ------------------------------------------------------------------------

def _before(w: Writer, a: str, b: str, d, descending: bool) -> str:
    """Whether ``a`` goes strictly before ``b``: ascending ``a < b`` with NaN above every
    number (sort), descending ``a > b`` with NaN above every number (topk)."""
    t = compute_type(d)
    if not d.is_float:
        sign = "u" if d.is_unsigned or d.is_bool else "s"
        return w.op(f"icmp {sign}{'gt' if descending else 'lt'} {t}", a, b)
    nan_a, nan_b = w.op(f"fcmp uno {t}", a, a), w.op(f"fcmp uno {t}", b, b)
    if descending:            # a > b, or a NaN and b a number
        ordered = w.op(f"fcmp ogt {t}", a, b)
        nan_first = w.op("and i1", nan_a, w.op("xor i1", nan_b, "true"))
    else:                     # a < b, or a number and b NaN
        ordered = w.op(f"fcmp olt {t}", a, b)
        nan_first = w.op("and i1", nan_b, w.op("xor i1", nan_a, "true"))
    return w.op("or i1", ordered, nan_first)


def _insertion_sort(cg, tiles: list, n: int, descending: bool) -> None:
    """Sort the (n,) tiles ``tiles`` in place by ``tiles[0]`` (the others move along),
    stably: element i moves down past every earlier element it goes strictly before."""
    w = cg.w
    keys = tiles[0]
    j_slot = w.alloca("i64", "j")
    with w.loop(f"i64 {max(n - 1, 0)}", "s") as s:
        i = w.op("add i64", s, "1")
        xs = [load_element(w, t, Index(flat=i)) for t in tiles]
        w.store("i64", i, j_slot)

        def test():
            j = w.load("i64", j_slot)
            inside = w.op("icmp sgt i64", j, "0")
            prev = w.op("select i1", inside, f"i64 {w.op('sub i64', j, '1')}", "i64 0")
            ys = [load_element(w, t, Index(flat=prev)) for t in tiles]
            moves = _before(w, xs[0], ys[0], keys.dtype, descending)
            return w.op("and i1", inside, moves), (j, prev, ys)

        (j, prev, ys), head, done = _while(w, test)
        for t, y in zip(tiles, ys):                  # shift the earlier element up
            store_element(w, t, Index(flat=j), y)
        w.store("i64", prev, j_slot)
        w.line(f"br label %{head}")
        w.start(done)
        at = Index(flat=w.load("i64", j_slot))
        for t, x in zip(tiles, xs):
            store_element(w, t, at, x)


def sort(cg, op) -> None:
    """``npu.sort``: each lane copied to a buffer, sorted ascending there, copied out (in
    reverse order for ``descending``)."""
    w = cg.w
    src = cg.val(op.operands[0])
    axis = op.attrs["axis"]
    n = src.shape[axis]
    out = cg.new_tile(src.shape, src.dtype)
    buf = cg.new_tile((n,), src.dtype)
    with _each_lane(w, src.shape, axis) as lane:
        with w.loop(f"i64 {n}", "k") as j:
            store_element(w, buf, Index(flat=j), load_element(w, src, lane.at(j)))
        _insertion_sort(cg, [buf], n, descending=False)
        with w.loop(f"i64 {n}", "k") as j:
            dst = w.op("sub i64", str(n - 1), j) if op.attrs.get("descending") else j
            store_element(w, out, lane.at(dst), load_element(w, buf, Index(flat=j)))
    cg.bind(op.result, out)


def topk(cg, op) -> None:
    """``npu.topk``: each lane with its indices sorted largest first (stably, so ties keep
    the lower index first); the first k of both are the results."""
    w = cg.w
    src = cg.val(op.operands[0])
    axis, k = op.attrs["axis"], op.attrs["k"]
    n = src.shape[axis]
    values = cg.new_tile(op.results[0].type.shape, src.dtype)
    indices = cg.new_tile(op.results[1].type.shape, int32)
    buf, ibuf = cg.new_tile((n,), src.dtype), cg.new_tile((n,), int32)
    with _each_lane(w, src.shape, axis) as lane:
        with w.loop(f"i64 {n}", "k") as j:
            store_element(w, buf, Index(flat=j), load_element(w, src, lane.at(j)))
            store_element(w, ibuf, Index(flat=j), w.assign(f"trunc i64 {j} to i32"))
        _insertion_sort(cg, [buf, ibuf], n, descending=True)
        with w.loop(f"i64 {k}", "k") as j:
            store_element(w, values, lane.at(j), load_element(w, buf, Index(flat=j)))
            store_element(w, indices, lane.at(j), load_element(w, ibuf, Index(flat=j)))
    cg.bind(op.results[0], values)
    cg.bind(op.results[1], indices)


# --- gather -------------------------------------------------------------------------------

def gather(cg, op) -> None:
    """``npu.gather``: per element of the index tile (row-major), the source element its
    index names along ``axis``; the first index outside the axis raises."""
    w = cg.w
    src, index = cg.val(op.operands[0]), cg.val(op.operands[1])
    axis = op.attrs["axis"]
    n = src.shape[axis]
    shape = tuple(op.result.type.shape)
    out = cg.new_tile(shape, src.dtype)
    site = cg.site("OutOfBoundsError", _gather_template(cg, op, len(shape), n))
    with nest(w, shape, [index, out], axes=True) as at:
        ix = to_i64(w, load_element(w, index, at), index.dtype)
        bad = w.op("icmp uge i64", ix, str(n))        # a negative index is huge unsigned
        cg.fail_if(bad, site, [ix, *_lane_numbers(w, at.axes, shape, n)])
        axes = list(at.axes)
        axes[axis] = ix
        store_element(w, out, at, load_element(w, src, Index(axes=axes)))
    cg.bind(op.result, out)


def _gather_template(cg, op, rank: int, n: int) -> str:
    """The reference's message with the six ``%d`` fields of an OutOfBoundsError site
    (runtime._error): the program id, the index, then the lane and the axis size as fit
    in the three numbers left."""
    where = str(op.loc).replace("%", "%%")
    lane, size = {1: ("(%d,)", "%d"), 2: ("(%d, %d)", str(n))}.get(rank, ("%d (row-major)",
                                                                          "%d"))
    return (f"kernel '{cg.fn.name}', {op.kind.value} at {where}, program (%d, %d, %d): "
            f"gather index %d at lane {lane} is outside [0, {size}) on axis "
            f"{op.attrs['axis']} of the source tile")


def _lane_numbers(w: Writer, axes: list, shape, n: int) -> list:
    """The site's numbers after the index (see ``_gather_template``)."""
    if len(shape) == 1:
        return [axes[0], str(n)]
    if len(shape) == 2:
        return list(axes)
    flat = "0"
    for i, st in zip(axes, row_major(shape)):
        flat = w.op("add i64", flat, w.op("mul i64", i, str(st)))
    return [flat, str(n)]


# --- user combine functions ---------------------------------------------------------------

def _combine(cg, op, accs: list, xs: list) -> list:
    """The region on the accumulated values in the allocas ``accs`` and the next element
    values ``xs``; stores the new accumulated values and returns them."""
    w = cg.w
    dts = [v.type.dtype for v in op.operands]
    cur = [Scalar(w.load(compute_type(d), a), d) for a, d in zip(accs, dts)]
    nxt = [Scalar(x, d) for x, d in zip(xs, dts)]
    ys = [y.ref for y in cg.run_block(op.body, cur + nxt)]
    for a, y, d in zip(accs, ys, dts):
        w.store(compute_type(d), y, a)
    return ys


def reduce_combine(cg, op) -> None:
    """``npu.reduce_combine``: per lane, the accumulators start at element 0 and the region
    folds elements 1 .. n-1 into them."""
    w = cg.w
    srcs = [cg.val(v) for v in op.operands]
    axis = op.attrs["axis"]
    n = srcs[0].shape[axis]
    outs = [cg.new_tile(r.type.shape, r.type.dtype) for r in op.results]
    accs = [w.alloca(compute_type(s.dtype), "acc") for s in srcs]
    with _each_lane(w, srcs[0].shape, axis) as lane:
        for s, a in zip(srcs, accs):
            w.store(compute_type(s.dtype), load_element(w, s, lane.at("0")), a)
        with w.loop(f"i64 {n - 1}", "k") as k:
            i = w.op("add i64", k, "1")
            _combine(cg, op, accs, [load_element(w, s, lane.at(i)) for s in srcs])
        for out, s, a in zip(outs, srcs, accs):
            store_element(w, out, lane.index, w.load(compute_type(s.dtype), a))
    for r, out in zip(op.results, outs):
        cg.bind(r, out)


def scan_combine(cg, op) -> None:
    """``npu.scan_combine``: per lane, the first element (the last with ``reverse``) is
    its own output; each next output is the region on the previous output and the
    element."""
    w = cg.w
    srcs = [cg.val(v) for v in op.operands]
    axis, reverse = op.attrs["axis"], op.attrs["reverse"]
    shape = srcs[0].shape
    n = shape[axis]
    outs = [cg.new_tile(shape, s.dtype) for s in srcs]
    accs = [w.alloca(compute_type(s.dtype), "acc") for s in srcs]
    start = str(n - 1) if reverse else "0"
    with _each_lane(w, shape, axis) as lane:
        for s, a, out in zip(srcs, accs, outs):
            x = load_element(w, s, lane.at(start))
            w.store(compute_type(s.dtype), x, a)
            store_element(w, out, lane.at(start), x)
        with w.loop(f"i64 {n - 1}", "k") as k:
            i = w.op("add i64", k, "1")
            at = lane.at(w.op("sub i64", str(n - 1), i) if reverse else i)
            ys = _combine(cg, op, accs, [load_element(w, s, at) for s in srcs])
            for out, y in zip(outs, ys):
                store_element(w, out, at, y)
    for r, out in zip(op.results, outs):
        cg.bind(r, out)


def map_elementwise(cg, op) -> None:
    """``npu.map_elementwise``: one loop over the groups of ``pack`` elements; the inputs
    are read row-major (a view that is not is copied to a contiguous tile first)."""
    w = cg.w
    p = op.attrs.get("pack", 1)
    shape = tuple(op.results[0].type.shape)
    srcs = []
    for v in op.operands:
        s = cg.val(v)
        if isinstance(s, Tile) and not (s.contiguous or s.uniform):
            s = cg.materialise(s)
        srcs.append(s)
    outs = [cg.new_tile(shape, r.type.dtype) for r in op.results]
    with w.loop(f"i64 {max(numel(shape), 1) // p}", "g") as g:
        base = w.op("mul i64", g, str(p))
        at = [Index(flat=w.op("add i64", base, str(k))) for k in range(p)]
        args = [s if isinstance(s, Scalar) else Scalar(load_element(w, s, at[k]), s.dtype)
                for s in srcs for k in range(p)]
        ys = cg.run_block(op.body, args)
        for r, out in enumerate(outs):
            for k in range(p):
                store_element(w, out, at[k], ys[r * p + k].ref)
    for r, out in zip(op.results, outs):
        cg.bind(r, out)


LOWERINGS = {
    Kind.SCAN: scan,
    Kind.SORT: sort,
    Kind.TOPK: topk,
    Kind.GATHER: gather,
    Kind.REDUCE_COMBINE: reduce_combine,
    Kind.SCAN_COMBINE: scan_combine,
    Kind.MAP_ELEMENTWISE: map_elementwise,
}
