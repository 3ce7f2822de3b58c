"""Compile-time checks and device-side printing: ``static_assert``, ``device_print``."""
from __future__ import annotations

from npujit.ir import Kind

from . import semantic as sem
from .core import builtin, constexpr, tensor


@builtin
def static_assert(cond, msg: str = "") -> None:
    """Fail compilation at this line unless the constant ``cond`` holds.

    Example::

        nl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    """
    if isinstance(cond, constexpr):
        cond = cond.value
    if isinstance(cond, tensor):
        raise sem.error("static_assert needs a compile-time condition (constexprs and "
                        "shapes), got a traced tensor")
    if not cond:
        raise sem.error(f"static_assert failed: {msg}" if msg else "static_assert failed")


@builtin
def device_print(prefix: str, *args) -> None:
    """Print ``prefix`` and each value when the kernel runs, tagged with the program id.

    Example::

        nl.device_print("row max", m)
    """
    if not isinstance(prefix, str):
        raise sem.error(f"device_print: the first argument must be a string prefix, got {prefix!r}")
    vals = [sem.to_tensor(a) for a in args]
    sem.emit(Kind.PRINT, vals, {"prefix": prefix}, nresults=0)
