"""check-strided-views: a non-contiguous view must be addressed with the strides it was given.

(A column-major array has no gaps: its pointer addresses its storage, as in Triton, and it
is not checked here.)

Offsets built from program ids, ``arange`` and constants alone address memory as if the
array were contiguous, and would read the gaps between a view's elements: for an argument
the launch passes as a non-contiguous view (``ctx.strided_args``) that is a LaunchError
naming the argument and the access's line, not a silently wrong result.

Example::

    >>> from npujit.ir.pipeline import CompileContext
    >>> CheckStridedViews().run(fn, CompileContext(strided_args=frozenset({"x"})))  # doctest: +SKIP
    Traceback (most recent call last):
    npujit.errors.LaunchError: argument 'x' is a non-contiguous view, ...
"""
from __future__ import annotations

from npujit.errors import LaunchError

from ..core import Function
from ..ops import Kind
from ..slice import addressing, backward_slice
from ..types import PtrType

_ACCESSES = (Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW, Kind.BLOCK_LOAD, Kind.BLOCK_STORE)
_DATA = (Kind.LOAD, Kind.BLOCK_LOAD, Kind.ATOMIC_RMW)   # values read from memory


class CheckStridedViews:
    """Checks, never changes anything (see the module doc)."""

    name = "check-strided-views"

    def run(self, fn: Function, ctx=None) -> bool:
        strided = ctx.strided_args if ctx is not None else frozenset()
        if not strided:
            return False
        scalars = {id(a) for a in fn.args if not isinstance(a.type, PtrType)}

        def depends(v) -> bool:
            """Does ``v`` use a run-time scalar argument, or data read from memory?"""
            ops, reached = backward_slice([v], stop=_DATA)
            return (any(id(a) in scalars for a in reached)
                    or any(op.kind in _DATA for op in ops))

        args = {id(a): a.name for a in fn.args}
        for op in fn.body.walk():
            name = args.get(id(op.operand("ptr"))) if op.kind in _ACCESSES else None
            if name not in strided:
                continue
            if not any(depends(o) for o in addressing(op)):
                raise LaunchError(
                    f"argument '{name}' is a non-contiguous view, but kernel '{ctx.kernel}' "
                    f"addresses it at {op.loc.file}:{op.loc.line} with offsets built from "
                    "program ids, aranges and constants only, as if it were contiguous (it "
                    "would read the gaps between its elements). Pass np.ascontiguousarray"
                    "(...), or pass the view's strides (x.strides[d] // x.itemsize) and use "
                    "them in the offsets")
        return False
