"""Lowering of the tile ops: elementwise ops and ``npu.fused`` regions as one loop nest,
the shape ops as views, ``arange``, and the reductions.

An elementwise op (alone, or every op of a fused region) runs per element inside one
loop nest over its shape: the operands' current elements are loaded once per element,
the ops' LLVM instructions follow (backends/llvm/elementwise.py) and each result the
nest hands out is stored to a tile of its own.

Reductions follow backends/reference/semantics_reduce.py: floats accumulate in f32 (f64
for f64), ``sum``/``prod`` of small ints in i32, ``max``/``min`` of floats ignore NaN
(NaN only for a lane of NaNs), ``argmax``/``argmin`` give the first extreme, or the
first NaN when a lane has one.

Example::

    >>> LOWERINGS[Kind.TRANS]                                     # doctest: +ELLIPSIS
    <function trans at ...>
"""
from __future__ import annotations

from npujit.ir import Kind
from npujit.ir.ops import ELEMENTWISE, reduce_result_dtype
from npujit.ir.types import float32

from . import elementwise
from .ir_text import compute_type, literal
from . import affine
from .values import (Factor, Index, Lazy, Scalar, Tile, element, load_element, nest,
                     on_factors, row_step, store_element, to_i64)


# --- elementwise -------------------------------------------------------------------------

def evaluate(cg, shape, ops, inputs: dict, index, wanted: list, on=None) -> list:
    """Write ``ops`` for the element at ``index`` of ``shape``; the element values of
    ``wanted``.  ``inputs`` binds values from outside (``id(value) -> Scalar | Tile |
    Lazy``), else the bound value of the value is read.  ``on`` (``id(value) -> i1``,
    ``_all_on``'s) names bool results whose every lane is on when their i1 is in
    ``Writer.assumed``: there they are ``true``, not computed."""
    w = cg.w
    elem: dict = {}
    on = on or {}

    def outside(v):
        got = inputs.get(id(v))
        return got if got is not None else cg.lazy(v)

    def get(v):
        r = elem.get(id(v))
        if r is None:
            r = elem[id(v)] = element(w, outside(v), index)
        return r

    for op in ops:
        if on.get(id(op.results[0])) in w.assumed:
            elem[id(op.result)] = "true"
        elif op.kind is Kind.SPLAT:
            elem[id(op.result)] = get(op.operands[0])
        elif op.kind is Kind.BROADCAST:
            src = outside(op.operands[0])
            elem[id(op.result)] = element(w, src if isinstance(src, Scalar)
                                          else src.broadcast_to(shape), index)
        else:
            elem[id(op.result)] = cg.scalar_op(op, [get(v) for v in op.operands])
    return [get(v) for v in wanted]


def _read(cg, shape, ops, inputs: dict) -> list:
    """The tiles and lazy values ``ops`` read, as seen from a nest over ``shape``."""
    seen = []
    for op in ops:
        for v in op.operands:
            src = inputs.get(id(v)) or cg.env.get(id(v))
            if isinstance(src, (Tile, Lazy)):
                seen.append(src.broadcast_to(shape) if op.kind is Kind.BROADCAST else src)
    return seen


def elements(cg, shape, ops, inputs: dict, outputs: list) -> None:
    """Run ``ops`` per element of ``shape`` (``evaluate``) and store each of ``outputs``
    (``(value, Tile)``) at the end of each element."""
    tiles = [t for _, t in outputs] + _read(cg, shape, ops, inputs)
    with nest(cg.w, shape, tiles) as index:
        got = evaluate(cg, shape, ops, inputs, index, [v for v, _ in outputs])
        for (_, tile), r in zip(outputs, got):
            store_element(cg.w, tile, index, r)


# What may read a lazy value in place (lower.Lowering.lazy); any other consumer gets a
# stored tile (lower.Lowering.val).
LAZY_READERS = ELEMENTWISE | {Kind.FUSED, Kind.RESHAPE, Kind.TRANS, Kind.LOAD, Kind.STORE,
                              Kind.REDUCE}
