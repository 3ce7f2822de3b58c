"""``import npujit.triton as triton`` / ``npujit.triton.language as tl``: a Triton kernel file
runs after changing its two import lines (docs/coming-from-triton.md)."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
import npujit.triton as triton
import npujit.triton.language as tl


@triton.jit
def _scale(x, factor):
    return x * factor


@triton.jit(do_not_specialize=["n"])
def _axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, _scale(x, alpha) + tl.math.exp(y * 0), mask=mask)


def test_jit_kernel_calls_a_jit_device_function_and_ignores_gpu_launch_options():
    n = 37
    x = np.linspace(-2, 2, n).astype(np.float32)
    y = np.linspace(0, 1, n).astype(np.float32)
    out = np.zeros_like(x)
    k = _axpy.with_options(backend="reference")
    k[(triton.cdiv(n, 16),)](x, y, out, n, 3.0, BLOCK=16, num_warps=4, num_ctas=1,
                              num_stages=3, maxnreg=128)
    np.testing.assert_allclose(out, 3.0 * x + 1.0, rtol=1e-6)
    assert triton.next_power_of_2(37) == 64 and tl.float32 is nl.float32


def test_device_function_outside_a_kernel_says_to_launch_with_a_grid():
    with pytest.raises(triton.TritonError, match="launched with a grid"):
        _scale(1.0, 2.0)


@pytest.mark.parametrize("name", ["autotune", "Config", "heuristics"])
def test_autotune_names_say_they_come_with_the_autotuner(name):
    with pytest.raises(NotImplementedError, match="autotuner"):
        getattr(triton, name)(configs=[], key=[])


def test_do_bench_measures_cpu_milliseconds():
    calls = []
    ms = triton.testing.do_bench(lambda: calls.append(1), warmup=1, rep=3)
    assert ms >= 0 and len(calls) >= 3
    lo, mid = triton.testing.do_bench(lambda: None, warmup=0, rep=1, quantiles=[0.0, 0.5])
    assert 0 <= lo <= mid
