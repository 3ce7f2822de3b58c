"""The bundled kernels written in plain numpy: the peer the demo and the benchmarks compare
against.  (Tests keep their own oracles, written independently of this file.)

Example::

    >>> x = np.zeros((2, 4), np.float32)
    >>> softmax(x)[0, 0]
    0.25
"""
from __future__ import annotations

import numpy as np


def softmax(x):
    """Softmax over the last axis."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, w, b, eps: float = 1e-5):
    """LayerNorm over the last axis with weight and bias."""
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rmsnorm(x, w, eps: float = 1e-6):
    """RMSNorm over the last axis with weight."""
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w


def matmul_f32(a, b):
    """``a @ b`` computed in f32 (the Cube's accumulation type)."""
    return a.astype(np.float32) @ b.astype(np.float32)
