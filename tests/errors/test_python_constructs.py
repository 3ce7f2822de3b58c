"""Python statements a kernel cannot run: each is a CompilationError at its own line that
says what to do instead (never a host exception from inside the trace, never a hang)."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import CompilationError, npu_kernel

X = np.zeros(16, np.float32)


def _compile_error(kernel, *args) -> str:
    with pytest.raises(CompilationError) as e:
        kernel.with_options(backend="reference")[(1,)](*args)
    return str(e.value)


def test_try_statement():
    @npu_kernel
    def k(x_ptr):
        try:
            v = nl.load(x_ptr)
        except IndexError:
            v = 0.0
        nl.store(x_ptr, v)
    msg = _compile_error(k, X)
    assert "    try:" in msg and "'try' is not supported" in msg and "mask" in msg


def test_with_statement():
    @npu_kernel
    def k(x_ptr):
        with open("/nonexistent") as f:
            nl.store(x_ptr, nl.load(x_ptr) + len(f.name))
    msg = _compile_error(k, X)
    assert 'with open("/nonexistent") as f:' in msg and "outside the kernel" in msg


def test_generator_kernel():
    @npu_kernel
    def k(x_ptr):
        yield nl.load(x_ptr)
    msg = _compile_error(k, X)
    assert "yield nl.load(x_ptr)" in msg and "cannot be a generator" in msg


def test_global_statement():
    @npu_kernel
    def k(x_ptr):
        global COUNTER
        COUNTER = 1
        nl.store(x_ptr, nl.load(x_ptr))
    msg = _compile_error(k, X)
    assert "global COUNTER" in msg and "Pass the value as an argument" in msg


def _halve_forever(v):
    return _halve_forever(v * 0.5)


def _halve(v, depth):
    return v if depth == 0 else _halve(v * 0.5, depth - 1)


def test_recursion_without_end():
    @npu_kernel
    def k(x_ptr):
        nl.store(x_ptr, _halve_forever(nl.load(x_ptr)))
    msg = _compile_error(k, X)
    assert "return _halve_forever(v * 0.5)" in msg and "'_halve_forever' calls itself" in msg


def test_recursion_on_a_python_depth_is_unrolled():
    @npu_kernel
    def k(x_ptr, DEPTH: nl.constexpr):
        nl.store(x_ptr + nl.arange(0, 4), _halve(nl.load(x_ptr + nl.arange(0, 4)), DEPTH))
    x = np.full(4, 8.0, np.float32)
    k.with_options(backend="reference")[(1,)](x, DEPTH=3)
    np.testing.assert_array_equal(x, np.full(4, 1.0, np.float32))
