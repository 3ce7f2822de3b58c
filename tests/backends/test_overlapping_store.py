"""A load reads every lane when it runs, even where the CPU backend reads its elements
later, inside a store's loop (backends/llvm/deferred.py): stores into memory the same
program just loaded -- a shift, a reverse, a permutation in place, views of one buffer
-- and a store between a load and the value's reader.  Oracles are numpy's."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.errors import LaunchError


@npu_kernel
def shift_right(p, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    m = offs < n - 1
    nl.store(p + offs + 1, nl.load(p + offs, mask=m) * 2.0 + 1.0, mask=m)


@npu_kernel
def reverse(p, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    m = offs < n
    nl.store(p + (n - 1 - offs), nl.load(p + offs, mask=m), mask=m)


@npu_kernel
def copy(src, dst, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(dst + offs, nl.load(src + offs, mask=offs < n), mask=offs < n)


@npu_kernel
def permute(p, idx, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    m = offs < n
    nl.store(p + offs, nl.load(p + nl.load(idx + offs, mask=m), mask=m) + 0.5, mask=m)


@npu_kernel
def write_between(p, q, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    m = offs < n
    w = nl.load(p + offs, mask=m) * 2.0 + 1.0
    nl.store(q + offs, nl.full((BLOCK,), -7.0, nl.float32), mask=m)
    nl.store(q + n + offs, w, mask=m)


@npu_kernel
def write_in_loop(p, n, STEPS: nl.constexpr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    m = offs < n
    w = nl.load(p + offs, mask=m) + 1.0
    for s in range(STEPS):
        nl.store(p + offs, nl.full((BLOCK,), -1.0, nl.float32) * s, mask=m)
    nl.store(p + n + offs, w, mask=m)


@npu_kernel
def scale_in_place(p, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    m = offs < n
    nl.store(p + offs, nl.load(p + offs, mask=m) * 3.0, mask=m)


def test_stores_over_what_the_program_loaded(backend):
    a = np.arange(10, dtype=np.float32)
    want = a.copy()
    want[1:] = a[:-1] * 2 + 1
    shift_right.with_options(backend=backend)[(1,)](a, 10, BLOCK=16)
    np.testing.assert_array_equal(a, want)

    a = np.arange(10, dtype=np.float32)
    reverse.with_options(backend=backend)[(1,)](a, 10, BLOCK=16)
    np.testing.assert_array_equal(a, np.arange(10, dtype=np.float32)[::-1])

    buf = np.arange(20, dtype=np.float32)
    want = buf.copy()
    want[5:15] = buf[:10]
    copy.with_options(backend=backend)[(1,)](buf[:10], buf[5:15], 10, BLOCK=16)
    np.testing.assert_array_equal(buf, want)

    a = np.arange(10, dtype=np.float32)
    perm = np.random.default_rng(0).permutation(10).astype(np.int32)
    want = a[perm] + 0.5
    permute.with_options(backend=backend)[(1,)](a, perm, 10, BLOCK=16)
    np.testing.assert_array_equal(a, want)


def test_a_store_between_a_load_and_its_reader(backend):
    buf = np.arange(30, dtype=np.float32)
    want = buf.copy()
    want[:10] = -7.0
    want[10:20] = np.arange(10) * 2 + 1
    write_between.with_options(backend=backend)[(1,)](buf[:10], buf, 10, BLOCK=16)
    np.testing.assert_array_equal(buf, want)

    a = np.arange(20, dtype=np.float32)
    want = a.copy()
    want[:10] = -2.0
    want[10:] = np.arange(10) + 1
    write_in_loop.with_options(backend=backend)[(1,)](a, 10, STEPS=3, BLOCK=16)
    np.testing.assert_array_equal(a, want)


def test_separate_arrays_and_in_place_updates_stay_right(backend):
    src = np.arange(10, dtype=np.float32)
    dst = np.zeros(10, np.float32)
    copy.with_options(backend=backend)[(1,)](src, dst, 10, BLOCK=16)
    np.testing.assert_array_equal(dst, src)
    a = np.arange(1000, dtype=np.float32)
    scale_in_place.with_options(backend=backend)[(8,)](a, 1000, BLOCK=128)
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float32) * 3)


@npu_kernel
def shift_in_blocks(src, dst, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    m = (offs < n) & (nl.arange(0, BLOCK) < BLOCK - 1)   # no program reads another's output
    nl.store(dst + offs, nl.load(src + offs, mask=m) * 2.0, mask=m)


def test_views_of_one_buffer_on_threads_and_in_a_loaded_build():
    """The llvm build reads ``src`` in the store's loop and tests at entry that ``src``
    and ``dst`` do not overlap; views of one buffer run its alias-safe build, also on
    threads, and a build loaded from an artifact gets its IR to make one (jit/compiled.py)
    or, with none, says to pass copies."""
    n, block = 1 << 15, 1024
    base = np.arange(n + 1, dtype=np.float32)
    want = base.copy()
    for p in range(n // block):
        want[p * block + 1:p * block + block] = base[p * block:p * block + block - 1] * 2
    k = shift_in_blocks.with_options(backend="llvm", parallel=True)
    for _ in range(20):                         # enough launches for the threaded way
        buf = base.copy()
        k[(n // block,)](buf[:n], buf[1:], n, BLOCK=block)
        np.testing.assert_array_equal(buf, want)
        apart = np.zeros(n, np.float32)
        k[(n // block,)](base, apart, n, BLOCK=block)
        np.testing.assert_array_equal(apart[:block - 1], base[:block - 1] * 2)

    from npujit.backends.llvm.backend import LlvmBackend
    built = LlvmBackend().compile(k.compile(base, apart, n, BLOCK=block).ir, {})
    loaded = LlvmBackend().load(built.artifact, {})
    buf = base.copy()
    with pytest.raises(LaunchError, match="overlap in memory.*pass copies"):
        loaded((n // block,), [buf[:n], buf[1:], n])
    np.testing.assert_array_equal(buf, base)           # nothing ran
    built((n // block,), [buf[:n], buf[1:], n])
    np.testing.assert_array_equal(buf, want)
