"""What a kernel's IR says about how it touches its array arguments, for launch checks.

* ``stored_arguments``: which pointer arguments the kernel writes (a read-only array there
  is a LaunchError naming the argument and the store's line).

(Whether a non-contiguous view is addressed as if it were contiguous is a step of the
compile pipeline: ``ir/passes/strided_views.py``.)

Example::

    >>> stored_arguments(fn)          # doctest: +SKIP
    {'out_ptr': Loc('k.py', 7)}
"""
from __future__ import annotations

from npujit.ir import Function, Kind

_WRITES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)


def stored_arguments(fn: Function) -> dict:
    """``{argument name: Loc of its first store}`` for the pointer arguments ``fn`` writes."""
    out = {}
    args = {id(a): a.name for a in fn.args}
    for op in fn.body.walk():
        if op.kind in _WRITES and id(op.operand("ptr")) in args:
            out.setdefault(args[id(op.operand("ptr"))], op.loc)
    return out
