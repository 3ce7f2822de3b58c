"""Lowering of ``npu.atomic_rmw``: ``(ptr, offsets, value, mask?, cmp?) {combine?} -> old``.

The meaning is the reference interpreter's (backends/reference/semantics_memory.py
``atomic_rmw``, memory.py ``atomic_add``): the active lanes (mask on, or no mask), in
row-major order, each do ``old = mem[o]; mem[o] = combine(old, value)`` and return
``old``; a masked-off lane touches nothing and returns 0.  Lanes with the same offset see
each other's writes one lane at a time.  ``combine`` is

* ``add`` (when absent), ``max``, ``min``: the elementwise op of that name on
  ``(old, value)`` (``npu.add`` wraps ints; ``maximum``/``minimum`` ignore a NaN
  operand, and give ``value`` on equal values);
* ``xchg``: ``value``;  ``and``, ``or``, ``xor``: bitwise (int and bool memory);
* ``cas``: ``value`` where ``old == cmp`` (numeric equality: NaN never matches, -0.0
  matches 0.0), else ``old`` -- nothing changes.

The launch runs programs one after another on one thread (runtime.py), so a plain load,
combine and store is atomic here.

Safety: unless ``bounds_check=False``, every active lane's offset is checked against its
argument *before* any lane touches memory (as the reference does); one outside raises
``OutOfBoundsError`` naming the kernel, the op, its source line, the program, the offset
and the argument, and the atomic has written nothing.

Example::

    >>> sorted(k.value for k in LOWERINGS)
    ['npu.atomic_rmw']
    >>> sorted(COMBINE)
    ['add', 'and', 'max', 'min', 'or', 'xor']
"""
from __future__ import annotations

from npujit.ir import Kind

from . import elementwise
from .ir_text import compute_type, literal
from .lower_memory import check_offset, gm_element, gm_store
from .values import Scalar, Tile, element, nest, store_element, to_i64

# The elementwise op each combine is (docs/semantics.md); xchg and cas are selects.
COMBINE = {"add": Kind.ADD, "max": Kind.MAXIMUM, "min": Kind.MINIMUM, "and": Kind.AND,
           "or": Kind.OR, "xor": Kind.XOR}


def _combine(w, combine: str, old: str, value: str, cmp, dt) -> str:
    """The value written back (compute type of ``dt``)."""
    if combine == "xchg":
        return value
    if combine == "cas":
        same = elementwise.apply_kind(w, Kind.CMP, {"predicate": "eq"}, [old, cmp], [dt, dt],
                                      None)
        t = compute_type(dt)
        return w.op("select i1", same, f"{t} {value}", f"{t} {old}")
    return elementwise.apply_kind(w, COMBINE[combine], {}, [old, value], [dt, dt], dt)


def atomic_rmw(cg, op) -> None:
    """``npu.atomic_rmw``: a check pass over the active lanes, then the lanes in order."""
    w = cg.w
    arg = cg.val(op.operands[0])
    offs, value, mask, cmp = (cg.val(v) if v is not None else None
                              for v in (op.operand("offsets"), op.operand("value"),
                                        op.operand("mask"), op.operand("cmp")))
    combine = op.attrs.get("combine", "add")
    t = op.result.type
    dt = arg.dtype
    ct = compute_type(dt)
    odt = op.operand("offsets").type.dtype
    ins = [x for x in (offs, value, mask, cmp) if isinstance(x, Tile)]

    def offset(index) -> str:
        return to_i64(w, element(w, offs, index), odt)

    def each_active(index, body) -> None:
        if mask is None:
            body()
            return
        with w.when(element(w, mask, index), "active"):
            body()

    def lanes(body, tiles) -> None:
        if not t.shape:
            body(None)
            return
        with nest(w, t.shape, tiles) as index:
            body(index)

    if cg.checking:
        lanes(lambda index: each_active(index, lambda: check_offset(cg, op, arg, offset(index))),
              ins)

    out = cg.new_tile(t.shape, dt) if t.shape else None
    slot = w.alloca(ct, "old")

    def lane(index) -> None:
        w.store(ct, literal(0, dt), slot)

        def rmw() -> None:
            off = offset(index)
            old = gm_element(w, arg, off)
            c = element(w, cmp, index) if cmp is not None else None
            gm_store(w, arg, off, _combine(w, combine, old, element(w, value, index), c, dt))
            w.store(ct, old, slot)

        each_active(index, rmw)
        if out is not None:
            store_element(w, out, index, w.load(ct, slot))

    lanes(lane, ins + ([out] if out is not None else []))
    if out is None:
        cg.bind(op.result, Scalar(w.load(ct, slot), dt))
    else:
        cg.bind(op.result, out)


LOWERINGS = {
    Kind.ATOMIC_RMW: atomic_rmw,
}
