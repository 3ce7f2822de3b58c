"""A kernel launch as data, so a multi-kernel operator (the MoE layer) is a list that can
run on a backend or go through the timing simulator launch by launch.

Later launches may read arrays earlier ones write: every array is allocated when the list
is built, and the launches run in order.

Example::

    >>> steps = [KernelLaunch(add, (4,), (x, y, out, n), {"BLOCK": 256})]  # doctest: +SKIP
    >>> run_all(steps, backend="reference")                                 # doctest: +SKIP
"""
from __future__ import annotations

from typing import NamedTuple


class KernelLaunch(NamedTuple):
    """``kernel[grid](*args, **meta)``.

    Example::

        KernelLaunch(add_kernel, (4,), (x, y, out, n), {"BLOCK": 256}).run("numba")
    """

    kernel: object
    grid: tuple
    args: tuple
    meta: dict

    def run(self, backend: str | None = None) -> None:
        k = self.kernel if backend is None else self.kernel.with_options(backend=backend)
        k[self.grid](*self.args, **self.meta)

    def simulate(self, spec=None, **kwargs):
        """The launch through ``kernel.simulate``: its ``SimReport`` (outputs written)."""
        return self.kernel.simulate(*self.args, grid=self.grid, spec=spec, **kwargs,
                                    **self.meta)


def run_all(launches, backend: str | None = None) -> None:
    """Run the launches in order.

    Example::

        run_all(fused_plan(x, router_weight, gate_up_proj, down_proj, 2)[0])
    """
    for launch in launches:
        launch.run(backend)


def simulate_all(launches, spec=None, **kwargs) -> list:
    """``[(kernel name, SimReport), ...]``, the launches simulated in order.

    Example::

        >>> for name, report in simulate_all(steps, ASCEND_910B_LIKE): ...   # doctest: +SKIP
    """
    return [(launch.kernel.name, launch.simulate(spec, **kwargs)) for launch in launches]
