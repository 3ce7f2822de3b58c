"""Deferred loads stay right across GM writes.

A tile load read once, right after, is not copied into a tile: its elements are loaded
where the reader needs them (``lower_memory._deferrable``), and an elementwise result
built on it may stay lazy too (``lower_tile._lazy_ok``), its elements computed -- and
the load's elements read -- wherever *its* readers are.  The kernel's meaning is the
reference interpreter's: a load reads every lane when it runs.  Two things can put a
GM write between the two:

* **A write before a later reader.**  ``v = load(p); w = v * 2; store(q, 0); store(r,
  w)``: ``w``'s elements, read by the last store, would read ``p`` after ``store(q, 0)``.
  Before an op that may write GM (a store, an atomic, a loop or branch holding one),
  ``settle`` copies into tiles the lazy values that read GM and are read at or after it.
* **The store's own loop.**  ``store(p + offs + 1, load(p + offs))`` reads lane ``i + 1``
  after writing it: the Triton tutorials' in-place kernels shift, reverse and permute
  rows this way.  ``store_reads`` finds the arguments a store's lazy operands load from.
  A load of the stored argument itself is copied into a tile first (lower_memory.store).
  Loads of other arguments are read in the loop, on the kernel's assumption that the
  arrays do not overlap (``assume_apart``); the entry tests it once per call
  (``entry_check``, a few compares) and a launch whose arrays do overlap (views of one
  buffer) runs a second build of the kernel that copies every such operand first
  (option ``alias_safe``; built on the first such launch, backends/llvm/runtime.py).
  One build with both loops behind a runtime test, as the numba backend does
  (backends/numba/deferred_load.py), cost the vector add's cold compile 41 -> 66 ms.

``Lowering.gm_reads`` holds the lazy values that read GM (``note`` adds one as it is
bound) until the next op that may write GM settles them.
"""
from __future__ import annotations

from npujit.ir import Kind
from npujit.ir.core import ancestor_in

from .ir_text import gm_type
from .values import Lazy

_WRITES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)


def writes_gm(op) -> bool:
    """May ``op`` write GM (a store or an atomic, or a region op holding one)?"""
    if op.kind in _WRITES:
        return True
    return bool(op.regions) and op.kind is not Kind.FUSED and any(
        o.kind in _WRITES for o in op.walk())


def note(cg, v, val) -> None:
    """``v`` is now bound to ``val``: remember it when it is lazy and reads GM (a
    deferred load, or an op with such an operand)."""
    if not isinstance(val, Lazy):
        return
    op = v.op
    if op is not None and (op.kind is Kind.LOAD
                           or any(id(o) in cg.gm_reads for o in op.operands)):
        cg.gm_reads[id(v)] = v


def settle(cg, op) -> None:
    """Before ``op``, which may write GM: copy into tiles the lazy values that read GM
    and have a reader at or after ``op`` in its block (a store's own operands excepted:
    ``store_reads`` and ``assume_apart`` handle those).  Every value is then done with:
    copied, or read by nothing after ``op`` (a reader outside the block was settled
    before the op holding the block)."""
    block = op.parent
    at = {id(o): k for k, o in enumerate(block.ops)}
    here = at[id(op)]
    for key, v in list(cg.gm_reads.items()):
        got = cg.env.get(key)
        if isinstance(got, Lazy) and any(
                at[id(a)] >= here for u in v.users
                if (a := ancestor_in(u, block)) is not None
                and not (u is op and op.kind is Kind.STORE)):
            cg.env[key] = cg.materialise(got)
        del cg.gm_reads[key]


def store_reads(cg, operands) -> list:
    """The deferred loads the lazy ``operands`` (IR values) of a store read (a load
    bound to a ``Lazy`` is a deferred one; a value in a tile reads nothing more)."""
    loads, seen, stack = [], set(), list(operands)
    while stack:
        v = stack.pop()
        if v is None or id(v) in seen or not isinstance(cg.env.get(id(v)), Lazy):
            continue
        seen.add(id(v))
        op = v.op
        if op is None:
            continue
        if op.kind is Kind.LOAD:
            loads.append(op)
        else:
            stack.extend(op.operands)
    return loads


def assume_apart(cg, store, loads) -> bool:
    """May ``store``'s loop read ``loads`` (deferred loads) while it writes?  Not when
    one of them reads the stored argument itself, nor in a kernel built for overlapping
    arguments (``alias_safe``); otherwise yes, and the pairs of arguments are noted for
    ``entry_check``, which makes a launch whose arrays overlap run the ``alias_safe``
    build instead (backends/llvm/runtime.py)."""
    ptr = store.operands[0]
    if cg.options.get("alias_safe") or any(ld.operands[0] is ptr for ld in loads):
        return False
    args = cg.fn.args
    out = next(i for i, a in enumerate(args) if a is ptr)
    cg.assumed_apart.update((out, next(i for i, a in enumerate(args) if a is ld.operands[0]))
                            for ld in loads)
    return True


def entry_check(cg) -> str | None:
    """The entry block's test, once per call, that no pair of arguments ``assume_apart``
    noted overlaps in memory: an i1 operand (true: apart), or None when none was noted."""
    if not cg.assumed_apart:
        return None
    w = cg.w
    ends: dict = {}

    def span(i):
        a = cg.env[id(cg.fn.args[i])]
        if i not in ends:
            ends[i] = w.fresh("end")
            w.entry(f"{ends[i]} = getelementptr inbounds {gm_type(a.dtype)}, ptr {a.data}, "
                    f"i64 {a.length}")
        return a.data, ends[i]

    test = None
    for out, src in sorted(cg.assumed_apart):
        (o0, o1), (s0, s1) = span(out), span(src)
        before, after, apart = w.fresh("apart"), w.fresh("apart"), w.fresh("apart")
        w.entry(f"{before} = icmp ule ptr {o1}, {s0}")
        w.entry(f"{after} = icmp ule ptr {s1}, {o0}")
        w.entry(f"{apart} = or i1 {before}, {after}")
        if test is not None:
            both = w.fresh("apart")
            w.entry(f"{both} = and i1 {test}, {apart}")
            apart = both
        test = apart
    return test
