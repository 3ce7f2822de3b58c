"""The examples in npujit.testing's, the CLI's and the bundled kernels' example_args
docstrings run and print what they say."""
import doctest
import importlib

import pytest

MODULES = ["npujit.testing", "npujit.testing.compare", "npujit.testing.inputs",
           "npujit.testing.tiers", "npujit.testing.compiles", "npujit.testing.launches",
           "npujit.cli.target", "npujit.cli.main"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("name", ["elementwise", "softmax", "layernorm", "matmul"])
def test_example_args_docstrings(name):
    module = importlib.import_module(f"npujit.kernels.{name}")
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module.example_args, globs=vars(module).copy()):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
