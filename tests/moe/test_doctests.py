"""Every example in the MoE modules' docstrings runs and prints what it says (on the
reference backend: the examples are tiny, numba compiles are not)."""
import doctest
import importlib

import pytest

MODULES = ["routing", "reference", "checks", "dispatch", "combine", "router", "layer", "floors",
           "balance"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.setenv("NPUJIT_BACKEND", "reference")
    module = importlib.import_module(f"npujit.kernels.moe.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
