"""Reference semantics of the global-memory ops: load, store, atomic_add, block_load and
block_store (docs/semantics.md, "Global memory").  The addressing and bounds rules live
in ``memory.py``; this file unpacks each op's operands and attributes.

A pointer operand's value is the kernel argument's 1-D numpy array itself, so stores
and atomics write the caller's memory directly.

Example::

    >>> import numpy as np
    >>> from npujit.ir import Builder, Function, Kind, types as T
    >>> fn = Function("k", [T.PtrType(T.float32)], ["x"])
    >>> b = Builder(fn.body)
    >>> offs = b.op(Kind.ARANGE, [], {"start": 0, "end": 2})
    >>> load_op = b.op(Kind.LOAD, [fn.args[0], offs]).op
    >>> class Ctx: kernel, pid = "k", (0, 0, 0)
    >>> load(Ctx, load_op, np.array([5.0, 6.0], np.float32), np.arange(2, dtype=np.int32))
    array([5., 6.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from npujit.ir import Kind

from . import memory
from .numerics import arith, fmax_num, fmin_num, is_float


def _site(ctx, op) -> memory.AccessSite:
    return memory.AccessSite(ctx.kernel, op.kind.value, str(op.loc), ctx.pid,
                             getattr(op.operands[0], "name", None))


def load(ctx, op, mem, offsets, mask=None, other=None):
    """Lane i is ``mem[offsets[i]]`` where ``mask[i]``, else ``other[i]`` (or 0)."""
    return memory.gather(mem, offsets, mask, other, _site(ctx, op))


def store(ctx, op, mem, offsets, value, mask=None):
    """Lane i writes ``value[i]`` to ``mem[offsets[i]]`` where ``mask[i]``."""
    memory.scatter(mem, offsets, value, mask, _site(ctx, op))


def atomic_rmw(ctx, op, mem, offsets, value, mask=None, cmp=None):
    """Per lane in row-major order: ``old = mem[o]; mem[o] = combine(old, value)``; returns
    old.  ``combine`` is the op's attribute (add when absent); ``cas`` writes ``value``
    where ``old == cmp`` (numeric equality)."""
    if cmp is not None:
        return memory.atomic_add(mem, offsets, value, mask, _cas, _site(ctx, op), cmp)
    combine = _COMBINE[op.attrs.get("combine", "add")]
    return memory.atomic_add(mem, offsets, value, mask, combine, _site(ctx, op))


def _cas(old, value, cmp):
    return np.where(old == cmp, value, old)


def _add(a, b):
    # The npu.add rule: ints wrap, half floats add in f32 and round per addition.
    return arith(np.add, a, b)


# The rule of each combine: as the elementwise op of that name (docs/semantics.md)
_COMBINE = {"add": _add, "max": lambda a, b: arith(fmax_num, a, b),
            "min": lambda a, b: arith(fmin_num, a, b), "xchg": lambda a, b: b,
            "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _block(ctx, op, mem, scalars) -> memory.BlockAccess:
    """Unpack (shape[r], strides[r], offsets[r]) and address the block."""
    block_shape = tuple(op.attrs["block_shape"])
    shape, strides, offsets = ([int(s) for s in part]
                               for part in op.block_layout([mem, *scalars]))
    return memory.block_access(shape, strides, offsets, block_shape,
                               tuple(op.attrs.get("boundary_check", ())), mem.shape[0],
                               _site(ctx, op))


def _padding(op, dtype: np.dtype) -> float:
    padding = op.attrs.get("padding", "zero")
    if padding == "zero":
        return 0
    if not is_float(dtype):
        raise ValueError(f"{op.kind.value} at {op.loc}: padding='nan' needs a float tile, "
                         f"got {dtype}; use padding='zero'")
    return np.nan


def block_load(ctx, op, mem, *scalars):
    """The block tile; on boundary-checked axes, elements outside the shape are padding."""
    return memory.block_gather(mem, _block(ctx, op, mem, scalars), _padding(op, mem.dtype))


def block_store(ctx, op, mem, *scalars_and_value):
    """Write the block; elements outside checked bounds are not written."""
    *scalars, value = scalars_and_value
    memory.block_scatter(mem, _block(ctx, op, mem, scalars), value)


SEMANTICS_MEMORY = {
    Kind.LOAD: load,
    Kind.STORE: store,
    Kind.ATOMIC_RMW: atomic_rmw,
    Kind.BLOCK_LOAD: block_load,
    Kind.BLOCK_STORE: block_store,
}
