"""Lowering of the Cube op ``npu.dot``: ``(a: MxK, b: KxN, acc?: MxN) -> MxN``, or
batched, ``(...xMxK, ...xKxN, ...xMxN?) -> ...xMxN`` (one product per leading index).

The meaning is the reference interpreter's (backends/reference/semantics_cube.py,
docs/semantics.md "Cube"): float inputs are converted to f32 (f64 stays f64) and every
product and sum is computed in that type, in an unspecified order; i8 inputs multiply
exactly (an i8 x i8 product fits i16) and the products are summed with i32 wraparound,
which equals the reference's exact i64 sum wrapped to i32 (addition modulo 2**32 does not
depend on the order).  ``acc`` is added to the result (with i32 wraparound for ints).

The loop nest is the (m, k, n) order, so LLVM vectorises the innermost loop over
contiguous rows of ``b`` and of the result::

    C = acc (or zeros)                      # the result tile, contiguous
    for batch..., m:                        # the leading indices, then the rows of C
        for k:
            x = a[m, k]                     # loaded once per (m, k)
            for n:
                C[m, n] += x * b[k, n]

blocked four rows by four k-steps (then the remainders): one pass of the n-loop does
``C[m+i, n] += sum_j a[m+i, k+j] * b[k+j, n]`` for i, j < 4, so each element of ``b``
loaded feeds up to sixteen multiply-adds and each element of ``C`` is loaded and stored
once per four k-steps (64x64x64 f32 on one core here: about 50 GFLOP/s, as the numba
backend's ``cube_lib.dot_f``).  ``b`` is copied to a contiguous tile first when its rows
are not (a transposed or broadcast view); ``a`` is read once per (m, k) and may stay a
view.  Float multiply-adds may contract to fused multiply-adds (``contract``: one
rounding fewer per product, as in numpy's BLAS and the numba backend).

Example::

    >>> sorted(k.value for k in LOWERINGS)
    ['npu.dot']
"""
from __future__ import annotations

from npujit.ir import Kind

from . import elementwise
from .ir_text import compute_type, literal
from .values import Index, Tile, load_element, nest, store_element


def _rows_contiguous(t: Tile) -> bool:
    """Each row of ``t`` (its last axis) is contiguous in memory."""
    return t.shape[-1] == 1 or t.strides[-1] == 1


def _init(cg, out: Tile, acc) -> None:
    """``out`` (contiguous) set to ``acc`` (a view) or to zeros."""
    w = cg.w
    if acc is not None:
        cg.copy(acc, out)
        return
    with nest(w, out.shape, [out]) as index:
        store_element(w, out, index, literal(0, out.dtype))


def dot(cg, op) -> None:
    """``npu.dot``: the (m, k, n) loop nest of the module doc, blocked as ``_blocks``."""
    w = cg.w
    a, b = cg.val(op.operands[0]), cg.val(op.operands[1])
    acc = cg.val(op.operands[2]) if len(op.operands) > 2 else None
    rt = op.result.type
    *batch, m_, k_ = a.shape
    if not _rows_contiguous(b):
        b = cg.materialise(b)
    out = cg.new_tile(rt.shape, rt.dtype)
    _init(cg, out, acc)
    if batch:
        with nest(w, tuple(batch), axes=True) as lead:
            _blocks(cg, a, b, out, lead.axes, m_, k_)
    else:
        _blocks(cg, a, b, out, [], m_, k_)
    cg.bind(op.result, out)


def _blocks(cg, a: Tile, b: Tile, out: Tile, lead: list, m_: int, k_: int) -> None:
    """``out[lead] += a[lead] @ b[lead]``: rows of ``out`` four at a time, and for each
    block of rows, k four steps at a time (then the remainders), so one pass of the
    n-loop loads each element of ``b`` once for up to sixteen multiply-adds and each
    element of ``out`` once for up to four."""
    w = cg.w

    def ks(rows: list, k0: str, kr: int) -> None:
        kk = [k0] + [w.op("add nuw nsw i64", k0, str(j)) for j in range(1, kr)]
        xs = [[_element(cg, a, [*lead, r, k], out.dtype) for k in kk] for r in rows]
        _row_pass(cg, b, out, lead, rows, kk, xs)

    def row_block(m0: str, mr: int) -> None:
        rows = [m0] + [w.op("add nuw nsw i64", m0, str(i)) for i in range(1, mr)]
        if k_ // 4:
            with w.loop(f"i64 {k_ // 4}", "kb") as kb:
                ks(rows, w.op("mul nuw nsw i64", kb, "4"), 4)
        if k_ % 4:
            ks(rows, str(k_ - k_ % 4), k_ % 4)

    if m_ // 4:
        with w.loop(f"i64 {m_ // 4}", "mb") as mb:
            row_block(w.op("mul nuw nsw i64", mb, "4"), 4)
    if m_ % 4:
        row_block(str(m_ - m_ % 4), m_ % 4)


def _element(cg, t: Tile, axes: list, cd) -> str:
    """``t[axes]`` converted to the compute dtype ``cd`` of the products."""
    return elementwise.cast(cg.w, load_element(cg.w, t, Index(axes=axes)), t.dtype, cd)


def _row_pass(cg, b: Tile, out: Tile, lead: list, rows: list, kk: list, xs: list) -> None:
    """One pass of the n-loop: ``out[r, n] += sum_j xs[r][j] * b[kk[j], n]`` for each row
    ``r`` of ``rows``."""
    w = cg.w
    cd = out.dtype
    t = compute_type(cd)
    mul, add = ("fmul contract", "fadd contract") if cd.is_float else ("mul", "add")
    with w.loop(f"i64 {b.shape[-1]}", "n") as n:
        ys = [_element(cg, b, [*lead, k, n], cd) for k in kk]
        for r, row in zip(rows, xs):
            s = None
            for x, y in zip(row, ys):
                p = w.op(f"{mul} {t}", x, y)
                s = p if s is None else w.op(f"{add} {t}", s, p)
            at = Index(axes=[*lead, r, n])
            store_element(w, out, at, w.op(f"{add} {t}", load_element(w, out, at), s))


LOWERINGS = {
    Kind.DOT: dot,
}
