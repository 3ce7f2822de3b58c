"""``@nl.inline``: helpers called from kernels whose ``nl.range`` loops become IR loops."""
from __future__ import annotations

import functools

from .tracing import current


def inline(fn):
    """Mark a helper called from kernels; its ``nl.range`` loops become IR loops too.

    Example::

        @nl.inline
        def row_sum(ptr, n, BLOCK):
            acc = nl.zeros((BLOCK,), nl.float32)
            for i in nl.range(0, n, BLOCK):
                acc += nl.load(ptr + i + nl.arange(0, BLOCK))
            return nl.sum(acc)
    """
    state = {}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        ctx = current(f"@nl.inline function '{fn.__name__}'")
        if "f" not in state:
            state["f"] = ctx.rewrite(fn)
        return state["f"](*args, **kwargs)

    return wrapper
