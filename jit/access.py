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
from npujit.ir.types import PtrType

from .errors import LaunchError

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


class _Slice:
    """Does a value depend on a run-time scalar argument or on loaded data?"""

    def __init__(self, fn: Function):
        self.scalars = {id(a) for a in fn.args if not isinstance(a.type, PtrType)}
        self.memo: dict[int, bool] = {}

    def __call__(self, v) -> bool:
        key = id(v)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = False          # a loop-carried cycle adds nothing by itself
        self.memo[key] = out = self._compute(v)
        return out

    def _compute(self, v) -> bool:
        if id(v) in self.scalars:
            return True
        op = v.op
        if op is None:                  # a block argument: of a loop body
            loop = getattr(v.owner, "parent_op", None)
            if loop is None or loop.kind is not Kind.FOR:
                return False
            if v.index == 0:            # the induction variable
                return any(self(o) for o in loop.operands[:3])
            return self._carried(loop, v.index - 1)
        if op.kind in _DATA:
            return True
        if op.kind is Kind.FOR:
            return self._carried(op, v.index)
        return any(self(o) for o in op.operands)

    def _carried(self, loop, i: int) -> bool:
        term = loop.body.terminator
        sources = [loop.operands[3 + i]] + ([term.operands[i]] if term is not None else [])
        return any(self(o) for o in sources)


def check_strided(fn: Function, kernel: str, strided: set) -> None:
    """Raise a LaunchError if an argument named in ``strided`` (passed as a non-contiguous
    view) is addressed by offsets that use no run-time argument."""
    if not strided:
        return
    depends = _Slice(fn)
    args = {id(a): a.name for a in fn.args}
    for op in fn.body.walk():
        name = args.get(id(op.operands[0])) if op.kind in _ACCESSES and op.operands else None
        if name not in strided:
            continue
        if op.kind in (Kind.LOAD, Kind.STORE, Kind.ATOMIC_ADD):
            addressing = [op.operands[1]]
        else:                           # block ops: (ptr, *shape, *strides, *offsets[, value])
            addressing = op.operands[1:]
        if not any(depends(o) for o in addressing):
            raise LaunchError(
                f"argument '{name}' is a non-contiguous view, but kernel '{kernel}' addresses "
                f"it at {op.loc.file}:{op.loc.line} with offsets built from program ids, "
                "aranges and constants only, as if it were contiguous (it would read the "
                "gaps between its elements). Pass np.ascontiguousarray(...), or pass the "
                "view's strides (x.strides[d] // x.itemsize) and use them in the offsets")
