"""A threaded launch of compiled entries without the interpreter in the loop: a team of
worker threads that wait for the next launch by spinning in native code, as an OpenMP
runtime's threads do.

Why: a thread pool hands work over through the GIL and a condition variable, and on this
VM an idle virtual CPU takes 12-50 us to wake for either; a threaded launch of the pool
(backends/threads.py ``on_threads``) cost 15-40 us above its programs, which kept
launches under ``PARALLEL_AFTER_S`` serial.  Here the launching thread writes the launch
into the team's words (the entry, the context of each thread, the grid cut into pieces),
bumps the launch number and runs pieces itself; the workers, spinning on the launch
number with the GIL released, check in and take pieces from a shared counter, calling
the entry directly.  When the launching thread has no piece left it withdraws the
launch from each worker that has not checked in (a compare-and-swap on the worker's
slot: a worker that is asleep, or that the OS is not running, is not waited for and
never touches that launch) and waits for the others to finish.  A worker that has seen
no launch for ``SPIN_S`` goes back to the interpreter and sleeps on a condition
variable (a launch then wakes it the slow way).

The native part (``_IR``: ``npujit_team_work``, ``npujit_team_lead``,
``npujit_team_publish``) is compiled once per process with llvmlite (~5 ms).  One launch
holds the team at a time: ``Team.run`` returns False when another thread's launch has
it, and the caller runs its launch another way (backends/llvm/runtime.py).  Linux and
other systems with ``clock_gettime`` only (``available``); a forked child makes its own
team.

Words of a team (int64; each thread's slot on its own 64-byte line)::

    0 launch number   1 entry address   2 pieces   3 programs   4 next piece
    6 a piece failed   7 stop
    8 * (1 + s) + 0: slot s's context address, + 1: the last launch it finished,
      + 2: the piece that failed on it (-1 none), + 3: the launch it may take part in,
      -launch once it has checked in, 0 when withdrawn (slot 0 the launcher; a worker
      takes part only when it checks in, so one that wakes late never reads a later
      launch's words half written)
"""
from __future__ import annotations

import atexit
import ctypes
import os
import threading
import time

# How long a worker spins for the next launch before it sleeps.
SPIN_S = 5e-4
# A kernel whose serial launches take longer than this probes threaded ones (the pool's
# threshold, backends/threads.py PARALLEL_AFTER_S, is ten times this): a launch on the
# team costs about 5 us above its programs (16 rows of a layernorm: 9 us serial, 14
# us on two threads; the pool took 53-88 us).
PARALLEL_AFTER_S = 5e-5

