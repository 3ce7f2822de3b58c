"""What every backend provides: compile an IR function into something that runs a grid.

Calling convention of a compiled kernel ``run(grid, args)``:

* ``grid`` is a 3-tuple of positive ints (programs along axes 0, 1, 2).
* ``args`` follow ``fn.args``: a ``!npu.ptr<T>`` argument is a 1-D numpy array of T's
  storage dtype (float16 -> ``np.float16``, bfloat16 -> ``ml_dtypes.bfloat16``, i1 ->
  ``np.bool_``) whose element 0 is what offset 0 addresses; a scalar argument is a Python
  ``int`` (integer types), ``float`` (f32) or ``bool`` (i1).
* Programs run in an unspecified order; masked-off lanes never touch memory.

Example::

    >>> from npujit.backends import get_backend
    >>> run = get_backend("reference").compile(fn, {})     # doctest: +SKIP
    >>> run((4, 1, 1), [x, y, out, n])                      # doctest: +SKIP
"""
from __future__ import annotations

from typing import Callable, Protocol


class Backend(Protocol):
    name: str

    def compile(self, fn, options: dict) -> Callable:
        """Return ``run(grid, args)`` for the IR function ``fn``."""
        ...

    # Optional: ``load(artifact, options) -> run | None`` rebuilds ``run`` from the
    # ``run.artifact`` (plain data) of an earlier compile, without the IR; None when
    # the artifact does not fit these options (jit/compiled.py then compiles).

    def run_recorded(self, fn, grid, args, hook, buffers=None, numerics: bool = True) -> None:
        """Run ``fn`` over ``grid`` with ``args`` (outputs land in ``args``), calling
        ``hook`` for every executed op as the reference interpreter's ``Plan.run`` does
        (``begin``/``end`` per program, ``op`` per op, loop events): what the simulator's
        stream recorder (``sim/lower.py``) consumes.  ``buffers=(poison, on_wait)`` keeps
        every tile in its scheduled buffer (reference backend only).  ``numerics=False``
        executes only the ops that decide the stream (``ir.slice.stream_slice``): the
        hook sees the same ops and operands it reads, outputs may hold garbage."""
        ...


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("reference", "numba", "llvm" or "ascendc-twin")."""
    if name == "reference":
        from .reference import ReferenceBackend
        return ReferenceBackend()
    if name == "numba":
        from .numba import NumbaBackend
        return NumbaBackend()
    if name == "llvm":
        from .llvm import LlvmBackend
        return LlvmBackend()
    if name == "ascendc-twin":
        from .ascendc import AscendCTwinBackend
        return AscendCTwinBackend()
    raise ValueError(f"unknown backend {name!r}; choose 'reference', 'numba', 'llvm' or "
                     "'ascendc-twin'")
