"""The examples in the schedule's docstrings run and print what they say."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["npujit.ir.schedule.model", "npujit.ir.schedule.allocate",
                                  "npujit.jit.compiler"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
