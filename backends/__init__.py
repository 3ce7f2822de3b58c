"""Execution backends: reference (numpy interpreter, the semantics) and numba."""
from .base import Backend, get_backend

__all__ = ["Backend", "get_backend"]
