"""``SEMANTICS``: every op kind's reference meaning, one function per kind.

Each function takes ``(ctx, op, *operand_values)`` and returns the op's result (a numpy
array), a tuple of results, or None for an op without results.  The families live in
the ``semantics_*`` modules; this table is what the interpreter dispatches on and what
other tiers are checked against.

Example::

    >>> import numpy as np
    >>> from npujit.ir import Kind
    >>> class Op: attrs = {}
    >>> SEMANTICS[Kind.ADD](None, Op, np.array([1], np.int8), np.array([127], np.int8))
    array([-128], dtype=int8)
"""
from __future__ import annotations

from npujit.ir import Kind

from .semantics_cube import SEMANTICS_CUBE
from .semantics_elementwise import SEMANTICS_ELEMENTWISE
from .semantics_memory import SEMANTICS_MEMORY
from .semantics_reduce import SEMANTICS_REDUCE
from .semantics_shape import SEMANTICS_SHAPE
from .semantics_structure import SEMANTICS_STRUCTURE

SEMANTICS = {
    **SEMANTICS_STRUCTURE,
    **SEMANTICS_ELEMENTWISE,
    **SEMANTICS_SHAPE,
    **SEMANTICS_REDUCE,
    **SEMANTICS_CUBE,
    **SEMANTICS_MEMORY,
}


def missing_kinds() -> list[Kind]:
    """Op kinds without a reference meaning (a bug in the reference; tests keep it empty).

    Example::

        >>> missing_kinds()
        []
    """
    return [k for k in Kind if k not in SEMANTICS]
