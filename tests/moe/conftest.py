"""Small MoE problems shared by the MoE tests (H, I, E kept tiny: the reference backend
interprets every op, and each numba specialisation costs a compile)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]
# fp16/bf16 tolerance of the layer output: the kernels and the oracle round the same
# values, but fp32 sums run in other orders, so a half-precision rounding can flip.
TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float16): 2e-2,
       np.dtype(ml_dtypes.bfloat16): 8e-2}


def problem(T=21, H=32, I=24, E=8, dtype=np.float32, seed=0, shared_i=None):
    """x, router_weight, gate_up_proj, down_proj (and a shared expert pair or None)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, H)).astype(dtype)
    router = rng.standard_normal((E, H)).astype(dtype)
    gate_up = (rng.standard_normal((E, 2 * I, H)) / np.sqrt(H)).astype(dtype)
    down = (rng.standard_normal((E, H, I)) / np.sqrt(I)).astype(dtype)
    shared = None
    if shared_i:
        shared = ((rng.standard_normal((2 * shared_i, H)) / np.sqrt(H)).astype(dtype),
                  (rng.standard_normal((H, shared_i)) / np.sqrt(shared_i)).astype(dtype))
    return x, router, gate_up, down, shared


def close(got, want, dtype, scale=None):
    """Compare a layer output in its dtype against the fp32 oracle, relative to its size."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    scale = scale if scale is not None else max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL[np.dtype(dtype)] * scale)
