"""Threaded llvm launches on the spinning team (backends/llvm/team.py): every program
runs once on any grid, the first failure in grid order is raised whichever thread met
it, sleeping workers wake, launches from several threads at once (one on the team, the
others on the pool) are all right, a forked child makes its own team, and a worker that
never checks in is not waited for."""
from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.backends.llvm import team as team_mod
from npujit.errors import OutOfBoundsError

pytestmark = pytest.mark.skipif(not team_mod.available(), reason="no clock_gettime")


@pytest.fixture(autouse=True)
def _two_threads(monkeypatch):
    # two threads even on a one-core machine (read when a kernel's launcher is made)
    monkeypatch.setenv("NPUJIT_NUM_THREADS", "2")


@npu_kernel(backend="llvm", parallel=True)
def _mark(out_ptr):
    p = nl.program_id(0) + nl.num_programs(0) * (nl.program_id(1) + nl.num_programs(1)
                                                  * nl.program_id(2))
    nl.store(out_ptr + p, nl.load(out_ptr + p) + p + 1)


@npu_kernel(backend="llvm", parallel=True)
def _scale(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    m = offs < n
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=m) * 3.0 + 1.0, mask=m)


@npu_kernel(backend="llvm", parallel=True)
def _copy(x_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs))


@pytest.mark.parametrize("grid", [(1,), (2,), (7,), (16,), (17,), (1000,), (3, 5, 7)])
def test_every_program_runs_once(grid):
    total = int(np.prod(grid))
    out = np.zeros(total, np.int32)
    for _ in range(3):
        out[:] = 0
        _mark[grid](out)
        np.testing.assert_array_equal(out, np.arange(1, total + 1))


def test_the_first_failure_in_grid_order_is_raised_whichever_thread_met_it():
    x = np.arange(128, dtype=np.float32)          # program 1 on reads past the end
    out = np.zeros(128 * 1000, np.float32)
    for _ in range(20):                           # pieces of 62-63 programs: the first
        with pytest.raises(OutOfBoundsError, match=r"program \(62, 0, 0\)"):
            _copy[(1000,)](np.concatenate([x] * 62), out, BLOCK=128)   # failing is 62
    _copy[(4,)](np.concatenate([x] * 4), out, BLOCK=128)               # and it goes on
    np.testing.assert_array_equal(out[:512], np.concatenate([x] * 4))


def test_sleeping_workers_wake_for_the_next_launch():
    n = 10_000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    _scale[(n // 64 + 1,)](x, out, n, BLOCK=64)
    team = team_mod.team(1)
    deadline = time.monotonic() + 10              # past the spin the workers sleep
    while team.sleeping < 1 and time.monotonic() < deadline:
        time.sleep(20 * team_mod.SPIN_S)
    assert team.sleeping >= 1
    out[:] = 0
    _scale[(n // 64 + 1,)](x, out, n, BLOCK=64)
    np.testing.assert_allclose(out, x * 3 + 1, rtol=1e-6)


def test_threaded_launches_from_several_threads_at_once():
    n = 40_000
    xs = [np.random.default_rng(i).standard_normal(n).astype(np.float32) for i in range(4)]
    outs = [np.zeros(n, np.float32) for _ in xs]
    errors = []
    barrier = threading.Barrier(4)

    def launch(i):
        try:
            barrier.wait()
            for _ in range(10):
                outs[i][:] = 0
                _scale[(n // 256 + 1,)](xs[i], outs[i], n, BLOCK=256)
                np.testing.assert_allclose(outs[i], xs[i] * 3 + 1, rtol=1e-6)
                marks = np.zeros(300, np.int32)
                _mark[(300,)](marks)
                np.testing.assert_array_equal(marks, np.arange(1, 301))
        except BaseException as e:
            errors.append(e)
    _scale[(1,)](xs[0], outs[0], n, BLOCK=256)    # compiled before the threads start
    _mark[(1,)](np.zeros(1, np.int32))
    threads = [threading.Thread(target=launch, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _child(q):
    out = np.zeros(500, np.int32)
    _mark[(500,)](out)
    q.put(bool((out == np.arange(1, 501)).all()))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="no fork on this platform")
def test_a_forked_child_makes_its_own_team():
    out = np.zeros(500, np.int32)
    _mark[(500,)](out)                            # the parent's team exists
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    assert q.get(timeout=120) is True
    p.join(60)
    assert p.exitcode == 0


def test_a_worker_that_never_checks_in_is_not_waited_for():
    # A team whose worker is held in the interpreter: the launching thread runs every
    # piece, withdraws the launch from the worker and returns; the worker, let go, does
    # not touch that launch and takes part in the next.
    import ctypes
    team_mod.team(1)                                 # the native part compiled
    gate = threading.Event()

    class Held(team_mod.Team):
        def _work(self, s):
            gate.wait()
            super()._work(s)

    seen = []

    @ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
    def entry(ctx):
        c = (ctypes.c_int64 * 10).from_address(ctx)
        seen.append((c[3], c[4]))
        return 0
    contexts = [(ctypes.c_int64 * 10)() for _ in range(2)]
    team = Held(1)
    try:
        for launch in range(2):
            seen.clear()
            result, done = [], threading.Event()

            def run():
                result.append(team.run(ctypes.cast(entry, ctypes.c_void_p).value,
                                       lambda: [ctypes.addressof(c) for c in contexts],
                                       100, 10))
                done.set()
            threading.Thread(target=run, daemon=True).start()
            assert done.wait(60), "the launch waited for a worker that never came"
            bad, helpers = result[0]
            assert bad == -1 and helpers <= 1
            assert launch or helpers == 0             # the held worker took no part
            assert sorted(seen) == [(10 * k, 10 * (k + 1)) for k in range(10)]
            gate.set()
    finally:
        gate.set()
        team.retire()


@npu_kernel(backend="llvm", parallel=True)
def _shout(x_ptr, BLOCK: nl.constexpr):
    v = nl.load(x_ptr + nl.program_id(0) * BLOCK + nl.arange(0, BLOCK))
    nl.device_print("sum", nl.sum(v, axis=0))


def test_device_print_from_threads_writes_whole_lines(capfd):
    x = np.arange(256, dtype=np.float32)
    for _ in range(3):
        _shout[(64,)](x, BLOCK=4)
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) == 3 * 64
    want = {f"[pid ({p}, 0, 0)] sum {float(x[4 * p:4 * p + 4].sum())}" for p in range(64)}
    assert set(lines) == want
