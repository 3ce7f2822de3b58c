"""Global-memory ops: load, store, atomic_add, block_load, block_store.

Every lane branches on its own mask bit, so a masked-off lane never forms an address
(docs/semantics.md: it must not touch memory, whatever its offset).  Offsets index the
1-D argument array through ``np.uint64``: a negative offset becomes huge instead of
silently wrapping to the array's end.  With ``options['debug']`` (``NPUJIT_DEBUG=1``)
every access is bounds-checked and raises ``IndexError`` naming the op's source line.
Half floats are stored as uint16 bits and converted with ``halfprec``.

Example (``x = load(x_ptr, offs, mask)`` on 128 f16 lanes)::

    load = np.empty(128, np.float32)
    for i in range(u64(128)):
        if lt[i]:
            load[i] = hp.f16_bits_to_f32(x_ptr[u64(add[i])])
        else:
            load[i] = f32(0.0)
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from . import lower_scalar as ls
from .values import Nest, Val, linear, row_major


def _address(cg, op, ptr: str, off: str) -> str:
    """``ptr[<unsigned off>]``, preceded in debug mode by a bounds check."""
    idx = f"u64({off})"
    if cg.options.get("debug"):
        with cg.w.block(f"if {idx} >= u64({ptr}.shape[0]):"):
            cg.w.line(f'raise IndexError("{op.kind.value} at {_where(op)}: offset out of '
                      f'bounds of argument {ptr}")')
    return f"{ptr}[{idx}]"


def _where(op) -> str:
    return str(op.loc).replace("\\", "/").replace('"', "'")


def _operands(cg, op, names):
    return {n: cg.val(v) for n, v in zip(names, op.operands)}


def lower_load(cg, op) -> None:
    ptr_v = op.operands[0]
    d = ptr_v.type.dtype
    ptr = cg.val(ptr_v).name
    vals = _operands(cg, op, ("ptr", "offs", "mask", "other"))
    offs, mask, other = vals["offs"], vals.get("mask"), vals.get("other")
    shape = tuple(op.result.type.shape)
    w = cg.w
    if shape == ():
        name = w.fresh("load")
        fill = other.name if other is not None else ls.zero(d)
        if mask is None:
            w.line(f"{name} = {ls.decode(d, _address(cg, op, ptr, offs.name))}")
        else:
            with w.block(f"if {mask.name}:"):
                w.line(f"{name} = {ls.decode(d, _address(cg, op, ptr, offs.name))}")
            with w.block("else:"):
                w.line(f"{name} = {fill}")
        cg.bind(op.result, Val.scalar(name, d))
        return
    out = cg.new_array(cg.hint(op.result), shape, d)
    walked = [v for v in (offs, mask, other) if v is not None]
    with Nest(w, shape, walked) as nest:
        dst = f"{out.name}[{nest.out}]"
        if mask is None:
            w.line(f"{dst} = {ls.decode(d, _address(cg, op, ptr, nest.at(offs)))}")
        else:
            with w.block(f"if {nest.at(mask)}:"):
                w.line(f"{dst} = {ls.decode(d, _address(cg, op, ptr, nest.at(offs)))}")
            with w.block("else:"):
                w.line(f"{dst} = {nest.at(other) if other is not None else ls.zero(d)}")
    cg.bind(op.result, out)


def lower_store(cg, op) -> None:
    d = op.operands[0].type.dtype
    ptr = cg.val(op.operands[0]).name
    vals = _operands(cg, op, ("ptr", "offs", "value", "mask"))
    offs, value, mask = vals["offs"], vals["value"], vals.get("mask")
    shape = tuple(op.operands[1].type.shape)
    w = cg.w
    walked = [v for v in (offs, value, mask) if v is not None]
    with Nest(w, shape, walked) as nest:
        def write():
            dst = _address(cg, op, ptr, nest.at(offs))
            w.line(f"{dst} = {ls.encode(d, nest.at(value))}")
        if mask is None:
            write()
        else:
            with w.block(f"if {nest.at(mask)}:"):
                write()


def lower_atomic_add(cg, op) -> None:
    """Lanes in row-major order: ``old = mem[o]; mem[o] = old + v`` (rounded/wrapped).
    Kernels with atomics run their programs one at a time (see runtime.py)."""
    d = op.operands[0].type.dtype
    ptr = cg.val(op.operands[0]).name
    vals = _operands(cg, op, ("ptr", "offs", "value", "mask"))
    offs, value, mask = vals["offs"], vals["value"], vals.get("mask")
    shape = tuple(op.result.type.shape)
    w = cg.w
    if shape == ():
        old = w.fresh("old")
        w.line(f"{old} = {ls.zero(d)}")
        out = Val.scalar(old, d)
    else:
        out = cg.new_array("old", shape, d)
    walked = [v for v in (offs, value, mask) if v is not None]
    with Nest(w, shape, walked) as nest:
        dst = out.name if shape == () else f"{out.name}[{nest.out}]"

        def update():
            o = w.fresh("o")
            prev = w.fresh("prev")
            w.line(f"{o} = u64({nest.at(offs)})")
            cell = _address(cg, op, ptr, o)
            w.line(f"{prev} = {ls.decode(d, cell)}")
            w.line(f"{cell} = {ls.encode(d, ls.binary(Kind.ADD, d, prev, nest.at(value)))}")
            w.line(f"{dst} = {prev}")
        if mask is None:
            update()
        else:
            with w.block(f"if {nest.at(mask)}:"):
                update()
            if shape != ():
                with w.block("else:"):
                    w.line(f"{dst} = {ls.zero(d)}")
    cg.bind(op.result, out)


def _block_prologue(cg, op):
    """int64 copies of the block pointer's shape/strides/offsets, and its loops' names."""
    bs = tuple(op.attrs["block_shape"])
    r = len(bs)
    w = cg.w
    names = {}
    for part, first in (("shape", 1), ("stride", 1 + r), ("off", 1 + 2 * r)):
        for d_ in range(r):
            n = w.fresh(f"blk_{part}{d_}")
            w.line(f"{n} = i64({cg.val(op.operands[first + d_]).name})")
            names[part, d_] = n
    return bs, names


def _block_loops(cg, op, bs, names, body) -> None:
    """Nested loops over the block; ``body(idx_names, in_bounds, addr)`` writes one
    element.  ``in_bounds`` is None when no axis is boundary-checked."""
    w = cg.w
    checked = set(op.attrs.get("boundary_check", ()))
    idx, oks, coords = [], [], []
    opened = 0
    for d_, n in enumerate(bs):
        i = w.fresh(f"b{d_}")
        w.line(f"for {i} in range(u64({n})):")
        w.depth += 1
        opened += 1
        c = w.fresh(f"c{d_}")
        w.line(f"{c} = {names['off', d_]} + i64({i})")
        if d_ in checked:
            ok = w.fresh(f"ok{d_}")
            w.line(f"{ok} = {c} >= 0 and {c} < {names['shape', d_]}")
            oks.append(ok)
        idx.append(i)
        coords.append(c)
    addr = " + ".join(f"{c} * {names['stride', d_]}" for d_, c in enumerate(coords))
    body(idx, " and ".join(oks) if oks else None, addr)
    w.depth -= opened


def lower_block_load(cg, op) -> None:
    d = op.operands[0].type.dtype
    ptr = cg.val(op.operands[0]).name
    bs, names = _block_prologue(cg, op)
    out = cg.new_array(cg.hint(op.result), bs, d)
    pad = ls.f32(float("nan")) if (op.attrs.get("padding", "zero") == "nan"
                                   and d.is_float) else ls.zero(d)
    w = cg.w

    def body(idx, ok, addr):
        dst = f"{out.name}[{linear(idx, row_major(bs))}]"
        if ok is None:
            w.line(f"{dst} = {ls.decode(d, _address(cg, op, ptr, addr))}")
            return
        with w.block(f"if {ok}:"):
            w.line(f"{dst} = {ls.decode(d, _address(cg, op, ptr, addr))}")
        with w.block("else:"):
            w.line(f"{dst} = {pad}")
    _block_loops(cg, op, bs, names, body)
    cg.bind(op.result, out)


def lower_block_store(cg, op) -> None:
    d = op.operands[0].type.dtype
    ptr = cg.val(op.operands[0]).name
    value = cg.val(op.operands[-1])
    bs, names = _block_prologue(cg, op)
    w = cg.w

    def body(idx, ok, addr):
        src = value.broadcast_to(bs).element(lambda leaf: linear(idx, leaf.strides))
        if ok is None:
            w.line(f"{_address(cg, op, ptr, addr)} = {ls.encode(d, src)}")
            return
        with w.block(f"if {ok}:"):
            w.line(f"{_address(cg, op, ptr, addr)} = {ls.encode(d, src)}")
    _block_loops(cg, op, bs, names, body)


LOWERINGS = {Kind.LOAD: lower_load, Kind.STORE: lower_store, Kind.ATOMIC_ADD: lower_atomic_add,
             Kind.BLOCK_LOAD: lower_block_load, Kind.BLOCK_STORE: lower_block_store}
