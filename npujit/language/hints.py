"""Compiler hints Triton kernels carry: ``multiple_of``, ``max_contiguous``,
``max_constancy`` and ``assume``.  The schedule sees the real access pattern, so they
change nothing in the compiled code; in debug mode (``NPUJIT_DEBUG=1``) the ones that state
a checkable fact become run-time checks (``device_assert``), so a false hint is caught
instead of trusted.
"""
from __future__ import annotations

from . import semantic as sem
from .core import builtin, pointer, tensor, unwrap_constexpr
from .debug import device_assert
from .tracing import current


def _values(values, what: str) -> tuple:
    values = unwrap_constexpr(values)
    values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    if not all(isinstance(v, int) and v > 0 for v in values):
        raise sem.error(f"{what}: the hint values must be positive constant ints, got {values!r}")
    return values


@builtin
def multiple_of(x, values):
    """``x``, stating that its elements are multiples of ``values`` (one per axis, or one).
    Checked in debug mode.

    Example::

        offs = nl.multiple_of(pid * BLOCK, BLOCK)
    """
    values = _values(values, "multiple_of")
    if isinstance(x, pointer):      # a pointer tile (Triton's grouped GEMM hints its tiles)
        return x
    x = sem.to_tensor(x)
    if current().debug and x.dtype.is_int and len(values) == 1:
        device_assert(x % values[0] == 0, f"multiple_of({values[0]}) does not hold")
    return x


def _layout_hint(name: str, doc: str):
    """A hint about the layout of ``x``'s values, returned unchanged (no effect here)."""
    def fn(x, values):
        _values(values, name)
        return x if isinstance(x, pointer) else sem.to_tensor(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


max_contiguous = _layout_hint("max_contiguous", """``x``, stating runs of ``values`` consecutive
elements (a layout hint; no effect).

Example::

    offs = nl.max_contiguous(offs, BLOCK)
""")
max_constancy = _layout_hint("max_constancy", """``x``, stating runs of ``values`` equal elements
(a layout hint; no effect).

Example::

    rows = nl.max_constancy(rows, BLOCK)
""")


@builtin
def assume(cond) -> None:
    """State that ``cond`` holds; checked in debug mode, trusted (and unused) otherwise.

    Example::

        nl.assume(n > 0)
    """
    if isinstance(cond, tensor) and not cond.dtype.is_bool:
        raise sem.error(f"assume needs a bool condition (a comparison), got {cond.dtype}")
    device_assert(cond, "assume() does not hold")