_IR = r"""
declare i32 @clock_gettime(i32, ptr)
declare i32 @sched_yield()
PAUSE_DECL

define internal void @pause() {
  PAUSE_CALL
  ret void
}

define internal i64 @now(i32 %clock) {
  %ts = alloca [2 x i64], align 8
  call i32 @clock_gettime(i32 %clock, ptr %ts)
  %s = load i64, ptr %ts, align 8
  %p = getelementptr i64, ptr %ts, i64 1
  %ns = load i64, ptr %p, align 8
  %a = mul i64 %s, 1000000000
  %t = add i64 %a, %ns
  ret i64 %t
}

define internal ptr @word(ptr %team, i64 %i) {
  %p = getelementptr i64, ptr %team, i64 %i
  ret ptr %p
}

; word %k of slot %s (8 (1 + s) + k)
define internal ptr @slot_word(ptr %team, i64 %s, i64 %k) {
  %s1 = add i64 %s, 1
  %base = shl i64 %s1, 3
  %i = add i64 %base, %k
  %p = getelementptr i64, ptr %team, i64 %i
  ret ptr %p
}

; slot %s runs pieces from the shared counter until none is left or one failed
define internal void @pieces(ptr %team, i64 %s) {
entry:
  %fp = call ptr @word(ptr %team, i64 1)
  %f = load i64, ptr %fp, align 8
  %fn = inttoptr i64 %f to ptr
  %np = call ptr @word(ptr %team, i64 2)
  %n = load i64, ptr %np, align 8
  %tp = call ptr @word(ptr %team, i64 3)
  %total = load i64, ptr %tp, align 8
  %cp = call ptr @word(ptr %team, i64 4)
  %failp = call ptr @word(ptr %team, i64 6)
  %ctxp = call ptr @slot_word(ptr %team, i64 %s, i64 0)
  %ctxw = load i64, ptr %ctxp, align 8
  %ctx = inttoptr i64 %ctxw to ptr
  %mine = call ptr @slot_word(ptr %team, i64 %s, i64 2)
  %lop = getelementptr i64, ptr %ctx, i64 3
  %hip = getelementptr i64, ptr %ctx, i64 4
  br label %next
next:
  %c = atomicrmw add ptr %cp, i64 1 monotonic
  %left = icmp slt i64 %c, %n
  br i1 %left, label %check, label %done
check:
  %failed = load atomic i64, ptr %failp monotonic, align 8
  %ok = icmp eq i64 %failed, 0
  br i1 %ok, label %run, label %done
run:
  %a = mul i64 %total, %c
  %lo = udiv i64 %a, %n
  %c1 = add i64 %c, 1
  %b = mul i64 %total, %c1
  %hi = udiv i64 %b, %n
  store i64 %lo, ptr %lop, align 8
  store i64 %hi, ptr %hip, align 8
  %rc = call i32 %fn(ptr %ctx)
  %good = icmp eq i32 %rc, 0
  br i1 %good, label %next, label %fail
fail:
  store i64 %c, ptr %mine, align 8
  store atomic i64 1, ptr %failp monotonic, align 8
  br label %done
done:
  ret void
}

; a worker: waits for a launch after %seen; checks in (its slot's launch %g -> -%g)
; if the launcher has not withdrawn it, runs pieces and marks it finished; waits
; again; returns the last launch it saw after %budget ns without a new one, or -1 when
; told to stop
define i64 @npujit_team_work(ptr %team, i64 %s, i64 %seen0, i64 %budget, i32 %clock) {
entry:
  %stopp = call ptr @word(ptr %team, i64 7)
  %donep = call ptr @slot_word(ptr %team, i64 %s, i64 1)
  %assignedp = call ptr @slot_word(ptr %team, i64 %s, i64 3)
  br label %wait
wait:
  %seen = phi i64 [%seen0, %entry], [%g, %take], [%g, %work]
  %t0 = call i64 @now(i32 %clock)
  br label %spin
spin:
  %i = phi i64 [0, %wait], [%i1, %tick], [0, %clock_ok]
  %g = load atomic i64, ptr %team acquire, align 8
  %new = icmp ne i64 %g, %seen
  br i1 %new, label %got, label %tick
tick:
  call void @pause()
  %i1 = add i64 %i, 1
  %check = icmp eq i64 %i1, 256
  br i1 %check, label %timecheck, label %spin
timecheck:
  %t = call i64 @now(i32 %clock)
  %el = sub i64 %t, %t0
  %over = icmp sgt i64 %el, %budget
  br i1 %over, label %timeout, label %clock_ok
clock_ok:
  br label %spin
timeout:
  ret i64 %seen
got:
  %stop = load atomic i64, ptr %stopp acquire, align 8
  %stopping = icmp ne i64 %stop, 0
  br i1 %stopping, label %quit, label %take
take:
  %running = sub i64 0, %g
  %pair = cmpxchg ptr %assignedp, i64 %g, i64 %running acq_rel acquire
  %in = extractvalue { i64, i1 } %pair, 1
  br i1 %in, label %work, label %wait
work:
  call void @pieces(ptr %team, i64 %s)
  store atomic i64 %g, ptr %donep release, align 8
  br label %wait
quit:
  ret i64 -1
}

; the launcher: publishes launch %g
define void @npujit_team_publish(ptr %team, i64 %g) {
  store atomic i64 %g, ptr %team release, align 8
  ret void
}

; the launcher: runs pieces as slot 0, then for each worker 1 .. %n: withdraws the launch
; from a worker that has not checked in for it (it will not touch it), else waits until
; it has finished
define void @npujit_team_lead(ptr %team, i64 %n, i64 %g) {
entry:
  call void @pieces(ptr %team, i64 0)
  br label %each
each:
  %s = phi i64 [1, %entry], [%s1, %seen]
  %more = icmp sle i64 %s, %n
  br i1 %more, label %look, label %out
look:
  %donep = call ptr @slot_word(ptr %team, i64 %s, i64 1)
  %assignedp = call ptr @slot_word(ptr %team, i64 %s, i64 3)
  %pair = cmpxchg ptr %assignedp, i64 %g, i64 0 acq_rel acquire
  %absent = extractvalue { i64, i1 } %pair, 1
  br i1 %absent, label %seen, label %spin
spin:
  %i = phi i64 [0, %look], [%i1, %tick], [0, %yield]
  %d = load atomic i64, ptr %donep acquire, align 8
  %fin = icmp eq i64 %d, %g
  br i1 %fin, label %seen, label %tick
tick:
  call void @pause()
  %i1 = add i64 %i, 1
  %long = icmp eq i64 %i1, 1024
  br i1 %long, label %yield, label %spin
yield:
  call i32 @sched_yield()
  br label %spin
seen:
  %s1 = add i64 %s, 1
  br label %each
out:
  ret void
}
"""

_lock = threading.Lock()
_native = None        # (engine, work, publish, lead)
_team: "Team | None" = None


def available() -> bool:
    """Whether this system has what the team needs (``clock_gettime``)."""
    return hasattr(time, "CLOCK_MONOTONIC") and os.name == "posix"


