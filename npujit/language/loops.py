"""Loops: ``nl.range`` becomes an IR loop (``scf.for``) with loop-carried values;
``nl.static_range`` unrolls at trace time.

Inside a kernel, Python's ``range`` means ``nl.range`` (as in Triton).  Variables assigned
in the loop body and defined before the loop are carried: ``acc += nl.dot(a, b)`` works.

Example::

    acc = nl.zeros((BM, BN), nl.float32)
    for k in nl.range(0, K, BK, num_stages=2):
        acc += nl.dot(nl.load(a_blk), nl.load(b_blk))
"""
from __future__ import annotations

from . import semantic as sem
from .core import unwrap_constexpr
from .tracing import current


class range:
    """An IR loop over ``[start, end)`` by ``step``; bounds may be traced scalars.

    ``num_stages`` asks the scheduler to multi-buffer the loop's transfers.  Triton's
    other loop hints (``loop_unroll_factor``, ``disallow_acc_multi_buffer``, ``flatten``,
    ``warp_specialize``, ``disable_licm``) are accepted and change nothing: they steer GPU
    code generation, and this loop means the same with or without them.

    Example::

        for k in nl.range(0, nl.cdiv(K, BK), num_stages=2): ...
    """

    def __init__(self, arg1, arg2=None, step=None, num_stages: int | None = None,
                 loop_unroll_factor=None, disallow_acc_multi_buffer=False, flatten=False,
                 warp_specialize=False, disable_licm=False):
        if arg2 is None:
            start, end = 0, arg1
        else:
            start, end = arg1, arg2
        self.start = unwrap_constexpr(start)
        self.end = unwrap_constexpr(end)
        step = 1 if step is None else step
        self.step = unwrap_constexpr(step)
        self.num_stages = num_stages

    def __iter__(self):
        ctx = current("nl.range")
        raise sem.error(
            "this nl.range loop is not inside an @npu_kernel or @nl.inline function, so it "
            "cannot become an IR loop; decorate the helper that contains it with @nl.inline "
            f"(tracing kernel '{ctx.kernel_name}')")


def condition(cond, disable_licm=False):
    """A ``while`` loop's condition, with Triton's loop hint ``disable_licm`` (accepted,
    no effect here): the loop is the same as ``while cond:``.

    Example::

        while nl.condition(i < n, disable_licm=True):
            i += 1
    """
    return cond


class static_range:
    """A loop unrolled while tracing; bounds must be constants.

    Example::

        for i in nl.static_range(4):
            acc += nl.load(x_ptr + i * BLOCK + offs)
    """

    def __init__(self, arg1, arg2=None, step=1):
        if arg2 is None:
            arg1, arg2 = 0, arg1
        vals = [unwrap_constexpr(v) for v in (arg1, arg2, step)]
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, int):
                raise sem.error(f"nl.static_range bounds must be constant ints, got {v!r}; "
                                "use nl.range for runtime bounds")
        self.start, self.end, self.step = vals

    def __iter__(self):
        import builtins
        return iter(builtins.range(self.start, self.end, self.step))
