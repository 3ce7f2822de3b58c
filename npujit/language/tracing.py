"""The trace context: the IR being built while a kernel's Python function runs on proxies.

Language functions (``npujit.language``) call ``current()`` to get the active context and
stamp each op with the user's source location, found by walking out of npujit's own frames.

Example::

    >>> from npujit.language.tracing import current
    >>> current()          # outside a kernel
    Traceback (most recent call last):
    ...
    RuntimeError: ...
"""
from __future__ import annotations

import os
import sys
import threading

from npujit.ir import Builder, Function, Loc

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Frames from these folders are npujit's own; kernels/ is user code and is not skipped.
_INTERNAL = tuple(os.path.join(_ROOT, d) + os.sep for d in ("jit", "ir", "backends", "npujit"))
_state = threading.local()


class TraceContext:
    """One kernel being traced: its IR function, a builder and the kernel's name."""

    def __init__(self, fn: Function, kernel_name: str, debug: bool = False, rewrite=None,
                 num_stages: int | None = None):
        self.fn = fn
        # The kernel's num_stages option: the stages of an nl.range that does not say
        # (Triton's num_stages; the autotuner's Config(num_stages=...)).
        self.num_stages = num_stages
        # How a helper's Python loops become IR loops (jit's AST rewrite): the language
        # calls it through the context, so it never imports the layer above it.
        self.rewrite = rewrite
        self.kernel_name = kernel_name
        self.debug = debug          # device_assert emits checks only in debug mode
        self.builder = Builder(fn.body)
        self.const_args: set = set()   # ids of the read-only pointer arguments (nl.const)

    def loc(self) -> Loc:
        return user_loc()


def user_loc(depth: int = 1) -> Loc:
    """The innermost frame outside npujit's own modules (the user's kernel line)."""
    f = sys._getframe(depth)
    while f is not None:
        fname = f.f_code.co_filename
        if not fname.startswith(_INTERNAL) and not fname.startswith("<frozen"):
            return Loc(fname, f.f_lineno)
        f = f.f_back
    return Loc("<unknown>", 0)


def traceback_loc(tb) -> Loc:
    """The innermost frame of traceback ``tb`` outside npujit's own modules: the user's line
    an exception raised while tracing came from."""
    loc = Loc("<unknown>", 0)
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if not fname.startswith(_INTERNAL) and not fname.startswith("<frozen"):
            loc = Loc(fname, tb.tb_lineno)
        tb = tb.tb_next
    return loc


def current(what: str = "this function") -> TraceContext:
    """The active trace; raises a clear error when called outside a kernel."""
    ctx = getattr(_state, "ctx", None)
    if ctx is None:
        raise RuntimeError(
            f"{what} can only be called inside an @npu_kernel function (or an @nl.inline "
            "helper called from one); it builds the kernel's IR while the kernel is traced.")
    return ctx


def active() -> TraceContext | None:
    return getattr(_state, "ctx", None)


class tracing:
    """``with tracing(ctx):`` makes ``ctx`` the active trace."""

    def __init__(self, ctx: TraceContext):
        self.ctx = ctx

    def __enter__(self):
        self.saved = getattr(_state, "ctx", None)
        _state.ctx = self.ctx
        return self.ctx

    def __exit__(self, *exc):
        _state.ctx = self.saved
        return False
