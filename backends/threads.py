"""Programs of a launch on several threads, for the CPU backends (numba, llvm): their
compiled entries run a range of programs and release the GIL, so chunks of the grid run
side by side on a shared thread pool.

``ThreadChoice`` is when to do it: serially until the best of two serial launches of a
kernel took longer than ``PARALLEL_AFTER_S`` (handing chunks to the pool's threads costs
20-40 us; the llvm backend's team, backends/llvm/team.py, about 5 us and a lower
threshold), then a probe of alternating threaded and serial launches (``PROBE_ROUNDS``
of each) keeps the faster way until the next probe: ``REPROBE_FIRST`` launches after a
probe that changed the answer, twice as many as last time after one that kept it, up
to ``REPROBE_AFTER``.  Why a probe
and not a size rule: the first launches of a kernel are slow (page faults, cold caches,
thread start-up) and this 2-core machine's other load comes and goes, so one comparison
could settle on the wrong way for good (the numba backend's launcher, which this
follows, measured a 512^3 matmul settling on serial in one process and threads in
another).

Example::

    >>> done = []
    >>> on_threads(2, 10, lambda c, lo, hi: done.append((lo, hi)) or True)
    >>> sorted(done)[:3]
    [(0, 1), (1, 2), (2, 3)]
"""
from __future__ import annotations

import os
import threading
import time

from npujit import knobs

# Grid pieces per thread in a threaded launch (each costs one entry call, ~2 us).
CHUNKS_PER_THREAD = 8
# A launch that took longer than this serially runs its later launches on threads.
PARALLEL_AFTER_S = 5e-4
# Launches of each way (serial, threaded) in a probe, and launches between probes: from
# ``REPROBE_FIRST``, doubled each time a probe gives the answer the last one gave, up to
# ``REPROBE_AFTER``, and back to ``REPROBE_FIRST`` when the answer changes.  A first
# answer is often wrong: a kernel's first launches write fresh memory (a new output's page
# faults, which threads take in turn: a 1 M-element add's first launches took 0.46 ms
# serial and 1.6 ms on two threads, then 0.17 and 0.10), and on a shared machine the
# other core comes and goes; a steady answer costs a probe every 200 launches.
PROBE_ROUNDS = 3
# A threaded probe launch that no other thread took part in (``run`` returned False: the
# llvm team's workers were asleep, and waking an idle virtual CPU here can take longer
# than the launch) is not timed but run again, up to this many times per probe.
PROBE_RETRIES = 8
REPROBE_FIRST = 16
REPROBE_AFTER = 200

_pool = None          # a concurrent.futures.ThreadPoolExecutor, made on first use
_pool_lock = threading.Lock()


def thread_pool(workers: int):
    """The shared pool (a ``ThreadPoolExecutor``), with at least ``workers`` threads;
    imported here: a process that never runs threads does not pay its import (~5 ms)."""
    global _pool
    from concurrent.futures import ThreadPoolExecutor
    with _pool_lock:
        if _pool is None or _pool._max_workers < workers:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="npujit-cpu")
        return _pool


def on_threads(n: int, total: int, piece) -> None:
    """Programs ``[0, total)`` on ``n`` threads (this one and ``n - 1`` of the pool):
    the grid is cut into ``CHUNKS_PER_THREAD`` pieces per thread and each thread takes
    the next piece when it finishes one, so a thread that the OS parks for a while (a
    busy core) delays the launch by one piece, not by half the grid (``next`` on a
    shared iterator is atomic under the GIL).  ``piece(c, lo, hi)`` runs piece ``c``;
    a False return stops that thread taking more."""
    pieces = min(total, n * CHUNKS_PER_THREAD)
    bounds = [total * k // pieces for k in range(pieces + 1)]
    chunks = iter(range(pieces))

    def worker():
        for c in chunks:
            if not piece(c, bounds[c], bounds[c + 1]):
                return

    pool = thread_pool(n - 1)
    futures = [pool.submit(worker) for _ in range(1, n)]
    try:
        worker()
    finally:
        for f in futures:
            f.result()


class ThreadChoice:
    """Serial or threaded, per kernel (see the module doc).  ``launch(run)`` calls
    ``run(threaded)``, timing it while it is deciding (a threaded ``run`` returning False
    ran without help, and a probe does not count it); ``fixed``: always that way;
    ``threads``: how many a threaded launch uses."""

    def __init__(self, fixed: bool | None = None, threads: int = 1,
                 parallel_after: float | None = None):
        self.fixed = fixed
        self.threads = threads
        self.parallel_after = PARALLEL_AFTER_S if parallel_after is None else parallel_after
        self.serial_best = float("inf")
        self.serial_runs = 0
        self.probe: list = []
        self.best = {True: float("inf"), False: float("inf")}
        self.way: bool | None = None        # decided: True threaded, False serial
        self.until_probe = 0
        self.last_way: bool | None = None   # the last probe's answer
        self.retries = 0
        self.interval = REPROBE_FIRST

    @classmethod
    def for_options(cls, options: dict, allowed: bool = True,
                    parallel_after: float | None = None) -> "ThreadChoice":
        """A launcher's choice from its options: ``num_threads`` (else
        ``NPUJIT_NUM_THREADS``, else the CPU count) threads; always serial with
        ``parallel=False``, one thread, or a kernel that may not run on threads
        (``allowed`` False: atomics); always threaded with ``parallel=True``; else
        probed once a serial launch takes longer than ``parallel_after`` seconds."""
        par = options.get("parallel")
        threads = int(options.get("num_threads") or knobs.num_threads() or os.cpu_count() or 1)
        can = (par is None or bool(par)) and allowed and threads > 1
        return cls((True if par else None) if can else False, threads, parallel_after)

    def launch(self, run) -> None:
        if self.fixed is not None:
            run(self.fixed)
            return
        if self.way is not None and self.until_probe > 0:
            self.until_probe -= 1
            run(self.way)
            return
        if self.way is not None:
            self._start_probe()
        t0 = time.perf_counter()
        if self.probe:
            way = self.probe.pop()
            if run(way) is False and self.retries < PROBE_RETRIES:
                self.retries += 1             # no worker took part: time it again
                self.probe.append(way)
                return
            self.best[way] = min(self.best[way], time.perf_counter() - t0)
            if not self.probe:
                self.way = self.best[True] < self.best[False]
                self.interval = (min(2 * self.interval, REPROBE_AFTER)
                                 if self.way == self.last_way else REPROBE_FIRST)
                self.last_way = self.way
                self.until_probe = self.interval
            return
        run(False)
        self.serial_best = min(self.serial_best, time.perf_counter() - t0)
        self.serial_runs += 1
        if self.serial_runs >= 2 and self.serial_best > self.parallel_after:
            self._start_probe()

    def _start_probe(self) -> None:
        self.way = None
        self.retries = 0
        self.best = {True: float("inf"), False: float("inf")}
        self.probe = [False, True] * PROBE_ROUNDS          # popped from the end