# Elementwise ops cheap enough to recompute wherever a lazy result is read.
CHEAP = frozenset({Kind.ADD, Kind.SUB, Kind.MUL, Kind.CMP, Kind.AND, Kind.OR, Kind.XOR,
                   Kind.NOT, Kind.SELECT, Kind.SPLAT, Kind.BROADCAST, Kind.CAST,
                   Kind.MAXIMUM, Kind.MINIMUM, Kind.NEG, Kind.ABS})


# A lazy value's element is recomputed by each of its readers, and a reader that reads
# two lazy values built on the same ones computes those twice.  So a value stays lazy
# only while one element's work, its lazy inputs' included (``_cost``, which counts
# shared work once per path to it, as the generated code does), is under these many
# ops: ``RECOMPUTE_LIMIT`` for one read more than once, ``LAZY_LIMIT`` for one read once.
# Without them an unrolled binary search (``lo`` and ``hi`` each built from the last
# step's two) doubled its code every step: 6 steps took 10 s to compile, 8 never ended.
# The bundled kernels' largest lazy values cost 3-42 ops (the layernorm's 42).
RECOMPUTE_LIMIT = 24
LAZY_LIMIT = 128


def _lazy_ok(cg, op, ops, inputs) -> bool:
    """May ``op``'s results (computed by ``ops`` per element) stay lazy?  When every
    reader can read them in place, and the work is cheap or done once: each result read
    once, in the block that computes it (not every iteration of a loop inside it); and
    the work stays under ``LAZY_LIMIT`` / ``RECOMPUTE_LIMIT``."""
    return all(_result_lazy_ok(cg, op, r, ops, inputs) for r in op.results)


def _result_lazy_ok(cg, op, r, ops, inputs) -> bool:
    """``_lazy_ok`` for the one result ``r`` of ``op``, computed by ``ops``."""
    uses = r.uses
    if not uses or any(u.kind not in LAZY_READERS for u, _ in uses):
        return False
    if len(uses) == 1 and uses[0][0].parent is op.parent and not _read_broadcast(r):
        return _cost(cg, ops, inputs) <= LAZY_LIMIT
    return (len(ops) <= 8 and all(o.kind in CHEAP for o in ops)
            and _cost(cg, ops, inputs) <= RECOMPUTE_LIMIT)


def _cost(cg, ops, inputs: dict) -> int:
    """Ops one element of ``ops``' results takes to compute: theirs, and those of the
    lazy values they read (``Lazy.cost``; a tile or a scalar costs nothing more)."""
    inner = {id(x) for o in ops for x in o.results}
    total, seen = len(ops), set()
    for o in ops:
        for v in o.operands:
            if id(v) in inner or id(v) in seen:
                continue
            seen.add(id(v))
            got = inputs[id(v)] if id(v) in inputs else cg.env.get(id(v))
            if isinstance(got, Lazy):
                total += got.cost
    return total


def _needed(ops, values) -> list:
    """The ops of ``ops`` (in order) that ``values`` depend on."""
    wanted = {id(v) for v in values}
    kept = []
    for o in reversed(ops):
        if any(id(r) in wanted for r in o.results):
            kept.append(o)
            wanted.update(id(v) for v in o.operands)
    return kept[::-1]


def _read_broadcast(v) -> bool:
    """Is ``v`` read (through reshapes and transposes) by an op over more elements than
    it has -- a broadcast, whose every element would recompute it?  (The MoE down
    kernel's panel offsets ``(c // P) * R * P + c % P``, [1, 512], read by a [16, 512]
    load: 16 divisions per value.)"""
    for reader, _ in v.uses:
        if reader.kind in (Kind.RESHAPE, Kind.TRANS):
            if _read_broadcast(reader.result):
                return True
        elif any(_numel(x) > _numel(v) for x in (*reader.results, *reader.operands)):
            return True
    return False


def _numel(v) -> int:
    """Elements of ``v`` (1 for a scalar)."""
    return getattr(v.type, "numel", 1)


