"""Global-memory ops: load, store, atomic_add, block_load, block_store.

Every lane branches on its own mask bit, so a masked-off lane never forms an address
(docs/semantics.md: it must not touch memory, whatever its offset).  Offsets index the
1-D argument array through ``np.uint64``: a negative offset becomes huge instead of
silently wrapping to the array's end.  Half floats are stored as uint16 bits and
converted with ``halfprec``.

Three checking modes (``checking(cg)``), all respecting masks as the reference does:

* ``debug`` (``NPUJIT_DEBUG=1``): every access of an active lane is checked and raises
  ``OutOfBoundsError`` with the reference interpreter's message (kernel, op, source
  line, program id, offset, argument);
* ``range`` (the default): before an access, the range of the active lanes' offsets is
  checked against the argument's extent (``range_check.py``): O(1) for affine offsets
  whose whole tile lies inside, a scan of offsets and mask otherwise; the error names
  the kernel, line, argument and the offending range, and points at the debug mode;
* off (``bounds_check=False`` / ``NPUJIT_BOUNDS_CHECK=0``): no check, for benchmarks.

Offsets that are affine in the lanes (``pid * B + arange``, row offsets + columns ...)
become ``base + i`` so LLVM sees contiguous accesses; the mask is still evaluated per
lane, exactly.  Block pointers take a check-free contiguous path for rows that have
unit stride and lie in bounds.

Example (``x = load(x_ptr + offs, mask=offs < n)`` on 128 f16 lanes, with
``offs = pid * 128 + arange(0, 128)`` inlined where it is read, range check elided)::

    sbase = i64(mul)
    base = u64(sbase)
    for i in range(u64(128)):
        if (i32(mul + i32(i64(i))) < n):
            load[i] = hp.f16_bits_to_f32(x_ptr[base + i])
        else:
            load[i] = f32(0.0)
"""
from __future__ import annotations

from npujit.errors import OOB_FIX
from npujit.ir.ops import CONTROL, Kind
from npujit.ir.passes.fold import constant_value

from . import deferred_load
from . import lower_scalar as ls
from . import range_check, row_gather
from .affine import affine
from .range_check import argument, checking, site
from .values import Nest, Val, linear, row_major


def _address(cg, op, ptr: str, index: str, guard: str | None = None) -> str:
    """``ptr[index]`` (``index`` unsigned), preceded in debug mode by a bounds check, and
    in the default mode by the range check's per-lane test when the access's ``guard``
    (``range_check.tile``) says its lanes may leave the argument."""
    if guard is not None:
        range_check.lane(cg, op, ptr, index, guard)
    if checking(cg) == "debug":
        with cg.w.block(f"if {index} >= u64({ptr}.shape[0]):"):
            cg.w.line(f"raise OutOfBoundsError({site(cg, op)} + "
                      f'"offset " + str(i64({index})) + ", outside [0, " + '
                      f'str({ptr}.shape[0]) + ") of {argument(op)}; {OOB_FIX}")')
    return f"{ptr}[{index}]"


class _Index:
    """How a memory op turns its offsets into array indices.  Offsets that are affine
    with non-negative constant strides become ``base + i``: LLVM then sees contiguous
    (or constant-stride) accesses and vectorises them; others are read per lane.  Debug
    mode always uses the exact offsets."""

    def __init__(self, cg, offs: Val, shape):
        self.offs = offs
        self.shape = tuple(shape)
        self.base = self.signed_base = None
        self.leaves = [offs]
        if shape == () or checking(cg) == "debug":
            return
        aff = affine(offs.broadcast_to(shape))
        if aff is not None and any(aff[1]) and min(aff[1]) >= 0:
            self.signed_base = cg.w.fresh("sbase")
            self.base = cg.w.fresh("base")
            base = aff[0] if ls.is_call(aff[0], "i64") else f"i64({aff[0]})"
            cg.w.line(f"{self.signed_base} = {base}")
            cg.w.line(f"{self.base} = u64({self.signed_base})")  # -1 wraps, in numpy too
            self.idx = Val("index", "", tuple(shape), offs.dtype, tuple(aff[1]))
            self.leaves = [self.idx]

    @property
    def span(self) -> int:
        """Affine offsets: the last lane's offset minus the first's (strides >= 0)."""
        return sum(c * (n - 1) for c, n in zip(self.idx.strides, self.shape))

    def at(self, nest) -> str:
        if self.base is not None:
            return f"{self.base} + {nest.at(self.idx)}"
        return f"u64({nest.at(self.offs)})"

    def signed_at(self, nest) -> str:
        """The lane's offset as an int64 (negative offsets stay negative)."""
        if self.base is not None:
            return f"{self.signed_base} + i64({nest.at(self.idx)})"
        return f"i64({nest.at(self.offs)})"


