"""Kernels the differential fuzzer (tests/fuzz) found the numba backend getting wrong,
each reduced to its smallest form, against a numpy model and the reference backend."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel

BF16 = ml_dtypes.bfloat16


@npu_kernel
def fused_result_inlined_next_to_a_stored_one(x_ptr, out_ptr, loop_ptr, t):
    offs = nl.arange(0, 16)
    x = nl.load(x_ptr + offs)
    twice = x + x
    thrice = 3.0 * twice        # fused with `twice`; inlined into the select below
    c = twice
    for _ in nl.range(0, t):   # `twice` is read by the loop, so its tile is stored
        c = c * twice
    nl.store(out_ptr + offs, nl.where(x > twice, thrice, twice))
    nl.store(loop_ptr + offs, c)


def _bf16(v):
    return np.asarray(v, np.float32).astype(BF16)


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_a_fused_region_whose_inlined_result_reads_a_scalar_compiles(backend):
    """A fused region yielding a stored tile (x + x) and an inlined one (3.0 * it): the
    nest storing the first once also computed the second, whose scalar 3.0 it does not
    walk (KeyError "... is not walked by this nest" while generating code)."""
    x = _bf16(np.linspace(-4, 4, 16))
    out, loop = np.zeros(16, BF16), np.zeros(16, BF16)
    fused_result_inlined_next_to_a_stored_one.with_options(backend=backend)[(1,)](x, out, loop, 2)
    f = x.astype(np.float32)
    twice = _bf16(f + f).astype(np.float32)
    want = np.where(f > twice, _bf16(3.0 * twice), twice)
    c = twice
    for _ in range(2):
        c = _bf16(c * twice).astype(np.float32)
    np.testing.assert_array_equal(out.astype(np.float32), _bf16(want).astype(np.float32))
    np.testing.assert_array_equal(loop.astype(np.float32), c)
