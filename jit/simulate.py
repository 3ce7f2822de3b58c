"""``kernel.simulate(...)``: run a launch through the schedule and the timing simulator.

The kernel is compiled for the spec (its schedule is the spec's), every program runs on
the reference interpreter with a recording hook (so the outputs land in the caller's arrays
exactly as a normal launch writes them, and loop trip counts, masks and data-dependent work
are real), the recorded per-core instruction streams (GM copies tagged with the region they
touch, for the spec's L2) go to ``npujit.sim.simulate``.

Example::

    >>> report = add_kernel.simulate(x, y, out, n, grid=(4,), BLOCK=1024)   # doctest: +SKIP
    >>> report.cycles >= report.bound.cycles                               # doctest: +SKIP
    True
"""
from __future__ import annotations

from .binder import runtime_value
from .compiler import resolve_spec


def simulate_kernel(kernel, grid, args, kwargs, spec=None, debug=None, trace: bool = True):
    """Launch ``kernel`` on ``grid`` with ``args``/``kwargs`` through the simulator and
    return its ``npujit.sim.SimReport``.  ``spec`` defaults to the kernel's ``spec``
    option, else the 910B-like preset; ``debug`` is a ``npujit.sim.DebugOptions``.

    Example::

        >>> simulate_kernel(add_kernel, (4,), (x, y, out, n), {"BLOCK": 1024})  # doctest: +SKIP
    """
    from npujit.sim import simulate
    from npujit.sim.lower import lower

    spec = resolve_spec(spec if spec is not None else kernel.options.get("spec"))
    # The reference backend compiles in microseconds; the schedule is the same for any.
    k = kernel.with_options(spec=spec, backend="reference")
    bound = k._bind(args, kwargs)
    g = k._grid(grid, tuple(bound[p] for p in k.params))
    c, _ = k._get_compiled(bound)
    rt = [runtime_value(c.sigs[i], bound[k.params[i]], k.params[i]) for i in c.runtime_index]
    # Regions so the L2 sees re-reads; the spec so a separated part splits AIC / AIV work.
    launch = lower(c.ir, g, rt, name=kernel.name, gm_regions=True, spec=spec)
    return simulate(launch, spec, trace=trace, debug=debug)
