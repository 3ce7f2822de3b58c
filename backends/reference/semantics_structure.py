"""Reference semantics of the structural ops: constants, program ids, arange, print,
assert, loops, fused regions and terminators (docs/semantics.md, "Structure").

Region ops run their body through ``ctx.run_block(block, args)``, which returns the
values the block's terminator (``scf.yield``) gives.  Terminators simply return their
operands.

Example::

    >>> import numpy as np
    >>> from npujit.ir import Kind, types as T
    >>> class Op: attrs = {"value": 0.1, "dtype": T.float16}
    >>> SEMANTICS_STRUCTURE[Kind.CONSTANT](None, Op)
    array(0.1, dtype=float16)
"""
from __future__ import annotations

import numpy as np

from npujit.ir import Kind
from npujit.errors import DeviceAssertionError, IndexOverflowError

from .numerics import I32, fits_int


def constant(ctx, op):
    """The scalar ``value`` in ``dtype``: floats rounded once (nearest even) from the
    Python float; ints must fit the dtype (a constant never wraps silently)."""
    value, dtype = op.attrs["value"], op.attrs["dtype"]
    if dtype.is_int and not fits_int(int(value), dtype.np):
        raise ValueError(f"arith.constant at {op.loc}: {value} does not fit {dtype}")
    return np.asarray(value, dtype=dtype.np)


def program_id(ctx, op):
    """This program's index along ``axis`` (i32)."""
    return np.asarray(ctx.pid[op.attrs["axis"]], dtype=I32)


def num_programs(ctx, op):
    """The grid's size along ``axis`` (i32)."""
    return np.asarray(ctx.grid[op.attrs["axis"]], dtype=I32)


def arange(ctx, op):
    """The i32 tile ``[start, end)``."""
    return np.arange(op.attrs["start"], op.attrs["end"], dtype=I32)


def print_(ctx, op, *values):
    """Print ``[pid (x, y, z)] <prefix> <value>`` once per value."""
    head = "[pid ({}, {}, {})]".format(*ctx.pid)
    prefix = op.attrs.get("prefix", "")
    if prefix:
        head = f"{head} {prefix}"
    if not values:
        print(head, flush=True)
    for v in values:
        text = str(v) if isinstance(v, np.ndarray) and v.ndim == 0 else np.array2string(v)
        print(f"{head} {text}", flush=True)


def assert_(ctx, op, cond):
    """Raise where a lane of ``cond`` is false: ``DeviceAssertionError`` (or, for the
    debug-mode index checks, ``IndexOverflowError``) naming kernel, line, program, lane."""
    if np.all(cond):
        return
    lane = tuple(int(i) for i in np.argwhere(~np.asarray(cond, bool))[0])
    overflow = op.attrs.get("error") == "overflow"
    cls, what = ((IndexOverflowError, "index arithmetic") if overflow
                 else (DeviceAssertionError, "device_assert"))
    raise cls(f"kernel '{ctx.kernel}', {what} at {op.loc}, program {ctx.pid}: "
              f"lane {lane}: {op.attrs['message']}")


def for_(ctx, op, lb, ub, step, *inits):
    """Run the body for iv = lb, lb + step, ... while iv < ub (step > 0) or iv > ub
    (step < 0), threading the carried values; the results are the last carried values
    (the inits when the loop runs zero times).  The iv has lb's dtype."""
    lo, hi, st = int(lb), int(ub), int(step)
    if st == 0:
        raise ValueError(f"kernel '{ctx.kernel}', scf.for at {op.loc}, program {ctx.pid}: "
                         f"the loop step is 0 (from {lo} to {hi}); it would never end")
    iv_dtype = lb.dtype
    carried = tuple(inits)
    iv = lo
    while (iv < hi) if st > 0 else (iv > hi):
        # iv stays between lb and ub; the i64 -> lb dtype conversion only matters (wraps)
        # when ub has a wider type than lb.
        iv_value = np.asarray(iv, dtype=np.int64).astype(iv_dtype)
        carried = tuple(ctx.run_block(op.body, (iv_value, *carried)))
        iv += st
    return carried


def if_(ctx, op, cond):
    """Run the then region when ``cond`` is true, else the else region; the results are
    what the region that ran yields (the other region does not run)."""
    return tuple(ctx.run_block(op.regions[0 if bool(cond) else 1], ()))


def while_(ctx, op, cond, *inits):
    """While the condition is true run the body, which yields the next condition and the
    next carried values; the results are the last carried values (the inits when the
    first condition is false)."""
    carried = tuple(inits)
    while bool(cond):
        cond, *rest = ctx.run_block(op.body, carried)
        carried = tuple(rest)
    return carried


def fused(ctx, op, *inputs):
    """Exactly its region: block args are the inputs, the yield gives the results."""
    return tuple(ctx.run_block(op.body, inputs))


def terminator(ctx, op, *values):
    """``scf.yield`` / ``func.return``: the values the enclosing block hands back."""
    return values


SEMANTICS_STRUCTURE = {
    Kind.CONSTANT: constant,
    Kind.PROGRAM_ID: program_id,
    Kind.NUM_PROGRAMS: num_programs,
    Kind.ARANGE: arange,
    Kind.PRINT: print_,
    Kind.ASSERT: assert_,
    Kind.FOR: for_,
    Kind.IF: if_,
    Kind.WHILE: while_,
    Kind.FUSED: fused,
    Kind.YIELD: terminator,
    Kind.RETURN: terminator,
}