def _operand(cg, op, name: str) -> Val | None:
    """The Val of ``op``'s operand ``name`` (its kind's record in ir/ops.py), or None for
    an optional operand the op does not have."""
    v = op.operand(name)
    return None if v is None else cg.val(v)


def lower_load(cg, op) -> None:
    d = op.operand("ptr").type.dtype
    ptr = _operand(cg, op, "ptr").name
    offs, mask, other = (_operand(cg, op, n) for n in ("offsets", "mask", "other"))
    shape = tuple(op.result.type.shape)
    w = cg.w
    if shape == ():
        name = w.fresh("load")
        range_check.scalar(cg, op, ptr, offs, mask)

        def read():     # the debug check goes where the read is: under the mask
            return ls.decode(d, _address(cg, op, ptr, f"u64({offs.name})"))
        if mask is None:
            w.line(f"{name} = {read()}")
        else:
            with w.block(f"if {mask.name}:"):
                w.line(f"{name} = {read()}")
            with w.block("else:"):
                w.line(f"{name} = {other.name if other is not None else ls.zero(d)}")
        cg.bind(op.result, Val.scalar(name, d))
        return
    index = _Index(cg, offs, shape)
    rows = _gathered_rows(cg, index, offs, shape)
    if rows is not None:
        out = cg.new_array(cg.hint(op.result), shape, d)
        row_gather.load(cg, op, ptr, rows, mask, other, out)
        cg.bind(op.result, out)
        return
    guard = range_check.tile(cg, op, ptr, index, mask)
    if deferred_load.deferrable(cg, op, index, shape):
        deferred_load.bind(cg, op, ptr, index, mask, other, guard)
        return
    out = cg.new_array(cg.hint(op.result), shape, d)
    walked = index.leaves + [v for v in (mask, other) if v is not None]

    def access(guard):
        with Nest(w, shape, walked) as nest:
            dst = f"{out.name}[{nest.out}]"

            def read():     # the lane test goes where the read is: under the mask
                return ls.decode(d, _address(cg, op, ptr, index.at(nest), guard))
            if mask is None:
                w.line(f"{dst} = {read()}")
            else:
                with w.block(f"if {nest.at(mask)}:"):
                    w.line(f"{dst} = {read()}")
                with w.block("else:"):
                    w.line(f"{dst} = {nest.at(other) if other is not None else ls.zero(d)}")
    _versioned(w, guard, access)
    cg.bind(op.result, out)


def _gathered_rows(cg, index, offs, shape):
    """Offsets that are not affine but are row starts plus affine columns
    (``row_gather.py``), outside debug mode (which checks each lane's exact offset)."""
    if index.base is not None or checking(cg) == "debug":
        return None
    return row_gather.split(offs, shape)


def _versioned(w, guard: str | None, access) -> None:
    """Emit ``access(guard)``; when the range check's ``guard`` is a span test (a masked
    affine access), as two loops: the unchecked one where the span lies inside the
    argument (the common case: one test per access, and LLVM vectorises a loop with no
    raise in it) and the lane-checked one otherwise.  bench_bounds_check.py: a checked
    loop alone cost 2.8-4.8x the unchecked one on add, layernorm and rmsnorm."""
    if guard is None or guard == "False":
        access(guard)
        return
    with w.block(f"if {guard}:"):
        access(None)
    with w.block("else:"):
        access("False")         # the span leaves the argument: test every active lane


