"""IR passes: small objects with a ``name`` and ``run(fn, ctx=None) -> bool`` (changed
anything?), keeping no state between runs.  The order they run in is the compile
pipeline's (``ir/pipeline.py``).

Example::

    >>> from npujit.ir.passes import Fold
    >>> Fold().name
    'fold'
"""
from .cse import CSE
from .dce import DCE
from .fold import Fold
from .fuse import FuseElementwise
from .index_checks import IndexChecks
from .strided_views import CheckStridedViews

__all__ = ["CSE", "DCE", "Fold", "FuseElementwise", "IndexChecks", "CheckStridedViews"]
