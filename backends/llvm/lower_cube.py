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

That is the general form (``_blocks``); two register-blocked forms take the f32
products of f32-held tiles (f32, f16, bf16: a tile holds a 16-bit float as its f32
value):

* ``_vector_blocks`` when N is a multiple of 16 (or is 4 or 8): four rows of the result
  and a 16-wide slice of its columns stay in vector registers for the whole k-loop,
  each k-step one vector load of ``b`` and four broadcast multiply-adds;
* ``_dot_blocks`` when ``b`` is contiguous along k (a weight read through a transposed
  block pointer, whose block tile lower_memory stores k-contiguous) and K a multiple of
  8: four rows by four columns of dot products along k, eight lanes at a time, each
  vector summed at the end (the MoE router's 8-expert scores: 8.6 -> 6.8 ms on
  2048x4096, numba 5.9, with two columns).  ``b`` is then often the weight itself, read
  in GM where it lies (lower_memory ``_read_in_place``).  Four columns, not two: the
  MoE layer's expert kernels (fp32, 512 tokens, H 1024, I 3584, 8 experts, top-2, one
  thread) gate/up 238 -> 201 ms and down 186 -> 147 ms (numba's 4 x 4 ``dot_nt``: 185
  and 109).

The general form is
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
from .ir_text import compute_type, literal, memory_type, tile_bytes
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
    out = cg.new_tile(rt.shape, rt.dtype)
    _init(cg, out, acc)
    if _k_contiguous(a, b, out):
        blocks = _dot_blocks
    else:
        if not _rows_contiguous(b):
            b = cg.materialise(b)
        blocks = _vector_blocks if _lanes(a, b, out) else _blocks
    if batch:
        with nest(w, tuple(batch), axes=True) as lead:
            blocks(cg, a, b, out, lead.axes, m_, k_)
    else:
        blocks(cg, a, b, out, [], m_, k_)
    cg.bind(op.result, out)


def _lanes(a: Tile, b: Tile, out: Tile) -> int:
    """The vector width of ``_vector_blocks`` for this product, or 0 when it does not
    apply: f32 results from float tiles held as f32 (f32, f16, bf16), and ``N`` a
    multiple of 16 (or 4 or 8)."""
    n = out.shape[-1]
    if not _f32_products(a, b, out):
        return 0
    return 16 if n % 16 == 0 else n if n in (4, 8) else 0


def _f32_products(a: Tile, b: Tile, out: Tile) -> bool:
    """f32 results from float tiles held as f32 (f32, f16, bf16 and the fp8s)."""
    return out.dtype.itemsize == 4 and all(t.dtype.is_float and tile_bytes(t.dtype) == 4
                                           for t in (a, b, out))


def _pieces(w, count: int, size: int, body, hint: str) -> None:
    """``body(first, n)`` over ``count`` indices in pieces of ``size``: a loop over the
    whole pieces, then the remainder."""
    if count // size:
        with w.loop(f"i64 {count // size}", hint) as i:
            body(w.op("mul nuw nsw i64", i, str(size)), size)
    if count % size:
        body(str(count - count % size), count % size)


def _run_of(w, first: str, n: int) -> list:
    """``first, first + 1, ..., first + n - 1`` (i64 operands)."""
    return [first] + [w.op("add nuw nsw i64", first, str(i)) for i in range(1, n)]


ROWS = 4       # rows of the result per register block
COLS = 4       # columns of the result per block of ``_dot_blocks``
K_LANES = 8    # the vector width of ``_dot_blocks`` (along k)


def _k_contiguous(a: Tile, b: Tile, out: Tile) -> bool:
    """Do ``_dot_blocks`` apply: f32 products of f32-held tiles whose rows of ``a`` and
    columns of ``b`` are contiguous along k (``b`` a transposed view: a weight read as
    ``make_block_ptr(w, strides=(1, H))``, whose block tile is stored so), K a multiple
    of ``K_LANES``, and ``b``'s rows not contiguous (else ``_vector_blocks``)."""
    return (_f32_products(a, b, out) and a.strides[-1] == 1
            and b.strides[-2] == 1 and not _rows_contiguous(b)
            and a.shape[-1] % K_LANES == 0)


