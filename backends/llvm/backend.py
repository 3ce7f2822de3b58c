"""``LlvmBackend``: IR function -> LLVM IR text -> machine code through llvmlite, without
numba: a kernel compiles in tens of milliseconds where the numba backend takes about a
second (benchmarks/bench_llvm_compile.py), and a cached kernel loads in a fresh process
without importing numba.

It lowers the whole language, the 8-bit floats (halfprec.py) and ``device_print``
(lower_print.py) included.  Programs run on a thread pool when that proves faster
(``parallel``/``num_threads`` options as the numba backend's; runtime.py).  The conformance table, the op
table and a fuzz tier check it against the reference interpreter (tests/conformance,
tests/backends/test_llvm*.py, tests/fuzz/test_llvm.py).
Options: ``bounds_check`` (default ``NPUJIT_BOUNDS_CHECK``, on) checks every active
element's offset against its argument; ``debug`` (``NPUJIT_DEBUG``) too.

Example::

    >>> run = LlvmBackend().compile(fn, {})                 # doctest: +SKIP
    >>> run((n // 128, 1, 1), [x, y, out, n])               # doctest: +SKIP
"""
from __future__ import annotations

from npujit import knobs


class LlvmBackend:
    """Compiles IR functions with llvmlite; see the module doc."""

    name = "llvm"

    def compile(self, fn, options: dict | None = None):
        """``run(grid, args)`` for ``fn`` (calling convention in ``backends/base.py``)."""
        from .lower import generate
        from .runtime import Launcher, build
        opts = _defaults(options)
        launcher = Launcher(build(generate(fn, opts)), opts)
        launcher.rebuild = lambda other: self.compile(fn, other)
        return launcher

    def load(self, artifact, options: dict | None = None):
        """The launcher of an artifact built before (kept by the kernel cache), or None
        when it was built by another version of this backend, llvmlite or CPU."""
        from .runtime import Launcher, built_for
        if getattr(artifact, "built_for", None) != built_for():
            return None
        return Launcher(artifact, _defaults(options))


def _defaults(options: dict | None) -> dict:
    opts = dict(options or {})
    opts.setdefault("debug", knobs.debug())
    opts.setdefault("bounds_check", knobs.bounds_check())
    return opts
