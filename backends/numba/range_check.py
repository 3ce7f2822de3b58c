"""The default mode's memory-safety check: before a GM access, the range of offsets its
active lanes touch is compared with the argument's extent, and an access that would
leave the argument raises ``OutOfBoundsError`` naming the kernel, the source line, the
argument and the offending range (rerun with ``NPUJIT_DEBUG=1`` for the exact lane).

Why a range and not every lane: the common tile is affine (``pid * B + arange``), so its
offsets span ``[base, base + span]`` and one comparison per access proves all of them
in bounds; only when that fails (the tail tile of a masked kernel, or a real overflow)
is the tile scanned for the minimum and maximum offset of its *active* lanes, exactly
the lanes the reference interpreter would check.  Gathers (non-affine offsets) are
always scanned: one extra pass over the offsets, cheap next to the gather itself.
Block pointers are checked on the box of coordinates they address (a checked axis
clipped to its declared shape): the extremes of an affine map over a box lie at its
corners, so the range is exact and costs O(rank).

A masked affine access is emitted twice (``lower_memory._versioned``): the loop with no
lane test where its whole span is inside (one test per access; a raise inside a loop
keeps LLVM from vectorising it, which cost 2.8-4.8x on add, layernorm and rmsnorm), the
lane-checked loop otherwise.

Example (a store of 128 affine lanes under a mask; site 3 of the kernel)::

    inside = sbase >= 0 and sbase + 127 < i64(out_ptr.shape[0])
    if inside:
        for i in range(u64(128)):
            if mask_expr:
                out_ptr[base + i] = ...
    else:
        for i in range(u64(128)):
            if mask_expr:
                if base + i >= u64(out_ptr.shape[0]):
                    ck.out_of_bounds(3, pid0, pid1, pid2, i64(base + i), i64(base + i),
                                     i64(out_ptr.shape[0]))
                out_ptr[base + i] = ...
"""
from __future__ import annotations

from npujit.errors import OOB_RANGE_HINT as _HINT
from npujit.ir import Kind
from npujit.ir.passes.index_checks import SYMBOL, overflow_template, scalar_address_ops
from npujit.ir.slice import INT32_REACH, narrow_offsets, narrow_offsets_message


def checking(cg) -> str | None:
    """The bounds-checking mode of a compile: "debug" (every element, ``NPUJIT_DEBUG=1``),
    "range" (the default) or None (``bounds_check=False``)."""
    if cg.options.get("debug"):
        return "debug"
    return "range" if cg.options.get("bounds_check", True) else None


def site(cg, op, what: str | None = None) -> str:
    """A numba string expression: ``kernel 'k', npu.load at k.py:9, program (p, q, r): ``,
    the head of the reference interpreter's messages for the same op."""
    return (f'"kernel \'{cg.fn.name}\', {what or op.kind.value} at {_where(op)}, program (" + '
            'str(pid0) + ", " + str(pid1) + ", " + str(pid2) + "): "')


def _where(op) -> str:
    return str(op.loc).replace("\\", "/").replace('"', "'")


def argument(op) -> str:
    """The kernel argument an access goes through (its IR name), for messages."""
    name = getattr(op.operands[0], "name", None)
    return f"argument '{name}'" if name else "the pointer argument"


def _raise_if_outside(cg, op, ptr: str, lo: str, hi: str, what: str) -> None:
    """Raise when ``[lo, hi]`` (int64, non-empty) is not inside ``[0, len(ptr))``."""
    w = cg.w
    with w.block(f"if {lo} < 0 or {hi} >= i64({ptr}.shape[0]):"):
        _raise(cg, op, what, lo, hi, ptr)


def _raise(cg, op, what: str, lo: str, hi: str, ptr: str) -> None:
    """The call that raises for offsets ``[lo, hi]`` of ``ptr``: a shared compiled
    function given the check's site number (``check_lib.py``: an inline raise costs
    several times more compile time), the message kept in the module's ``OOB_SITES``."""
    cg.oob_sites.append(_template(cg, op, what))
    cg.w.line(f"ck.out_of_bounds({len(cg.oob_sites) - 1}, pid0, pid1, pid2, i64({lo}), "
              f"i64({hi}), i64({ptr}.shape[0]))")


def _template(cg, op, what: str) -> str:
    """The message with ``%d`` for program id, low and high offset and the extent: the
    numbers are filled in Python (``npujit.errors.OutOfBoundsError``), so the kernel
    carries no string-building code, costly for numba to compile."""
    where = _where(op).replace("%", "%%")
    return (f"kernel '{cg.fn.name}', {op.kind.value} at {where}, program (%d, %d, %d): "
            f"{what} [%d, %d], outside [0, %d) of "
            f"{argument(op).replace('%', '%%')}{_HINT}")


