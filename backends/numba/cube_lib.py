"""The Cube's ``dot`` on flat tiles, as numba helpers.

``out`` (M×N, flat) holds the accumulator on entry (the ``acc`` operand or zeros) and the
result on return.  Float tiles (f32, and f16/bf16 held as float32) multiply and
accumulate in float32 in an unspecified order (docs/semantics.md): small tiles with an
i-k-j loop under ``fastmath={'reassoc', 'contract'}`` (vectorised over j, ~25 GFLOP/s
per core), tiles of ``BLAS_MIN_MACS`` multiply-adds or more with BLAS sgemm through
``np.dot`` (~70 GFLOP/s on a 64^3 tile; numba needs scipy for it).  Relative to a
float64 dot the error is about K·2^-24·Σ|a·b|.  i8 tiles accumulate exactly in int32
(wrapping).

Example::

    >>> a = np.ones(6, np.float32); b = np.ones(6, np.float32)   # 2x3 @ 3x2
    >>> out = np.zeros(4, np.float32)
    >>> dot_f(a, b, out, 2, 3, 2); out
    array([3., 3., 3., 3.], dtype=float32)
"""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, error_model="numpy")

BLAS_MIN_MACS = 32 * 32 * 32


@njit(**_JIT, fastmath={"reassoc", "contract"})
def dot_f(a, b, out, m, k, n):
    """``out += a @ b`` for float32 flat tiles a (m×k), b (k×n), out (m×n)."""
    for i in range(m):
        row = out[i * n:(i + 1) * n]
        for kk in range(k):
            aik = a[i * k + kk]
            brow = b[kk * n:(kk + 1) * n]
            for j in range(n):
                row[j] += aik * brow[j]


@njit(**_JIT)
def dot_blas(a, b, out, m, k, n):
    """``out += a @ b`` for float32 flat tiles through BLAS sgemm."""
    prod = np.dot(a.reshape((m, k)), b.reshape((k, n))).reshape(m * n)
    for i in range(m * n):
        out[i] += prod[i]


@njit(**_JIT)
def dot_i8(a, b, out, m, k, n):
    """``out += a @ b`` for int8 tiles into an int32 ``out`` (wrapping)."""
    for i in range(m):
        row = out[i * n:(i + 1) * n]
        for kk in range(k):
            aik = np.int32(a[i * k + kk])
            brow = b[kk * n:(kk + 1) * n]
            for j in range(n):
                row[j] = np.int32(row[j] + aik * np.int32(brow[j]))
