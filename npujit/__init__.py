"""npujit: a Triton-style JIT compiler for a simulated Ascend-like NPU.

Example::

    import npujit.language as nl
    from npujit import npu_kernel
"""
from npujit.errors import (CompilationError, DeviceAssertionError, IndexOverflowError,
                           LaunchError, NPUJitError, OutOfBoundsError, OutOfResources)
from npujit.jit.autotune import Autotuner, Config, autotune
from npujit.jit.kernel import NPUKernel, npu_kernel

from . import language
from .host import cdiv, next_power_of_2

__version__ = "0.1.0"

__all__ = ["npu_kernel", "NPUKernel", "autotune", "Config", "Autotuner", "language",
           "CompilationError", "LaunchError", "NPUJitError", "OutOfResources", "OutOfBoundsError", "DeviceAssertionError",
           "IndexOverflowError", "cdiv", "next_power_of_2", "__version__"]
