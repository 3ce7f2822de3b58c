"""Gathered rows: tile accesses whose offsets are a row start read from a tile plus
contiguous columns, ``x_ptr + tok[:, None] * stride + cols[None, :]``.

Such offsets are not affine (``tok`` is loaded), so ``lower_memory._Index`` would read
every lane through its own offset, and the default range check would test every active
lane inside the loop (a raise in a loop keeps LLVM from vectorising it).  But the
offsets split into a part that varies only along the leading axes (the *row start*,
``tok[i] * stride``) and an affine part (``cols``).  Each row is then one contiguous
(or constant-stride) run: its start is computed once per row, the range check tests
the row's whole span once, and the inner loop over the last axis has no test in it
where the span is inside the argument.  The mask is still evaluated per lane, exactly
(the reference interpreter's semantics), and a row whose span leaves the argument is
walked with the lane test, so a masked-off lane never raises and an active lane out of
bounds raises the same error as before.

This is the access of a grouped GEMM that gathers its token rows by index (the MoE
expert kernels, kernels/moe/experts.py, and vLLM-style Triton kernels).  As with
affine offsets, the sum of the parts is taken in int64: it differs from the offsets'
own int32 arithmetic only where that wraps, and a wrapped offset is out of bounds.

Example (``xt = load(x_ptr + tok[:, None] * stride_xt + cols[None, :], mask=...)`` on a
16 x 512 f32 tile, default range check)::

    for i0 in range(u64(16)):
        rs = sbase + i64(i32(idiv[i0] * stride_xt))
        if rs >= 0 and rs + 511 < i64(x_ptr.shape[0]):
            ru = u64(rs)
            for i1 in range(u64(512)):
                if mask_at(i0, i1):
                    load[i0 * u64(512) + i1] = x_ptr[ru + i1]
                else:
                    load[i0 * u64(512) + i1] = f32(0.0)
        else:
            ... the same loop, each active lane's offset tested
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from . import lower_scalar as ls
from . import range_check
from .affine import affine
from .range_check import checking
from .values import Val, linear, row_major


class RowOffsets:
    """Offsets ``Σ sign·row_k + base + Σ_d coefs[d]·i_d``: every ``row_k`` varies only
    along the leading axes, ``base`` is a loop-invariant int64 expression and the
    constant ``coefs`` are >= 0."""

    def __init__(self, rows, base: str, coefs: tuple):
        self.rows = rows            # [(+1 or -1, Val at the access's shape)]
        self.base = base
        self.coefs = coefs


def _rowwise(v: Val) -> bool:
    """Whether ``v`` (at its shape, rank >= 2) is the same along the last axis."""
    return all(leaf.strides[-1] == 0 for leaf in v.leaves())


def split(offs: Val, shape) -> RowOffsets | None:
    """``offs`` (broadcast to ``shape``) as row starts plus affine columns, or None when
    it is not of that form (or has no row part: plain affine offsets are
    ``lower_memory._Index``'s)."""
    if len(shape) < 2 or not offs.dtype.is_int:
        return None
    parts = _parts(offs.broadcast_to(shape))
    if parts is None or not parts[0] or min(parts[2]) < 0:
        return None
    return RowOffsets(*parts)


def _parts(v: Val):
    aff = affine(v)
    if aff is not None:
        return [], aff[0], aff[1]
    n = len(v.shape)
    if _rowwise(v):
        return [(1, v)], "0", (0,) * n
    if v.kind != "expr":
        return None
    if v.op is Kind.CAST:
        return _parts(v.args[0]) if v.args[0].dtype.is_int else None
    if v.op not in (Kind.ADD, Kind.SUB):
        return None
    a, b = _parts(v.args[0]), _parts(v.args[1])
    if a is None or b is None:
        return None
    sign = 1 if v.op is Kind.ADD else -1
    rows = a[0] + [(sign * s, r) for s, r in b[0]]
    coefs = tuple(x + sign * y for x, y in zip(a[2], b[2]))
    if b[1] == "0":
        base = a[1]
    elif a[1] == "0" and sign > 0:
        base = b[1]
    else:
        base = f"{a[1]} {'+' if sign > 0 else '-'} ({b[1]})"
    return rows, base, coefs


class _Walk:
    """Explicit loops over ``shape`` (size-1 dims skipped): the leading ones opened by
    ``rows()``, the last by ``columns()``; ``at(val)`` is ``val``'s element at the
    current point and ``out`` the point's row-major index."""

    def __init__(self, w, shape):
        self.w = w
        self.shape = tuple(shape)
        self.names = [w.fresh(f"i{d}") if n != 1 else None for d, n in enumerate(shape)]
        self.out = linear(*self._live(row_major(self.shape)))

    def _live(self, strides):
        pairs = [(n, s) for n, s in zip(self.names, strides) if n is not None]
        return [n for n, _ in pairs], [s for _, s in pairs]

    def at(self, val: Val) -> str:
        return val.broadcast_to(self.shape).element(
            lambda leaf: linear(*self._live(leaf.strides)))

    def open(self, dims) -> int:
        opened = 0
        for d in dims:
            if self.names[d] is not None:
                self.w.line(f"for {self.names[d]} in range(u64({self.shape[d]})):")
                self.w.depth += 1
                opened += 1
        return opened


def _row_start(walk: _Walk, r: RowOffsets) -> str:
    """The signed offset of the current row's first column."""
    terms = [r.base] + [f"{'-' if s < 0 else '+'} i64({walk.at(v)})" for s, v in r.rows]
    for d, c in enumerate(r.coefs[:-1]):
        if c and walk.names[d] is not None:
            terms.append(f"+ i64({walk.names[d]}) * {c}")
    return " ".join(terms)


def emit(cg, op, ptr: str, shape, r: RowOffsets, mask: Val | None, lane, masked_off) -> None:
    """The access's loops over ``shape``: per row, its start and (range mode) one span
    test; then ``lane(walk, index)`` writes the statement of one lane (under the mask
    when there is one) given its unsigned ``index`` into ``ptr``, after the lane's own
    offset test in a row whose span leaves the argument.  ``masked_off(walk)`` writes
    the ``else`` of the mask test, if any."""
    w = cg.w
    walk = _Walk(w, shape)
    last = len(shape) - 1
    opened = walk.open(range(last))
    start, ustart = w.fresh("rs"), w.fresh("ru")
    w.line(f"{start} = {_row_start(walk, r)}")
    col = walk.names[last]
    step = r.coefs[-1]
    offset = "" if col is None else (f" + {col}" if step == 1 else f" + {col} * u64({step})")
    span = step * (shape[last] - 1)

    def columns(checked: bool) -> None:
        w.line(f"{ustart} = u64({start})")
        depth = walk.open([last])
        index = f"{ustart}{offset}"

        def active():
            if checked:
                range_check.lane(cg, op, ptr, index, "False")
            lane(walk, index)
        if mask is None:
            active()
        else:
            with w.block(f"if {walk.at(mask)}:"):
                active()
            masked_off(walk)
        w.depth -= depth

    if checking(cg) != "range":
        columns(False)
    else:
        with w.block(f"if {start} >= 0 and {start} + {span} < i64({ptr}.shape[0]):"):
            columns(False)
        with w.block("else:"):
            columns(True)
    w.depth -= opened


def load(cg, op, ptr: str, r: RowOffsets, mask, other, out: Val) -> None:
    """A gathered-rows load into the tile ``out``."""
    d = op.operand("ptr").type.dtype
    w = cg.w

    def lane(walk, index):
        w.line(f"{out.name}[{walk.out}] = {ls.decode(d, f'{ptr}[{index}]')}")

    def masked_off(walk):
        with w.block("else:"):
            w.line(f"{out.name}[{walk.out}] = "
                   f"{walk.at(other) if other is not None else ls.zero(d)}")
    emit(cg, op, ptr, tuple(op.result.type.shape), r, mask, lane, masked_off)


def store(cg, op, ptr: str, r: RowOffsets, value: Val, mask, shape) -> None:
    """A store to gathered rows (a scatter of rows)."""
    d = op.operand("ptr").type.dtype
    w = cg.w

    def lane(walk, index):
        w.line(f"{ptr}[{index}] = {ls.encode(d, walk.at(value))}")
    emit(cg, op, ptr, shape, r, mask, lane, lambda walk: None)