def _lazy(cg, shape, ops, inputs: dict, value, dtype) -> Lazy:
    """``value`` (computed by ``ops``) as a ``Lazy``, with what is known of an integer
    or bool one: its affine form, else its row step (``_row_step``), and a bool's
    all-on tests (``_all_on``); one pass of ``_affine_forms`` serves all three."""
    flat = all(t.contiguous or t.uniform for t in _read(cg, shape, ops, inputs))
    form, step, known, factors = None, None, {}, ()
    if dtype.is_int or dtype.is_bool:
        form_of = _affine_forms(cg, shape, ops, inputs)
        form = form_of(value) if dtype.is_int else None
        step = _row_step(cg, ops, inputs, value, form_of) if form is None else None
        if dtype.is_bool:
            known, factors = _all_on(cg, shape, ops, inputs, value, form_of)
    return Lazy(tuple(shape), dtype,
                lambda w, index: evaluate(cg, shape, ops, inputs, index, [value], known)[0],
                flat, form, known.get(id(value)), factors, step, _cost(cg, ops, inputs))


# an integer compare of exact (i64) forms whose every lane holds: the difference's
# highest (lt, le) or lowest (gt, ge) value against 0
_ALL_HOLD = {"lt": ("hi", "slt"), "le": ("hi", "sle"), "gt": ("lo", "sgt"),
             "ge": ("lo", "sge")}


def _all_on(cg, shape, ops, inputs: dict, value, form_of):
    """``(known, factors)``: ``known`` maps the bool results of ``ops`` to an i1 that is
    true only when every lane of the result is (a sufficient test, written here, before
    the consumers' loops) or None; ``factors`` (``Factor``s, ``Lazy.factors``) are such
    i1s for the ``&`` factors of ``value``, each with the axes it varies along.  From
    signed integer compares of affine forms (``cols < n``: the largest ``cols`` against
    ``n``, two corners, no pass over the lanes), ``&`` and ``|`` of such, splats of a
    bool scalar and broadcasts.  A compare narrower than 64 bits counts only when both
    sides' exact values fit its type (else the tile's wrapped values could differ).  A
    masked load or store writes a loop for when every factor holds, and one for when
    those varying along the last axis do (lower_memory.versioned): there
    ``rows_ok[:, None] & (cols < n)[None, :]`` tests only the rows, once per row.
    ``form_of``: ``_affine_forms``'s."""
    w = cg.w
    known: dict = {}
    leaves: dict = {}       # id(compare result) -> the axes its affine sides vary along
    rank = len(shape)

    def on_of(v):
        if id(v) in known:
            return known[id(v)]
        src = _source(cg, inputs, v)
        if isinstance(src, Scalar):
            return src.ref if src.dtype.is_bool else None
        return src.all_on if isinstance(src, Lazy) else None

    for op in ops:
        r = op.results[0]
        got = None
        if op.kind in (Kind.SPLAT, Kind.BROADCAST):
            got = on_of(op.operands[0])
        elif op.kind in (Kind.AND, Kind.OR) and r.type.dtype.is_bool:
            a, b = on_of(op.operands[0]), on_of(op.operands[1])
            if op.kind is Kind.AND and a is not None and b is not None:
                got = w.op("and i1", a, b)
            elif op.kind is Kind.OR and (a is not None or b is not None):
                got = a if b is None else b if a is None else w.op("or i1", a, b)
        elif op.kind is Kind.CMP and op.attrs["predicate"] in _ALL_HOLD:
            got, leaves[id(r)] = _compare_holds(w, shape, op, form_of)
        known[id(r)] = got
    made = {id(op.results[0]): op for op in ops}

    def factors_of(v) -> tuple:
        op = made.get(id(v))
        if op is None:                  # from outside: a scalar, or its own factors
            src = _source(cg, inputs, v)
            if isinstance(src, Scalar):
                return (Factor(src.ref, (False,) * rank),) if src.dtype.is_bool else ()
            return on_factors(src)
        if op.kind is Kind.AND:
            return factors_of(op.operands[0]) + factors_of(op.operands[1])
        if op.kind is Kind.SPLAT:
            return factors_of(op.operands[0])
        if op.kind is Kind.BROADCAST:
            src = op.operands[0]
            stretched = _source(cg, inputs, src)
            if isinstance(stretched, Lazy):
                return stretched.broadcast_to(shape).factors
            return factors_of(src)
        got = known.get(id(v))
        return () if got is None else (Factor(got, leaves.get(id(v), (True,) * rank)),)
    kept = {}
    for f in factors_of(value):
        if f.on != "true":
            kept[f.on] = f
    return known, tuple(kept.values())


