"""affine-access: 2-D pointer loads/stores with affine offsets become strided block copies.

``a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak`` computes one int
address per element on the Vector and keeps the tile in UB, for a copy the DMA engine
could address by itself: rows ``stride_am`` apart, columns ``stride_ak`` apart, as a block
pointer's copy is (``DataCopy`` with a stride; docs/npu-facts.md §A6).  When the offsets
are affine (``affine_forms.py``) -- ``(P_r + i) * s_r + (P_c + j) * s_c`` with ``P_d`` and
``s_d`` scalars -- and the mask is a box -- an ``&`` of ``q_d + i_d < B_d`` conditions, one
per axis, with ``q_d`` the same scalar as ``P_d`` (``offs_m[:, None] < M``,
``offs_k[None, :] + k < K`` when the pointer advances with ``k``) -- the access becomes
``npu.block_load`` / ``npu.block_store`` with shape ``B_d`` on masked axes
(``boundary_check``) and the scalars ``P_d`` and ``s_d``, built on the Scalar unit from
the values the kernel computes anyway (i32, as the kernel's own offsets are).

The rewrite must mean exactly what the pointer access meant, so it is made only where
that is provable: every ``P_d`` is provably >= 0 (sums of program ids and induction
variables of loops from a non-negative start with non-negative coefficients), so a block
coordinate ``P_d + i_d`` is never below 0, where a block copy would pad instead of
reading; an axis without a condition gets shape ``2**31 - 1`` (no check: every lane
moves, as the pointer access's lanes do); ``other`` is absent, 0 or NaN (the block's
padding).  Everything else keeps the general path (offsets tile on the Vector).

Example::

    %o = (offsets tile: pid_m*32*sam + i*sam + j*sak)
    %t = "npu.load"(%a, %o, %mask, %zero) : (...) -> tensor<32x32xf16>
    // after: %t = "npu.block_load"(%a, %M, %big, %sam, %sak, %pm, %k)
    //             {block_shape = [32, 32], boundary_check = [0, 1], padding = "zero"}
"""
from __future__ import annotations

import math

from ..builder import Builder
from ..core import Block, Function, Op, Value
from ..ops import Kind
from .affine_forms import AffineForms, Sym, sym_add

# The shape of an axis the access does not bound: any coordinate an i32 offset reaches.
UNBOUNDED = 2**31 - 1


class AffineAccess:
    """Rewrites 2-D pointer loads/stores with affine offsets and box masks into block
    copies (see the module doc); returns whether it rewrote any.

    Example (``x[i * s + j]`` for a 4 x 4 tile, ``s`` a scalar argument)::

        >>> from npujit.ir.parser import parse_function
        >>> fn = parse_function('''"func.func"() ({
        ... ^bb0(%x: !npu.ptr<f32>, %s: i32):
        ...   %0 = "npu.arange"() {end = 4 : i64, start = 0 : i64} : () -> tensor<4xi32>
        ...   %1 = "npu.reshape"(%0) {shape = array<i64: 4, 1>} : (tensor<4xi32>) -> tensor<4x1xi32>
        ...   %2 = "npu.splat"(%s) {shape = array<i64: 4, 1>} : (i32) -> tensor<4x1xi32>
        ...   %3 = "npu.mul"(%1, %2) : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x1xi32>
        ...   %4 = "npu.broadcast"(%3) {shape = array<i64: 4, 4>} : (tensor<4x1xi32>) -> tensor<4x4xi32>
        ...   %5 = "npu.reshape"(%0) {shape = array<i64: 1, 4>} : (tensor<4xi32>) -> tensor<1x4xi32>
        ...   %6 = "npu.broadcast"(%5) {shape = array<i64: 4, 4>} : (tensor<1x4xi32>) -> tensor<4x4xi32>
        ...   %7 = "npu.add"(%4, %6) : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
        ...   %8 = "npu.load"(%x, %7) : (!npu.ptr<f32>, tensor<4x4xi32>) -> tensor<4x4xf32>
        ...   "npu.print"(%8) {prefix = ""} : (tensor<4x4xf32>) -> ()
        ...   "func.return"() : () -> ()
        ... }) {function_type = (!npu.ptr<f32>, i32) -> (), sym_name = "k"} : () -> ()''')
        >>> AffineAccess().run(fn)
        True
        >>> load = [op for op in fn.walk() if op.kind is Kind.BLOCK_LOAD][0]
        >>> load.operands[3] is fn.args[1], load.attrs["boundary_check"]   # row stride s
        (True, ())
    """

    name = "affine-access"

    def run(self, fn: Function, ctx=None) -> bool:
        forms = AffineForms()
        changed = False
        for op in [op for op in fn.walk() if op.kind in (Kind.LOAD, Kind.STORE)]:
            plan = _plan(op, forms)
            if plan is not None:
                _rewrite(fn, op, plan, forms)
                changed = True
        return changed


