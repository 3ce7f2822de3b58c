"""Building IR: an insertion point, type inference from the kind table, and nested regions.

Example::

    >>> from npujit.ir import Builder, Function, Kind, types as T
    >>> fn = Function("k", [T.PtrType(T.float32)], ["x"])
    >>> b = Builder(fn.body)
    >>> c = b.constant(1.0, T.float32)
    >>> s = b.op(Kind.SPLAT, [c], {"shape": (4,)})
    >>> str(s.type)
    'tensor<4xf32>'
"""
from __future__ import annotations

from contextlib import contextmanager

from .core import Block, Op, Value
from .ops import Kind, infer_types
from .types import DType, TensorType


class Builder:
    """Appends ops to a block; ``loc`` is stamped on every op it creates."""

    def __init__(self, block: Block, loc=None):
        self.block = block
        self.loc = loc

    def create(self, kind: Kind, operands, attrs=None, result_types=None, regions=(),
               loc=None) -> Op:
        """Create an op at the insertion point.  Result types come from the kind's type
        rule unless given (they must be given for ``npu.fused``)."""
        attrs = dict(attrs or {})
        if result_types is None:
            result_types = infer_types(kind, [v.type for v in operands], attrs)
        op = Op(kind, operands, result_types, attrs, regions, loc or self.loc)
        self.block.append(op)
        return op

    def op(self, kind: Kind, operands, attrs=None, loc=None) -> Value:
        """Create a single-result op and return its result."""
        return self.create(kind, operands, attrs, loc=loc).result

    def constant(self, value, dtype: DType, loc=None) -> Value:
        """A scalar constant, stored normalised to the dtype's Python kind."""
        if dtype.is_float:
            value = float(value)
        elif dtype.is_bool:
            value = bool(value)
        else:
            value = int(value)
        return self.op(Kind.CONSTANT, [], {"value": value, "dtype": dtype}, loc=loc)

    @contextmanager
    def at(self, block: Block):
        """Temporarily build into ``block`` (a region body)."""
        saved = self.block
        self.block = block
        try:
            yield self
        finally:
            self.block = saved

    def for_loop(self, lb: Value, ub: Value, step: Value, inits, attrs=None, loc=None) -> Op:
        """An ``scf.for`` whose body block has (iv, *carried) arguments; the caller fills
        the body and ends it with ``scf.yield``."""
        body = Block([lb.type] + [v.type for v in inits])
        return self.create(Kind.FOR, [lb, ub, step, *inits], attrs, regions=[body], loc=loc)


def is_tile(v: Value) -> bool:
    return isinstance(v.type, TensorType)