def _compare_holds(w, shape, op, form_of):
    """``_all_on`` of one compare (see there) and the axes the compare varies along, or
    ``(None, None)``."""
    d = op.operands[0].type.dtype
    if not d.is_int or d.is_unsigned or d.is_bool:
        return None, None
    a, b = form_of(op.operands[0]), form_of(op.operands[1])
    diff = affine.combine(w, Kind.SUB, a, b)
    if diff is None:
        return None, None
    side, pred = _ALL_HOLD[op.attrs["predicate"]]
    lo, hi = affine.extremes(w, diff, shape)
    test = w.op(f"icmp {pred} i64", hi if side == "hi" else lo, "0")
    if d.itemsize < 8:
        least, most = str(-(1 << (d.bits - 1))), str((1 << (d.bits - 1)) - 1)
        for f in (a, b):
            f_lo, f_hi = affine.extremes(w, f, shape)
            fits = w.op("and i1", w.op("icmp sge i64", f_lo, least),
                        w.op("icmp sle i64", f_hi, most))
            test = w.op("and i1", test, fits)
    return test, tuple(s != "0" for s in diff[1])


def _row_step(cg, ops, inputs: dict, value, form_of):
    """``Lazy.step`` of ``value`` (integer or bool) computed by ``ops``, or None: a value
    constant along its rows (a splat, a broadcast of a column, any op of such: the
    gathered rows' ``tok[:, None] * stride``) has step "0"; sums and differences add
    their steps, a product with a uniform value (its affine form, ``form_of``, has no
    strides) scales its step (``cols`` has step 1, ``tok[:, None] * stride + cols[None,
    :]`` too).  lower_memory._span takes an access's offset range from one element per
    row with it."""
    w = cg.w
    steps: dict = {}

    def step_of(v):
        if id(v) in steps:
            return steps[id(v)]
        return row_step(_source(cg, inputs, v))

    def scale_of(v):
        form = form_of(v)
        return form[0] if form is not None and affine.uniform(form) else None

    for op in ops:
        r = op.results[0]
        d = r.type.dtype
        if not (d.is_int or d.is_bool) or len(op.results) != 1:
            continue
        ins = [step_of(v) for v in op.operands]
        got = None
        if op.kind is Kind.SPLAT:
            got = "0"
        elif op.kind is Kind.BROADCAST:
            src = op.operands[0]
            got = "0" if tuple(src.type.shape)[-1:] in ((), (1,)) else ins[0]
        elif op.kind in ELEMENTWISE and ins and all(x == "0" for x in ins):
            got = "0"
        elif op.kind is Kind.CAST and d.is_int and op.operands[0].type.dtype.is_int and \
                d.itemsize >= op.operands[0].type.dtype.itemsize:
            got = ins[0]
        elif op.kind in (Kind.ADD, Kind.SUB) and d.is_int and None not in ins:
            a, b = ins
            got = a if b == "0" else (b if op.kind is Kind.ADD and a == "0" else
                                      w.op(f"{'add' if op.kind is Kind.ADD else 'sub'} i64",
                                           a, b))
        elif op.kind is Kind.MUL and d.is_int:
            for mine, other in ((0, 1), (1, 0)):
                k = scale_of(op.operands[other])
                if ins[mine] is not None and k is not None:
                    got = w.op("mul i64", ins[mine], k)
                    break
        steps[id(r)] = got
    return step_of(value)


def _source(cg, inputs: dict, v):
    """What ``v`` is bound to: a fused region's input, else the function's binding."""
    return inputs.get(id(v)) or cg.env.get(id(v))


