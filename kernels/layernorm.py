"""Row normalisations, one program per row: LayerNorm and RMSNorm (statistics in f32).

Example::

    >>> x = np.random.rand(4, 64).astype(np.float32)
    >>> y = layernorm(x, np.ones(64, np.float32), np.zeros(64, np.float32))
    >>> bool(abs(y.mean()) < 1e-4)
    True
"""
from __future__ import annotations

import numpy as np

import npujit.language as nl
from npujit import next_power_of_2, npu_kernel


@npu_kernel
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: nl.constexpr):
    row = nl.program_id(0)
    cols = nl.arange(0, BLOCK)
    mask = cols < n_cols
    x = nl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(nl.float32)
    mean = nl.sum(x, axis=0) / n_cols
    d = nl.where(mask, x - mean, 0.0)
    var = nl.sum(d * d, axis=0) / n_cols
    rstd = nl.rsqrt(var + eps)
    w = nl.load(w_ptr + cols, mask=mask).to(nl.float32)
    b = nl.load(b_ptr + cols, mask=mask).to(nl.float32)
    nl.store(out_ptr + row * n_cols + cols, d * rstd * w + b, mask=mask)


@npu_kernel
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: nl.constexpr):
    row = nl.program_id(0)
    cols = nl.arange(0, BLOCK)
    mask = cols < n_cols
    x = nl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(nl.float32)
    ms = nl.sum(x * x, axis=0) / n_cols
    w = nl.load(w_ptr + cols, mask=mask).to(nl.float32)
    nl.store(out_ptr + row * n_cols + cols, x * nl.rsqrt(ms + eps) * w, mask=mask)


def _check(x, w, name):
    if x.ndim != 2 or not x.flags.c_contiguous:
        raise ValueError(f"{name} takes a contiguous 2-D array, got shape {x.shape}")
    if w.shape != (x.shape[1],):
        raise ValueError(f"{name}: weight must have shape ({x.shape[1]},), got {w.shape}")


def layernorm(x, weight, bias, eps: float = 1e-5, backend: str | None = None) -> np.ndarray:
    """LayerNorm over the last axis: ``(x - mean) / sqrt(var + eps) * weight + bias``."""
    _check(x, weight, "layernorm")
    out = np.empty_like(x)
    k = layernorm_kernel if backend is None else layernorm_kernel.with_options(backend=backend)
    k[(x.shape[0],)](x, weight, bias, out, x.shape[1], eps,
                     BLOCK=next_power_of_2(x.shape[1]))
    return out


def rmsnorm(x, weight, eps: float = 1e-6, backend: str | None = None) -> np.ndarray:
    """RMSNorm over the last axis: ``x / sqrt(mean(x**2) + eps) * weight``."""
    _check(x, weight, "rmsnorm")
    out = np.empty_like(x)
    k = rmsnorm_kernel if backend is None else rmsnorm_kernel.with_options(backend=backend)
    k[(x.shape[0],)](x, weight, out, x.shape[1], eps, BLOCK=next_power_of_2(x.shape[1]))
    return out


def example_args(kernel: str, shape=None, dtype=None):
    """A small launch of ``layernorm_kernel`` or ``rmsnorm_kernel`` for the ``npujit``
    command (npujit/cli/target.py): ``(grid, args, kwargs, reference)``; ``shape`` is
    ``(rows, cols)`` (default 8 x 200), ``dtype`` the element type (default float32).

    Example::

        >>> grid, args, kwargs, ref = example_args("rmsnorm_kernel")
        >>> grid, kwargs
        ((8,), {'BLOCK': 256})
    """
    from npujit.kernels import numpy_reference as ref
    rows, cols = shape if shape else (8, 200)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(dtype or np.float32)
               for s in ((rows, cols), cols, cols))
    out = np.empty_like(x)
    f32 = np.float32
    kwargs = {"BLOCK": next_power_of_2(cols)}
    if kernel == "layernorm_kernel":
        def reference(x, w, b, out, n_cols, eps):
            return ref.layernorm(x.astype(f32), w.astype(f32), b.astype(f32), eps)
        return (rows,), [x, w, b, out, cols, 1e-5], kwargs, reference
    if kernel == "rmsnorm_kernel":
        def reference(x, w, out, n_cols, eps):
            return ref.rmsnorm(x.astype(f32), w.astype(f32), eps)
        return (rows,), [x, w, out, cols, 1e-6], kwargs, reference
    raise ValueError(f"no example for kernel {kernel!r}")
