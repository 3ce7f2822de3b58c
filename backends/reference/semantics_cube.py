"""Reference semantics of the Cube op ``npu.dot`` (docs/semantics.md, "Cube").

Floats: ``acc + sum_k f32(a[m, k]) * f32(b[k, n])`` in f32 (numpy's f32 matmul; the
summation order is unspecified).  i8: the exact product summed in i64, wrapped to i32,
plus ``acc`` with i32 wraparound.

Example::

    >>> import numpy as np
    >>> a = np.ones((2, 3), np.float16)
    >>> dot(None, None, a, np.ones((3, 2), np.float16))
    array([[3., 3.],
           [3., 3.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from npujit.ir import Kind

from .numerics import F32, I32, is_float


def dot(ctx, op, a, b, acc=None):
    """M×K @ K×N (+ acc): f32 result for floats (f64 for f64), i32 for i8."""
    if a.dtype == np.float64:
        out = np.matmul(a, b)
    elif is_float(a.dtype):
        out = np.matmul(a.astype(F32), b.astype(F32))
    else:
        # The i64 sum is exact for any realistic K; wrapping it to i32 equals summing
        # with i32 wraparound, because addition modulo 2**32 does not depend on order.
        out = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(I32)
    return out if acc is None else acc + out


SEMANTICS_CUBE = {Kind.DOT: dot}
