"""HBM as a fair-share (processor-sharing) bandwidth server shared by every core's GM copies.

At any instant the active transfers split the HBM bandwidth max-min fairly, each also capped
by its own port rate (water-filling: transfers whose cap is below the fair share get their
cap, the rest share what is left equally).  Whenever a transfer starts or ends the rates
change, and the next finish time is recomputed.

To keep that O(number of distinct caps) instead of O(active transfers) per event, transfers
with the same cap are grouped in a class: they always progress at the same rate, so one
"virtual clock" per class (bytes served to each member since the class was last empty)
and a heap of finish points per class replace per-transfer bookkeeping, as in virtual-time
fair queueing.

Time here is continuous (float cycles): the engine resumes a pipe at the ceiling of the
exact finish, so the server conserves bytes exactly and the pipes keep integer clocks.

Example::

    >>> s = HBMServer(bytes_per_cycle=100.0)
    >>> s.add(0, 1000, cap=80.0, token="a")   # alone: runs at its cap
    >>> s.add(0, 1000, cap=80.0, token="b")   # two share 100: 50 each
    >>> s.peek()
    20.0
    >>> s.pop_finished(s.peek())
    ['a', 'b']
"""
from __future__ import annotations

from heapq import heappop, heappush

INF = float("inf")


def _slack(now: float) -> float:
    """Cycles within which a finish counts as reached.  Float noise could otherwise leave a
    transfer a hair short of done with its finish time rounding back to ``now`` (a stall);
    1e-9 relative is far above the float resolution of ``now`` and far below one cycle."""
    return 1e-9 * now + 1e-6


class _CapClass:
    """Transfers with one port cap: a shared virtual clock and a heap of finish points.

    ``v`` is the clock at cycle ``t0``; it advances at ``rate`` until the next change, and is
    brought forward lazily, so a change in one class does not touch the others.
    """

    __slots__ = ("cap", "v", "t0", "rate", "heap")

    def __init__(self, cap: float, t0: float):
        self.cap = cap
        self.v = 0.0        # bytes served to each member, as of cycle t0
        self.t0 = t0
        self.rate = 0.0     # bytes/cycle each member currently gets
        self.heap = []      # (finish point on the virtual clock, seq, token)


