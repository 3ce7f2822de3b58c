"""The numba backend: IR -> plain Python source -> ``numba.njit``, cached on disk.

Public API: ``NumbaBackend`` (``compile(fn, options) -> run(grid, args)``).  The
generated source (``run.source``) is ordinary Python, so ``NUMBA_DISABLE_JIT=1`` runs
the very same code in the interpreter for stepping through a kernel.
"""
from .vector_width import prefer_512_bit_vectors

prefer_512_bit_vectors()            # before anything below makes numba build its target

from .backend import NumbaBackend  # noqa: E402

__all__ = ["NumbaBackend"]
