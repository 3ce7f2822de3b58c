"""Loads read where they are used (backends/numba/deferred_load.py), against numpy: a
store into an argument that overlaps a loaded one, a store between a load and its use,
the range check of a deferred load, and that the vector add's loads get no tile."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.errors import OutOfBoundsError


@npu_kernel
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    x = nl.load(x_ptr + offs, mask=mask)
    y = nl.load(y_ptr + offs, mask=mask)
    nl.store(out_ptr + offs, x * 2.0 + y, mask=mask)


@npu_kernel
def _load_clear_store(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    mask = offs < n
    x = nl.load(x_ptr + offs, mask=mask)
    nl.store(x_ptr + offs, nl.zeros((BLOCK,), nl.float32), mask=mask)
    nl.store(out_ptr + offs, x + 1.0, mask=mask)


@npu_kernel
def _store_then_print(x_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    mask = offs < n
    x = nl.load(x_ptr + offs, mask=mask)
    nl.store(x_ptr + offs, x * 0.0 - 1.0, mask=mask)
    nl.device_print("x", x)             # read after the store: must print the old values


@npu_kernel
def _shifted(x_ptr, out_ptr, n, shift, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs + shift, mask=offs < n)
    nl.store(out_ptr + offs, x, mask=offs < n)


def _numba(k):
    return k.with_options(backend="numba")


def test_add_loads_have_no_tile_and_match_numpy():
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    out = np.empty_like(x)
    k = _numba(_add)
    k[(4,)](x, y, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, x * np.float32(2) + y)
    src = k.compile(x, y, out, 1000, BLOCK=256).runnable().source
    assert "load = np.empty" not in src and "x_ptr[base + " in src


@pytest.mark.parametrize("alias", ["x", "y"])
def test_add_in_place_on_either_input(alias):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(700).astype(np.float32) for _ in range(2))
    want = x * np.float32(2) + y
    out = x if alias == "x" else y
    _numba(_add)[(3,)](x, y, out, 700, BLOCK=256)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("step", [1, -1])
def test_store_into_an_overlapping_view_reads_the_old_values(step):
    # one program: the load reads every element before the store writes any, as the
    # copy into a tile did; read in the store's loop, out[i] = x[i] with out one element
    # past x would copy buf[0] everywhere
    buf = np.arange(65, dtype=np.float32)
    x, out = (buf[:-1], buf[1:]) if step == 1 else (buf[1:], buf[:-1])
    want = x.copy()
    _numba(_add)[(1,)](x, np.zeros(64, np.float32), out, 64, BLOCK=64)
    np.testing.assert_array_equal(out, want * np.float32(2))


def test_a_store_between_load_and_use_does_not_change_the_loaded_value():
    x = np.arange(1, 33, dtype=np.float32)
    want = x + 1
    out = np.empty_like(x)
    _numba(_load_clear_store)[(1,)](x, out, 32, BLOCK=32)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(x, np.zeros(32, np.float32))


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_a_use_after_the_store_sees_the_loaded_values(backend, capfd):
    x = np.array([3.0, 5.0, 7.0, 9.0], np.float32)
    _store_then_print.with_options(backend=backend)[(1,)](x, 4, BLOCK=4)
    np.testing.assert_array_equal(x, -np.ones(4, np.float32))
    out = capfd.readouterr().out
    assert "x [3. 5. 7. 9.]" in out, out


def test_deferred_load_keeps_its_range_check():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    k = _numba(_shifted)
    k[(1,)](x, out, 12, 4, BLOCK=16)                # the last active lane reads x[15]
    np.testing.assert_array_equal(out[:12], x[4:16])
    with pytest.raises(OutOfBoundsError, match="x_ptr"):
        k[(1,)](x, out, 13, 4, BLOCK=16)            # lane 12 reads x[16]
