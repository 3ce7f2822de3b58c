"""Python int arguments are typed i32 when they fit in 32 bits and i64 otherwise (Triton's
rule), the width is part of the specialisation, and the warm launch path keys it: an int
that needs 64 bits never runs through a kernel compiled for i32."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.jit.binder import arg_signature


@npu_kernel
def store_n(out_ptr, n):
    nl.store(out_ptr, n.to(nl.int64))


@pytest.mark.parametrize("value,width", [
    (0, "i32"), (2**31 - 1, "i32"), (-2**31, "i32"),
    (2**31, "i64"), (-2**31 - 1, "i64"), (2**63 - 1, "i64"), (np.int64(7), "i32")])
def test_int_arguments_are_i32_when_they_fit(value, width):
    assert arg_signature("n", value) == ("S", width)


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_width_specialises_and_the_warm_path_keys_it(backend):
    k = store_n.with_options(backend=backend)
    out = np.zeros(1, np.int64)
    assert "%n: i32" in k.ir(out, 5) and "%n: i64" in k.ir(out, 2**40)
    before = k.compile_count
    for value in (5, 2**40, -7, -2**40 - 3, 2**31 - 1, 2**31):   # each twice: cold, warm
        for _ in range(2):
            out[0] = 0
            k[(1,)](out, value)
            assert out[0] == value
    assert k.compile_count == before          # two variants, compiled by k.ir above
