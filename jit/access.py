"""What a kernel's IR says about how it touches its array arguments, for launch checks.

* ``stored_arguments``: which pointer arguments the kernel writes (a read-only array there
  is a LaunchError naming the argument and the store's line);
* ``check_strided``: a non-contiguous view is only safe when the kernel addresses it with
  strides it was given.  Offsets built from program ids, ``arange`` and constants alone
  address memory as if the array were contiguous, and would read the gaps between the
  view's elements: that is a LaunchError, not a silently wrong result.

Example::

    >>> stored_arguments(fn)          # doctest: +SKIP
    {'out_ptr': Loc('k.py', 7)}
"""
from __future__ import annotations

from npujit.ir import Function, Kind
from npujit.ir.slice import addressing, backward_slice
from npujit.ir.types import PtrType

from npujit.errors import LaunchError

_WRITES = (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_ADD)
_ACCESSES = (Kind.LOAD, Kind.STORE, Kind.ATOMIC_ADD, Kind.BLOCK_LOAD, Kind.BLOCK_STORE)
_DATA = (Kind.LOAD, Kind.BLOCK_LOAD, Kind.ATOMIC_ADD)   # values read from memory


def stored_arguments(fn: Function) -> dict:
    """``{argument name: Loc of its first store}`` for the pointer arguments ``fn`` writes."""
    out = {}
    args = {id(a): a.name for a in fn.args}
    for op in fn.body.walk():
        if op.kind in _WRITES and id(op.operands[0]) in args:
            out.setdefault(args[id(op.operands[0])], op.loc)
    return out


def check_strided(fn: Function, kernel: str, strided: set) -> None:
    """Raise a LaunchError if an argument named in ``strided`` (passed as a non-contiguous
    view) is addressed by offsets that use no run-time argument."""
    if not strided:
        return
    scalars = {id(a) for a in fn.args if not isinstance(a.type, PtrType)}

    def depends(v) -> bool:
        """Does ``v`` use a run-time scalar argument, or data read from memory?"""
        ops, reached = backward_slice([v], stop=_DATA)
        return (any(id(a) in scalars for a in reached)
                or any(op.kind in _DATA for op in ops))

    args = {id(a): a.name for a in fn.args}
    for op in fn.body.walk():
        name = args.get(id(op.operands[0])) if op.kind in _ACCESSES and op.operands else None
        if name not in strided:
            continue
        if not any(depends(o) for o in addressing(op)):
            raise LaunchError(
                f"argument '{name}' is a non-contiguous view, but kernel '{kernel}' addresses "
                f"it at {op.loc.file}:{op.loc.line} with offsets built from program ids, "
                "aranges and constants only, as if it were contiguous (it would read the "
                "gaps between its elements). Pass np.ascontiguousarray(...), or pass the "
                "view's strides (x.strides[d] // x.itemsize) and use them in the offsets")
