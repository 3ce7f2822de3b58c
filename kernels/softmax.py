"""Fused row softmax: one program per row, the whole row on chip (load, max, exp, sum, div).

Example::

    >>> p = softmax(np.random.rand(8, 100).astype(np.float32))
    >>> np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
    True
"""
from __future__ import annotations

import numpy as np

import npujit.language as nl
from npujit import next_power_of_2, npu_kernel


@npu_kernel
def softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride,
                   BLOCK: nl.constexpr):
    row = nl.program_id(0)
    cols = nl.arange(0, BLOCK)
    mask = cols < n_cols
    x = nl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf"))
    x = x.to(nl.float32)
    z = x - nl.max(x, axis=0)
    e = nl.exp(z)
    y = e / nl.sum(e, axis=0)
    nl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


def softmax(x: np.ndarray, backend: str | None = None) -> np.ndarray:
    """Softmax over the last axis of a 2-D array (f32, f16 or bf16; computed in f32)."""
    if x.ndim != 2:
        raise ValueError(f"softmax takes a 2-D array, got shape {x.shape}")
    rows, cols = x.shape
    out = np.empty_like(x)
    k = softmax_kernel if backend is None else softmax_kernel.with_options(backend=backend)
    k[(rows,)](x, out, cols, x.strides[0] // x.itemsize, cols, BLOCK=next_power_of_2(cols))
    return out


def example_args(kernel: str, shape=None, dtype=None):
    """A small launch of ``softmax_kernel`` for the ``npujit`` command
    (npujit/cli/target.py): ``(grid, args, kwargs, reference)``; ``shape`` is
    ``(rows, cols)`` (default 8 x 100), ``dtype`` the element type (default float32).

    Example::

        >>> grid, args, kwargs, ref = example_args("softmax_kernel", shape=(4, 100))
        >>> grid, kwargs
        ((4,), {'BLOCK': 128})
    """
    if kernel != "softmax_kernel":
        raise ValueError(f"no example for kernel {kernel!r}")
    rows, cols = shape if shape else (8, 100)
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(dtype or np.float32)
    out = np.empty_like(x)

    def reference(x, out, n_cols, x_row_stride, out_row_stride):
        from npujit.kernels.numpy_reference import softmax as softmax_np
        return softmax_np(x.astype(np.float32))

    return (rows,), [x, out, cols, cols, cols], {"BLOCK": next_power_of_2(cols)}, reference