def _plan(op: Op, forms: AffineForms):
    """``(positions, strides, bounds, padding)`` for ``op``, or None to keep it."""
    offsets = op.operand("offsets")
    shape = tuple(offsets.type.shape)
    if len(shape) != 2 or offsets.type.dtype.bits not in (32, 64):
        return None
    f = forms.of(offsets)
    if f is None or any(len(c) > 1 for c in f.coefs):
        return None                      # a stride must be one product of scalars
    positions = _positions(f)
    if positions is None:
        return None
    mask = op.operand("mask")
    box = {} if mask is None else _box(mask, forms)
    if box is None:
        return None
    bounds = {}
    for d, (q, bound) in box.items():
        if not f.coefs[d]:
            positions[d] = q             # no stride along d: its position is free
        elif positions[d] != q:          # q + i < B  <=>  P + i < B + (P - q)
            bound = sym_add(bound, sym_add(positions[d], q, -1))
        bounds[d] = bound
    if not all(forms.nonnegative(p) for p in positions):
        return None
    padding = "zero"
    if op.kind is Kind.LOAD:
        padding = _padding(op.operand("other"))
        if padding is None:
            return None
    return positions, f.coefs, bounds, padding


def _positions(f) -> list | None:
    """Split ``f.base`` into ``sum_d P_d * coef_d``: each monomial goes to the axis whose
    stride it is a multiple of (the stride with most atoms, then the largest constant);
    None when a monomial fits no axis or two axes equally."""
    positions: list[dict] = [{} for _ in f.coefs]
    for m, a in f.base:
        best, key, tie = None, None, False
        for d, coef in enumerate(f.coefs):
            if not coef:
                continue
            (md, cd), = coef
            rest = _divide(m, md)
            if rest is None or a % cd:
                continue
            k = (len(md), abs(cd))
            if key is None or k > key:
                best, key, tie = (d, rest, a // cd), k, False
            elif k == key:
                tie = True
        if best is None or tie:
            return None
        d, rest, c = best
        positions[d][rest] = positions[d].get(rest, 0) + c
    return [tuple(sorted((m, c) for m, c in p.items() if c)) for p in positions]


def _divide(m: tuple, by: tuple) -> tuple | None:
    """The monomial ``m / by`` (atoms as multisets), or None."""
    rest = list(m)
    for a in by:
        if a not in rest:
            return None
        rest.remove(a)
    return tuple(rest)


def _box(mask: Value, forms: AffineForms) -> dict | None:
    """``{axis: (q, B)}`` for a mask that is an ``&`` of ``q + i_axis < B`` conditions."""
    op = mask.op
    if op is None:
        return None
    shape = tuple(mask.type.shape)
    k = op.kind
    if k is Kind.AND:
        a, b = (_box(v, forms) for v in op.operands)
        if a is None or b is None or set(a) & set(b):
            return None
        return {**a, **b}
    if k in (Kind.BROADCAST, Kind.RESHAPE):
        inner = _box(op.operands[0], forms)
        src = tuple(op.operands[0].type.shape)
        if inner is None:
            return None
        axes = _axis_map(src, shape, k is Kind.BROADCAST)
        if axes is None or any(d not in axes for d in inner):
            return None
        return {axes[d]: v for d, v in inner.items()}
    if k is Kind.CMP and op.attrs["predicate"] in ("lt", "gt"):
        x, y = op.operands if op.attrs["predicate"] == "lt" else op.operands[::-1]
        fx, fy = forms.of(x), forms.of(y)
        if fx is None or fy is None or not fy.lane_free:
            return None
        moving = [d for d, c in enumerate(fx.coefs) if c]
        if len(moving) != 1 or fx.coefs[moving[0]] != (((), 1),):
            return None
        return {moving[0]: (fx.base, fy.base)}
    return None


def _axis_map(src: tuple, dst: tuple, broadcast: bool) -> dict | None:
    """Which axis of ``dst`` each non-unit axis of ``src`` becomes."""
    if broadcast:
        lead = len(dst) - len(src)
        return {d: d + lead for d, n in enumerate(src) if n != 1 and n == dst[d + lead]}
    s = [d for d, n in enumerate(src) if n != 1]
    t = [d for d, n in enumerate(dst) if n != 1]
    if [src[d] for d in s] != [dst[d] for d in t]:
        return None
    return dict(zip(s, t))


def _padding(other: Value | None) -> str | None:
    """The block padding that equals ``other`` (absent: 0), or None."""
    if other is None:
        return "zero"
    op = other.op
    while op is not None and op.kind in (Kind.SPLAT, Kind.BROADCAST):
        op = op.operands[0].op
    if op is None or op.kind is not Kind.CONSTANT:
        return None
    v = op.attrs["value"]
    if isinstance(v, float) and math.isnan(v):
        return "nan" if op.attrs["dtype"].is_float else None
    if v == 0 and not (isinstance(v, float) and math.copysign(1.0, v) < 0):
        return "zero"
    return None


def _rewrite(fn: Function, op: Op, plan, forms: AffineForms) -> None:
    positions, strides, bounds, padding = plan
    block = op.parent
    offsets = op.operand("offsets")
    dtype = offsets.type.dtype
    scratch = Builder(Block(), loc=op.loc)
    make = _Materialise(scratch, forms, dtype)
    rank = len(positions)
    shape = [make(bounds[d]) if d in bounds else make(((((), UNBOUNDED),)))
             for d in range(rank)]
    layout = shape + [make(s) for s in strides] + [make(p) for p in positions]
    attrs = {"block_shape": tuple(offsets.type.shape), "boundary_check": tuple(sorted(bounds))}
    if op.kind is Kind.LOAD:
        attrs["padding"] = padding
        new = scratch.create(Kind.BLOCK_LOAD, [op.operand("ptr"), *layout], attrs)
    else:
        new = scratch.create(Kind.BLOCK_STORE, [op.operand("ptr"), *layout,
                                                op.operand("value")], attrs)
    at = block.ops.index(op)
    for i, inner in enumerate(scratch.block.ops):
        block.insert(at + i, inner)
    if op.results:
        op.result.replace_all_uses_with(new.result)
    op.erase()


class _Materialise:
    """Builds a ``Sym`` as scalar ops (``mul``/``add`` of its atoms and constants) in the
    access's dtype; the atoms are values the offsets were computed from, so they are
    defined where the access is."""

    def __init__(self, b: Builder, forms: AffineForms, dtype):
        self.b, self.forms, self.dtype = b, forms, dtype

    def __call__(self, s: Sym) -> Value:
        b = self.b
        total = None
        for m, c in s:
            term = None
            for a in m:
                v = self._cast(self.forms.atoms[a])
                term = v if term is None else b.op(Kind.MUL, [term, v])
            if term is None:
                term = b.constant(c, self.dtype)
            elif c != 1:
                term = b.op(Kind.MUL, [term, b.constant(c, self.dtype)])
            total = term if total is None else b.op(Kind.ADD, [total, term])
        return total if total is not None else b.constant(0, self.dtype)

    def _cast(self, v: Value) -> Value:
        if v.type.dtype == self.dtype:
            return v
        return self.b.op(Kind.CAST, [v], {"dtype": self.dtype})

