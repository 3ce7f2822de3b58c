"""Triton's atomics: add/max/min/xchg/and/or/xor with duplicate offsets, masks and the
ignored ``sem=``/``scope=`` keywords, against a lane-by-lane numpy oracle on both tiers."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl

N = 8
COMBINES = {"add": lambda a, b: a + b, "max": max, "min": min, "xchg": lambda a, b: b,
            "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}


@triton.jit
def _all_atomics(mem_ptr, val_ptr, cmp_ptr, old_ptr, N: tl.constexpr):
    lanes = tl.arange(0, N)
    cell = lanes % 3                       # duplicates: lanes share cells, in order
    mask = lanes != 5
    v = tl.load(val_ptr + lanes)
    tl.store(old_ptr + 0 * N + lanes, tl.atomic_add(mem_ptr + 0 * 3 + cell, v, mask=mask, sem="acq_rel", scope="gpu"))
    tl.store(old_ptr + 1 * N + lanes, tl.atomic_max(mem_ptr + 1 * 3 + cell, v, mask=mask))
    tl.store(old_ptr + 2 * N + lanes, tl.atomic_min(mem_ptr + 2 * 3 + cell, v, mask=mask, sem="relaxed"))
    tl.store(old_ptr + 3 * N + lanes, tl.atomic_xchg(mem_ptr + 3 * 3 + cell, v, mask=mask))
    tl.store(old_ptr + 4 * N + lanes, tl.atomic_and(mem_ptr + 4 * 3 + cell, v, mask=mask))
    tl.store(old_ptr + 5 * N + lanes, tl.atomic_or(mem_ptr + 5 * 3 + cell, v, mask=mask, scope="cta"))
    tl.store(old_ptr + 6 * N + lanes, tl.atomic_xor(mem_ptr + 6 * 3 + cell, val=v, mask=mask))
    cas = tl.atomic_cas(mem_ptr + 7 * 3 + cell, tl.load(cmp_ptr + lanes), v % 3, sem="acquire")
    tl.store(old_ptr + 7 * N + lanes, cas)


def _oracle(mem, vals, cmps):
    mem, old = mem.astype(np.int64).tolist(), np.zeros((len(COMBINES) + 1) * N, np.int64)
    for k, f in enumerate(COMBINES.values()):
        for lane in range(N):
            if lane == 5:
                continue
            o = k * 3 + lane % 3
            old[k * N + lane] = mem[o]
            mem[o] = f(mem[o], int(vals[lane]))
    k = len(COMBINES)                       # compare-and-swap: every lane, no mask
    for lane in range(N):
        o = k * 3 + lane % 3
        old[k * N + lane] = mem[o]
        if mem[o] == cmps[lane]:
            mem[o] = int(vals[lane]) % 3 if vals[lane] >= 0 else -(-int(vals[lane]) % 3)
    return np.array(mem, np.int32), old.astype(np.int32)


def test_every_atomic_combines_lane_by_lane_and_returns_old_values(backend):
    rng = np.random.default_rng(3)
    mem = rng.integers(-50, 50, 3 * len(COMBINES) + 3).astype(np.int32)
    mem[-3:] = [0, 1, 2]
    vals = rng.integers(-50, 50, N).astype(np.int32)
    cmps = rng.integers(-2, 3, N).astype(np.int32)
    want_mem, want_old = _oracle(mem, vals, cmps)
    old = np.full((len(COMBINES) + 1) * N, -1, np.int32)
    _all_atomics.with_options(backend=backend)[(1,)](mem, vals, cmps, old, N=N)
    np.testing.assert_array_equal(mem, want_mem)
    masked_off = (np.arange(old.size) % N == 5) & (np.arange(old.size) < len(COMBINES) * N)
    np.testing.assert_array_equal(old, np.where(masked_off, 0, want_old))


@triton.jit
def _float_max(mem_ptr, val_ptr, N: tl.constexpr):
    lanes = tl.arange(0, N)
    tl.atomic_max(mem_ptr + lanes % 2, tl.load(val_ptr + lanes))


def test_atomic_max_on_floats_across_programs():
    vals = np.array([1.5, -2.0, 7.25, -0.5], np.float32)
    mem = np.full(2, -np.inf, np.float32)
    _float_max.with_options(backend="reference")[(3,)](mem, vals, N=4)
    np.testing.assert_array_equal(mem, [7.25, -0.5])


@triton.jit
def _float_xor(mem_ptr, N: tl.constexpr):
    tl.atomic_xor(mem_ptr + tl.arange(0, N), 1.0)


def test_bitwise_atomics_on_float_memory_are_refused():
    with pytest.raises(triton.CompilationError, match="bitwise"):
        _float_xor.with_options(backend="reference")[(1,)](np.zeros(4, np.float32), N=4)


@triton.jit
def _narrow_add(in_ptr, out_ptr):
    tl.atomic_add(out_ptr, tl.load(in_ptr))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.bool_])
def test_atomics_on_narrow_ints_are_refused_as_in_triton(dtype):
    with pytest.raises(triton.CompilationError,
                       match=r"atomic_add on u?i(8|16|1) arrays is not supported .*int32"):
        _narrow_add.with_options(backend="reference")[(1,)](np.ones(1, dtype),
                                                             np.zeros(1, dtype))
