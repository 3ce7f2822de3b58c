"""Host-side helpers for computing grids and tile sizes.

Example::

    >>> next_power_of_2(1000), cdiv(1000, 256)
    (1024, 4)
"""
from __future__ import annotations

import numpy as np


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    """Ceiling division for grid sizes."""
    return (a + b - 1) // b


def reinterpret(x, dtype):
    """``x``'s memory viewed as elements of ``dtype`` (an ``nl`` dtype of the same element
    size), without a copy, as Triton's ``triton.reinterpret``: a kernel writing the
    result writes ``x``.  A torch tensor gives a torch view (``x.view(torch.float8_e4m3fn)``)
    when torch has the dtype, else a numpy view; a numpy array gives a numpy view (fp8
    and bf16 as ml_dtypes' types).

    Example::

        >>> import numpy as np
        >>> import npujit.language as nl
        >>> bits = np.array([0x38, 0xb8], np.uint8)
        >>> reinterpret(bits, nl.float8e4nv).astype(np.float32)
        array([ 1., -1.], dtype=float32)
    """
    from npujit.ir.types import DType
    from npujit.jit.binder import to_numpy
    if not isinstance(dtype, DType):
        raise TypeError(f"reinterpret: dtype must be an nl dtype such as nl.float8e4nv, "
                        f"got {dtype!r}")
    if type(x).__module__.startswith("torch"):
        import torch
        torch_dtype = getattr(torch, dtype.np_name, None)
        if isinstance(torch_dtype, torch.dtype) and x.element_size() == dtype.itemsize:
            return x.view(torch_dtype)
    a = to_numpy(x, "x")
    if a.itemsize != dtype.itemsize:
        raise TypeError(f"reinterpret: {dtype!r} elements are {dtype.itemsize} B but the "
                        f"array's {a.dtype} elements are {a.itemsize} B; reinterpret only "
                        "changes how bits are read, so pick an array of the same element size")
    return np.ndarray.view(a, dtype.np)       # (an ndarray subclass keeps its class)
