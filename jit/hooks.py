"""Compile hooks: a callable registered here receives one ``CompileEvent`` per compile.

This replaces a global list that grew with every compile of the process (Triton's
``knobs.runtime.jit_post_compile_hook`` plays the same part).  Hooks run in the compiling
thread, after the specialisation is cached; an exception in a hook propagates to the
launch that compiled, so a test hook that asserts fails the test.

Example::

    >>> events = []
    >>> with on_compile(events.append):                  # doctest: +SKIP
    ...     add_kernel[(4,)](x, y, out, n, BLOCK=1024)
    >>> events[0].kernel, events[0].constexprs           # doctest: +SKIP
    ('add_kernel', {'BLOCK': 1024})
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Callable


@dataclasses.dataclass(frozen=True)
class CompileEvent:
    """One compile: which kernel, for which specialisation, on which backend, how long."""

    kernel: str           # the kernel's name
    sigs: tuple           # per parameter: its specialisation signature (binder.arg_signature)
    constexprs: dict      # constexpr values of this specialisation
    backend: str          # backend name
    options: tuple        # the compile options, sorted (name, value) pairs
    seconds: float        # wall time of trace + passes + schedule (+ backend, if built)
    from_disk: bool = False   # loaded from the disk cache (jit/cache.py): nothing traced


_hooks: tuple = ()
_lock = threading.Lock()


class _Registration:
    """What ``on_compile`` returns: ``remove()`` it, or use it as a context manager."""

    def __init__(self, hook: Callable[[CompileEvent], None]):
        self.hook = hook

    def remove(self) -> None:
        global _hooks
        with _lock:
            _hooks = tuple(h for h in _hooks if h is not self.hook)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def on_compile(hook: Callable[[CompileEvent], None]) -> _Registration:
    """Call ``hook(event)`` after every compile in this process until removed.

    Example::

        >>> reg = on_compile(lambda e: print(e.kernel, round(e.seconds, 2)))
        >>> reg.remove()
    """
    if not callable(hook):
        raise TypeError(f"on_compile takes a callable, got {type(hook).__name__}")
    global _hooks
    with _lock:      # copy-on-write: emit() reads the tuple without a lock
        _hooks = _hooks + (hook,)
    return _Registration(hook)


def emit(event: CompileEvent) -> None:
    """Give ``event`` to every registered hook."""
    for hook in _hooks:
        hook(event)
