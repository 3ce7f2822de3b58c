"""The reference backend: a numpy interpreter of the IR that *is* the definition of every
op's meaning (docs/semantics.md says the same in words).  Other tiers must agree with it.

Files: ``backend.py`` (the backend interface and argument binding), ``interpreter.py``
(the walker), ``table.py`` (``SEMANTICS``: kind -> function), ``semantics_*.py`` (one
family of ops each), ``memory.py`` (bounds-checked GM access), ``numerics.py`` (dtypes
and the half-float rule).

Example::

    >>> from npujit.backends.reference import ReferenceBackend
    >>> run = ReferenceBackend().compile(fn, {})      # doctest: +SKIP
    >>> run((4, 1, 1), [x, y, out, 4096])             # doctest: +SKIP
"""
from .backend import ReferenceBackend, ReferenceKernel, bind_args, normalize_grid
from .interpreter import Plan, Program, ResultTypeError, interpret
from .memory import OutOfBoundsError
from .table import SEMANTICS, missing_kinds

__all__ = ["ReferenceBackend", "ReferenceKernel", "SEMANTICS", "OutOfBoundsError",
           "ResultTypeError", "Plan", "Program", "interpret", "bind_args", "normalize_grid",
           "missing_kinds"]
