"""Launch path: specialisation key, compile counting, array-likes, torch (when present),
grids as callables, device_print."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import LaunchError, npu_kernel
from npujit.jit.hooks import on_compile


@npu_kernel
def scale(x_ptr, out_ptr, n, factor, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def _fresh(backend):
    # A new kernel object per test, so compile counts start at zero.
    return npu_kernel(scale.fn, backend=backend)


def test_runtime_ints_and_floats_do_not_recompile(backend):
    k = _fresh(backend)
    for n in (10, 100, 1000):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        k[(-(-n // 64),)](x, out, n, 0.5 * n, BLOCK=64)
        np.testing.assert_allclose(out, x * np.float32(0.5 * n), rtol=1e-6)
    assert k.compile_count == 1


def test_dtype_rank_contiguity_and_constexpr_specialise(backend):
    k = _fresh(backend)
    x32 = np.ones(64, np.float32)
    k[(1,)](x32, np.zeros(64, np.float32), 64, 2.0, BLOCK=64)
    k[(1,)](x32, np.zeros(64, np.float32), 64, 3.0, BLOCK=64)
    assert k.compile_count == 1
    x16 = np.ones(64, np.float16)
    out16 = np.zeros(64, np.float16)
    k[(1,)](x16, out16, 64, 2.0, BLOCK=64)
    assert k.compile_count == 2 and (out16 == 2).all()
    k[(2,)](x32, np.zeros(64, np.float32), 64, 2.0, BLOCK=32)
    assert k.compile_count == 3
    x2d = np.ones((8, 8), np.float32)
    out2d = np.zeros((8, 8), np.float32)
    k[(1,)](x2d, out2d, 64, 2.0, BLOCK=64)
    assert k.compile_count == 4 and (out2d == 2).all()
    strided = np.ones((8, 16), np.float32)[:, ::2]
    assert not strided.flags.c_contiguous
    # the kernel addresses x as contiguous (no stride argument): refused, not misread
    with pytest.raises(LaunchError, match="'x_ptr' is a non-contiguous view"):
        k[(1,)](strided, out2d, 64, 2.0, BLOCK=64)
    assert k.compile_count == 4


def test_compile_hook_sees_each_compile_once():
    k = _fresh("reference")
    new = []
    with on_compile(new.append):
        k[(1,)](np.ones(4, np.float32), np.zeros(4, np.float32), 4, 1.0, BLOCK=4)
        k[(1,)](np.ones(4, np.float32), np.zeros(4, np.float32), 4, 1.0, BLOCK=4)
    k[(1,)](np.ones(4, np.float32), np.zeros(4, np.float32), 4, 1.0, BLOCK=8)  # hook removed
    assert len(new) == 1 and new[0].kernel == "scale" and new[0].constexprs == {"BLOCK": 4}
    assert new[0].backend == "reference" and new[0].seconds > 0 and k.compile_count == 2


@npu_kernel
def maybe_bias(x_ptr, b_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs)
    if b_ptr is not None:
        x = x + nl.load(b_ptr + offs)
    nl.store(out_ptr + offs, x)


def test_none_is_part_of_the_key(backend):
    k = maybe_bias.with_options(backend=backend)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    k[(1,)](x, None, out, BLOCK=8)
    np.testing.assert_array_equal(out, x)
    k[(1,)](x, x, out, BLOCK=8)
    np.testing.assert_array_equal(out, 2 * x)


class ArrayLike:
    """Only ``__array__``: npujit must take it like an array (no copy for writes here)."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


def test_array_like_arguments(backend):
    k = _fresh(backend)
    out = np.zeros(16, np.float32)
    k[(1,)](ArrayLike(np.ones(16, np.float32)), ArrayLike(out), 16, 4.0, BLOCK=16)
    assert (out == 4).all()


def test_torch_cpu_tensors(backend):
    torch = pytest.importorskip("torch")
    k = _fresh(backend)
    x = torch.arange(32, dtype=torch.float32)
    out = torch.zeros(32, dtype=torch.float32)
    k[(1,)](x, out, 32, 2.0, BLOCK=32)
    assert torch.equal(out, x * 2)


def test_grid_callable_sees_arguments(backend):
    k = _fresh(backend)
    x = np.ones(1000, np.float32)
    out = np.zeros(1000, np.float32)
    k[lambda meta: (-(-meta["n"] // meta["BLOCK"]),)](x, out, 1000, 3.0, BLOCK=128)
    assert (out == 3).all()


@npu_kernel
def printer(x_ptr):
    v = nl.load(x_ptr + nl.arange(0, 2))
    nl.device_print("vals", v)


def test_device_print(backend, capfd):
    printer.with_options(backend=backend)[(2,)](np.array([1.5, -2.0], np.float32))
    out = capfd.readouterr().out
    assert "[pid (0, 0, 0)] vals" in out and "[pid (1, 0, 0)] vals" in out
    assert "1.5" in out and "-2" in out


def test_warm_launch_reuses_the_compiled_kernel(backend):
    k = _fresh(backend)
    x = np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    for i in range(5):
        k[(1,)](x, out, 8, float(i), BLOCK=8)
        assert (out == i).all()
    assert k.compile_count == 1
