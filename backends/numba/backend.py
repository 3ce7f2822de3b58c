"""``NumbaBackend``: IR function -> generated Python -> numba machine code -> ``run``.

Options (all optional):

* ``parallel``: run programs on several threads (default True; kernels with atomics
  always run one program at a time);
* ``num_threads``: threads for a parallel launch (default ``NPUJIT_NUM_THREADS`` or the
  CPU count);
* ``debug``: bounds-check every GM access, per element (default ``NPUJIT_DEBUG``);
* ``bounds_check``: outside debug mode, check the range of each access's active offsets
  against its argument (default ``NPUJIT_BOUNDS_CHECK``, on; off only for benchmarks);
* ``cache``: use the on-disk cache (default: when npujit/cache_dir.py finds a usable
  directory: not ``NPUJIT_DISABLE_CACHE``, writable, trusted).

Example::

    >>> from npujit.backends.numba import NumbaBackend
    >>> run = NumbaBackend().compile(fn, {})                # doctest: +SKIP
    >>> run((n // 128, 1, 1), [x, y, out, n])               # doctest: +SKIP
    >>> print(run.source)                                   # doctest: +SKIP
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from npujit import cache_dir, knobs

from . import disk_cache
from .runtime import Launcher, backend_hash, import_source

if TYPE_CHECKING:
    import numpy as np


class NumbaBackend:
    """Compiles IR functions to numba; see the module docstring for options."""

    name = "numba"

    def compile(self, fn, options: dict | None = None) -> Launcher:
        """``run(grid, args)`` for ``fn`` (calling convention in ``backends/base.py``)."""
        from .codegen import generate      # (a launcher loaded from the cache needs none)
        opts = _defaults(options)
        built_with = _built_with(opts)
        ksrc = generate(fn, opts, built_with[0])
        ksrc.built_with = built_with
        return _launcher(ksrc, opts)

    def load(self, ksrc, options: dict | None = None) -> Launcher | None:
        """The launcher of a module generated before (a launcher's ``artifact``, kept in
        the kernel cache's entry: jit/compiled.py): no IR to parse, no source to generate.
        None when ``ksrc`` was generated for other options or by another version of this
        backend; then ``compile`` it again."""
        opts = _defaults(options)
        if ksrc.built_with != _built_with(opts):
            return None
        return _launcher(ksrc, opts)

    def run_recorded(self, fn, grid, args, hook, buffers=None, numerics: bool = True) -> None:
        """Run ``fn`` in recording mode and replay its events into ``hook``
        (``record.py``): the reference interpreter's hook calls, at numba speed.
        ``numerics=False`` records with a build that runs only the stream's slice."""
        from .record import replay
        if buffers is not None:
            raise ValueError("tiles in their buffers (poison / copies at wait) need the "
                             "reference backend")
        grid = tuple(grid) + (1,) * (3 - len(grid))
        options = {} if numerics else {"numerics": False}
        burst = getattr(hook, "burst", 0)
        if burst:       # count the GM bursts a gather's lanes fall in (record.py)
            options["burst"] = burst
        replay(fn, grid, record_launch(fn, grid, args, options), hook, runs=bool(burst))


def _defaults(options: dict | None) -> dict:
    opts = dict(options or {})
    opts.setdefault("debug", knobs.debug())
    opts.setdefault("bounds_check", knobs.bounds_check())
    opts.setdefault("cache", cache_dir.current() is not None)
    return opts


def _built_with(opts: dict) -> tuple:
    """What the generated text depends on besides the IR: the header naming this
    backend's version and the checks, the cache flag, the recording modes."""
    header = (f"backend {backend_hash()}; debug={bool(opts['debug'])}; "
              f"bounds_check={bool(opts['bounds_check'])}\n")
    return (header, bool(opts["cache"]), bool(opts.get("record")),
            opts.get("numerics") is False, opts.get("burst", 0))


def _launcher(ksrc, opts: dict) -> Launcher:
    disk_cache.library_caching(bool(opts["cache"]), ksrc.text)
    return Launcher(import_source(ksrc.text, cache=bool(opts["cache"])), ksrc, opts)


_RECORDERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def record_launch(fn, grid, args, options: dict | None = None) -> np.ndarray:
    """Run ``fn`` (scheduled or not) on the numba backend over ``grid`` with ``args``
    (backend calling convention), programs one after another, recording; the events as
    an ``(n, 4)`` int64 array.  Outputs are written into ``args`` as by a launch.  The
    recording build of ``fn`` is kept while ``fn`` lives."""
    opts = {**(options or {}), "record": True, "parallel": False}
    key = tuple(sorted(opts.items()))
    runs = _RECORDERS.setdefault(fn, {})
    run = runs.get(key)
    if run is None:
        run = runs[key] = NumbaBackend().compile(fn, opts)
    return run.record(tuple(grid) + (1,) * (3 - len(grid)), list(args))
