"""The backward slice of values: every op whose result flows into them.

Follows op operands, and through ``scf.for``: a loop result or a body's carried argument
comes from the loop's init and from what the body yields; the induction variable comes
from the loop bounds.  Ops whose kind is in ``stop`` are reported but not looked
through (e.g. loads: their results are data, not arithmetic on the slice's inputs).

Used by launch checks (does a strided array's addressing use a run-time stride?) and by
the debug-mode index-overflow pass (which int32 ops feed an address?).

Example::

    >>> ops, args = backward_slice([load_op.operands[1]])    # doctest: +SKIP
    >>> sorted(a.name for a in args)                         # doctest: +SKIP
    ['n']
"""
from __future__ import annotations

from .core import Op, Value
from .ops import Kind


def addressing(op: Op) -> list[Value]:
    """The operands a memory op computes its addresses from: the offsets of a pointer
    load / store / atomic_add, the shape, strides and offsets of a block load / store;
    ``[]`` for any other op."""
    k = op.kind
    if k in (Kind.LOAD, Kind.STORE, Kind.ATOMIC_ADD):
        return [op.operands[1]]
    if k is Kind.BLOCK_LOAD:
        return op.operands[1:]
    if k is Kind.BLOCK_STORE:
        return op.operands[1:-1]          # the last operand is the stored value
    return []


# The largest element offset an int32 offset tile can hold.
INT32_REACH = 2**31 - 1


def narrow_offsets(fn) -> dict:
    """``{argument index: Loc}`` for the pointer arguments ``fn`` addresses with offsets
    narrower than 64 bits (the first such access), by load / store / atomic_add.  Such an
    argument with more than ``INT32_REACH + 1`` elements is refused at launch: its far
    elements are out of the offsets' reach, and wrapped offsets would alias near ones.

    Example::

        >>> narrow_offsets(add_fn)          # offs = pid * BLOCK + arange: i32 # doctest: +SKIP
        {0: Loc('add.py', 23), 1: Loc('add.py', 24), 2: Loc('add.py', 25)}
    """
    index = {id(a): i for i, a in enumerate(fn.args)}
    out: dict = {}
    for op in fn.body.walk():
        if op.kind in (Kind.LOAD, Kind.STORE, Kind.ATOMIC_ADD) and id(op.operands[0]) in index:
            dtype = op.operands[1].type.dtype
            if dtype.is_int and dtype.bits < 64:
                out.setdefault(index[id(op.operands[0])], op.loc)
    return out


def narrow_offsets_message(kernel: str, arg: str, loc, size: str) -> str:
    """The LaunchError text for ``narrow_offsets`` (``size``: the element count, as text
    so that generated code can splice in its own expression)."""
    return (f"argument '{arg}' has {size} elements, but kernel '{kernel}' addresses it with "
            f"int32 offsets at {loc.file}:{loc.line}, which reach element 2**31 - 1 at most; "
            "compute the offsets in int64 (e.g. nl.program_id(0).to(nl.int64) * BLOCK) or "
            "pass the array in pieces")


def backward_slice(roots, stop=frozenset()) -> tuple[list[Op], list[Value]]:
    """``(ops, arguments)``: the ops that compute ``roots`` (each once, in no particular
    order; ``stop`` kinds included but not followed) and the function arguments reached."""
    seen: set[int] = set()
    ops: dict[int, Op] = {}
    args: dict[int, Value] = {}
    stack = list(roots)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        op = v.op
        if op is None:
            loop = getattr(v.owner, "parent_op", None)
            if loop is None:
                args[id(v)] = v                      # a function argument
            elif loop.kind is Kind.FOR:
                stack.extend(_loop_sources(loop, v.index - 1) if v.index else loop.operands[:3])
            continue
        ops[id(op)] = op
        if op.kind in stop:
            continue
        if op.kind is Kind.FOR:
            stack.extend(_loop_sources(op, v.index))
        else:
            stack.extend(op.operands)
    return list(ops.values()), list(args.values())


def _loop_sources(loop: Op, i: int) -> list[Value]:
    """The values that define carried value ``i`` of ``loop``: its init and its yield."""
    term = loop.body.terminator
    return [loop.operands[3 + i]] + ([term.operands[i]] if term is not None else [])
