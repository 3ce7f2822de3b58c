"""The shared L2 cache in front of HBM, and the memory system (L2 + HBM) the engine talks to.

On Ascend every MTE access to GM passes a large L2 shared by all cores (docs/npu-facts.md
§A1; 192 MB on a 910B2C, §A4).  A big matmul re-reads each A and B panel from many programs;
without an L2 every re-read would be an HBM byte and the kernel would look HBM-bound.

The model, deliberately simple:

* **Regions, not lines.**  A GM copy may carry ``gm_region`` (``sim/isa.py``): a key of the
  bytes it touches, e.g. ``("a_ptr", (row0, row1, col0, col1))`` for a block tile (the
  lowering in ``sim/lower.py`` builds these).  The cache is an LRU over those keys, each
  charged the bytes its copy moved, against a byte capacity.  Two copies hit each other
  only with equal keys: a tile read under another tiling is a miss (conservative).  A copy
  without a key is always a miss and is not cached.  :data:`ONCE` marks a region that only
  one copy of the launch touches: always a miss, but it still takes (and evicts) capacity.
* **Reads**: a resident key is a hit, served by the L2 bandwidth server (shared by all
  cores, each copy also capped by its port) and landing ``l2_latency`` after its transfer;
  a miss is served by HBM (``hbm_latency``) and installs the key, evicting least-recently
  used keys until it fits.  A key counts as resident from the moment its first miss is
  admitted, so concurrent misses of one tile by several cores are merged (as MSHRs do)
  and the later ones are hits.
* **Writes** are served by the L2 (its port rate, the L2 bandwidth, ``l2_latency``) and
  install their key, so a later read of what was written (e.g. an AIC -> AIV workspace)
  hits.  An ordinary write goes on to HBM at once, in the background at the port's rate,
  blocking no pipe ("eager flush"): a streaming kernel's written bytes stay HBM bytes
  competing with its reads, while a matmul's output tiles do not stall FixPipe on HBM.
  A write to a **hand-off workspace slot** (below) instead leaves its key *dirty*: a
  rewrite of a slot that is resident and still dirty costs no HBM bytes (the lines are
  simply rewritten), and a dirty key crosses HBM once, when the LRU evicts it (in the
  background) or, if still dirty when the last program ends, in the launch's drain (at
  the full HBM bandwidth after the last program and the last background write-back;
  :meth:`MemorySystem.drain`).  A region larger than the whole cache is written straight
  through.  The launch ends no earlier than its last write-back lands
  (:attr:`MemorySystem.drained`), which keeps the roofline bound valid.
  Why the two rules: every GM access goes through the 910B's 192 MB L2 (docs/npu-model.md,
  "The L2"), which holds written lines until they are evicted; a ring that a core
  rewrites round after round therefore never needs HBM, and charging it once per round
  (as a plain eager flush did: 587 MB of gate/up hand-offs at 2048 tokens of the
  Mixtral layer) overstated HBM traffic.  For an ordinary output, when its lines leave
  the L2 is not documented; writing them on at once lets them share HBM with the
  kernel's reads, where keeping them dirty to the end would add a drain after the last
  program (tried: softmax +16 % cycles, a 2048^3 matmul +4 %, with no documented cause).
* **Hand-off workspace slots** (``("workspace", pid, slot)``, ``sim/split.py``) are the
  AI core's, not the program's: the memory system keys them by the ring position the
  group runs in (``("workspace", "ring", j * handoff_slots + position, slot)``: AI core
  ``j``'s groups take its ``spec.handoff_slots`` positions in turn, ``sim/engine.py``), so
  the programs a core runs one after the other rewrite one small ring that stays in the
  L2, as a kernel that indexes its workspace by core does.
* Hit or miss is decided when the copy enters the memory system, in simulated-time order
  across all cores (deterministic: ties broken by issue sequence).

:class:`MemorySystem` has the interface of :class:`~npujit.sim.hbm.HBMServer` the engine
uses (``arrivals``, ``next_completion``, ``pop_finished``, ``served``, ``samples``), so
the engine swaps it in when the spec has an L2 and the launch carries regions.  It sets
``token.landing`` (the cycles until the copy's data lands) on every token it admits.

Example::

    >>> from npujit.sim import simulate, TINY, CoreProgram, copy
    >>> tile = copy("GM_to_UB", 4096, gm_region=("x", 0))
    >>> r = simulate(CoreProgram("AIV", [tile, tile]), TINY)
    >>> r.l2_hit_bytes, r.hbm_read_bytes, r.l2_hit_rate
    (4096, 4096, 0.5)
"""
from __future__ import annotations