def _compile():
    global _native
    import llvmlite.binding as llvm
    from .runtime import _target_machine
    tm = _target_machine(own=True)
    x86 = tm.triple.startswith(("x86_64", "i686", "i386"))
    text = _IR.replace("PAUSE_DECL", "declare void @llvm.x86.sse2.pause()" if x86 else "")
    text = text.replace("PAUSE_CALL", "call void @llvm.x86.sse2.pause()" if x86 else "")
    mod = llvm.parse_assembly(text)
    mod.triple = tm.triple
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    work = ctypes.CFUNCTYPE(i64, ptr, i64, i64, i64, ctypes.c_int32)(
        engine.get_function_address("npujit_team_work"))
    publish = ctypes.CFUNCTYPE(None, ptr, i64)(
        engine.get_function_address("npujit_team_publish"))
    lead = ctypes.CFUNCTYPE(None, ptr, i64, i64)(
        engine.get_function_address("npujit_team_lead"))
    _native = (engine, work, publish, lead)


def _slot(s: int, k: int = 0) -> int:
    """The index of word ``k`` of slot ``s`` (the module doc's table; ``@slot_word``)."""
    return 8 * (1 + s) + k


class Team:
    """``workers`` threads spinning for launches; ``run`` is a threaded launch."""

    def __init__(self, workers: int):
        self.workers = workers
        self.words = (ctypes.c_int64 * _slot(workers + 1))()
        self.base = ctypes.addressof(self.words)
        self.busy = threading.Lock()
        self.wake = threading.Condition()
        self.sleeping = 0
        self.threads = [threading.Thread(target=self._work, args=(s,), daemon=True,
                                         name=f"npujit-team-{s}")
                        for s in range(1, workers + 1)]
        for t in self.threads:
            t.start()

    def run(self, entry: int, contexts, total: int, pieces: int) -> tuple | None:
        """Programs ``[0, total)`` cut into ``pieces``, on this thread and workers:
        ``contexts()``, called once the launch holds the team, gives the context
        addresses, this thread's first and then one per worker taking part.  Returns
        ``(slot, helpers)``: the slot of the lowest failed piece (its context's error
        record says what), else -1, and how many workers took part; None when another
        launch holds the team (nothing run)."""
        if not self.busy.acquire(blocking=False):
            return None
        try:
            contexts = contexts()
            _, _, publish, lead = _native
            w = self.words
            n = len(contexts) - 1
            launch = w[0] + 1
            w[1], w[2], w[3], w[4], w[6] = entry, pieces, total, 0, 0
            for s, ctx in enumerate(contexts):
                w[_slot(s)], w[_slot(s, 2)], w[_slot(s, 3)] = ctx, -1, launch
            publish(self.base, launch)
            if self.sleeping:
                with self.wake:
                    self.wake.notify_all()
            lead(self.base, n, launch)
            failed = [(w[_slot(s, 2)], s) for s in range(n + 1) if w[_slot(s, 2)] >= 0]
            helpers = sum(w[_slot(s, 3)] == -launch for s in range(1, n + 1))
            return (min(failed)[1] if failed else -1), helpers
        finally:
            self.busy.release()

    def retire(self, wait: float = 0.0) -> None:
        """Stop the workers (after the launch that holds the team, if any), waiting up
        to ``wait`` seconds for each to leave."""
        with self.busy:
            self.words[7] = 1
            _native[2](self.base, self.words[0] + 1)
            with self.wake:
                self.wake.notify_all()
        for t in self.threads:
            if wait and t is not threading.current_thread():
                t.join(wait)

    def _work(self, s: int) -> None:
        work = _native[1]
        w, seen = self.words, 0
        budget, clock = int(SPIN_S * 1e9), time.CLOCK_MONOTONIC
        while True:
            seen = work(self.base, s, seen, budget, clock)
            if seen < 0 or w[7]:
                return
            with self.wake:
                self.sleeping += 1
                while w[0] == seen:
                    self.wake.wait()
                self.sleeping -= 1


def team(workers: int) -> Team:
    """The process's team, with at least ``workers`` worker threads."""
    global _team
    t = _team
    if t is not None and t.workers >= workers:      # every threaded launch asks
        return t
    with _lock:
        if _native is None:
            _compile()
        if _team is None or _team.workers < workers:
            old, _team = _team, Team(workers)
            if old is not None:
                old.retire()
            else:
                atexit.register(_at_exit)
        return _team


def _at_exit() -> None:
    """At interpreter exit the workers leave their native loop before the interpreter
    tears down the team's words and the compiled code they read."""
    if _team is not None:
        _team.retire(wait=0.5)


def _forget() -> None:
    """In a forked child the parent's workers are not there: the next launch makes a
    team (the compiled code is still good)."""
    global _team, _lock
    _team = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
