"""``triton.jit(repr=fn)`` names the compiled kernel by Triton's view of a launch's
specialisation."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl

seen = []


def _name(spec):
    seen.append(spec)
    ones = "_".join(k for k, v in spec.constants.items() if v == 1)
    return f"scale_{spec.signature['value']}_{ones}"


@triton.jit(repr=_name, backend="reference")
def _scale(value, is_one, x_ptr: tl.const, out_ptr, factor, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * factor)


@pytest.mark.parametrize("value, triton_type", [(-2**31, "i32"), (2**31 - 1, "i32"),
                                                (2**31, "i64"), (-2**63, "i64"),
                                                (2**63, "u64")])
def test_repr_names_the_compiled_kernel_by_triton_type_strings(value, triton_type):
    x = np.arange(4, dtype=np.float32)
    h = _scale.warmup(value, 1, x, np.zeros(4, np.float16), 2.0, BLOCK=4, grid=(1,))
    assert h.name == f"scale_{triton_type}_is_one"
    spec = seen[-1]
    assert spec.signature == {"value": triton_type, "is_one": "constexpr", "x_ptr": "*kfp32",
                              "out_ptr": "*fp16", "factor": "fp32", "BLOCK": "constexpr"}
    assert spec.constants == {"is_one": 1, "BLOCK": 4}


def test_repr_names_each_launch_by_its_own_arguments_and_the_default_is_the_function():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    h = _scale[(1,)](7, 2, x, out, 3.0, BLOCK=4)
    np.testing.assert_array_equal(out, 3.0 * x)
    assert h.name == "scale_i32_"             # 2 is no constant: the name says so
    assert _scale[(1,)](7, 1, x, out, 3.0, BLOCK=4).name == "scale_i32_is_one"
    plain = triton.jit(_scale.fn).with_options(backend="reference")
    assert plain.warmup(7, 1, x, out, 3.0, BLOCK=4, grid=(1,)).name == "_scale"