def lower_store(cg, op) -> None:
    d = op.operand("ptr").type.dtype
    ptr = _operand(cg, op, "ptr").name
    offs, value, mask = (_operand(cg, op, n) for n in ("offsets", "value", "mask"))
    shape = tuple(op.operand("offsets").type.shape)
    w = cg.w
    if shape == ():
        range_check.scalar(cg, op, ptr, offs, mask)
    reads = deferred_load.sources((offs, value, mask))
    if not reads:
        _store(cg, op, d, ptr, offs, value, mask, shape)
        return
    # deferred loads are read in the store's own loop: only if no lane can overwrite
    # what a later lane reads (deferred_load.py); else their values go to tiles first
    with w.block(f"if {deferred_load.disjoint(cg, ptr, reads)}:"):
        _store(cg, op, d, ptr, offs, value, mask, shape)
    with w.block("else:"):
        copied = []
        for v in (offs, value, mask):
            if v is not None and deferred_load.sources((v,)):
                t = cg.new_array("staged", v.shape, v.dtype)
                cg.copy(v, t)
                v = t
            copied.append(v)
        _store(cg, op, d, ptr, *copied, shape, versioned=False)   # rare: one loop


def _store(cg, op, d, ptr: str, offs, value, mask, shape, versioned: bool = True) -> None:
    w = cg.w
    index = _Index(cg, offs, shape)
    rows = _gathered_rows(cg, index, offs, shape)
    if rows is not None:
        row_gather.store(cg, op, ptr, rows, value, mask, shape)
        return
    guard = range_check.tile(cg, op, ptr, index, mask) if shape != () else None
    walked = index.leaves + [v for v in (value, mask) if v is not None]

    def access(guard):
        with Nest(w, shape, walked) as nest:
            def write():
                dst = _address(cg, op, ptr, index.at(nest), guard)
                w.line(f"{dst} = {ls.encode(d, nest.at(value))}")
            if mask is None:
                write()
            else:
                with w.block(f"if {nest.at(mask)}:"):
                    write()
    if versioned:
        _versioned(w, guard, access)
    else:           # every active lane tested where the range check needs it
        access(None if guard is None else "False")


def lower_atomic_rmw(cg, op) -> None:
    """Lanes in row-major order: ``old = mem[o]; mem[o] = combine(old, v)`` (rounded/wrapped).
    Kernels with atomics run their programs one at a time (see runtime.py)."""
    d = op.operand("ptr").type.dtype
    ptr = _operand(cg, op, "ptr").name
    offs, value, mask, cmp = (_operand(cg, op, n)
                              for n in ("offsets", "value", "mask", "cmp"))
    shape = tuple(op.result.type.shape)
    w = cg.w
    if shape == ():
        old = w.fresh("old")
        w.line(f"{old} = {ls.zero(d)}")
        out = Val.scalar(old, d)
    else:
        out = cg.new_array("old", shape, d)
    index = _Index(cg, offs, shape)
    guard = None
    if shape == ():
        range_check.scalar(cg, op, ptr, offs, mask)
    else:
        guard = range_check.tile(cg, op, ptr, index, mask)
    walked = index.leaves + [v for v in (value, mask, cmp) if v is not None]
    with Nest(w, shape, walked) as nest:
        dst = out.name if shape == () else f"{out.name}[{nest.out}]"
        compared = None if cmp is None else nest.at(cmp)

        def update():
            o = w.fresh("o")
            prev = w.fresh("prev")
            w.line(f"{o} = {index.at(nest)}")
            cell = _address(cg, op, ptr, o, guard)
            w.line(f"{prev} = {ls.decode(d, cell)}")
            w.line(f"{cell} = {ls.encode(d, _combined(op, d, prev, nest.at(value), compared))}")
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


