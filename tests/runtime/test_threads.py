"""Launching from many threads at once: every launch succeeds with the right result, a
specialisation compiles once per process (the other threads wait for it), and the numba
backend never hands out a half-imported module.  benchmarks/stress_threads.py runs the
stress 20 times in a row."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from npujit.backends.numba import runtime as numba_runtime
from thread_stress import compile_many, stress


def test_many_threads_many_kernels_first_launch_and_relaunch(backend):
    result = stress(backend, threads=8, rounds=3)
    assert result["launches"] == 72 and result["compiles"] == 3


def test_eight_threads_import_one_fresh_numba_module():
    # The same generated module imported by 8 threads at once: each must get it fully
    # run (its function defined), and all the same module object.
    import os
    tag = int.from_bytes(os.urandom(8), "little")
    text = (f"# fresh module {tag}\nimport time\ntime.sleep(0.05)\n"
            f"def entry():\n    return {tag}\n")
    barrier = threading.Barrier(8)
    got, errors = [], []

    def worker():
        try:
            barrier.wait()
            mod = numba_runtime.import_source(text, cache=True)
            got.append((mod, mod.entry()))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(got) == 8 and {v for _, v in got} == {tag}
    assert len({id(m) for m, _ in got}) == 1


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_a_failing_compile_fails_every_waiting_thread_once(backend):
    # A kernel with a compile error: the first thread compiles, the others wait and get
    # the same error; nothing is cached, so a later launch compiles (and fails) again.
    import npujit.language as nl
    from npujit import CompilationError, npu_kernel
    from npujit.jit.hooks import on_compile

    @npu_kernel(backend=backend)
    def bad(x_ptr, BLOCK: nl.constexpr):
        v = nl.load(x_ptr + nl.arange(0, BLOCK))
        if v:                       # a tile as an if condition: a compile error
            pass

    barrier = threading.Barrier(6)
    errors, events = [], []

    def worker():
        barrier.wait()
        try:
            bad[(1,)](np.zeros(8, np.float32), BLOCK=8)
        except CompilationError as e:
            errors.append(e)

    with on_compile(events.append):
        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(errors) == 6 and not events and bad.compile_count == 0
    assert not bad._pending


def test_threads_compiling_different_kernels_at_once():
    # 96 compiles of different specialisations in 8 threads: tracing and the compile
    # pipeline run concurrently (its steps hold no per-run state).
    assert compile_many(threads=8, per_thread=4) == 96
