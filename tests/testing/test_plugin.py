"""The pytest plugin (pytest_npujit, entry point pytest11) on a small example project run
by pytester: each option, the npu_backend fixture, the markers, a failing kernel's report,
and that loading it imports nothing of npujit."""
import os
import re
import subprocess
import sys

import numpy  # noqa: F401  (imported before pytester's sys.modules snapshot, see below)
import pytest

import npujit.kernels.elementwise  # noqa: F401
import npujit.sim  # noqa: F401
import npujit.testing  # noqa: F401

try:        # hypothesis's pytest plugin imports it in every run; once is enough
    import hypothesis  # noqa: F401
except ImportError:
    pass

pytest_plugins = ["pytester"]
# pytester runs the example project in this process and, after each test, forgets the
# modules imported since it started; numpy cannot be imported twice in one process, and
# keeping npujit's modules (and the kernels' in-memory caches) and hypothesis (which its
# plugin imports) makes the runs fast.

PROJECT_TEST = '''
import numpy as np
import pytest
from npujit.kernels.elementwise import add_kernel
from npujit.testing import assert_close

def test_add(npu_backend):
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    npu_backend(add_kernel)[(3,)](x, x, out, 300, BLOCK=128)
    assert_close(out, 2 * x)

def test_without_the_fixture():
    assert True
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_project=PROJECT_TEST)
    return pytester


def test_backend_option_parametrises_the_fixture(project):
    r = project.runpytest("-v", "--npujit-backend=reference,scheduled")
    r.assert_outcomes(passed=3)
    r.stdout.fnmatch_lines(["*test_add?reference? PASSED*", "*test_add?scheduled? PASSED*",
                            "*test_without_the_fixture PASSED*"])


def test_default_backend_is_llvm_and_all_includes_every_tier(project):
    r = project.runpytest("-v")
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines(["*test_add?llvm? PASSED*"])
    r = project.runpytest("-v", "-rs", "--npujit-backend=all")
    from npujit.testing import tier_unavailable
    if tier_unavailable("ascendc-twin"):
        r.assert_outcomes(passed=5, skipped=1)
        r.stdout.fnmatch_lines(["*SKIPPED*ascendc-twin*"])
    else:
        r.assert_outcomes(passed=6)


def test_a_bad_backend_is_a_usage_error(project):
    r = project.runpytest("--npujit-backend=cuda")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--npujit-backend='cuda': choose from reference, llvm, numba, "
                            "scheduled, ascendc-twin, all*"])


def test_a_failing_kernel_is_reported_with_the_worst_element(pytester):
    pytester.makepyfile(test_bad='''
import numpy as np
from npujit.kernels.elementwise import add_kernel
from npujit.testing import assert_close

def test_add(npu_backend):
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    npu_backend(add_kernel)[(3,)](x, x, out, 300, BLOCK=128)
    assert_close(out, 3 * x)
''')
    r = pytester.runpytest("--npujit-backend=reference")
    r.assert_outcomes(failed=1)
    r.stdout.re_match_lines([
        r">\s+assert_close\(out, 3 \* x\)$",        # the user's line, not assert_close's
        re.escape("E       AssertionError: 299 of 300 elements differ (99.7%) [float32: "
                  "rtol=1.3e-06, atol=1e-05]"),
        # 598 and 897 lie in [512, 1024), where an f32 ulp is 2**(9 - 23)
        re.escape("E         worst at index (299,): actual 598.0, expected 897.0, |diff| 299 "
                  "(allowed ") + r"[0-9.]+\), " + str(299 * 2 ** 14) + " ulp$"])


def test_a_kernel_that_does_not_compile_is_reported_without_npujit_frames(pytester):
    pytester.makepyfile(test_ce='''
import numpy as np
import npujit.language as nl
from npujit import npu_kernel

@npu_kernel
def bad(x_ptr, n):
    offs = nl.arange(0, n)
    nl.store(x_ptr + offs, nl.load(x_ptr + offs))

def test_bad(npu_backend):
    npu_backend(bad)[(1,)](np.zeros(4, np.float32), 4)
''')
    reason = ("CompilationError: arange end must be a constant int (a literal or a "
              "constexpr parameter), got nl.tensor<i32>")
    r = pytester.runpytest("--npujit-backend=reference")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    r.stdout.fnmatch_lines([reason, "*test_ce.py:11: in test_bad",
                            "    npu_backend(bad)[[](1,)[]](np.zeros(4, np.float32), 4)",
                            "*test_ce.py:7: in bad", "    offs = nl.arange(0, n)",
                            "E   CompilationError: at *test_ce.py:7 in kernel 'bad':",
                            "*--full-trace shows them*"])
    assert "jit/compiler.py" not in out and "_pytest" not in out
    r = pytester.runpytest("--npujit-backend=reference", "--full-trace")
    assert "jit/compiler.py" in r.stdout.str()


def test_simulate_option_simulates_every_launch_and_fails_on_a_deadlock(pytester):
    pytester.makepyfile(test_sim='''
import numpy as np
from npujit.jit.kernel import NPUKernel
from npujit.kernels.elementwise import add_kernel
from npujit.sim import TINY, CoreProgram, simulate, wait_flag

def _launch():
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    add_kernel.with_options(backend="reference")[(3,)](x, x, out, 300, BLOCK=128)
    assert (out == 2 * x).all()

def test_two_launches(npu_sim_reports):
    _launch()
    _launch()
    assert len(npu_sim_reports) == 2 and npu_sim_reports[0].cycles > 0

def test_deadlock(monkeypatch):
    monkeypatch.setattr(NPUKernel, "simulate", lambda self, *a, **k: simulate(
        CoreProgram("AIV", [wait_flag("MTE2", "VECTOR", 1)]), TINY))
    _launch()
''')
    r = pytester.runpytest("--npujit-simulate")
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*DeadlockError*", "FAILED test_sim.py::test_deadlock*"])
    r = pytester.runpytest()                    # without the option nothing is simulated
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*0 == 2*"])


def test_markers_slow_and_requires(pytester):
    pytester.makepyfile(test_marks='''
import pytest

@pytest.mark.npu_slow
def test_slow():
    pass

@pytest.mark.npu_requires("no_such_module_for_npujit", "g++")
def test_needs_missing():
    pass

@pytest.mark.npu_requires("numpy", "python3" if False else "sys")
def test_needs_present():
    pass
''')
    r = pytester.runpytest("-rs", "--strict-markers")
    r.assert_outcomes(passed=1, skipped=2)
    r.stdout.fnmatch_lines(["*run with --npujit-slow*",
                            "*needs 'no_such_module_for_npujit'*"])
    r = pytester.runpytest("--npujit-slow", "--strict-markers")
    r.assert_outcomes(passed=2, skipped=1)


def test_help_lists_the_options(pytester):
    r = pytester.runpytest("--help")
    r.stdout.fnmatch_lines(["*npujit compiled-kernel testing*", "*--npujit-backend=TIERS*",
                            "*--npujit-simulate*", "*--npujit-slow*"])


def test_loading_the_plugin_imports_no_npujit():
    code = ("import sys, pytest_npujit; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'npujit'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ""}, check=True).stdout
    assert out.strip() == "[]"


def test_the_plugin_knows_the_same_tiers_as_npujit_testing():
    import pytest_npujit
    assert pytest_npujit.TIERS == npujit.testing.TIER_NAMES
