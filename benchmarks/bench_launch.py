"""Warm launch overhead of a trivial kernel (cached, 16-element input), in microseconds.

Bar (issue: foundation): aim <= 20 us per launch.

    python benchmarks/bench_launch.py
"""
from __future__ import annotations

import time

import numpy as np

import npujit.language as nl
from npujit import npu_kernel


@npu_kernel
def copy16(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def measure(backend: str, n_iter: int = 20000) -> float:
    x = np.ones(16, np.float32)
    out = np.zeros(16, np.float32)
    k = copy16.with_options(backend=backend)
    launch = k[(1,)]
    launch(x, out, 16, BLOCK=16)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n_iter):
            launch(x, out, 16, BLOCK=16)
        best = min(best, (time.perf_counter() - t0) / n_iter)
    assert (out == 1).all()
    return best * 1e6


if __name__ == "__main__":
    us = measure("numba")
    print(f"warm launch, numba backend, trivial kernel: {us:.1f} us per launch "
          f"(bar: <= 20 us) {'OK' if us <= 20 else 'OVER'}")