_COMBINE_KINDS = {"add": Kind.ADD, "max": Kind.MAXIMUM, "min": Kind.MINIMUM, "and": Kind.AND,
                  "or": Kind.OR, "xor": Kind.XOR}


def _combined(op, d, old: str, value: str, cmp: str | None) -> str:
    """The value an atomic read-modify-write leaves: ``combine(old, value)``."""
    combine = op.attrs.get("combine", "add")
    if combine == "xchg":
        return value
    if combine == "cas":
        return f"({value} if {old} == {cmp} else {old})"
    return ls.binary(_COMBINE_KINDS[combine], d, old, value)


def _block_prologue(cg, op):
    """int64 copies of the block pointer's shape/strides/offsets, and its loops' names."""
    bs = tuple(op.attrs["block_shape"])
    w = cg.w
    names = {}
    for part, values in zip(("shape", "stride", "off"), op.block_layout()):
        for d_, v in enumerate(values):
            n = w.fresh(f"blk_{part}{d_}")
            w.line(f"{n} = i64({cg.val(v).name})")
            names[part, d_] = n
    return bs, names


def _block_loops(cg, op, bs, names, body) -> None:
    """Nested loops over the block; ``body(idx_names, in_bounds, addr)`` writes one
    element (``in_bounds`` None: no check needed; ``addr`` an unsigned index).

    Rows of the innermost axis take a fast path when the stride is 1 and the whole row
    is in bounds: a contiguous loop without per-element checks, which LLVM vectorises
    (matmul tiles, row blocks); other rows check every element.  A 2-D block whose
    first axis has the constant stride 1 (a transposed view: ``strides=(1, ld)``, as
    ``W.T`` of a row-major weight) walks its columns outermost when the whole block is
    in bounds, so memory is read in order: a 128x128 f32 tile of a 1024-wide weight
    took 75 us element by element down its rows and takes 14 us this way, and the
    gate/up kernel of benchmarks/bench_moe.py's CPU row went from 1249 to 396 ms."""
    w = cg.w
    debug = checking(cg) == "debug"
    checked = set(op.attrs.get("boundary_check", ()))
    if checking(cg) == "range":
        range_check.block(cg, op, bs, names, checked)
    if len(bs) == 2 and _transposed(op):
        inside = _inside(bs, names, [d_ for d_ in (0, 1) if d_ in checked or debug])
        if inside:
            with w.block(f"if {' and '.join(inside)}:"):
                _columns_outermost(cg, bs, names, body)
            with w.block("else:"):
                _block_rows(cg, op, bs, names, body, checked, debug)
        else:
            _columns_outermost(cg, bs, names, body)
        return
    _block_rows(cg, op, bs, names, body, checked, debug)


def _unit(v) -> bool:
    """Is the IR value ``v`` the constant int 1?"""
    known = constant_value(v)
    return isinstance(known, int) and not isinstance(known, bool) and known == 1


def _transposed(op) -> bool:
    """Is the block's first-axis stride the constant 1 and its last one not?"""
    strides = op.block_layout()[1]
    return _unit(strides[0]) and not _unit(strides[-1])


def _inside(bs, names, axes) -> list:
    """The tests that the block lies inside its declared shape on ``axes``."""
    return [f"{names['off', d_]} >= 0 and {names['off', d_]} + {bs[d_]} <= "
            f"{names['shape', d_]}" for d_ in axes]


def _columns_outermost(cg, bs, names, body) -> None:
    """A 2-D block known to be in bounds, its column (stride ``ld``) outermost and the
    contiguous axis innermost: ``body`` sees the same ``[b0, b1]`` indices."""
    w = cg.w
    b0, b1, col = w.fresh("b0"), w.fresh("b1"), w.fresh("col")
    with w.block(f"for {b1} in range(u64({bs[1]})):"):
        w.line(f"{col} = u64({names['off', 0]} + ({names['off', 1]} + i64({b1})) * "
               f"{names['stride', 1]})")
        with w.block(f"for {b0} in range(u64({bs[0]})):"):
            body([b0, b1], None, f"{col} + {b0}")


