"""Tiled matmul on the Cube: block pointers, a pipelined K loop, ``nl.dot`` accumulating
in f32, the result stored as f32 or cast to f16.

``L0_BLOCK_K`` (0 = off) splits each dot into L0 K-chunks of that size, so the L1 tile
(``BLOCK_K`` deep) can be larger than L0A/L0B hold: fewer, larger GM copies per K step,
as Ascend's Matmul tiling does with baseK < stepK x baseK (ir/schedule/allocate.py).

Example::

    >>> a = np.random.rand(64, 32).astype(np.float16)
    >>> b = np.random.rand(32, 48).astype(np.float16)
    >>> c = matmul(a, b)
    >>> np.allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3)
    True
"""
from __future__ import annotations

import numpy as np

import npujit.language as nl
from npujit import cdiv, npu_kernel


@npu_kernel
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: nl.constexpr, BLOCK_N: nl.constexpr, BLOCK_K: nl.constexpr,
                  NUM_STAGES: nl.constexpr, L0_BLOCK_K: nl.constexpr = 0):
    pid_m = nl.program_id(0)
    pid_n = nl.program_id(1)
    a_blk = nl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                              offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K))
    b_blk = nl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                              offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N))
    acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    for k in nl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        a = nl.load(a_blk, boundary_check=(0, 1))
        b = nl.load(b_blk, boundary_check=(0, 1))
        acc = nl.dot(a, b, acc)
        a_blk = nl.advance(a_blk, (0, BLOCK_K))
        b_blk = nl.advance(b_blk, (BLOCK_K, 0))
    c_blk = nl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N))
    nl.store(c_blk, acc, boundary_check=(0, 1))


def matmul(a: np.ndarray, b: np.ndarray, out_dtype=np.float32, block_m: int = 64,
           block_n: int = 64, block_k: int = 64, num_stages: int = 2,
           backend: str | None = None, l0_block_k: int = 0) -> np.ndarray:
    """``a @ b`` for 2-D arrays (fp16, bf16 or fp32 in; fp32 or fp16 out)."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs (M, K) @ (K, N), got {a.shape} @ {b.shape}")
    M, K = a.shape
    N = b.shape[1]
    c = np.empty((M, N), dtype=out_dtype)
    s = a.itemsize, b.itemsize, c.itemsize
    k = matmul_kernel if backend is None else matmul_kernel.with_options(backend=backend)
    k[(cdiv(M, block_m), cdiv(N, block_n))](
        a, b, c, M, N, K, a.strides[0] // s[0], a.strides[1] // s[0],
        b.strides[0] // s[1], b.strides[1] // s[1], c.strides[0] // s[2], c.strides[1] // s[2],
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, NUM_STAGES=num_stages,
        L0_BLOCK_K=l0_block_k)
    return c


def example_args(kernel: str, shape=None, dtype=None):
    """A small launch of ``matmul_kernel`` for the ``npujit`` command
    (npujit/cli/target.py): ``(grid, args, kwargs, reference)``; ``shape`` is ``(M, N, K)``
    (default 64 x 48 x 80), ``dtype`` the input type (default float16), the output f32.
    The inputs are small integers, so every product and sum is exact in f32 and any
    summation order gives the reference's result.

    Example::

        >>> grid, args, kwargs, ref = example_args("matmul_kernel")
        >>> grid, kwargs["BLOCK_K"]
        ((2, 2), 32)
    """
    if kernel != "matmul_kernel":
        raise ValueError(f"no example for kernel {kernel!r}")
    M, N, K = shape if shape else (64, 48, 80)
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (M, K)).astype(dtype or np.float16)
    b = rng.integers(-4, 5, (K, N)).astype(dtype or np.float16)
    c = np.empty((M, N), np.float32)
    block = 32

    def reference(a, b, c, *sizes_and_strides):
        return a.astype(np.float32) @ b.astype(np.float32)

    return ((cdiv(M, block), cdiv(N, block)),
            [a, b, c, M, N, K, K, 1, N, 1, N, 1],
            {"BLOCK_M": block, "BLOCK_N": block, "BLOCK_K": block, "NUM_STAGES": 2},
            reference)
