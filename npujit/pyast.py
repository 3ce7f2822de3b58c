"""One lock for turning Python source into syntax trees, shared by every layer.

CPython 3.11 keeps the counter that guards converting between C and Python syntax trees
in one per-interpreter slot, so two threads in ``ast.parse`` or ``compile(<ast>)`` at
once can fail with "SystemError: AST constructor recursion depth mismatch" (CPython
gh-106905; seen in tests/runtime/test_threads.py on 3.11.7, from the kernel rewrite in
jit/ast_rewrite.py and from the numba backend's outlining in backends/numba/outline.py
racing each other).  Every such conversion holds ``AST_LOCK``; ``parse`` does it for you.

Example::

    >>> parse("x = 1").body[0].targets[0].id
    'x'
"""
from __future__ import annotations

import ast
import threading

AST_LOCK = threading.Lock()


def parse(text: str) -> ast.Module:
    """``ast.parse(text)`` under ``AST_LOCK``."""
    with AST_LOCK:
        return ast.parse(text)
