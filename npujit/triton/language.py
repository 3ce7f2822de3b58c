"""``triton.language`` on npujit: every ``npujit.language`` name under Triton's spelling,
plus the ``tl.math`` namespace (docs/coming-from-triton.md has the table).

Example::

    import npujit.triton.language as tl
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
"""
from __future__ import annotations

import types as _types

from npujit.language import *  # noqa: F401,F403 - the whole language, re-exported
from npujit.language import __all__ as _nl_all
from npujit import language as _nl
from npujit.language.core import unwrap_constexpr as _unwrap

from .libdevice import extra  # noqa: F401 - tl.extra.libdevice, tl.extra.cuda.libdevice



def _div_rn(x, y):
    """``x / y`` rounded to nearest even: npujit's ``/`` always is (IEEE f32 division)."""
    return _nl.semantic.to_tensor(x) / y


def _fdiv(x, y, ieee_rounding=False):
    """Triton's fast division; here the same correctly rounded ``x / y``."""
    return _nl.semantic.to_tensor(x) / y


@_nl.core.builtin
def sort(x, dim=None, descending=False):
    """Triton's ``tl.sort(x, dim=None, descending=False)``: ``nl.sort`` with ``dim`` for
    its ``axis`` (None: the last)."""
    dim = _unwrap(dim)
    return _nl.sort(x, axis=-1 if dim is None else dim, descending=bool(_unwrap(descending)))


@_nl.core.builtin
def topk(x, k, dim=None, descending=True):
    """Triton's ``tl.topk(x, k, dim=None, descending=True)``: the ``k`` largest values along
    ``dim`` (the smallest with ``descending=False``), sorted, the values alone
    (``nl.topk`` returns their indices too)."""
    dim = _unwrap(dim)
    axis = -1 if dim is None else dim
    x = _nl.semantic.to_tensor(x)
    if bool(_unwrap(descending)):
        return _nl.topk(x, k, axis=axis)[0]
    if x.dtype.is_float:                        # the largest of -x, negated back: exact
        return -(_nl.topk(-x, k, axis=axis)[0])
    return ~(_nl.topk(~x, k, axis=axis)[0])     # ~ reverses the order of every int type


# tl.math.X: the elementwise math functions under Triton's second spelling; the *_rn
# variants are the plain ones, whose f32 results are already correctly rounded
math = _types.SimpleNamespace(
    **{n: getattr(_nl, n) for n in ("abs", "ceil", "cos", "erf", "exp", "exp2", "floor", "fma",
                                    "log", "log2", "rsqrt", "sigmoid", "sin", "sqrt", "maximum",
                                    "minimum", "tanh", "umulhi")},
    div_rn=_nl.core.builtin(_div_rn), fdiv=_nl.core.builtin(_fdiv), sqrt_rn=_nl.sqrt)

__all__ = list(_nl_all) + ["math", "extra"]     # sort and topk are in it: these ones replace them


def __getattr__(name):
    """Triton names npujit lacks on purpose (its other fp8 variants) say what to use."""
    return _nl.__getattr__(name)
