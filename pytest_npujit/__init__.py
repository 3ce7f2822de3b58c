"""The npujit pytest plugin, registered by the ``pytest11`` entry point, so any test suite
gets it once npujit is installed (docs/testing.md).

* ``--npujit-backend=reference|numba|scheduled|ascendc-twin|all`` (or a comma-separated
  list; default ``numba``) parametrises the ``npu_backend`` fixture: one test per tier;
  a tier that is not installed (``ascendc-twin`` without its backend) is skipped.
* ``npu_backend`` is a :class:`NPUBackend`; ``npu_backend(kernel)[grid](*args)`` launches
  on that tier (``scheduled`` = the simulator with NaN-poisoned buffers).
* ``--npujit-simulate`` also runs every launch of every test through the NPU simulator
  with its race detector, failing the test on a deadlock or a race; the
  ``npu_sim_reports`` fixture lists the launches' ``SimReport`` s.
* Markers: ``@pytest.mark.npu_slow`` (skipped unless ``--npujit-slow``),
  ``@pytest.mark.npu_requires("torch", "g++")`` (skipped unless each Python module imports
  or each program is on PATH).

This module sits outside the ``npujit`` package and imports npujit only inside the hooks
that need it, so loading the plugin costs pytest start-up nothing measurable, and a suite
that uses none of it behaves exactly as without it.

Example (a user's test)::

    from npujit.testing import assert_close

    def test_add(npu_backend):
        x = np.arange(8, dtype=np.float32)
        out = np.empty_like(x)
        npu_backend(add_kernel)[(1,)](x, x, out, 8, BLOCK=8)
        assert_close(out, 2 * x)
"""
from __future__ import annotations

import importlib.util
import shutil

import pytest

TIERS = ("reference", "numba", "scheduled", "ascendc-twin")
DEFAULT_BACKEND = "numba"


def pytest_addoption(parser):
    group = parser.getgroup("npujit", "npujit compiled-kernel testing")
    group.addoption("--npujit-backend", default=DEFAULT_BACKEND, metavar="TIERS",
                    help="tiers the npu_backend fixture runs on: reference, numba, scheduled, "
                         "ascendc-twin, all, or a comma-separated list (default: numba)")
    group.addoption("--npujit-simulate", action="store_true", default=False,
                    help="also run every kernel launch through the NPU simulator with its "
                         "race detector; a deadlock or a race fails the test")
    group.addoption("--npujit-slow", action="store_true", default=False,
                    help="run the tests marked npu_slow (skipped by default)")


def pytest_configure(config):
    config.addinivalue_line("markers", "npu_slow: a slow npujit test, run with --npujit-slow")
    config.addinivalue_line("markers", "npu_requires(*tools): needs these Python modules or "
                                       "programs on PATH; skipped when one is missing")
    value = config.getoption("--npujit-backend")
    tiers = _parse_backends(value)
    if tiers is None:
        raise pytest.UsageError(f"--npujit-backend={value!r}: choose from "
                                f"{', '.join(TIERS)}, all, or a comma-separated list")
    config._npujit_tiers = tiers
    if config.getoption("--npujit-simulate"):
        config.pluginmanager.register(_SimulateEveryLaunch(), "npujit-simulate")


def _parse_backends(value: str):
    if value == "all":
        return list(TIERS)
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names or any(n not in TIERS for n in names):
        return None
    return [t for t in TIERS if t in names]


def pytest_generate_tests(metafunc):
    if "npu_backend" not in metafunc.fixturenames:
        return
    from npujit.testing import tier_unavailable
    params = []
    for tier in metafunc.config._npujit_tiers:
        reason = tier_unavailable(tier)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(tier, id=tier, marks=marks))
    metafunc.parametrize("npu_backend", params, indirect=True)


class NPUBackend:
    """The tier a test runs on: ``name``; ``backend(kernel)[grid](*args, **kwargs)``
    launches ``kernel`` there (writing its outputs as a launch does) and returns the
    ``SimReport`` for the ``scheduled`` tier, else None."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, kernel, spec=None):
        return _TierKernel(self.name, kernel, spec)

    def __repr__(self) -> str:
        return f"<npu_backend {self.name}>"


class _TierKernel:
    def __init__(self, tier, kernel, spec):
        self.tier, self.kernel, self.spec = tier, kernel, spec

    def __getitem__(self, grid):
        from npujit.testing import launch_on

        def launch(*args, **kwargs):
            __tracebackhide__ = True
            return launch_on(self.tier, self.kernel, grid, list(args), kwargs, spec=self.spec)
        return launch


@pytest.fixture
def npu_backend(request):
    """The execution tier of this test (see ``--npujit-backend``): call it on a kernel,
    then launch, ``npu_backend(kernel)[grid](*args)``."""
    name = getattr(request, "param", None) or request.config._npujit_tiers[0]
    return NPUBackend(name)


def pytest_runtest_setup(item):
    if item.get_closest_marker("npu_slow") and not item.config.getoption("--npujit-slow"):
        pytest.skip("a slow npujit test (run with --npujit-slow)")
    for mark in item.iter_markers("npu_requires"):
        for tool in mark.args:
            if _missing(tool):
                pytest.skip(f"needs {tool!r} (a Python module or a program on PATH)")


def _missing(tool: str) -> bool:
    """Whether ``tool`` is neither an importable module nor a program on PATH."""
    if all(part.isidentifier() for part in tool.split(".")):
        try:
            if importlib.util.find_spec(tool) is not None:
                return False
        except (ImportError, ValueError):
            pass
    return shutil.which(tool) is None


@pytest.fixture
def npu_sim_reports(request):
    """With ``--npujit-simulate``: the ``SimReport`` of every launch the test made so far
    (a live list); without it, an empty list."""
    return getattr(request.node, "_npujit_sim_reports", [])


class _SimulateEveryLaunch:
    """Registered only with ``--npujit-simulate``: every test runs inside
    ``npujit.testing.simulate_launches()``."""

    @pytest.fixture(autouse=True)
    def _npujit_simulate_launches(self, request):
        from npujit.testing import simulate_launches
        with simulate_launches() as reports:
            request.node._npujit_sim_reports = reports
            yield reports
