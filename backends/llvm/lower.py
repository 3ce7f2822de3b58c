"""The walker: an IR function in, the LLVM IR text of one function out.

The function runs programs ``first .. last - 1`` of the grid (linear ids, axis 0
fastest); its one argument points at the launch context, ten 64-bit words
(``CONTEXT``)::

    define i32 @npujit_kernel(ptr %ctx)   ; nprog0, nprog1, nprog2, first, last,
                                          ; ptrs, scalars, scratch, err, printer

``ptrs[i]`` is pointer argument ``i``'s numpy array object (the function reads its data
pointer and length from it: a launch hands over ``id(array)``, nothing else per array),
``scalars[i]`` the 64 bits of scalar argument ``i`` (ints sign- or zero-extended, floats
as a double), ``scratch`` the launch's tile memory (``LlvmSource.scratch_bytes``), and
``err`` eight i64 the function fills before it returns non-zero: the failing check's
site number, the program id and the site's numbers (``LlvmSource.sites`` says how the
launcher turns them into the error); ``printer`` is the launcher's callback for
``device_print`` (lower_print.py).  Tiles live in ``scratch`` at offsets fixed here,
one slot per op result, rewritten each program (and each loop iteration).

Per-op lowering: ``lower_tile.py`` (elementwise, fused regions, shapes, reductions),
``lower_memory.py`` (GM), this file (structure and control flow).  An op kind without
a lowering is refused when the kernel is compiled (``Unsupported``), naming the op and
its source line.

Example::

    >>> src = generate(fn, {})                                # doctest: +SKIP
    >>> print(src.text)                                       # doctest: +SKIP
"""
from __future__ import annotations

from npujit.errors import OOB_FIX, OOB_RANGE_HINT, CompilationError
from npujit.ir import Kind
from npujit.ir.ops import ELEMENTWISE
from npujit.ir.core import Function, Value
from npujit.ir.passes.index_checks import overflow_template, scalar_address_ops
from npujit.ir.types import PtrType, row_major

from .abi import ARRAY_DATA, ARRAY_DIMS, ENTRY, LlvmSource
from . import (deferred, elementwise, lower_atomic, lower_cube, lower_memory, lower_print,
               lower_select, lower_tile)
from .ir_text import Writer, compute_type, literal, tile_bytes
from .values import (Arg, Index, Lazy, Scalar, Tile, element, load_element, nest, numel,
                     store_element)

LOWER = {**lower_tile.LOWERINGS, **lower_memory.LOWERINGS, **lower_select.LOWERINGS,
         **lower_cube.LOWERINGS, **lower_atomic.LOWERINGS, **lower_print.LOWERINGS}
ALIGN = 64
_OVERFLOW = {Kind.ADD: "sadd", Kind.SUB: "ssub", Kind.MUL: "smul"}
_WRITES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)


def _argument(op) -> str:
    """The kernel argument an access goes through (its IR name), %-escaped for a site."""
    name = getattr(op.operands[0], "name", None)
    return (f"argument '{name}'" if name else "the pointer argument").replace("%", "%%")


class Unsupported(CompilationError):
    """The ``llvm`` backend cannot lower an op of the kernel (yet)."""