def wrapping_ops(cg) -> set:
    """The ids of the scalar int32 add/sub/mul ops feeding an address that the default
    mode checks for wrapping inside the program loop (``ir/passes/index_checks.py``;
    debug mode checks every lane through IR asserts instead).  Ops of program ids,
    constants and scalar arguments alone are checked before the loop instead
    (``hoisted_wraps``)."""
    if checking(cg) != "range":
        return set()
    return {id(op) for op in scalar_address_ops(cg.fn) if not _launch_invariant(cg, op)}


def _launch_invariant(cg, op) -> bool:
    """Whether every operand of ``op`` is a program id, a constant or a scalar argument:
    then its value over the grid is a polynomial of the program ids, of degree 1 in each
    axis (or ``pid * pid``, monotone for ids >= 0), so it is extreme at the grid's corners."""
    for v in op.operands:
        if v.op is None:
            if v.owner is not cg.fn.body:
                return False
        elif v.op.kind not in (Kind.PROGRAM_ID, Kind.CONSTANT):
            return False
    return True


def hoisted_wraps(cg) -> tuple[list[str], str, list[str]]:
    """``(before, stop, after)``: the launch-invariant int32 index ops
    (``_launch_invariant``) checked once per launch chunk instead of in every program.
    ``before`` computes them in int64 at the corners of the grid; only when one leaves
    int32 there are the chunk's programs scanned, in order, for the first whose value
    wraps.  The program loop runs up to ``stop`` (that program, else ``last``) and
    ``after`` raises its ``IndexOverflowError``: the programs before it run and the error
    is the in-loop check's.  A check inside the program loop is a call there, and a call
    in the loop cost the vector add 15 % (1 M elements, 0.228 -> 0.195 ms).
    ``([], "last", [])`` when there is nothing to hoist."""
    if checking(cg) != "range":
        return [], "last", []
    ops = [op for op in scalar_address_ops(cg.fn) if _launch_invariant(cg, op)]
    if not ops:
        return [], "last", []
    w = cg.w
    ok, stop, site, vals = (w.fresh(n) for n in ("int32_ok", "stop", "wrap_site", "wrap"))
    corners = [{}]
    axes = sorted({v.op.attrs["axis"] for op in ops for v in op.operands
                   if v.op is not None and v.op.kind is Kind.PROGRAM_ID})
    for axis in axes:
        corners = [{**c, axis: e} for c in corners for e in ("0", f"(nprog{axis} - 1)")]
    before = [f"{ok} = True"]
    tests = []          # an op that reads fewer axes than the grid has meets a corner twice
    for op in ops:
        for corner in corners:
            a, b = (_operand(cg, v, corner) for v in op.operands)
            test = f"-2147483648 <= i64({a}) {SYMBOL[op.kind]} i64({b}) <= 2147483647"
            if test not in tests:
                tests.append(test)
    for test in tests:
        before += [f"if not ({test}):", f"    {ok} = False"]
    before += [f"{stop} = last", f"{site} = -1",
               f"{vals} = (i64(0), i64(0), i64(0), i64(0), i64(0), i64(0), i64(0))",
               f"if not {ok}:",
               "    for p in range(first, last):",
               "        pid0 = p % nprog0",
               "        pid1 = (p // nprog0) % nprog1",
               "        pid2 = p // (nprog0 * nprog1)"]
    for op in ops:
        a, b = (_operand(cg, v, None) for v in op.operands)
        exact = w.fresh("exact")
        cg.oob_sites.append(f"kernel '{cg.fn.name}', index arithmetic at "
                            f"{_where(op).replace('%', '%%')}, program (%d, %d, %d): "
                            + overflow_template(op))
        before += [f"        {exact} = i64({a}) {SYMBOL[op.kind]} i64({b})",
                   f"        if {site} < 0 and {exact} != i64(i32({exact})):",
                   f"            {site} = {len(cg.oob_sites) - 1}",
                   f"            {vals} = (i64(pid0), i64(pid1), i64(pid2), i64({a}), "
                   f"i64({b}), {exact}, i64(i32({exact})))"]
    before += [f"        if {site} >= 0:",
               f"            {stop} = p",
               "            break"]
    after = [f"if {site} >= 0:",
             f"    ck.index_overflow({site}, {vals}[0], {vals}[1], {vals}[2], {vals}[3], "
             f"{vals}[4], {vals}[5], {vals}[6])"]
    return before, stop, after


def _operand(cg, v, corner) -> str:
    """An operand of a launch-invariant op as an expression before the program loop:
    ``corner`` maps axes to program-id expressions (None: the loop's ``pidN``)."""
    if v.op is None:
        return cg.val(v).name
    if v.op.kind is Kind.CONSTANT:
        return repr(int(v.op.attrs["value"]))
    axis = v.op.attrs["axis"]
    return f"pid{axis}" if corner is None else corner[axis]


