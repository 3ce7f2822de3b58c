"""npujit: a Triton-style JIT compiler for a simulated Ascend-like NPU.

Example::

    import npujit.language as nl
    from npujit import npu_kernel

``import npujit`` imports what a launch needs (the decorator, the launcher, the errors);
the autotuner, the language, the simulator and the other subpackages are imported on
first use (npujit/lazy.py), and numba only when the numba backend compiles or loads a
kernel: ``docs/startup.md`` has the numbers.
"""
from npujit.errors import (ArgumentOverflowError, CompilationError, DeviceAssertionError,
                           IndexOverflowError, LaunchError, NPUJitError, OutOfBoundsError,
                           OutOfResources)
from npujit.jit.kernel import NPUKernel, npu_kernel
from npujit.lazy import lazy_exports

from npujit.jit.binder import reinterpret

from .host import cdiv, next_power_of_2

__version__ = "0.1.0"

__all__ = ["npu_kernel", "NPUKernel", "autotune", "Config", "Autotuner", "language",
           "CompilationError", "LaunchError", "NPUJitError", "OutOfResources", "OutOfBoundsError", "DeviceAssertionError",
           "IndexOverflowError", "ArgumentOverflowError", "cdiv", "next_power_of_2", "reinterpret",
           "__version__"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "autotune": "npujit.jit.autotune:autotune",
    "Config": "npujit.jit.autotune:Config",
    "Autotuner": "npujit.jit.autotune:Autotuner",
    "language": "npujit.language",
    # subpackages, so ``import npujit; npujit.moe.route(...)`` works as after ``import npujit.moe``
    "moe": "npujit.moe",
    "sim": "npujit.sim",
    "testing": "npujit.testing",
    "triton": "npujit.triton",
    "kernels": "npujit.kernels",
    "target": "npujit.target",
})
