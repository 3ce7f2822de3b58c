"""Elementwise kernels: vector add (the hello world) and a streaming add whose programs
loop over their share of the array with a multi-buffered ``nl.range``.

Example::

    >>> out = add(np.ones(1000, np.float32), np.ones(1000, np.float32))
    >>> float(out[0])
    2.0
"""
from __future__ import annotations

import numpy as np

import npujit.language as nl
from npujit import cdiv, npu_kernel


@npu_kernel
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    offs = pid * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    x = nl.load(x_ptr + offs, mask=mask)
    y = nl.load(y_ptr + offs, mask=mask)
    nl.store(out_ptr + offs, x + y, mask=mask)


@npu_kernel
def add_stream_kernel(x_ptr, y_ptr, out_ptr, n, per_program, BLOCK: nl.constexpr,
                      NUM_STAGES: nl.constexpr):
    # One program per core, each streaming its share: with NUM_STAGES=2 the loads of tile
    # i+1 overlap the add and the store of tile i (double buffering).
    base = nl.program_id(0) * per_program
    for i in nl.range(0, per_program, BLOCK, num_stages=NUM_STAGES):
        offs = base + i + nl.arange(0, BLOCK)
        mask = offs < n
        x = nl.load(x_ptr + offs, mask=mask)
        y = nl.load(y_ptr + offs, mask=mask)
        nl.store(out_ptr + offs, x + y, mask=mask)


def add(x: np.ndarray, y: np.ndarray, block: int = 1024, backend: str | None = None):
    """``x + y`` for two 1-D arrays of one dtype."""
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"add takes two 1-D arrays of one shape, got {x.shape} and {y.shape}")
    out = np.empty_like(x)
    k = add_kernel if backend is None else add_kernel.with_options(backend=backend)
    k[(cdiv(x.size, block),)](x, y, out, x.size, BLOCK=block)
    return out


def example_args(kernel: str, shape=None, dtype=None):
    """A small launch of ``kernel`` for the ``npujit`` command (npujit/cli/target.py):
    ``(grid, args, kwargs, reference)``; ``shape`` sets the element count, ``dtype`` the
    element type (default 4096 float32).

    Example::

        >>> grid, args, kwargs, ref = example_args("add_kernel", shape=(2048,))
        >>> grid, kwargs
        ((2,), {'BLOCK': 1024})
    """
    n = int(np.prod(shape)) if shape else 4096
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(dtype or np.float32)
    y = rng.standard_normal(n).astype(dtype or np.float32)
    out = np.empty_like(x)

    def reference(x, y, out, n, *per_program):
        return x + y

    if kernel == "add_kernel":
        return (cdiv(n, 1024),), [x, y, out, n], {"BLOCK": 1024}, reference
    if kernel == "add_stream_kernel":
        programs = 4       # one program per core, each streaming its share
        per_program = cdiv(cdiv(n, programs), 1024) * 1024
        return ((programs,), [x, y, out, n, per_program], {"BLOCK": 1024, "NUM_STAGES": 2},
                reference)
    raise ValueError(f"no example for kernel {kernel!r}")