class HBMServer:
    """The shared bandwidth server.  ``add`` a transfer, read ``peek()``, ``pop_finished``.

    Two exact representations, switched by load:

    * per-cap classes (above), needed while some port cap is below the fair share;
    * "all shared": when even the smallest active cap is above the fair share, every
      transfer gets ``bandwidth / active``, so one global virtual clock and one heap cover
      all of them and a start or finish costs O(log n) with no loop.  The server enters
      this mode with a margin of two transfers, so it does not flip at every event.

    Rates are recomputed lazily: several transfers starting in one cycle (cores in
    lockstep) cost one recomputation.  ``served`` integrates rate x members over time
    (the conservation check); ``samples`` (when ``record=True``) lists
    ``(time, total bytes/cycle)`` whenever the total may have changed, for the HBM counter
    track (in "all shared" mode the total is the full bandwidth, so nothing is recorded).

    Example::

        >>> s = HBMServer(64.0, record=True)
        >>> s.add(10, 640, cap=64.0, token=1)
        >>> s.peek(), s.samples
        (20.0, [(10, 64.0)])
    """

    def __init__(self, bytes_per_cycle: float, record: bool = False):
        self.bw = float(bytes_per_cycle)
        self.now = 0.0                     # cycle of the last change
        self.classes: dict[float, _CapClass] = {}
        self.order: list[_CapClass] = []   # ascending cap, for water-filling
        self.active = 0
        self.cap_count: dict[float, int] = {}   # active transfers per cap
        self.capsum = 0.0                  # sum of the caps in flight: <= bw means no contention
        self.next_time = INF
        self.dirty = False                 # rates / next_time stale since the last change
        self.served = 0.0
        self.seq = 0
        self.samples = [] if record else None
        # "all shared" mode: clock lam (as of cycle now), rate per transfer, one heap.
        self.shared = False
        self.lam = 0.0
        self.rate = 0.0
        self.gheap: list = []              # (finish point on lam, seq, token, cap)
        self.mincap = INF                  # smallest cap in flight (kept in shared mode)
        # Transfers that start later: (start time, seq, bytes, cap, token).  Callers push
        # here directly (heapq) and next_completion() admits them in time order, which
        # saves the caller one event per transfer.
        self.arrivals: list = []

    # -- per-cap classes ----------------------------------------------------------------------
    def _recompute(self) -> None:
        """Bring every class to ``now``, water-fill the bandwidth, find the next finish."""
        self.dirty = False
        now = self.now
        remaining = self.bw
        left = self.active
        share = 0.0
        capped = True
        any_capped = False
        total = served = 0.0
        best = INF
        for c in self.order:
            h = c.heap
            if not h:
                continue
            k = len(h)
            dt = now - c.t0
            if dt:
                step = c.rate * dt
                c.v += step
                served += step * k
                c.t0 = now
            if capped:
                share = remaining / left
                if c.cap <= share:
                    rate = c.cap
                    remaining -= rate * k
                    left -= k
                    any_capped = True
                else:
                    capped = False
                    rate = share
            else:
                rate = share
            c.rate = rate
            total += rate * k
            t = now + (h[0][0] - c.v) / rate
            if t < best:
                best = t
        self.served += served
        self.next_time = now if best < now else best
        if self.samples is not None:
            self.samples.append((now, total))
        n = self.active
        if not any_capped and n > 2 and self.bw / (n - 2) <= min(self.cap_count):
            self._to_shared()

    def _to_shared(self) -> None:
        """Move every transfer onto the global clock (all classes are at ``now``)."""
        g = []
        for c in self.order:
            v = c.v
            g.extend((f - v, seq, tok, c.cap) for f, seq, tok in c.heap)
            c.heap = []
            c.v = c.rate = 0.0
        g.sort()
        self.gheap = g
        self.mincap = min(self.cap_count)
        self.lam = 0.0
        self.rate = self.bw / self.active
        self.shared = True
        self.next_time = self.now + g[0][0] / self.rate
        if self.samples is not None:
            self.samples.append((self.now, self.bw))

    def _to_classes(self) -> None:
        """Move every transfer back to its cap class (the global clock is at ``now``)."""
        lam, now = self.lam, self.now
        for f, seq, tok, cap in self.gheap:
            c = self.classes.get(cap)
            if c is None:
                c = self._new_class(cap)
            c.heap.append((f - lam, seq, tok))
        for c in self.order:
            c.heap.sort()
            c.v, c.t0 = 0.0, now
        self.gheap = []
        self.shared = False
        self.dirty = True

    def _new_class(self, cap: float) -> _CapClass:
        c = self.classes[cap] = _CapClass(cap, self.now)
        self.order.append(c)
        self.order.sort(key=lambda cc: cc.cap)
        return c

    def peek(self) -> float:
        """The next time a transfer finishes (``INF`` when idle).

        Example::

            >>> HBMServer(10.0).peek()
            inf
        """
        if self.dirty:
            self._recompute()
        return self.next_time

    def next_completion(self, limit: float = INF) -> float:
        """Admit every queued arrival that starts before the next finish (and not after
        ``limit``, the caller's next own event), then return the next finish time.

        Example::

            >>> from heapq import heappush
            >>> s = HBMServer(100.0)
            >>> heappush(s.arrivals, (0, 1, 1000, 100.0, "a"))
            >>> heappush(s.arrivals, (5, 2, 1000, 100.0, "b"))   # shares from cycle 5 on
            >>> s.next_completion()
            15.0
        """
        arrivals = self.arrivals
        bw = self.bw
        while arrivals:
            item = arrivals[0]
            te = item[0]
            if te > limit:
                break
            # One starting in the cycle of the last change goes in at once (everything in
            # flight ends later); a later one only if it starts before the next finish.
            if te > self.now:
                if self.dirty:
                    self._recompute()
                if te >= self.next_time:
                    break
            heappop(arrivals)
            cap = item[3]
            n = self.active + 1
            if self.shared and bw / n <= cap:
                # add() inlined for the common case: everyone keeps sharing equally.
                dt = te - self.now
                lam = self.lam + self.rate * dt
                self.served += bw * dt
                self.lam = lam
                self.now = te
                self.active = n
                self.seq += 1
                counts = self.cap_count
                counts[cap] = counts.get(cap, 0) + 1
                self.capsum += cap
                h = self.gheap
                heappush(h, (lam + item[2], self.seq, item[4], cap))
                rate = self.rate = bw / n
                if cap < self.mincap:
                    self.mincap = cap
                self.next_time = te + (h[0][0] - lam) / rate
            else:
                self.add(te, item[2], cap, item[4])
        if self.dirty:
            self._recompute()
        return self.next_time

    def add(self, now: float, nbytes: float, cap: float, token) -> None:
        """Start a transfer of ``nbytes`` at time ``now`` whose port allows ``cap`` bytes/cycle.
        Times must not go backwards.

        Example::

            >>> s = HBMServer(10.0)
            >>> s.add(0, 100, cap=20.0, token="x")
            >>> s.peek()
            10.0
        """
        if not self.shared and self.dirty and now != self.now:
            self._recompute()       # rates of the interval that ends now (may share all)
        self.seq += 1
        counts = self.cap_count
        counts[cap] = counts.get(cap, 0) + 1
        uncontended = not self.dirty and self.capsum + cap <= self.bw
        self.capsum += cap
        if self.shared:
            dt = now - self.now
            lam = self.lam + self.rate * dt
            self.served += self.bw * dt          # all shared: the full bandwidth is in use
            self.lam = lam
            self.now = now
            n = self.active + 1
            self.active = n
            h = self.gheap
            heappush(h, (lam + nbytes, self.seq, token, cap))
            rate = self.rate = self.bw / n
            if cap < self.mincap:
                self.mincap = cap
            if rate <= cap:
                # All shared: the total stays at the full bandwidth, no new sample needed.
                self.next_time = now + (h[0][0] - lam) / rate
                return
            self._to_classes()      # this transfer's cap is below the new fair share
            return
        self.now = now
        c = self.classes.get(cap)
        if c is None:
            c = self._new_class(cap)
        dt = now - c.t0
        if dt:
            step = c.rate * dt
            c.v += step
            self.served += step * len(c.heap)
            c.t0 = now
        heappush(c.heap, (c.v + nbytes, self.seq, token))
        self.active += 1
        if uncontended:
            # Every transfer, this one too, runs at its cap: nobody else's rate changes.
            c.rate = cap
            t = now + nbytes / cap
            if t < self.next_time:
                self.next_time = t
            if self.samples is not None:
                self.samples.append((now, self.capsum))
        else:
            self.dirty = True

    def pop_finished(self, now: float) -> list:
        """Advance to ``now`` and return the tokens of every transfer finished by then.

        Example::

            >>> s = HBMServer(10.0)
            >>> s.add(0, 100, cap=10.0, token="x")
            >>> s.pop_finished(5.0), s.pop_finished(10.0)
            ([], ['x'])
        """
        if self.dirty:
            self._recompute()
        counts = self.cap_count
        done = []
        if self.shared:
            dt = now - self.now
            rate = self.rate
            lam = self.lam + rate * dt
            self.served += self.bw * dt
            self.lam = lam
            self.now = now
            h = self.gheap
            limit = lam + 1e-9 * (lam + 1.0) + rate * (1e-9 * now + 1e-6)   # see _slack
            gone = False
            while h and h[0][0] <= limit:
                item = heappop(h)
                done.append(item[2])
                cap = item[3]
                self.capsum -= cap
                k = counts[cap] - 1
                if k:
                    counts[cap] = k
                else:
                    del counts[cap]
                    gone = True
            n = self.active - len(done)
            self.active = n
            if not n:
                self.shared = False
                self.lam = self.rate = 0.0
                self.next_time = INF
                if self.samples is not None:
                    self.samples.append((now, 0.0))
                return done
            rate = self.bw / n
            if gone:
                self.mincap = min(counts)
            if rate <= self.mincap:
                self.rate = rate
                self.next_time = now + (h[0][0] - lam) / rate
            else:
                self._to_classes()
            return done
        self.now = now
        served = 0.0
        for c in self.order:
            h = c.heap
            if not h:
                continue
            dt = now - c.t0
            if dt:
                step = c.rate * dt
                c.v += step
                served += step * len(h)
                c.t0 = now
            limit = c.v + 1e-9 * (c.v + 1.0) + c.rate * _slack(now)
            k = len(done)
            while h and h[0][0] <= limit:
                done.append(heappop(h)[2])
            if len(done) > k:
                self.capsum -= c.cap * (len(done) - k)
                left = counts[c.cap] - (len(done) - k)
                if left:
                    counts[c.cap] = left
                else:
                    del counts[c.cap]
            if not h:
                c.v = 0.0      # restart the virtual clock so it never grows without bound
                c.rate = 0.0
        self.served += served
        if done:
            self.active -= len(done)
            if self.capsum <= self.bw:
                # Uncontended now: every class (all at cycle now) runs at its cap.
                best = INF
                for c in self.order:
                    h = c.heap
                    if h:
                        c.rate = c.cap
                        t = now + (h[0][0] - c.v) / c.cap
                        if t < best:
                            best = t
                self.next_time = best
                if self.samples is not None:
                    self.samples.append((now, self.capsum))
            else:
                self.dirty = True
        return done
