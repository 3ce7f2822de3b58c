"""Launching from many threads at once: every launch succeeds with the right result, a
specialisation compiles once per process (the other threads wait for it), and the numba
backend never hands out a half-imported module.  benchmarks/stress_threads.py runs the
stress 20 times in a row."""
from __future__ import annotations

import threading

import numpy as np

import npujit.language as nl
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


def _big_kernel(x_ptr, out_ptr):
    a = nl.load(x_ptr + nl.arange(0, 16))
    b = a + 1.0
    c = b * 2.0
    d = c - a
    e = nl.exp(d) + nl.abs(c)
    nl.store(out_ptr + nl.arange(0, 16), e * b + d)


def _small_kernel(x_ptr, out_ptr):
    nl.store(out_ptr + nl.arange(0, 16), nl.load(x_ptr + nl.arange(0, 16)))


def test_a_thread_paused_inside_ast_parse_is_not_corrupted_by_another_thread():
    # CPython 3.11 keeps the syntax-tree conversion's depth counter per interpreter.  Pause
    # thread A inside that conversion (a garbage collection it triggers sleeps, which lets
    # other threads run) while thread B rewrites another kernel: without the compiler's lock
    # A fails with "AST constructor recursion depth mismatch".
    import gc
    import sys

    from npujit.jit.ast_rewrite import rewrite_function
    from npujit.jit import loops as loop_runtime

    a_started, b_done = threading.Event(), threading.Event()
    a_thread: list = []
    errors: list = []

    def inside_ast_parse():
        f = sys._getframe(2)           # the frame that allocated: ast.parse's compile()
        return f.f_code.co_name == "parse" and f.f_code.co_filename.endswith("ast.py")

    def pause_a_once(phase, info):
        if (phase == "start" and a_thread and threading.current_thread() is a_thread[0]
                and not a_started.is_set() and inside_ast_parse()):
            a_started.set()
            b_done.wait(0.5)         # B blocks on the lock, so this times out; then A goes on

    def run_a():
        try:
            rewrite_function(_big_kernel, loop_runtime)
        except BaseException as e:
            errors.append(e)

    def run_b():
        a_started.wait(5)
        try:
            rewrite_function(_small_kernel, loop_runtime)
        except BaseException as e:
            errors.append(e)
        b_done.set()

    old = gc.get_threshold()
    gc.callbacks.append(pause_a_once)
    gc.set_threshold(1)
    try:
        ta, tb = threading.Thread(target=run_a), threading.Thread(target=run_b)
        a_thread.append(ta)
        tb.start()
        ta.start()
        ta.join(30)
        tb.join(30)
    finally:
        gc.callbacks.remove(pause_a_once)
        gc.set_threshold(*old)
    assert a_started.is_set(), "thread A never collected garbage inside the rewrite"
    assert not errors, errors