def wrap(cg, op, operands, result: str) -> None:
    """After scalar ``result = a op b`` (int32): raise ``IndexOverflowError`` when the
    int64 result differs, through ``ck.index_overflow`` and a site template."""
    w = cg.w
    a, b = operands
    exact = w.fresh("exact")
    w.line(f"{exact} = i64({a}) {SYMBOL[op.kind]} i64({b})")
    with w.block(f"if {exact} != i64({result}):"):
        cg.oob_sites.append(f"kernel '{cg.fn.name}', index arithmetic at "
                            f"{_where(op).replace('%', '%%')}, program (%d, %d, %d): "
                            + overflow_template(op))
        w.line(f"ck.index_overflow({len(cg.oob_sites) - 1}, pid0, pid1, pid2, i64({a}), "
               f"i64({b}), {exact}, i64({result}))")


def launch_checks(cg) -> list[str]:
    """Lines run once per launch, before any program: an argument longer than int32
    offsets reach is refused (``ir.slice.narrow_offsets``), with a ``LaunchError``."""
    lines = []
    for i, loc in sorted(narrow_offsets(cg.fn).items()):
        a = cg.fn.args[i]
        ptr = cg.val(a).name
        head, tail = narrow_offsets_message(cg.fn.name, a.name, loc, "\0").split("\0")
        lines.append(f"if {ptr}.shape[0] > {INT32_REACH + 1}:")
        template = head.replace("%", "%%") + "%d" + tail.replace("%", "%%")
        lines.append(f"    raise LaunchError({template!r}, {ptr}.shape[0])")
    return lines


def scalar(cg, op, ptr: str, offs, mask) -> None:
    """A rank-0 access: its one offset, checked only when its mask is on."""
    if checking(cg) != "range":
        return
    w = cg.w
    o = w.fresh("o")
    w.line(f"{o} = i64({offs.name})")
    if mask is None:
        _raise_if_outside(cg, op, ptr, o, o, "offset range")
        return
    with w.block(f"if {mask.name}:"):
        _raise_if_outside(cg, op, ptr, o, o, "offset range")


def tile(cg, op, ptr: str, index, mask) -> str | None:
    """A tile access through ``index`` (lower_memory._Index), lanes on where ``mask``.

    Affine offsets with every lane on: their exact range, checked once here.  Otherwise a
    *guard* for the access loop (returned; ``lane`` tests each active lane unless it
    holds): affine offsets whose whole span lies inside the argument need no lane test, so
    the guard is that span test, once per access; gathered offsets are always tested.
    The lane test sits in the loop the access already has (no scan loop over the lanes:
    one per access doubled a kernel's numba compile time); loads and stores version that
    loop on the guard (``lower_memory._versioned``)."""
    if checking(cg) != "range":
        return None
    w = cg.w
    if index.base is None:
        return "False"
    last = f"{index.signed_base} + {index.span}"
    if mask is None:        # every lane is active: the affine range is exact
        _raise_if_outside(cg, op, ptr, index.signed_base, last, "offsets span")
        return None
    guard = w.fresh("inside")
    w.line(f"{guard} = {index.signed_base} >= 0 and {last} < i64({ptr}.shape[0])")
    return guard


def lane(cg, op, ptr: str, index: str, guard: str) -> None:
    """The per-lane test of an active lane's offset ``index`` (unsigned: a negative
    offset is huge), skipped where ``guard`` holds."""
    w = cg.w
    test = f"{index} >= u64({ptr}.shape[0])"
    with w.block(f"if {test}:" if guard == "False" else f"if not {guard} and {test}:"):
        _raise(cg, op, "an active lane has offsets", index, index, ptr)


def block(cg, op, bs, names, checked) -> None:
    """A block-pointer access: the address range of the box of coordinates it touches
    (axes in ``checked`` clipped to the declared shape; elements outside are padding and
    never addressed).  ``names`` are lower_memory._block_prologue's int64 copies."""
    ptr = cg.val(op.operands[0]).name
    r = len(bs)

    def tup(xs):
        return "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"
    clip = sum(1 << d for d in checked)
    cg.oob_sites.append(_template(cg, op, "block addresses span"))
    cg.w.line(f"ck.block_span({len(cg.oob_sites) - 1}, pid0, pid1, pid2, "
              f"i64({ptr}.shape[0]), {tup([names['off', d] for d in range(r)])}, "
              f"{tup([f'i64({n})' for n in bs])}, "
              f"{tup([names['stride', d] for d in range(r)])}, "
              f"{tup([names['shape', d] for d in range(r)])}, {clip})")
