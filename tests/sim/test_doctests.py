"""Every example in the simulator's docstrings runs and prints what it says."""
import doctest
import importlib
import importlib.util

import pytest

MODULES = ["isa", "cost", "hbm", "l2", "split", "queues", "engine", "fastpath", "roofline", "debug", "report", "trace",
           "plot", "simulate", "patterns", "sensitivity"]


@pytest.mark.parametrize("name", ["__init__"] + MODULES)
def test_docstring_examples(name):
    if name == "plot" and importlib.util.find_spec("matplotlib") is None:
        pytest.skip("plot examples need matplotlib")
    module = importlib.import_module("npujit.sim" if name == "__init__" else f"npujit.sim.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
