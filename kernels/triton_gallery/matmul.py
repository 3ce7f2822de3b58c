"""Matrix multiplication as in Triton's matmul tutorial: pointer tiles advanced along K
with masks for the K tail, programs ordered in groups of ``GROUP_SIZE_M`` rows of tiles
(on a GPU, for L2 reuse), fp32 accumulation, an optional fused ``leaky_relu``.

Example::

    >>> import numpy as np
    >>> a = np.ones((40, 24), np.float16); b = np.ones((24, 33), np.float16)
    >>> bool((matmul(a, b) == 24).all())
    True
"""
from __future__ import annotations

import numpy as np

import npujit.triton as triton
import npujit.triton.language as tl


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def matmul(a: np.ndarray, b: np.ndarray, activation: str = "", block=(64, 64, 32),
           group_size_m: int = 8, kernel=matmul_kernel) -> np.ndarray:
    """``a @ b`` (fp16 in, fp32 accumulation, fp16 out), then ``activation``."""
    assert a.shape[1] == b.shape[0], "incompatible dimensions"
    M, K = a.shape
    K, N = b.shape
    c = np.empty((M, N), dtype=np.float16)
    bm, bn, bk = block
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"])  # noqa: E731
                         * triton.cdiv(N, META["BLOCK_SIZE_N"]),)
    kernel[grid](a, b, c, M, N, K,
                 a.strides[0] // a.itemsize, a.strides[1] // a.itemsize,
                 b.strides[0] // b.itemsize, b.strides[1] // b.itemsize,
                 c.strides[0] // c.itemsize, c.strides[1] // c.itemsize,
                 BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                 GROUP_SIZE_M=group_size_m, ACTIVATION=activation)
    return c