def _dot_blocks(cg, a: Tile, b: Tile, out: Tile, lead: list, m_: int, k_: int) -> None:
    """``out[lead] += a[lead] @ b[lead]`` as dot products along k, for ``b`` contiguous
    along k (``_k_contiguous``): each block of ``ROWS`` x ``COLS`` results keeps one
    vector of partial sums per result (in registers) while k advances ``K_LANES`` at a
    time -- ``ROWS`` vector loads of ``a``, ``COLS`` of ``b``, ``ROWS * COLS`` vector
    multiply-adds -- then adds each vector's sum to its result."""
    w = cg.w
    vt = f"<{K_LANES} x float>"
    n_ = out.shape[-1]

    def block(rows: list, cols: list) -> None:
        pairs = [(r, c) for r in rows for c in cols]
        slots = [w.alloca(vt, "acc") for _ in pairs]
        for slot in slots:
            w.store(vt, "zeroinitializer", slot)
        with w.loop(f"i64 {k_ // K_LANES}", "kv") as kv:
            k0 = w.op("mul nuw nsw i64", kv, str(K_LANES))
            av = {r: _vload(w, vt, _at(w, a, [*lead, r, k0])) for r in rows}
            bv = {c: _vload(w, vt, _at(w, b, [*lead, k0, c])) for c in cols}
            for (r, c), slot in zip(pairs, slots):
                prod = w.op(f"fmul contract {vt}", av[r], bv[c])
                w.store(vt, w.op(f"fadd contract {vt}", w.load(vt, slot), prod), slot)
        for (r, c), slot in zip(pairs, slots):
            total = w.assign(f"call reassoc float @llvm.vector.reduce.fadd.v{K_LANES}f32("
                             f"float 0x8000000000000000, {vt} {w.load(vt, slot)})")
            at = Index(axes=[*lead, r, c])
            store_element(w, out, at, w.op("fadd float", load_element(w, out, at), total))

    _pieces(w, m_, ROWS, lambda m0, mr: _pieces(
        w, n_, COLS, lambda n0, nr: block(_run_of(w, m0, mr), _run_of(w, n0, nr)), "nb"),
        "mb")


def _vector_blocks(cg, a: Tile, b: Tile, out: Tile, lead: list, m_: int, k_: int) -> None:
    """``out[lead] += a[lead] @ b[lead]`` with the accumulators in registers: for each
    block of ``ROWS`` rows and each ``lanes``-wide slice of the columns, the block's
    partial results are ``ROWS`` vectors (stack slots LLVM promotes to registers) that
    take one multiply-add per row and k-step -- the broadcast ``a[r, k]`` times the
    vector ``b[k, n0:n0+lanes]`` -- and are stored once, after the last k-step.  Per
    k-step: one vector load of ``b``, ``ROWS`` scalar loads of ``a``, ``ROWS`` vector
    multiply-adds (the 4x4 blocking of ``_blocks`` loads and stores the result once per
    four k-steps instead)."""
    w = cg.w
    lanes = _lanes(a, b, out)
    vt = f"<{lanes} x float>"
    n_ = out.shape[-1]

    def row_block(m0: str, mr: int) -> None:
        rows = _run_of(w, m0, mr)
        with w.loop(f"i64 {n_ // lanes}", "nv") as nv:
            n0 = w.op("mul nuw nsw i64", nv, str(lanes))
            slots = [w.alloca(vt, "acc") for _ in rows]
            for r, slot in zip(rows, slots):
                w.store(vt, _vload(w, vt, _at(w, out, [*lead, r, n0])), slot)
            with w.loop(f"i64 {k_}", "k") as k:
                bv = _vload(w, vt, _at(w, b, [*lead, k, n0]))
                for r, slot in zip(rows, slots):
                    x = _element(cg, a, [*lead, r, k], out.dtype)
                    one = w.op(f"insertelement {vt} poison, float", x, "i64 0")
                    xs = w.op(f"shufflevector {vt} {one}, {vt} poison, <{lanes} x i32>",
                               "zeroinitializer")
                    prod = w.op(f"fmul contract {vt}", xs, bv)
                    w.store(vt, w.op(f"fadd contract {vt}", w.load(vt, slot), prod), slot)
            for r, slot in zip(rows, slots):
                w.line(f"store {vt} {w.load(vt, slot)}, ptr {_at(w, out, [*lead, r, n0])}, "
                       "align 4")

    _pieces(w, m_, ROWS, row_block, "mb")


def _vload(w, vt: str, ptr: str) -> str:
    """A vector load from a tile (aligned to its elements only)."""
    return w.assign(f"load {vt}, ptr {ptr}, align 4")


def _at(w, t: Tile, axes: list) -> str:
    """The address of ``t[axes]`` (a ptr)."""
    return w.gep(memory_type(t.dtype), t.ptr, Index(axes=axes).offset(w, t))


def _blocks(cg, a: Tile, b: Tile, out: Tile, lead: list, m_: int, k_: int) -> None:
    """``out[lead] += a[lead] @ b[lead]``: rows of ``out`` four at a time, and for each
    block of rows, k four steps at a time (then the remainders), so one pass of the
    n-loop loads each element of ``b`` once for up to sixteen multiply-adds and each
    element of ``out`` once for up to four."""
    w = cg.w

    def ks(rows: list, k0: str, kr: int) -> None:
        kk = _run_of(w, k0, kr)
        xs = [[_element(cg, a, [*lead, r, k], out.dtype) for k in kk] for r in rows]
        _row_pass(cg, b, out, lead, rows, kk, xs)

    def row_block(m0: str, mr: int) -> None:
        rows = _run_of(w, m0, mr)
        _pieces(w, k_, 4, lambda k0, kr: ks(rows, k0, kr), "kb")

    _pieces(w, m_, 4, row_block, "mb")


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
