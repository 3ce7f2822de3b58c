"""Compile-time checks, run-time checks and printing: ``static_assert``, ``static_print``,
``device_assert``, ``device_print``, and ``debug_barrier`` (nothing to order here)."""
from __future__ import annotations

from npujit.ir import Kind

from . import semantic as sem
from .core import builtin, tensor, unwrap_constexpr
from .tracing import current


@builtin
def debug_barrier() -> None:
    """Triton's barrier between the threads of a program: nothing to do here, since a
    program's ops run in program order on one AI core (the schedule's flags already order
    its pipes).

    Example::

        nl.store(ptrs, x)
        nl.debug_barrier()
        nl.atomic_xchg(lock, 0)
    """


@builtin
def static_assert(cond, msg: str = "") -> None:
    """Fail compilation at this line unless the constant ``cond`` holds.

    Example::

        nl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    """
    cond = unwrap_constexpr(cond)
    if isinstance(cond, tensor):
        raise sem.error("static_assert needs a compile-time condition (constexprs and "
                        "shapes), got a traced tensor")
    if not cond:
        raise sem.error(f"static_assert failed: {msg}" if msg else "static_assert failed")


@builtin
def static_print(*values) -> None:
    """Print ``values`` once, while the kernel compiles (constants, shapes and dtypes;
    a traced tensor prints as its type).

    Example::

        nl.static_print("BLOCK =", BLOCK, x.shape)
    """
    print(*(unwrap_constexpr(v) for v in values))


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


@builtin
def device_assert(cond, msg: str = "") -> None:
    """Check ``cond`` (a bool scalar or tile) in every lane when the kernel runs, and
    raise ``npujit.DeviceAssertionError`` naming the kernel, this line, the program id and
    the first failing lane.  As in Triton, the check exists only when the kernel is
    compiled in debug mode (``@npu_kernel(debug=True)`` or ``NPUJIT_DEBUG=1``); otherwise
    it costs nothing.

    Example::

        nl.device_assert(offs < n, "offsets past the end")
    """
    if not isinstance(msg, str):
        raise sem.error(f"device_assert: the message must be a string, got {msg!r}")
    cond = unwrap_constexpr(cond)
    if not isinstance(cond, tensor):
        if not cond:
            raise sem.error(f"device_assert on a constant that is false: {msg}")
        return
    if cond.dtype.name != "i1":
        raise sem.error(f"device_assert needs a bool condition (a comparison), got {cond.dtype}")
    if current().debug:
        sem.emit(Kind.ASSERT, [cond], {"message": msg, "error": "assert"}, nresults=0)