from collections import OrderedDict
from heapq import heappop

from .hbm import INF, HBMServer
from .split import is_workspace

# The gm_region of a copy whose bytes no other copy of the launch touches (sim/lower.py
# uses it so programs that differ only in their tiles keep identical streams).
ONCE = "<touched once>"


class L2Cache:
    """An LRU over region keys with a byte capacity, dirty keys, and its counters.

    After each :meth:`read` or :meth:`write`, ``to_hbm`` is the bytes that call sends to
    HBM as write-backs (dirty keys it evicted, or a write too large to keep).

    Example::

        >>> c = L2Cache(100)
        >>> c.read("a", 60), c.read("a", 60), c.read("b", 60), c.read("a", 60)
        (False, True, False, False)
        >>> c.hit_bytes, c.miss_bytes, c.evicted_bytes
        (60, 180, 120)
        >>> c.write("w", 40, handoff=True); c.write("w", 40, handoff=True)
        >>> c.to_hbm, c.dirty_bytes()          # a hand-off slot rewritten while dirty
        (0, 40)
        >>> c.read("c", 100), c.to_hbm, c.writeback_bytes   # evicts "w": written back
        (False, 40, 40)
    """

    __slots__ = ("capacity", "keys", "dirty", "used", "hit_bytes", "miss_bytes",
                 "write_bytes", "writeback_bytes", "evicted_bytes", "hits", "misses",
                 "to_hbm")

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.keys: OrderedDict = OrderedDict()   # key -> bytes, least recently used first
        self.dirty: set = set()                  # resident keys written since they came in
        self.used = 0
        self.hit_bytes = self.miss_bytes = self.write_bytes = self.evicted_bytes = 0
        self.writeback_bytes = 0                 # dirty bytes that crossed HBM
        self.hits = self.misses = 0
        self.to_hbm = 0

    def read(self, key, nbytes: int) -> bool:
        """Look ``key`` up for a read of ``nbytes``: True on a hit (now most recently
        used); on a miss install it (clean) and return False."""
        keys = self.keys
        self.to_hbm = 0
        if key in keys:
            keys.move_to_end(key)
            self.hit_bytes += nbytes
            self.hits += 1
            return True
        self.miss_bytes += nbytes
        self.misses += 1
        self.install(key, nbytes)
        return False

    def write(self, key, nbytes: int, handoff: bool = False) -> None:
        """A write of ``nbytes`` to ``key``, resident afterwards.  A hand-off slot's key
        stays dirty (rewriting it dirty with the same bytes sends nothing to HBM); any
        other write goes on to HBM at once (``to_hbm``)."""
        self.write_bytes += nbytes
        self.to_hbm = 0
        if key in self.dirty and self.keys[key] == nbytes:
            self.keys.move_to_end(key)
            return
        self.install(key, nbytes)
        if key in self.keys and handoff:
            self.dirty.add(key)
        else:                                   # written through (or too large to keep)
            self.to_hbm += nbytes
            self.writeback_bytes += nbytes

    def install(self, key, nbytes: int) -> None:
        """Make ``key`` resident (most recently used, clean), evicting LRU keys until it
        fits (evicted dirty keys are added to ``to_hbm``); a region larger than the whole
        cache is not kept."""
        keys, dirty = self.keys, self.dirty
        old = keys.pop(key, None)
        if old is not None:
            self.used -= old
            if key in dirty:                    # its old bytes go back before it changes
                dirty.discard(key)
                self.to_hbm += old
                self.writeback_bytes += old
        if nbytes > self.capacity:
            return
        while self.used + nbytes > self.capacity:
            gone_key, gone = keys.popitem(last=False)
            self.used -= gone
            self.evicted_bytes += gone
            if gone_key in dirty:
                dirty.discard(gone_key)
                self.to_hbm += gone
                self.writeback_bytes += gone
        keys[key] = nbytes
        self.used += nbytes

    def dirty_bytes(self) -> int:
        """Bytes of the resident dirty keys (what a drain writes back)."""
        return sum(self.keys[k] for k in self.dirty)

    def drain(self) -> int:
        """Write every dirty key back (they stay resident, clean); returns the bytes."""
        n = self.dirty_bytes()
        self.dirty.clear()
        self.writeback_bytes += n
        return n


_WRITE_BACK = object()   # the token of a background write-back (no pipe waits on it)


