"""IR passes: small objects with a ``name`` and ``run(fn) -> bool`` (changed anything?).

Example::

    >>> from npujit.ir.passes import run_passes, DEFAULT_PASSES
    >>> [p.name for p in DEFAULT_PASSES]
    ['verify', 'fold', 'cse', 'dce', 'fuse-elementwise', 'dce']
"""
from .cse import CSE
from .dce import DCE
from .fold import Fold
from .fuse import FuseElementwise
from .pipeline import DEFAULT_PASSES, Verify, run_passes

__all__ = ["CSE", "DCE", "Fold", "FuseElementwise", "Verify", "DEFAULT_PASSES", "run_passes"]