def _block_rows(cg, op, bs, names, body, checked, debug) -> None:
    """``_block_loops``' general nest: rows outermost, the last axis innermost."""
    w = cg.w
    r = len(bs)
    idx, oks, coords = [], [], []
    opened = 0

    def coordinate(d_, i):
        c = w.fresh(f"c{d_}")
        w.line(f"{c} = {names['off', d_]} + i64({i})")
        if d_ in checked:
            ok = w.fresh(f"ok{d_}")
            w.line(f"{ok} = {c} >= 0 and {c} < {names['shape', d_]}")
            oks.append(ok)
        elif debug:  # unchecked axes must be in bounds
            with w.block(f"if {c} < 0 or {c} >= {names['shape', d_]}:"):
                w.line(f'raise OutOfBoundsError({site(cg, op)} + "block coordinate " + '
                       f'str({c}) + " on axis {d_} is outside the declared shape [0, " + '
                       f'str({names["shape", d_]}) + "), and axis {d_} is not in '
                       'boundary_check")')
        return c

    for d_ in range(r - 1):
        i = w.fresh(f"b{d_}")
        w.line(f"for {i} in range(u64({bs[d_]})):")
        w.depth += 1
        opened += 1
        idx.append(i)
        coords.append(coordinate(d_, i))
    last = r - 1
    off, stride = names["off", last], names["stride", last]
    row = w.fresh("row")
    outer = "".join(f"{c} * {names['stride', d_]} + " for d_, c in enumerate(coords))
    w.line(f"{row} = {outer}{off} * {stride}")
    # a stride known at compile time decides the path here: one loop, not two (each
    # branch and loop the kernel carries costs numba's compile time)
    known = constant_value(op.block_layout()[1][last])
    unit = _unit(op.block_layout()[1][last])
    fast = ([] if unit else [f"{stride} == 1"]) + oks
    if last in checked or debug:
        fast += _inside(bs, names, [last])
    i = w.fresh(f"b{last}")

    def contiguous():
        start = w.fresh("start")
        w.line(f"{start} = u64({row})")
        with w.block(f"for {i} in range(u64({bs[last]})):"):
            body(idx + [i], None, f"{start} + {i}")

    def general():
        with w.block(f"for {i} in range(u64({bs[last]})):"):
            coordinate(last, i)
            ok = " and ".join(oks) or None
            body(idx + [i], ok, f"u64({row} + i64({i}) * {stride})")
            if last in checked:
                oks.pop()

    if not fast:
        contiguous()
    elif isinstance(known, int) and not unit:
        general()
    else:
        with w.block(f"if {' and '.join(fast)}:"):
            contiguous()
        with w.block("else:"):
            general()
    w.depth -= opened


def lower_block_load(cg, op) -> None:
    d = op.operand("ptr").type.dtype
    ptr = _operand(cg, op, "ptr").name
    bs, names = _block_prologue(cg, op)
    out = cg.new_array(cg.hint(op.result), bs, d)
    pad = ls.fconst(float("nan"), d) if (op.attrs.get("padding", "zero") == "nan"
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
    if read_in_place(cg, op):
        _bind_in_place(cg, op, ptr, bs, names, body)
    else:
        _block_loops(cg, op, bs, names, body)
    cg.bind(op.result, out)


_WRITES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)

# The most rows of ``a`` a dot may have and still read its weight in place.  ``dot_nt``
# runs at about 62 GFLOP/s whatever the rows; copying the tile (column walk) costs about
# 1.2 ns per element, after which ``dot_f`` runs at up to 100: reading in place wins
# below about 100 rows.  128x128 bf16 weight tile, one core: 16 rows 9.6 us in place
# against 26.7 copied; 64 rows 34 against 59; 128 rows 69 against 62.
IN_PLACE_MAX_M = 64


