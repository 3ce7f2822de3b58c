"""The llvmlite backend: LLVM IR generated from the kernel's IR, no numba (backend.py)."""
from .backend import LlvmBackend

__all__ = ["LlvmBackend"]