def _affine_forms(cg, shape, ops, inputs: dict):
    """``form_of(value)``: the affine form (affine.py) of a value ``ops`` compute (or of
    an input) when they build it from scalars, affine lazy values, splats, broadcasts,
    +, - and products with a uniform value; else None."""
    w = cg.w
    rank = len(shape)
    forms: dict = {}

    def form_of(v):
        if id(v) in forms:
            return forms[id(v)]
        src = _source(cg, inputs, v)
        if isinstance(src, Scalar) and src.dtype.is_int:
            return to_i64(w, src.ref, src.dtype), ("0",) * rank
        if isinstance(src, Lazy) and src.affine is not None and len(src.shape) == rank:
            return src.affine
        return None

    for op in ops:
        r = op.results[0]
        if op.kind is Kind.SPLAT:
            f = form_of(op.operands[0])
            forms[id(r)] = None if f is None else (f[0], ("0",) * rank)
        elif op.kind is Kind.BROADCAST:
            src = op.operands[0]
            f = form_of(src)
            forms[id(r)] = affine.broadcast(f, tuple(src.type.shape), tuple(shape))
        elif op.kind is Kind.CAST and r.type.dtype.is_int and \
                op.operands[0].type.dtype.is_int and \
                r.type.dtype.itemsize >= op.operands[0].type.dtype.itemsize:
            forms[id(r)] = form_of(op.operands[0])
        elif op.kind in (Kind.ADD, Kind.SUB, Kind.MUL) and r.type.dtype.is_int:
            forms[id(r)] = affine.combine(w, op.kind, form_of(op.operands[0]),
                                          form_of(op.operands[1]))
        else:
            forms[id(r)] = None
    return form_of


def elementwise_op(cg, op) -> None:
    """One elementwise op outside a fused region."""
    t = op.result.type
    if not t.shape:
        cg.bind(op.result, Scalar(cg.scalar_op(op, [cg.val(v).ref for v in op.operands]),
                                  t.dtype))
        return
    if id(op.result) not in cg.out_hint and _lazy_ok(cg, op, [op], {}):
        cg.bind(op.result, _lazy(cg, t.shape, [op], {}, op.result, t.dtype))
        return
    out = cg.result_tile(op.result)
    elements(cg, t.shape, [op], {}, [(op.result, out)])
    cg.bind(op.result, out)


def fused(cg, op) -> None:
    """A fused region: its ops per element in one nest, each yielded value to a tile --
    or, when they may (``_lazy_ok``), its results lazy, computed where they are read."""
    body = op.body
    *ops, term = body.ops
    inputs = {id(a): cg.lazy(v) for a, v in zip(body.args, op.operands)}
    shape = op.results[0].type.shape
    if not any(id(r) in cg.out_hint for r in op.results) and _lazy_ok(cg, op, ops, inputs):
        for r, v in zip(op.results, term.operands):
            cg.bind(r, _lazy(cg, shape, ops, inputs, v, r.type.dtype))
        return
    # the results that may stay lazy on their own do (a region yielding ``cols`` and a
    # costly ``cols // P * R * P + cols % P``: ``cols`` keeps its affine form, so
    # ``cols < n`` is provably all-on); the rest are stored
    lazy, stored = [], []
    for r, v in zip(op.results, term.operands):
        alone = _needed(ops, [v])
        ok = id(r) not in cg.out_hint and _result_lazy_ok(cg, op, r, alone, inputs)
        (lazy if ok else stored).append((r, v, alone))
    outs = [(v, cg.result_tile(r)) for r, v, _ in stored]
    if outs:
        elements(cg, shape, _needed(ops, [v for _, v, _ in stored]), inputs, outs)
    for (r, _, _), (_, tile) in zip(stored, outs):
        cg.bind(r, tile)
    for r, v, alone in lazy:
        cg.bind(r, _lazy(cg, shape, alone, inputs, v, r.type.dtype))


# --- shape -------------------------------------------------------------------------------

def splat(cg, op) -> None:
    """Lazy: every lane is the scalar (no memory: a masked load's ``other`` or a loop's
    zero accumulator stays a register)."""
    src = cg.val(op.operands[0])
    t = op.result.type
    ref = src.ref
    form = (to_i64(cg.w, ref, src.dtype), ("0",) * len(t.shape)) if t.dtype.is_int else None
    cg.bind(op.result, Lazy(tuple(t.shape), t.dtype, lambda w, index: ref, True, form,
                            ref if t.dtype.is_bool else None))


def _first() -> Index:
    return Index(flat="0")


def broadcast(cg, op) -> None:
    src = cg.lazy(op.operands[0])
    shape = tuple(op.result.type.shape)
    if isinstance(src, Scalar):
        splat(cg, op)
        return
    cg.bind(op.result, src.broadcast_to(shape))


