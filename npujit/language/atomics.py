"""Atomic read-modify-writes on global memory: ``atomic_add``, ``atomic_max``,
``atomic_min``, ``atomic_xchg``, ``atomic_and``, ``atomic_or``, ``atomic_xor`` and
``atomic_cas`` (compare-and-swap).

Each active lane, in row-major order, reads ``old = mem[o]``, writes
``combine(old, val)`` and returns ``old`` (masked-off lanes return 0 and touch nothing).
The combine follows the elementwise op of the same name (``max``/``min`` ignore a NaN
operand, as ``nl.maximum``; half floats round each add).  Triton's ``sem=`` ("relaxed", "acquire", "release",
"acq_rel") and ``scope=`` ("gpu", "cta", "sys") are accepted and change nothing: here
every atomic is sequentially consistent across programs.
"""
from __future__ import annotations

from . import semantic as _sem
from .core import builtin, tensor
from .memory import atomic_rmw

_SEMS = (None, "relaxed", "acquire", "release", "acq_rel")
_SCOPES = (None, "gpu", "cta", "sys")


def _atomic(combine: str, doc: str):
    """The public ``atomic_<combine>(ptr, val, mask=None, sem=None, scope=None)``."""
    what = f"atomic_{combine}"

    def fn(ptr, val, mask=None, sem=None, scope=None) -> tensor:
        if sem not in _SEMS:
            raise _sem.error(f"{what}: sem must be one of {_SEMS[1:]}, got {sem!r}")
        if scope not in _SCOPES:
            raise _sem.error(f"{what}: scope must be one of {_SCOPES[1:]}, got {scope!r}")
        return atomic_rmw(combine, ptr, val, mask, what)
    fn.__name__ = fn.__qualname__ = what
    fn.__doc__ = doc
    return builtin(fn)


atomic_add = _atomic("add", """Atomically add ``val`` into GM at ``ptr``; returns the values seen
before each add.

Example::

    nl.atomic_add(counts_ptr + expert_ids, 1, mask=valid)
""")
atomic_max = _atomic("max", """Atomically ``mem = maximum(mem, val)``; returns the old values.

Example::

    nl.atomic_max(best_ptr + row, score)
""")
atomic_min = _atomic("min", """Atomically ``mem = minimum(mem, val)``; returns the old values.

Example::

    nl.atomic_min(first_ptr + key, idx)
""")
atomic_xchg = _atomic("xchg", """Atomically store ``val``; returns the values it replaced.

Example::

    old = nl.atomic_xchg(flag_ptr, 1)
""")
atomic_and = _atomic("and", """Atomically ``mem &= val`` (integer or bool memory); returns the old
values.

Example::

    nl.atomic_and(bits_ptr + word, keep)
""")
atomic_or = _atomic("or", """Atomically ``mem |= val`` (integer or bool memory); returns the old
values.

Example::

    nl.atomic_or(bits_ptr + word, 1 << bit)
""")
@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None) -> tensor:
    """Atomic compare-and-swap: where ``mem == cmp`` (numeric equality) write ``val``;
    returns the old values either way.

    Example::

        old = nl.atomic_cas(lock_ptr, 0, 1)      # take the lock if it was free
    """
    if sem not in _SEMS or scope not in _SCOPES:
        raise _sem.error(f"atomic_cas: sem must be one of {_SEMS[1:]} and scope one of "
                         f"{_SCOPES[1:]}, got {sem!r} and {scope!r}")
    return atomic_rmw("cas", pointer, val, None, "atomic_cas", cmp=cmp)


atomic_xor = _atomic("xor", """Atomically ``mem ^= val`` (integer or bool memory); returns the old
values.

Example::

    nl.atomic_xor(bits_ptr + word, flip)
""")