def read_in_place(cg, op) -> bool:
    """May the block load ``op`` be read by its dot straight from the argument?

    Yes for an f32 or bf16 block over a transposed view (``strides=(1, ld)``: ``W.T`` of
    a row-major weight, the second operand of a linear layer's ``x @ W.T``) whose one use
    is the ``b`` operand of a float dot of at most ``IN_PLACE_MAX_M`` rows later in the
    same block, with no memory write or control flow between the two (nothing can change
    what is read).  The dot then reads the weight's rows where they are
    (``cube_lib.dot_nt``, bf16 decoded as read) when the block is inside the view's
    checked K axis and starts inside its other axis (the weight's rows past the last are
    padding, ``_bind_in_place``), and the copied tile otherwise (padding).  Not in debug mode: every element is checked where it is copied.  A
    recording run records the transfer from the block's layout as before
    (``record.emit_memory``), so the simulated stream is the same."""
    if (len(op.attrs["block_shape"]) != 2 or checking(cg) == "debug"
            or op.operand("ptr").type.dtype.name not in ("f32", "bf16")
            or not _transposed(op)):
        return False
    uses = op.result.uses
    if len(uses) != 1:
        return False
    user, index = uses[0]
    a = user.operands[0].type
    if (user.kind is not Kind.DOT or index != 1 or user.parent is not op.parent
            or len(a.shape) != 2 or not a.dtype.is_float or a.shape[0] > IN_PLACE_MAX_M):
        return False
    ops = op.parent.ops
    at = next(k for k, o in enumerate(ops) if o is op)
    for o in ops[at + 1:]:
        if o is user:
            return True
        if o.kind in _WRITES or o.kind in CONTROL or any(
                n.kind in _WRITES or n.kind in CONTROL for n in o.walk() if n is not o):
            return False
    return False


def _bind_in_place(cg, op, ptr: str, bs, names, body) -> None:
    """The in-bounds test, the weight's offset, row stride and the count of its rows the
    block covers, for ``cube_lib.dot_nt``; the copy (with padding) only when the block
    leaves a checked K axis or starts before the weight's first row.  A block reaching
    past the weight's last row (axis 1: a router's 8 experts in a 16-wide tile) is read
    in place too, its missing rows being zero padding (``dot_nt``'s ``nb``)."""
    w = cg.w
    checked = set(op.attrs.get("boundary_check", ()))
    if checking(cg) == "range":
        range_check.block(cg, op, bs, names, checked)
    inside = _inside(bs, names, [0] if 0 in checked else [])
    if 1 in checked:
        inside.append(f"{names['off', 1]} >= 0")
    flag, off, ld = w.fresh("in_place"), w.fresh("w_off"), w.fresh("w_ld")
    rows = w.fresh("w_rows")
    w.line(f"{flag} = {' and '.join(inside) or 'True'}")
    w.line(f"{off} = u64(0)")
    w.line(f"{ld} = u64(0)")
    w.line(f"{rows} = i64({bs[1]})")
    with w.block(f"if {flag}:"):
        w.line(f"{off} = u64({names['off', 0]} + {names['off', 1]} * {names['stride', 1]})")
        w.line(f"{ld} = u64({names['stride', 1]})")
        if 1 in checked:
            w.line(f"{rows} = min(i64({names['shape', 1]}) - i64({names['off', 1]}), "
                   f"i64({bs[1]}))")
    if inside:
        with w.block("else:"):
            _block_rows(cg, op, bs, names, body, checked, False)
    cg.in_place[id(op.result)] = (ptr, flag, off, ld, rows)


def lower_block_store(cg, op) -> None:
    d = op.operand("ptr").type.dtype
    ptr = _operand(cg, op, "ptr").name
    value = _operand(cg, op, "value")
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


LOWERINGS = {Kind.LOAD: lower_load, Kind.STORE: lower_store, Kind.ATOMIC_RMW: lower_atomic_rmw,
             Kind.BLOCK_LOAD: lower_block_load, Kind.BLOCK_STORE: lower_block_store}
