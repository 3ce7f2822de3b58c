"""``NumbaBackend``: IR function -> generated Python -> numba machine code -> ``run``.

Options (all optional):

* ``parallel``: run programs on several threads (default True; kernels with atomics
  always run one program at a time);
* ``num_threads``: threads for a parallel launch (default ``NPUJIT_NUM_THREADS`` or the
  CPU count);
* ``debug``: bounds-check every GM access, per element (default ``NPUJIT_DEBUG``);
* ``bounds_check``: outside debug mode, check the range of each access's active offsets
  against its argument (default ``NPUJIT_BOUNDS_CHECK``, on; off only for benchmarks);
* ``cache``: use the on-disk cache (default: unless ``NPUJIT_DISABLE_CACHE``).

Example::

    >>> from npujit.backends.numba import NumbaBackend
    >>> run = NumbaBackend().compile(fn, {})                # doctest: +SKIP
    >>> run((n // 128, 1, 1), [x, y, out, n])               # doctest: +SKIP
    >>> print(run.source)                                   # doctest: +SKIP
"""
from __future__ import annotations

from npujit.jit import knobs

from .codegen import generate
from .runtime import Launcher, backend_hash, import_source


class NumbaBackend:
    """Compiles IR functions to numba; see the module docstring for options."""

    name = "numba"

    def compile(self, fn, options: dict | None = None) -> Launcher:
        """``run(grid, args)`` for ``fn`` (calling convention in ``backends/base.py``)."""
        opts = dict(options or {})
        opts.setdefault("debug", knobs.debug())
        opts.setdefault("bounds_check", knobs.bounds_check())
        opts.setdefault("cache", not knobs.cache_disabled())
        header = (f"backend {backend_hash()}; debug={bool(opts['debug'])}; "
                  f"bounds_check={bool(opts['bounds_check'])}\n")
        ksrc = generate(fn, opts, header)
        module = import_source(ksrc.text, cache=bool(opts["cache"]))
        return Launcher(module, ksrc, fn, opts)
