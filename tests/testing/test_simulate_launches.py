"""simulate_launches: every launch is simulated once, on copies (an in-place kernel is
applied exactly once), and a simulator error fails the launch before it runs."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.jit.kernel import NPUKernel
from npujit.sim import TINY, CoreProgram, DeadlockError, simulate, wait_flag
from npujit.testing import simulate_launches


@npu_kernel(backend="reference")
def increment_kernel(x_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(x_ptr + offs, nl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_each_launch_simulated_once_on_copies():
    x = np.zeros(100, np.float32)
    with simulate_launches() as reports:
        increment_kernel[(2,)](x, 100, BLOCK=64)
        increment_kernel[(2,)](x, 100, BLOCK=64)
    assert len(reports) == 2
    assert (x == 2).all()                   # not 4: the simulations ran on copies
    assert all(r.programs and r.cycles > 0 and r.races == [] for r in reports)
    increment_kernel[(2,)](x, 100, BLOCK=64)
    assert len(reports) == 2 and NPUKernel.run.__name__ == "run"


def test_a_simulator_error_fails_the_launch(monkeypatch):
    def deadlock(self, *args, **kwargs):        # a stream whose wait is never set
        return simulate(CoreProgram("AIV", [wait_flag("MTE2", "VECTOR", 1)]), TINY)
    monkeypatch.setattr(NPUKernel, "simulate", deadlock)
    x = np.zeros(10, np.float32)
    with simulate_launches(), pytest.raises(DeadlockError, match="VECTOR"):
        increment_kernel[(1,)](x, 10, BLOCK=16)
    assert (x == 0).all()                   # the real launch did not run