def reshape(cg, op) -> None:
    src = cg.lazy(op.operands[0])
    shape = tuple(op.result.type.shape)
    if isinstance(src, Lazy):
        if src.flat and shape:
            cg.bind(op.result, src.reshaped(shape, cg.w))
            return
        src = cg.val(op.operands[0])
    if isinstance(src, Scalar):
        slot = cg.new_tile((1,), src.dtype)
        store_element(cg.w, slot, _first(), src.ref)
        cg.bind(op.result, slot.reshaped(shape))
        return
    if not src.contiguous:
        src = cg.materialise(src)
    if not shape:
        cg.bind(op.result, Scalar(load_element(cg.w, src, _first()), src.dtype))
        return
    cg.bind(op.result, src.reshaped(shape))


def trans(cg, op) -> None:
    cg.bind(op.result, cg.lazy(op.operands[0]).permuted(tuple(op.attrs["perm"])))


def arange(cg, op) -> None:
    """Lazy: lane ``i`` is ``start + i``, written where it is read."""
    t = op.result.type
    start = str(int(op.attrs["start"]))

    def gen(w, index):
        i = index.flat if index.flat is not None else index.axes[-1]
        return w.assign(f"trunc i64 {w.op('add i64', i, start)} to i32")
    cg.bind(op.result, Lazy(tuple(t.shape), t.dtype, gen, True, (start, ("1",))))


# --- reductions --------------------------------------------------------------------------

def reduce(cg, op) -> None:
    """``npu.reduce`` {kind, axis}: loops over the kept axes, an inner loop over ``axis``."""
    w = cg.w
    src = cg.lazy(op.operands[0])      # read per axis: a lazy value is fine
    kind, axis = op.attrs["kind"], op.attrs["axis"]
    rt = op.result.type
    n = src.shape[axis]
    kept = [d for d in range(len(src.shape)) if d != axis]
    out = cg.new_tile(rt.shape, rt.dtype) if rt.shape else None
    loops = [w.loop(f"i64 {src.shape[d]}", f"r{d}") for d in kept]
    idx = {}
    for d, cm in zip(kept, loops):
        idx[d] = cm.__enter__()
    result = _fold(cg, src, kind, axis, n, idx, rt.dtype)
    if out is None:
        cg.bind(op.result, Scalar(result, rt.dtype))
        return
    store_element(w, out, Index(axes=[idx[d] for d in kept]), result)
    for cm in reversed(loops):
        cm.__exit__(None, None, None)
    cg.bind(op.result, out)


def _element_along(cg, src, idx: dict, axis: int, j: str) -> str:
    axes = [idx[d] if d != axis else j for d in range(len(src.shape))]
    return element(cg.w, src, Index(axes=axes))


