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

from dataclasses import dataclass

from .core import Op, Value, loop_arg_index, loop_carried
from .ops import LOOPS, Kind


def addressing(op: Op) -> list[Value]:
    """The operands a memory op computes its addresses from: the offsets of a pointer
    load / store / atomic_add, the shape, strides and offsets of a block load / store;
    ``[]`` for any other op."""
    k = op.kind
    if k in (Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW):
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
        if op.kind in (Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW) and id(op.operands[0]) in index:
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


def backward_slice(roots, stop=frozenset(), seen: set | None = None
                   ) -> tuple[list[Op], list[Value]]:
    """``(ops, arguments)``: the ops that compute ``roots`` (each once, in no particular
    order; ``stop`` kinds included but not followed) and the function arguments reached.
    ``seen`` (optional) is filled with the ids of every value on the way."""
    seen = set() if seen is None else seen
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
            elif loop.kind in LOOPS:
                i = v.index - loop_arg_index(loop)
                stack.extend(_loop_sources(loop, i) if i >= 0 else loop.operands[:3])
            continue
        ops[id(op)] = op
        if op.kind in stop:
            continue
        if op.kind in LOOPS:
            stack.extend(_loop_sources(op, v.index))
        elif op.kind is Kind.IF:    # what a branch yields, and which branch runs
            stack.extend([*(r.terminator.operands[v.index] for r in op.regions
                            if r.terminator), *op.operands])
        else:
            stack.extend(op.operands)
    return list(ops.values()), list(args.values())


def _loop_sources(loop: Op, i: int) -> list[Value]:
    """The values that define carried value ``i`` of ``loop``: its init and its yield
    (and for ``scf.while`` the conditions that decide how often it changes)."""
    init, _, nxt, _ = loop_carried(loop)[i]
    out = [init] + ([nxt] if nxt is not None else [])
    if loop.kind is Kind.WHILE:
        out += [loop.operands[0]] + ([loop.body.terminator.operands[0]]
                                     if loop.body.terminator is not None else [])
    return out


_READS_GM = (Kind.LOAD, Kind.BLOCK_LOAD, Kind.ATOMIC_RMW)
_WRITES_GM = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)


@dataclass(frozen=True)
class StreamSlice:
    """What :func:`stream_slice` finds: ids of the ``ops`` to execute and of the
    ``values`` they need (loop-carried values included)."""

    ops: frozenset
    values: frozenset


def stream_slice(fn) -> StreamSlice:
    """The ops whose results decide a program's instruction stream: what its
    addresses, masks and loop trip counts are computed from (gathered indices and
    data-dependent counts included), closed over GM: a load in the slice makes every
    store or atomic to the same pointer argument write real values.  The rest is
    arithmetic whose values only land in outputs, which a timing-only simulation
    (``kernel.simulate(..., numerics=False)``) skips.  Memory ops and loops are always
    walked (they make the stream); they are in the set when they must also move data.

    Example::

        >>> needed = stream_slice(softmax_fn).ops     # doctest: +SKIP
        >>> any(op.kind is Kind.EXP and id(op) in needed for op in softmax_fn.walk())  # doctest: +SKIP
        False
    """
    roots: list[Value] = []
    accesses = []
    for op in fn.walk():
        if op.kind is Kind.FOR:
            roots += op.operands[:3]
        elif op.kind in (Kind.IF, Kind.WHILE):      # the condition decides the stream
            roots.append(op.operands[0])
            if op.kind is Kind.WHILE and op.body.terminator is not None:
                roots.append(op.body.terminator.operands[0])
        elif op.kind in _READS_GM or op.kind in _WRITES_GM:
            accesses.append(op)
            roots += addressing(op)
            mask = op.operand("mask") if op.kind in (Kind.LOAD, Kind.STORE,
                                                     Kind.ATOMIC_RMW) else None
            if mask is not None:
                roots.append(mask)
    writers: set[int] = set()
    while True:
        values: set[int] = set()
        ops, _ = backward_slice(roots, seen=values)
        needed = {id(op) for op in ops} | writers
        read = {id(op.operands[0]) for op in ops if op.kind in _READS_GM}
        more = [op for op in accesses if op.kind in _WRITES_GM and id(op) not in needed
                and id(op.operands[0]) in read]
        if not more:
            return StreamSlice(frozenset(needed), frozenset(values))
        for op in more:
            writers.add(id(op))
            roots += op.operands[1:]