class MemorySystem:
    """L2 + HBM behind one arrival queue, with the :class:`HBMServer` interface.

    Arrivals are ``(start cycle, seq, bytes, port rate, token, gm)`` with ``gm`` None (no
    region: HBM, uncached) or ``(is_write, region key)``.  They are admitted in start
    order, never past the next finish of either server, so each server's clock only moves
    forward and the L2's LRU order is the simulated-time order.

    Example::

        >>> from heapq import heappush
        >>> class Tok: landing = 0
        >>> m = MemorySystem(hbm_bytes_per_cycle=100.0, l2_bytes_per_cycle=400.0,
        ...                  l2_capacity=1 << 20, hbm_latency=50, l2_latency=10)
        >>> a, b = Tok(), Tok()
        >>> heappush(m.arrivals, (0, 1, 1000, 200.0, a, (False, "t")))   # miss: HBM 100 B/cycle
        >>> heappush(m.arrivals, (0, 2, 1000, 200.0, b, (False, "t")))   # hit: port-capped
        >>> m.next_completion()
        5.0
        >>> m.pop_finished(5.0) == [b], b.landing, a.landing
        (True, 10, 50)
    """

    def __init__(self, hbm_bytes_per_cycle: float, l2_bytes_per_cycle: float,
                 l2_capacity: int, hbm_latency: int, l2_latency: int, record: bool = False):
        self.hbm = HBMServer(hbm_bytes_per_cycle, record=record)
        self.l2 = HBMServer(l2_bytes_per_cycle)
        self.cache = L2Cache(l2_capacity)
        self.hbm_latency, self.l2_latency = hbm_latency, l2_latency
        self.arrivals: list = []
        self.drained = 0     # when the last write-back (or the drain) has landed in HBM
        self.drain_bytes = 0

    @property
    def served(self) -> float:
        """Bytes HBM served (the conservation check: HBM reads after L2 + writes), the
        drain's included."""
        return self.hbm.served + self.drain_bytes

    @property
    def l2_served(self) -> float:
        """Bytes the L2 served (read hits and keyed writes)."""
        return self.l2.served

    @property
    def samples(self):
        """HBM bandwidth samples for the trace's counter track (or None)."""
        return self.hbm.samples

    def _admit(self, item) -> None:
        te, _, nbytes, rate, token, gm = item
        if gm is not None:
            write, key = gm
            if key == ONCE:
                key = object()          # a fresh key: a miss that still fills the cache
            handoff = is_workspace(key)
            if handoff and token.core.ring >= 0:
                key = ("workspace", "ring", token.core.ring, key[2])
            cache = self.cache
            hit = cache.write(key, nbytes, handoff) if write else cache.read(key, nbytes)
            if cache.to_hbm:            # dirty keys evicted (or a write too large to keep)
                self.hbm.add(te, cache.to_hbm, rate, _WRITE_BACK)
            if write or hit:
                token.landing = self.l2_latency
                self.l2.add(te, nbytes, rate, token)
                return
        token.landing = self.hbm_latency
        self.hbm.add(te, nbytes, rate, token)

    def drain(self, end: float) -> None:
        """The launch's end: what is still dirty crosses HBM at its full bandwidth after
        ``end`` (the last program's end) and after the last background write-back."""
        nbytes = self.cache.drain()
        if nbytes:
            start = max(end, self.hbm.now)
            self.drain_bytes = nbytes
            self.drained = max(self.drained, start + nbytes / self.hbm.bw +
                               self.hbm_latency)

    def next_completion(self, limit: float = INF) -> float:
        """Admit every arrival that starts before the next finish of either server (and
        not after ``limit``), then return the next finish time.  An arrival at the time of
        the last change goes in at once (all later events are at or after it)."""
        arrivals, hbm, l2 = self.arrivals, self.hbm, self.l2
        while arrivals:
            te = arrivals[0][0]
            if te > limit:
                break
            if te > hbm.now and te > l2.now:
                nt = hbm.peek()
                t2 = l2.peek()
                if te >= (t2 if t2 < nt else nt):
                    break
            self._admit(heappop(arrivals))
        nt = hbm.peek()
        t2 = l2.peek()
        return t2 if t2 < nt else nt

    def pop_finished(self, now: float) -> list:
        """Tokens of every transfer (HBM first, then L2) finished by ``now``."""
        done = []
        if self.hbm.peek() <= now:
            for token in self.hbm.pop_finished(now):
                if token is _WRITE_BACK:
                    self.drained = max(self.drained, now + self.hbm_latency)
                else:
                    done.append(token)
        if self.l2.peek() <= now:
            done += self.l2.pop_finished(now)
        return done
