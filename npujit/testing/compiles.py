"""Counting compiles and isolating the kernel cache in tests.

``count_compiles()`` counts the kernel specialisations compiled inside a ``with`` block
(through the compile hook, ``npujit.jit.hooks.on_compile``), so a test can
say "the second launch compiled nothing".  ``fresh_cache()`` points the disk cache
(``NPUJIT_CACHE_DIR``) at a new empty directory for the block and empties the in-memory
caches of the kernels passed to it, so their next launch compiles again.

Example::

    >>> import numpy as np
    >>> from npujit.kernels.elementwise import add_kernel
    >>> x = np.ones(8, np.float32)
    >>> k = add_kernel.with_options(backend="reference")
    >>> with fresh_cache(k), count_compiles() as c:
    ...     first = k[(1,)](x, x, np.empty_like(x), 8, BLOCK=8)   # a launch returns the
    ...     again = k[(1,)](x, x, np.empty_like(x), 8, BLOCK=8)   # CompiledKernel that ran
    >>> c.count, c.kernels
    (1, ['add_kernel'])
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile


class CompileCounter:
    """What :func:`count_compiles` saw: ``count`` (live while the block runs), ``records``
    (one ``npujit.jit.hooks.CompileEvent`` per compile: kernel, sigs, constexprs, backend,
    seconds), ``kernels``."""

    def __init__(self):
        self.records: list = []

    @property
    def count(self) -> int:
        return len(self.records)

    @property
    def kernels(self) -> list:
        return [r.kernel for r in self.records]

    def __repr__(self) -> str:
        return f"<{self.count} compile(s): {', '.join(self.kernels) or 'none'}>"


@contextlib.contextmanager
def count_compiles():
    """Count the compiles (in this process) inside the ``with`` block; see the module doc.

    Example::

        >>> with count_compiles() as c:
        ...     pass
        >>> c.count
        0
    """
    from npujit.jit.hooks import on_compile
    counter = CompileCounter()
    with on_compile(counter.records.append):
        yield counter


def clear_kernel_caches(kernel) -> None:
    """Forget every compiled specialisation ``kernel`` (an ``@npu_kernel``) holds in
    memory, including those of its ``with_options`` variants."""
    for k in [kernel, *kernel._variants.values()]:
        k.cache.clear()
        k._fast.clear()


@contextlib.contextmanager
def fresh_cache(*kernels, path: str | None = None):
    """Run the block with an empty disk cache (a new temporary ``NPUJIT_CACHE_DIR``, removed
    afterwards; or ``path``, kept) and with ``kernels``' in-memory caches emptied, so their
    launches compile again.  Yields the cache directory.

    Example::

        >>> with fresh_cache() as d:
        ...     os.environ["NPUJIT_CACHE_DIR"] == d
        True
    """
    made = path is None
    d = tempfile.mkdtemp(prefix="npujit-cache-") if made else path
    old = os.environ.get("NPUJIT_CACHE_DIR")
    os.environ["NPUJIT_CACHE_DIR"] = d
    for k in kernels:
        clear_kernel_caches(k)
    try:
        yield d
    finally:
        if old is None:
            os.environ.pop("NPUJIT_CACHE_DIR", None)
        else:
            os.environ["NPUJIT_CACHE_DIR"] = old
        if made:
            shutil.rmtree(d, ignore_errors=True)
