"""The numba backend: IR -> plain Python source -> ``numba.njit``, cached on disk.

Public API: ``NumbaBackend`` (``compile(fn, options) -> run(grid, args)``).  The
generated source (``run.source``) is ordinary Python, so ``NUMBA_DISABLE_JIT=1`` runs
the very same code in the interpreter for stepping through a kernel.
"""
from .backend import NumbaBackend

__all__ = ["NumbaBackend"]
