"""The npujit pytest plugin, registered by the ``pytest11`` entry point, so any test suite
gets it once npujit is installed (docs/testing.md).

* ``--npujit-backend=reference|llvm|numba|scheduled|ascendc-twin|all`` (or a
  comma-separated list; default ``llvm``, the backend a launch runs on) parametrises the ``npu_backend`` fixture: one test per tier;
  a tier that is not installed (``ascendc-twin`` without its backend) is skipped.
* ``npu_backend`` is a :class:`NPUBackend`; ``npu_backend(kernel)[grid](*args)`` launches
  on that tier (``scheduled`` = the simulator with NaN-poisoned buffers).
* ``--npujit-simulate`` also runs every launch of every test through the NPU simulator
  with its race detector, failing the test on a deadlock or a race; the
  ``npu_sim_reports`` fixture lists the launches' ``SimReport`` s.
* A test that fails with an npujit error (a ``CompilationError``, ``LaunchError`` ...) is
  reported with the test's and the kernel's lines and the message, without npujit's
  internal frames (``--full-trace`` shows them).
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
import os
import shutil
import sys
import traceback

import pytest

TIERS = ("reference", "llvm", "numba", "scheduled", "ascendc-twin")
DEFAULT_BACKEND = "llvm"


def pytest_addoption(parser):
    group = parser.getgroup("npujit", "npujit compiled-kernel testing")
    group.addoption("--npujit-backend", default=DEFAULT_BACKEND, metavar="TIERS",
                    help="tiers the npu_backend fixture runs on: reference, llvm, numba, scheduled, "
                         "ascendc-twin, all, or a comma-separated list (default: llvm)")
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None or report.passed or item.config.getoption("fulltrace"):
        return
    npujit = sys.modules.get("npujit")
    exc = call.excinfo.value
    if npujit is None or not isinstance(exc, npujit.NPUJitError):
        return
    report.longrepr = npujit_error_report(exc, _npujit_dirs(), str(item.path))


def _npujit_dirs() -> tuple:
    """The folders of npujit's own code (its subpackages map to several folders)."""
    dirs = set()
    for name in ("npujit", "npujit.jit", "npujit.ir", "npujit.backends", "npujit.sim",
                 "npujit.language", "npujit.testing", "pytest_npujit"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            dirs.add(os.path.dirname(os.path.abspath(mod.__file__)) + os.sep)
    return tuple(dirs)


def npujit_error_report(exc: BaseException, internal: tuple, test_file: str) -> str:
    """The failure text for an npujit error: the error's reason, the frames from the test
    file on that are outside the ``internal`` folders (the test, the kernel), then the
    error's whole message (which shows the kernel's line)."""
    message = str(exc).strip()
    reason = message.splitlines()[-1] if message else ""
    lines = [f"{type(exc).__name__}: {reason}"]
    frames = traceback.extract_tb(exc.__traceback__)
    starts = [i for i, f in enumerate(frames)
              if os.path.abspath(f.filename) == os.path.abspath(test_file)]
    for f in frames[starts[0] if starts else 0:]:
        if os.path.abspath(f.filename).startswith(internal):
            continue
        lines.append(f"{f.filename}:{f.lineno}: in {f.name}")
        if f.line:
            lines.append(f"    {f.line}")
    lines += [f"E   {line}" for line in f"{type(exc).__name__}: {message}".splitlines()]
    lines.append("(npujit's internal frames are hidden; --full-trace shows them)")
    return "\n".join(lines)


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
