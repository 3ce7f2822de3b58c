"""Many threads launching many kernels at once, first launch and re-launch: the driver the
thread test (tests/runtime/test_threads.py) and the 20-runs script
(benchmarks/stress_threads.py) share.

Every run makes fresh kernel objects whose constexpr ``SALT`` is new to the process, so
their generated numba modules are new too: the first launch really races on tracing, the
pass pipeline, code generation, module import and numba's compile, not on a warm cache.

Example::

    >>> stress("numba", threads=8, rounds=3)     # doctest: +SKIP
    {'launches': 24, 'compiles': 3, 'seconds': 1.9}
"""
from __future__ import annotations

import itertools
import os
import threading
import time

import numpy as np

import npujit.language as nl
from npujit import npu_kernel
from npujit.jit.hooks import on_compile

# A new SALT per run: the process has never compiled these specialisations.
_salts = itertools.count(int.from_bytes(os.urandom(3), "little") * 64)


def _scale(x_ptr, out_ptr, n, factor, SALT: nl.constexpr, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=mask) * factor + SALT, mask=mask)


def _row_sum(x_ptr, out_ptr, n_cols, SALT: nl.constexpr, BLOCK: nl.constexpr):
    row = nl.program_id(0)
    cols = nl.arange(0, BLOCK)
    v = nl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    nl.store(out_ptr + row + nl.arange(0, 1), nl.reshape(nl.sum(v, axis=0) + SALT, (1,)))


def _loop_sum(x_ptr, out_ptr, n, SALT: nl.constexpr, BLOCK: nl.constexpr):
    acc = nl.zeros((BLOCK,), nl.float32)
    for i in nl.range(0, n, BLOCK):
        offs = i + nl.arange(0, BLOCK)
        acc += nl.load(x_ptr + offs, mask=offs < n, other=0.0)
    nl.store(out_ptr + nl.arange(0, 1), nl.reshape(nl.sum(acc, axis=0) + SALT, (1,)))


def _cases(backend: str, salt: int):
    """(kernel, launch(thread_rng) -> (got, want)) for each kernel of one run."""
    scale = npu_kernel(_scale, backend=backend)
    row_sum = npu_kernel(_row_sum, backend=backend)
    loop_sum = npu_kernel(_loop_sum, backend=backend)

    def run_scale(rng):
        n = int(rng.integers(1, 300))
        x = rng.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        f = float(rng.integers(-4, 5))
        scale[(-(-n // 64),)](x, out, n, f, SALT=salt, BLOCK=64)
        return out, x * np.float32(f) + np.float32(salt)

    def run_row_sum(rng):
        rows, cols = int(rng.integers(1, 9)), int(rng.integers(1, 33))
        x = rng.integers(-8, 8, (rows, cols)).astype(np.float32)
        out = np.zeros(rows, np.float32)
        row_sum[(rows,)](x, out, cols, SALT=salt, BLOCK=32)
        return out, x.sum(axis=1) + np.float32(salt)

    def run_loop_sum(rng):
        n = int(rng.integers(1, 500))
        x = rng.integers(-8, 8, n).astype(np.float32)
        out = np.zeros(1, np.float32)
        loop_sum[(1,)](x, out, n, SALT=salt, BLOCK=64)
        return out, np.array([x.sum() + salt], np.float32)

    return [(scale, run_scale), (row_sum, run_row_sum), (loop_sum, run_loop_sum)]


def stress(backend: str, threads: int = 8, rounds: int = 3) -> dict:
    """Start ``threads`` threads at once; each launches every kernel ``rounds`` times (all
    threads' first launches of a kernel race), checking every result against numpy.
    Raises AssertionError on a wrong result, a failed launch, or a kernel compiled more
    than once; returns counts and the wall time."""
    salt = next(_salts)
    cases = _cases(backend, salt)
    start = threading.Barrier(threads)
    errors: list = []
    events: list = []

    def worker(t: int):
        rng = np.random.default_rng([salt, t])
        try:
            start.wait()
            for r in range(rounds):
                for i in range(len(cases)):
                    _, run = cases[(t + i) % len(cases)]
                    got, want = run(rng)
                    np.testing.assert_array_equal(got, want)
        except BaseException as e:        # reported below, with the thread's number
            errors.append((t, e))

    t0 = time.perf_counter()
    with on_compile(events.append):
        pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    seconds = time.perf_counter() - t0
    if errors:
        t, e = errors[0]
        raise AssertionError(f"{len(errors)} of {threads} threads failed; thread {t}: "
                             f"{type(e).__name__}: {e}") from e
    for kernel, _ in cases:
        assert kernel.compile_count == 1, \
            f"{kernel.name} compiled {kernel.compile_count} times (one specialisation)"
    mine = [e for e in events if e.constexprs.get("SALT") == salt]
    assert len(mine) == len(cases), f"{len(mine)} compile events for {len(cases)} kernels"
    return {"launches": threads * rounds * len(cases), "compiles": len(mine),
            "seconds": round(seconds, 2)}


def compile_many(threads: int = 8, per_thread: int = 4) -> int:
    """``threads`` threads each compiling ``per_thread`` new specialisations of every
    kernel on the reference backend (trace, passes, schedule at once in many threads);
    returns the number of compiles.  Raises the first thread's error."""
    salt = next(_salts)
    x = np.ones(64, np.float32)
    errors: list = []
    start = threading.Barrier(threads)

    def worker(t: int):
        try:
            start.wait()
            for i in range(per_thread):
                s = salt * 1000 + t * per_thread + i
                npu_kernel(_scale, backend="reference").compile(x, x, 64, 1.0, SALT=s,
                                                                 BLOCK=64)
                npu_kernel(_row_sum, backend="reference").compile(x, x, 8, SALT=s, BLOCK=32)
                npu_kernel(_loop_sum, backend="reference").compile(x, x, 64, SALT=s,
                                                                    BLOCK=64)
        except BaseException as e:
            errors.append(e)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    if errors:
        raise errors[0]
    return threads * per_thread * 3