class Lowering:
    """State while one function is lowered: the writer, value bindings, scratch slots
    and the error sites."""

    def __init__(self, fn: Function, options: dict):
        self.fn = fn
        self.options = options
        self.w = Writer()
        self.env: dict = {}
        # id(access op) -> the span an earlier access with its lanes found for it
        # (lower_memory._span); dropped when the op's block is lowered again
        self.spans: dict = {}
        self.scratch = 0
        self.sites: list = []
        self.prints: list = []        # device_print's sites (lower_print.py)
        self.checking = bool(options.get("bounds_check", True) or options.get("debug"))
        self.wraps = ({id(op) for op in scalar_address_ops(fn)} if self.checking
                      and not options.get("debug") else set())
        self.pids = ("%pid0", "%pid1", "%pid2")
        self.out_hint: dict = {}    # id(value) -> the loop holder it is computed into
        self.gm_reads: dict = {}    # id(value) -> value: lazy values that read GM (deferred.py)
        self.assumed_apart: set = set()   # (stored, loaded) argument numbers (deferred.py)

    # --- values ---------------------------------------------------------------------------
    def val(self, v: Value):
        """The value bound to ``v``: a ``Scalar``, ``Arg`` or ``Tile`` (a lazy value is
        stored into a tile of its own here, where it is read)."""
        got = self.lazy(v)
        return self.materialise(got) if isinstance(got, Lazy) else got

    def lazy(self, v: Value):
        """The value bound to ``v``, possibly ``Lazy`` (for readers that take one:
        lower_tile.LAZY_READERS)."""
        try:
            return self.env[id(v)]
        except KeyError:
            raise RuntimeError(f"llvm backend: {v} used before it is defined") from None

    def bind(self, v: Value, val) -> None:
        if isinstance(val, (Tile, Lazy)) and not val.shape:    # rank 0 is a scalar
            val = Scalar(element(self.w, val, Index(flat="0")), val.dtype)
        self.env[id(v)] = val
        deferred.note(self, v, val)

    def new_tile(self, shape, dtype) -> Tile:
        """A scratch slot for a tile of ``shape`` (row-major)."""
        off = -(-self.scratch // ALIGN) * ALIGN
        size = max(1, numel(shape)) * tile_bytes(dtype)
        self.scratch = off + size
        ptr = self.w.fresh("t")
        self.w.entry(f"{ptr} = getelementptr inbounds i8, ptr %scratch, i64 {off}")
        return Tile(ptr, tuple(shape), row_major(shape), dtype)

    def result_tile(self, v: Value) -> Tile:
        """The tile an op computes ``v`` into: its loop's holder when ``_in_place`` chose
        one, else a new slot."""
        hint = self.out_hint.get(id(v))
        return hint if hint is not None else self.new_tile(v.type.shape, v.type.dtype)

    def materialise(self, tile) -> Tile:
        """A contiguous copy of the view (or lazy value) ``tile``."""
        out = self.new_tile(tile.shape, tile.dtype)
        self.copy(tile, out)
        return out

    def copy(self, src, dst: Tile) -> None:
        with nest(self.w, dst.shape, [src, dst]) as index:
            store_element(self.w, dst, index, element(self.w, src, index))

    # --- errors ---------------------------------------------------------------------------
    def site(self, cls: str, template: str) -> int:
        self.sites.append((cls, template))
        return len(self.sites) - 1

    def oob_site(self, op, what: str) -> int:
        """The range check's error: ``what [lo, hi], outside [0, length)`` (three values)."""
        return self.op_site(op, f"{what} [%d, %d], outside [0, %d) of {_argument(op)}"
                                f"{OOB_RANGE_HINT}")

    def lane_site(self, op) -> int:
        """Debug mode's error for one offending offset: ``offset o, outside [0, length)``
        (two values), the numba backend's and the reference interpreter's wording."""
        return self.op_site(op, f"offset %d, outside [0, %d) of {_argument(op)}; {OOB_FIX}")

    def op_site(self, op, body: str) -> int:
        """An ``OutOfBoundsError`` site of ``op``: the kernel, the op and its source line,
        the program id (three values), then ``body`` (a %-template)."""
        where = str(op.loc).replace("%", "%%")
        return self.site("OutOfBoundsError", f"kernel '{self.fn.name}', {op.kind.value} at "
                                             f"{where}, program (%d, %d, %d): {body}")

    def fail_if(self, cond: str, site: int, values: list) -> None:
        """Return error ``site`` with ``values`` (i64 operands) when ``cond`` holds."""
        w = self.w
        bad, ok = w.label("fail"), w.label("ok")
        w.line(f"br i1 {cond}, label %{bad}, label %{ok}")
        w.start(bad)
        for i, v in enumerate([str(site), *self.pids, *values]):
            w.store("i64", v, w.gep("i64", "%err", str(i)))
        w.line("ret i32 1")
        w.start(ok)

    # --- ops ------------------------------------------------------------------------------
    def scalar_op(self, op, xs: list) -> str:
        """Elementwise ``op`` on element values ``xs``; a checked int32 address op
        raises ``IndexOverflowError`` when it wraps."""
        if id(op) in self.wraps and not op.result.type.shape:
            return self._wrapping(op, xs)
        return elementwise.apply(self.w, op, xs, [v.type.dtype for v in op.operands])

    def _wrapping(self, op, xs: list) -> str:
        w = self.w
        pair = w.assign(f"call {{i32, i1}} @llvm.{_OVERFLOW[op.kind]}.with.overflow.i32("
                        f"i32 {xs[0]}, i32 {xs[1]})")
        r = w.assign(f"extractvalue {{i32, i1}} {pair}, 0")
        wrapped = w.assign(f"extractvalue {{i32, i1}} {pair}, 1")
        a, b = (w.assign(f"sext i32 {x} to i64") for x in xs)
        exact = w.op({Kind.ADD: "add", Kind.SUB: "sub", Kind.MUL: "mul"}[op.kind] + " i64",
                     a, b)
        where = str(op.loc).replace("%", "%%")
        site = self.site("IndexOverflowError",
                         f"kernel '{self.fn.name}', index arithmetic at {where}, program "
                         f"(%d, %d, %d): " + overflow_template(op))
        self.fail_if(wrapped, site, [a, b, exact, w.assign(f"sext i32 {r} to i64")])
        return r

    def lower(self, op) -> None:
        if self.gm_reads and deferred.writes_gm(op):
            deferred.settle(self, op)
        f = LOWER.get(op.kind) or _STRUCTURE.get(op.kind)
        if f is None:
            raise Unsupported(f"the llvm backend does not lower {op.kind.value} yet; "
                              "compile this kernel with backend='numba'", op.loc,
                              self.fn.name)
        f(self, op)

    def run_block(self, block, args: list) -> list:
        """Lower ``block`` with its arguments bound to ``args``; the terminator's values."""
        for a, v in zip(block.args, args):
            self.bind(a, v)
        for op in block.ops:
            self.spans.pop(id(op), None)
        for op in block.ops:
            if op.kind in (Kind.YIELD, Kind.RETURN):
                return [self.val(v) for v in op.operands]
            self.lower(op)
        return []

    # --- carried values (loops, if) -------------------------------------------------------
    def holder(self, v: Value):
        """Where a value carried across blocks lives: an alloca or a tile."""
        t = v.type
        if t.shape:
            return self.new_tile(t.shape, t.dtype)
        return self.w.alloca(compute_type(t.dtype), "carry")

    def put(self, holders: list, vals: list) -> None:
        """Store ``vals`` into ``holders``; a tile read by another holder's copy is first
        copied aside, so the copies do not overwrite what later ones read."""
        ptrs = {h.ptr for h in holders if isinstance(h, Tile)}
        staged = []
        for h, v in zip(holders, vals):     # a lazy value may read a holder: store it first
            if isinstance(v, Lazy) or (isinstance(h, Tile) and isinstance(v, Tile)
                                       and v.ptr in ptrs and v.ptr != h.ptr):
                v = self.materialise(v)
            staged.append(v)
        for h, v in zip(holders, staged):
            if isinstance(h, Tile):
                if v.ptr != h.ptr or v.strides != h.strides:
                    self.copy(v.broadcast_to(h.shape) if v.shape != h.shape else v, h)
            else:
                self.w.store(compute_type(v.dtype), v.ref, h)

    def take(self, holders: list, values: list) -> list:
        """The values in ``holders`` (typed as ``values``)."""
        out = []
        for h, v in zip(holders, values):
            if isinstance(h, Tile):
                out.append(h)
            else:
                out.append(Scalar(self.w.load(compute_type(v.type.dtype), h), v.type.dtype))
        return out


# --- structure and control flow ---------------------------------------------------------

def _constant(cg, op) -> None:
    cg.bind(op.result, Scalar(literal(op.attrs["value"], op.attrs["dtype"]), op.attrs["dtype"]))


def _program_id(cg, op) -> None:
    cg.bind(op.result, Scalar(f"%pid{op.attrs['axis']}.32", op.result.type.dtype))


def _num_programs(cg, op) -> None:
    cg.bind(op.result, Scalar(f"%nprog{op.attrs['axis']}.32", op.result.type.dtype))


def _for(cg, op) -> None:
    """``scf.for``: iv from lb by step while below ub (above it for a negative step)."""
    w = cg.w
    lb, ub, step, *inits = op.operands
    l64, u64, s64 = (_i64(cg, v) for v in (lb, ub, step))
    where = str(op.loc).replace("%", "%%")
    zero = w.op("icmp eq i64", s64, "0")
    cg.fail_if(zero, cg.site("ValueError", f"kernel '{cg.fn.name}', scf.for at {where}, "
                                           "program (%d, %d, %d): the loop step is 0 (from "
                                           "%d to %d); it would never end"), [l64, u64])
    holders = [cg.holder(r) for r in op.results]
    cg.put(holders, [cg.val(v) for v in inits])
    _in_place(cg, op, holders)
    iv = w.alloca("i64", "iv")
    w.store("i64", l64, iv)
    head, body, done = w.label("for"), w.label("forbody"), w.label("endfor")
    w.block(head)
    i = w.load("i64", iv)
    up = w.op("icmp sgt i64", s64, "0")
    more = w.op("select i1", up, f"i1 {w.op('icmp slt i64', i, u64)}",
                f"i1 {w.op('icmp sgt i64', i, u64)}")
    w.line(f"br i1 {more}, label %{body}, label %{done}")
    w.start(body)
    dt = lb.type.dtype
    ivv = i if compute_type(dt) == "i64" else w.assign(f"trunc i64 {i} to {compute_type(dt)}")
    carried = cg.take(holders, op.results)
    yields = cg.run_block(op.body, [Scalar(ivv, dt), *carried])
    cg.put(holders, yields)
    w.store("i64", w.op("add i64", i, s64), iv)
    w.line(f"br label %{head}")
    w.start(done)
    for r, v in zip(op.results, cg.take(holders, op.results)):
        cg.bind(r, v)


def _in_place(cg, op, holders: list) -> None:
    """Accumulators (``acc += x`` in a loop) computed straight into their holder: when
    the yielded value is an elementwise result read only by the yield, and the carried
    value is read only by the op that computes it (element by element, at the index it
    writes), nothing else can see the holder change, and the copy at the yield goes."""
    body = op.body
    term = body.ops[-1]
    for h, arg, y in zip(holders, body.args[1:], term.operands):
        p = y.op
        if not isinstance(h, Tile) or p is None or p.parent is not body \
                or (p.kind not in ELEMENTWISE and p.kind is not Kind.FUSED) \
                or len(y.uses) != 1 or tuple(y.type.shape) != h.shape:
            continue
        if all(u is p for u, _ in arg.uses):
            cg.out_hint[id(y)] = h


def _i64(cg, v) -> str:
    from .values import to_i64
    return to_i64(cg.w, cg.val(v).ref, v.type.dtype)


def _if(cg, op) -> None:
    w = cg.w
    holders = [cg.holder(r) for r in op.results]
    then, other, done = w.label("then"), w.label("else"), w.label("endif")
    w.line(f"br i1 {cg.val(op.operands[0]).ref}, label %{then}, label %{other}")
    for label, region in ((then, op.regions[0]), (other, op.regions[1])):
        w.start(label)
        cg.put(holders, cg.run_block(region, []))
        w.line(f"br label %{done}")
    w.start(done)
    for r, v in zip(op.results, cg.take(holders, op.results)):
        cg.bind(r, v)


def _while(cg, op) -> None:
    w = cg.w
    cond, *inits = op.operands
    holders = [cg.holder(r) for r in op.results]
    flag = w.alloca("i1", "cond")
    w.store("i1", cg.val(cond).ref, flag)
    cg.put(holders, [cg.val(v) for v in inits])
    head, body, done = w.label("while"), w.label("whilebody"), w.label("endwhile")
    w.block(head)
    w.line(f"br i1 {w.load('i1', flag)}, label %{body}, label %{done}")
    w.start(body)
    c, *rest = cg.run_block(op.body, cg.take(holders, op.results))
    w.store("i1", c.ref, flag)
    cg.put(holders, rest)
    w.line(f"br label %{head}")
    w.start(done)
    for r, v in zip(op.results, cg.take(holders, op.results)):
        cg.bind(r, v)


def _assert(cg, op) -> None:
    """``npu.assert``: the first false lane (row-major) raises, naming it."""
    w = cg.w
    cond = cg.val(op.operands[0])
    overflow = op.attrs.get("error") == "overflow"
    cls, what = (("IndexOverflowError", "index arithmetic") if overflow
                 else ("DeviceAssertionError", "device_assert"))
    where = str(op.loc).replace("%", "%%")
    msg = str(op.attrs.get("message", "")).replace("%", "%%")
    shape = tuple(op.operands[0].type.shape)
    site = cg.site(cls, f"kernel '{cg.fn.name}', {what} at {where}, program (%d, %d, %d): "
                        f"lane %s: {msg}" + ("\0" + ",".join(map(str, shape))))
    if isinstance(cond, Scalar):
        cg.fail_if(w.op("xor i1", cond.ref, "true"), site, ["0"])
        return
    if not cond.contiguous:
        cond = cg.materialise(cond)
    with nest(w, cond.shape, [cond]) as index:     # one flat loop: the lane is its index
        bad = w.op("xor i1", load_element(w, cond, index), "true")
        cg.fail_if(bad, site, [index.flat])


def _handoff(cg, op) -> None:
    cg.bind(op.result, cg.val(op.operands[0]))


_STRUCTURE = {
    Kind.CONSTANT: _constant,
    Kind.PROGRAM_ID: _program_id,
    Kind.NUM_PROGRAMS: _num_programs,
    Kind.FOR: _for,
    Kind.IF: _if,
    Kind.WHILE: _while,
    Kind.ASSERT: _assert,
    Kind.HANDOFF: _handoff,
}


# --- the function -----------------------------------------------------------------------

def generate(fn: Function, options: dict) -> LlvmSource:
    """The LLVM module of ``fn`` (see the module doc)."""
    from npujit.ir.slice import narrow_offsets, narrow_offsets_message
    cg = Lowering(fn, options)
    w = cg.w
    for i, a in enumerate(fn.args):
        t = a.type
        if isinstance(t, PtrType):
            # ptrs[i] is the numpy array object: its data pointer and its dimensions
            # pointer sit at fixed offsets of numpy's array struct (runtime.py checks them)
            obj, data, n = w.fresh("obj"), w.fresh("arg"), w.fresh("len")
            w.entry(f"{obj}.p = getelementptr inbounds ptr, ptr %ptrs, i64 {i}")
            w.entry(f"{obj} = load ptr, ptr {obj}.p")
            w.entry(f"{data}.p = getelementptr inbounds i8, ptr {obj}, i64 {ARRAY_DATA}")
            w.entry(f"{data} = load ptr, ptr {data}.p")
            w.entry(f"{n}.p = getelementptr inbounds i8, ptr {obj}, i64 {ARRAY_DIMS}")
            w.entry(f"{n}.d = load ptr, ptr {n}.p")
            w.entry(f"{n} = load i64, ptr {n}.d")
            cg.bind(a, Arg(data, n, t.dtype, a.name or f"arg{i}"))
        else:
            cg.bind(a, Scalar(_scalar_arg(w, i, t.dtype, fn.name, a.name), t.dtype))
    for axis in range(3):
        w.entry(f"%nprog{axis}.32 = trunc i64 %nprog{axis} to i32")
    count = w.op("sub i64", "%last", "%first")
    with w.loop(f"i64 {count}", "prog") as i:
        p = w.op("add i64", "%first", i)
        w.line(f"%pid0 = urem i64 {p}, %nprog0")
        q = w.op("udiv i64", p, "%nprog0")
        w.line(f"%pid1 = urem i64 {q}, %nprog1")
        w.line(f"%pid2 = udiv i64 {q}, %nprog1")
        for axis in range(3):
            w.line(f"%pid{axis}.32 = trunc i64 %pid{axis} to i32")
        cg.run_block(fn.body, [cg.val(a) for a in fn.args])
    w.line("ret i32 0")
    apart = deferred.entry_check(cg)
    enter = ["  br label %start"] if apart is None else [
        f"  br i1 {apart}, label %start, label %aliased", "aliased:",
        f"  store i64 {cg.site('Aliased', '')}, ptr %err", "  ret i32 1"]
    text = "\n".join([
        f"define i32 @{ENTRY}(ptr noalias %ctx) {{", "entry:", *_CONTEXT, w.entry_text(), *enter,
        "start:", w.body_text(), "}", "",
        elementwise.DECLARATIONS,
        *[f"declare {{i32, i1}} @llvm.{k}.with.overflow.i32(i32, i32)"
          for k in ("sadd", "ssub", "smul")], ""])
    narrow = {}
    for i, loc in narrow_offsets(fn).items():
        narrow[i] = narrow_offsets_message(fn.name, fn.args[i].name, loc, "\0")
    written = sorted({i for op in fn.walk() if op.kind in _WRITES
                      for i, a in enumerate(fn.args) if op.operands[0] is a})
    return LlvmSource(text, fn.name, tuple(a.type for a in fn.args),
                      tuple(a.name for a in fn.args), cg.scratch,
                      any(op.kind is Kind.ATOMIC_RMW for op in fn.walk()), cg.sites, narrow,
                      tuple(written), cg.prints)


# The launch context: one i64 array, so a launch passes one pointer (a ctypes call costs
# about 0.15 us per argument; runtime._Buffers fills it).
CONTEXT = (("i64", "nprog0"), ("i64", "nprog1"), ("i64", "nprog2"), ("i64", "first"),
           ("i64", "last"), ("ptr", "ptrs"), ("ptr", "scalars"), ("ptr", "scratch"),
           ("ptr", "err"), ("ptr", "printer"))
_CONTEXT = [line for k, (ty, name) in enumerate(CONTEXT) for line in (
    f"  %{name}.p = getelementptr inbounds i64, ptr %ctx, i64 {k}",
    f"  %{name} = load {ty}, ptr %{name}.p")]


def _scalar_arg(w: Writer, i: int, dt, kernel: str, name: str) -> str:
    """Scalar argument ``i`` from its 64 bits (see the module doc)."""
    raw = w.fresh("s")
    w.entry(f"{raw}.p = getelementptr inbounds i64, ptr %scalars, i64 {i}")
    w.entry(f"{raw} = load i64, ptr {raw}.p")
    if dt.is_float:
        d = w.fresh("s")
        w.entry(f"{d} = bitcast i64 {raw} to double")
        if dt.itemsize == 8:
            return d
        f = w.fresh("s")
        w.entry(f"{f} = fptrunc double {d} to float")
        return f
    t = compute_type(dt)
    if t == "i64":
        return raw
    r = w.fresh("s")
    w.entry(f"{r} = trunc i64 {raw} to {t}")
    return r