def _fold(cg, src: Tile, kind: str, axis: int, n: int, idx: dict, out_dtype) -> str:
    """The reduction of one lane of ``src`` along ``axis`` (an SSA value)."""
    w = cg.w
    d = src.dtype
    if kind in ("sum", "prod"):
        acc_dt = d if d.itemsize == 8 and d.is_float else (float32 if d.is_float else
                                                           reduce_result_dtype(kind, d))
        t = compute_type(acc_dt)
        acc = w.alloca(t, "acc")
        w.store(t, literal(0 if kind == "sum" else 1, acc_dt), acc)
        with w.loop(f"i64 {n}", "k") as j:
            x = elementwise.cast(w, _element_along(cg, src, idx, axis, j), d, acc_dt)
            a = w.load(t, acc)
            # summation order is unspecified (docs/semantics.md): ``reassoc`` lets LLVM
            # keep several partial sums in a vector
            op = ("fadd reassoc" if kind == "sum" else "fmul reassoc") if acc_dt.is_float \
                else ("add" if kind == "sum" else "mul")
            w.store(t, w.op(f"{op} {t}", a, x), acc)
        return elementwise.cast(w, w.load(t, acc), acc_dt, out_dtype)
    t = compute_type(d)
    first = _element_along(cg, src, idx, axis, "0")
    best = w.alloca(t, "best")
    w.store(t, first, best)
    if kind in ("max", "min") and d.is_float:
        return _float_extreme(cg, src, kind == "max", axis, n, idx)
    if kind in ("max", "min"):
        kid = Kind.MAXIMUM if kind == "max" else Kind.MINIMUM
        with w.loop(f"i64 {n}", "k") as j:
            x = _element_along(cg, src, idx, axis, j)
            b = w.load(t, best)
            w.store(t, elementwise.apply_kind(w, kid, {}, [b, x], [d, d], d), best)
        return w.load(t, best)
    # argmax / argmin: the first extreme; a NaN lane gives its first NaN
    at = w.alloca("i32", "at")
    w.store("i32", "0", at)
    nan = w.alloca("i1", "nan")
    w.store("i1", w.op(f"fcmp uno {t}", first, first) if d.is_float else "false", nan)
    with w.loop(f"i64 {n}", "k") as j:
        x = _element_along(cg, src, idx, axis, j)
        b = w.load(t, best)
        seen = w.load("i1", nan)
        pred = "gt" if kind == "argmax" else "lt"
        better = elementwise.apply_kind(w, Kind.CMP, {"predicate": pred}, [x, b], [d, d], None)
        if d.is_float:
            is_nan = w.op(f"fcmp uno {t}", x, x)
            better = w.op("or i1", better, is_nan)
            w.store("i1", w.op("or i1", seen, is_nan), nan)
        take = w.op("and i1", better, w.op("xor i1", seen, "true"))
        w.store(t, w.op("select i1", take, f"{t} {x}", f"{t} {b}"), best)
        j32 = w.assign(f"trunc i64 {j} to i32")
        w.store("i32", w.op("select i1", take, f"i32 {j32}", f"i32 {w.load('i32', at)}"), at)
    return w.load("i32", at)


def _float_extreme(cg, src, is_max: bool, axis: int, n: int, idx: dict) -> str:
    """The max (min) of a float lane, NaN skipped, NaN only when every element is: an
    integer reduction over keys, the float's bits turned into an int that orders as the
    float does (``bits ^ ((bits >> 31) & 0x7FF..F)``, its own inverse; -0.0 orders below
    +0.0), a NaN's key the start value.  Integer max/min loops vectorise where the float
    NaN-skipping fold does not (the numba backend's reduce_lib.py keys, the same
    answers)."""
    w = cg.w
    d = src.dtype
    ft = compute_type(d)
    bits = 64 if d.itemsize == 8 else 32
    it = f"i{bits}"
    none = str(-(1 << (bits - 1))) if is_max else str((1 << (bits - 1)) - 1)
    low_mask = str((1 << (bits - 1)) - 1)
    acc = w.alloca(it, "key")
    w.store(it, none, acc)
    with w.loop(f"i64 {n}", "k") as j:
        x = _element_along(cg, src, idx, axis, j)
        b = w.assign(f"bitcast {ft} {x} to {it}")
        key = w.op(f"xor {it}", b, w.op(f"and {it}", w.op(f"ashr {it}", b, str(bits - 1)),
                                        low_mask))
        key = w.op("select i1", w.op(f"fcmp uno {ft}", x, x), f"{it} {none}", f"{it} {key}")
        cur = w.load(it, acc)
        better = w.op(f"icmp {'sgt' if is_max else 'slt'} {it}", key, cur)
        w.store(it, w.op("select i1", better, f"{it} {key}", f"{it} {cur}"), acc)
    k = w.load(it, acc)
    b = w.op(f"xor {it}", k, w.op(f"and {it}", w.op(f"ashr {it}", k, str(bits - 1)), low_mask))
    value = w.assign(f"bitcast {it} {b} to {ft}")
    nan = literal(float("nan"), d if d.itemsize == 8 else float32)
    return w.op("select i1", w.op(f"icmp eq {it}", k, none), f"{ft} {nan}", f"{ft} {value}")


LOWERINGS = {
    Kind.FUSED: fused,
    Kind.SPLAT: splat,
    Kind.BROADCAST: broadcast,
    Kind.RESHAPE: reshape,
    Kind.TRANS: trans,
    Kind.ARANGE: arange,
    Kind.REDUCE: reduce,
}
for _kind in ELEMENTWISE:
    LOWERINGS.setdefault(_kind, elementwise_op)
