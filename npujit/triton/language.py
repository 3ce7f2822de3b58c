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

# tl.math.X: the elementwise math functions under Triton's second spelling
math = _types.SimpleNamespace(**{n: getattr(_nl, n) for n in (
    "abs", "ceil", "cos", "erf", "exp", "exp2", "floor", "fma", "log", "log2", "rsqrt",
    "sigmoid", "sin", "sqrt", "maximum", "minimum", "tanh")})

__all__ = list(_nl_all) + ["math"]
