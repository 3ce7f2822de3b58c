"""``simulate_launches()``: also run every kernel launch through the NPU simulator, with
its race detector on, and fail the launch on a deadlock or a race.

Inside the ``with`` block each ``kernel[grid](...)`` first runs ``kernel.simulate`` on
copies of its arguments (so the real launch still sees the caller's inputs, in-place
kernels included) with ``DebugOptions(detect_races=True, raise_on_race=True)``; a
``DeadlockError`` or ``RaceError`` propagates from the launch.  Then the launch runs as
usual.  The reports are collected in the yielded list.  The pytest plugin's
``--npujit-simulate`` option wraps every test in this.

Example::

    >>> import numpy as np
    >>> from npujit.kernels.elementwise import add_kernel
    >>> x = np.ones(64, np.float32)
    >>> with simulate_launches() as reports:
    ...     ran = add_kernel.with_options(backend="reference")[(1,)](x, x, np.empty_like(x),
    ...                                                            64, BLOCK=64)
    >>> len(reports), reports[0].races
    (1, [])
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from .tiers import copy_value


def race_debug_options():
    """The debug switches a simulated launch runs with: races detected and raised."""
    from npujit.sim import DebugOptions
    return DebugOptions(detect_races=True, raise_on_race=True)


@contextlib.contextmanager
def simulate_launches(spec=None, debug=None):
    """Simulate every launch made inside the block before running it (module doc).
    ``spec``: the NPU spec (default: each kernel's own); ``debug``: the
    ``npujit.sim.DebugOptions`` (default: :func:`race_debug_options`).  Yields the list of
    ``SimReport`` s, one per launch."""
    from npujit.jit.kernel import NPUKernel

    debug = debug or race_debug_options()
    reports: list = []
    inside = threading.local()       # kernel.simulate must not simulate itself again
    original = NPUKernel.run

    def run(self, grid, args, kwargs):
        if not getattr(inside, "active", False):
            inside.active = True
            try:
                sim_args = [copy_value(a) for a in args]
                sim_kwargs = {k: copy_value(v) for k, v in kwargs.items()}
                with np.errstate(all="ignore"):
                    reports.append(self.simulate(*sim_args, grid=grid, spec=spec, debug=debug,
                                                 **sim_kwargs))
            finally:
                inside.active = False
        return original(self, grid, args, kwargs)

    NPUKernel.run = run
    try:
        yield reports
    finally:
        NPUKernel.run = original
