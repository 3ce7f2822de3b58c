"""Every bundled kernel has example arguments (the npujit command's convention), and its
example passes check_kernel on the cheap tiers against the example's numpy reference."""
import importlib
import pkgutil

import pytest

import npujit.kernels
from npujit.cli.target import example_launch
from npujit.jit.kernel import NPUKernel
from npujit.testing import check_kernel


def bundled_kernels():
    out = []
    for info in pkgutil.iter_modules(npujit.kernels.__path__):
        module = importlib.import_module(f"npujit.kernels.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, NPUKernel) and obj.fn.__module__ == module.__name__:
                out.append(pytest.param(module, obj, id=f"{info.name}::{name}"))
    return out


KERNELS = bundled_kernels()


def test_the_bundled_kernels_are_found():
    assert len(KERNELS) >= 6


@pytest.mark.parametrize("module, kernel", KERNELS)
def test_example_runs_and_matches_its_reference(module, kernel):
    grid, args, kwargs, reference = example_launch(module, kernel)
    assert reference is not None, f"{kernel.name}: its example has no reference"
    result = check_kernel(kernel, grid, args, reference, ["reference", "scheduled"],
                          kwargs=kwargs)
    assert result.ok
