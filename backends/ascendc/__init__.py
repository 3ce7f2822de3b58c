"""Ascend C backend: the emitter (scheduled IR -> kernel .cpp, tiling header, host
launcher, CMakeLists.txt for CANN) and the CPU twin tier that builds the emitted kernel
with g++ against our own header-only Ascend C API twin (``twin/``) and runs it.

Example::

    >>> from npujit.backends.ascendc import emit
    >>> emit(scheduled_fn, "out/add_kernel")              # doctest: +SKIP
"""
from .backend import AscendCTwinBackend, AscendCTwinKernel, TwinDeviceError, emit, emit_files

__all__ = ["AscendCTwinBackend", "AscendCTwinKernel", "TwinDeviceError", "emit", "emit_files"]
