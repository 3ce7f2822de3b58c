"""The HBM and L2 bandwidth servers of :mod:`npujit.sim.hbm` and :mod:`npujit.sim.l2` on
array state, compiled with numba, for the compiled engine (:mod:`npujit.sim.fast_engine`).

The arithmetic is the Python servers' line by line (same operations in the same order on
float64), so the compiled engine times a launch to the same cycle and the same served
byte.  What changes is only the representation:

* a server is a row ``s`` of the state arrays (0: HBM, 1: the L2 of the memory system);
* the per-cap classes exist from the start, one per distinct port cap of the launch in
  ascending cap order (the Python server creates them on first use; an empty class has
  rate 0, so a class that exists early is never advanced by a nonzero step);
* heaps are arrays of ``(key, seq)`` ordered as Python's tuples are (seq is unique, so the
  token is never compared); what a transfer carries is looked up by its seq;
* the L2's LRU is a doubly linked list over region ids (``ONCE`` copies get a fresh id).

The Python servers stay the reference; ``tests/sim/test_fast_engine.py`` compares both.
"""
from __future__ import annotations

import numpy as np
from numba import njit

INF = np.inf

# Float scalars of a server (row of SF).
BW, NOW, CAPSUM, NEXT, SERVED, LAM, RATE, MINCAP = range(8)
N_SF = 8
# Int scalars of a server (row of SI).
ACTIVE, DIRTY, SEQ, SHARED, GSIZE, NSAMP, RECORD = range(7)
N_SI = 7
# Per class floats (CF[s, c, :]) and ints (CI[s, c, :]).
CV, CT0, CRATE = range(3)
CCOUNT, CSIZE = range(2)


def new_servers(bws, ncaps: int, max_active: int, max_adds: int, max_samples: int,
                record: bool):
    """State arrays of two servers with bandwidths ``bws`` (bytes/cycle): a tuple the
    functions below take apart."""
    sf = np.zeros((2, N_SF))
    si = np.zeros((2, N_SI), dtype=np.int64)
    for s in range(2):
        sf[s, BW] = bws[s]
        sf[s, NEXT] = INF
        sf[s, MINCAP] = INF
    si[0, RECORD] = 1 if record else 0
    cf = np.zeros((2, ncaps, 3))
    ci = np.zeros((2, ncaps, 2), dtype=np.int64)
    hk = np.zeros((2, ncaps, max_active))
    hs = np.zeros((2, ncaps, max_active), dtype=np.int64)
    gk = np.zeros((2, max_active))
    gs = np.zeros((2, max_active), dtype=np.int64)
    tok = np.zeros((2, max_adds + 1), dtype=np.int64)
    tcls = np.zeros((2, max_adds + 1), dtype=np.int64)
    samples = np.zeros((max_samples, 2))
    return sf, si, cf, ci, hk, hs, gk, gs, tok, tcls, samples


# -- heaps of (key, seq) ------------------------------------------------------------------
@njit(cache=True)
def heap_push(k, s, n, key, seq):
    """Push (key, seq) on the heap of size ``n`` in ``k``/``s``; returns the new size."""
    j = n
    while j > 0:
        p = (j - 1) >> 1
        pk = k[p]
        if pk < key or (pk == key and s[p] < seq):
            break
        k[j] = pk
        s[j] = s[p]
        j = p
    k[j] = key
    s[j] = seq
    return n + 1


@njit(cache=True)
def heap_pop(k, s, n):
    """Drop the root of the heap of size ``n`` (read ``k[0]``, ``s[0]`` first); returns
    the new size."""
    n -= 1
    if n == 0:
        return 0
    key = k[n]
    seq = s[n]
    j = 0
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and (k[c + 1] < k[c] or (k[c + 1] == k[c] and s[c + 1] < s[c])):
            c += 1
        if k[c] < key or (k[c] == key and s[c] < seq):
            k[j] = k[c]
            s[j] = s[c]
            j = c
        else:
            break
    k[j] = key
    s[j] = seq
    return n


# -- the fair-share server (sim/hbm.py HBMServer) -----------------------------------------
@njit(cache=True)
def _sample(st, s, now, total):
    sf, si, cf, ci, hk, hs, gk, gs, tok, tcls, samples = st
    if si[s, RECORD]:
        n = si[s, NSAMP]
        samples[n, 0] = now
        samples[n, 1] = total
        si[s, NSAMP] = n + 1


@njit(cache=True)
def _min_cap(st, s, caps):
    ci = st[3]
    for c in range(len(caps)):
        if ci[s, c, CCOUNT] > 0:
            return caps[c]
    return INF


@njit(cache=True)
def _advance(cf, s, c, now, k):
    """Bring class ``c``'s virtual clock to ``now``; returns the bytes its ``k`` members
    were served meanwhile."""
    dt = now - cf[s, c, CT0]
    if dt != 0.0:
        step = cf[s, c, CRATE] * dt
        cf[s, c, CV] += step
        cf[s, c, CT0] = now
        return step * k
    return 0.0


@njit(cache=True)
def _to_shared(st, s, caps):
    sf, si, cf, ci, hk, hs, gk, gs, tok, tcls, samples = st
    n = 0
    for c in range(len(caps)):
        v = cf[s, c, CV]
        for j in range(ci[s, c, CSIZE]):
            n = heap_push(gk[s], gs[s], n, hk[s, c, j] - v, hs[s, c, j])
        ci[s, c, CSIZE] = 0
        cf[s, c, CV] = 0.0
        cf[s, c, CRATE] = 0.0
    si[s, GSIZE] = n
    sf[s, MINCAP] = _min_cap(st, s, caps)
    sf[s, LAM] = 0.0
    sf[s, RATE] = sf[s, BW] / si[s, ACTIVE]
    si[s, SHARED] = 1
    sf[s, NEXT] = sf[s, NOW] + gk[s, 0] / sf[s, RATE]
    _sample(st, s, sf[s, NOW], sf[s, BW])


@njit(cache=True)
def _to_classes(st, s, caps):
    sf, si, cf, ci, hk, hs, gk, gs, tok, tcls, samples = st
    lam = sf[s, LAM]
    now = sf[s, NOW]
    for j in range(si[s, GSIZE]):
        seq = gs[s, j]
        c = tcls[s, seq]
        ci[s, c, CSIZE] = heap_push(hk[s, c], hs[s, c], ci[s, c, CSIZE], gk[s, j] - lam, seq)
    for c in range(len(caps)):
        cf[s, c, CV] = 0.0
        cf[s, c, CT0] = now
    si[s, GSIZE] = 0
    si[s, SHARED] = 0
    si[s, DIRTY] = 1


@njit(cache=True)
def recompute(st, s, caps):
    """HBMServer._recompute: bring every class to now, water-fill, find the next finish."""
    sf, si, cf, ci, hk, hs, gk, gs, tok, tcls, samples = st
    si[s, DIRTY] = 0
    now = sf[s, NOW]
    remaining = sf[s, BW]
    left = si[s, ACTIVE]
    share = 0.0
    capped = True
    any_capped = False
    total = 0.0
    served = 0.0
    best = INF
    for c in range(len(caps)):
        k = ci[s, c, CSIZE]
        if k == 0:
            continue
        served += _advance(cf, s, c, now, k)
        if capped:
            share = remaining / left
            if caps[c] <= share:
                rate = caps[c]
                remaining -= rate * k
                left -= k
                any_capped = True
            else:
                capped = False
                rate = share
        else:
            rate = share
        cf[s, c, CRATE] = rate
        total += rate * k
        t = now + (hk[s, c, 0] - cf[s, c, CV]) / rate
        if t < best:
            best = t
    sf[s, SERVED] += served
    sf[s, NEXT] = now if best < now else best
    _sample(st, s, now, total)
    n = si[s, ACTIVE]
    if not any_capped and n > 2 and sf[s, BW] / (n - 2) <= _min_cap(st, s, caps):
        _to_shared(st, s, caps)


@njit(cache=True)
def peek(st, s, caps):
    """The next finish of server ``s`` (INF when idle)."""
    if st[1][s, DIRTY]:
        recompute(st, s, caps)
    return st[0][s, NEXT]


@njit(cache=True)
def add(st, s, now, nbytes, c, caps, token):
    """HBMServer.add: a transfer of ``nbytes`` from cycle ``now`` in cap class ``c``."""
    sf, si, cf, ci, hk, hs, gk, gs, tok, tcls, samples = st
    if not si[s, SHARED] and si[s, DIRTY] and now != sf[s, NOW]:
        recompute(st, s, caps)
    seq = si[s, SEQ] + 1
    si[s, SEQ] = seq
    tok[s, seq] = token
    tcls[s, seq] = c
    cap = caps[c]
    ci[s, c, CCOUNT] += 1
    uncontended = not si[s, DIRTY] and sf[s, CAPSUM] + cap <= sf[s, BW]
    sf[s, CAPSUM] += cap
    if si[s, SHARED]:
        dt = now - sf[s, NOW]
        lam = sf[s, LAM] + sf[s, RATE] * dt
        sf[s, SERVED] += sf[s, BW] * dt
        sf[s, LAM] = lam
        sf[s, NOW] = now
        n = si[s, ACTIVE] + 1
        si[s, ACTIVE] = n
        si[s, GSIZE] = heap_push(gk[s], gs[s], si[s, GSIZE], lam + nbytes, seq)
        rate = sf[s, BW] / n
        sf[s, RATE] = rate
        if cap < sf[s, MINCAP]:
            sf[s, MINCAP] = cap
        if rate <= cap:
            sf[s, NEXT] = now + (gk[s, 0] - lam) / rate
            return
        _to_classes(st, s, caps)
        return
    sf[s, NOW] = now
    sf[s, SERVED] += _advance(cf, s, c, now, ci[s, c, CSIZE])
    ci[s, c, CSIZE] = heap_push(hk[s, c], hs[s, c], ci[s, c, CSIZE], cf[s, c, CV] + nbytes,
                                seq)
    si[s, ACTIVE] += 1
    if uncontended:
        cf[s, c, CRATE] = cap
        t = now + nbytes / cap
        if t < sf[s, NEXT]:
            sf[s, NEXT] = t
        _sample(st, s, now, sf[s, CAPSUM])
    else:
        si[s, DIRTY] = 1


@njit(cache=True)
def pop_finished(st, s, now, caps, out, m):
    """HBMServer.pop_finished: write the tokens finished by ``now`` to ``out[m:]``; returns
    the new ``m``."""
    sf, si, cf, ci, hk, hs, gk, gs, tok, tcls, samples = st
    if si[s, DIRTY]:
        recompute(st, s, caps)
    m0 = m
    if si[s, SHARED]:
        dt = now - sf[s, NOW]
        rate = sf[s, RATE]
        lam = sf[s, LAM] + rate * dt
        sf[s, SERVED] += sf[s, BW] * dt
        sf[s, LAM] = lam
        sf[s, NOW] = now
        limit = lam + 1e-9 * (lam + 1.0) + rate * (1e-9 * now + 1e-6)
        gone = False
        n = si[s, GSIZE]
        while n and gk[s, 0] <= limit:
            seq = gs[s, 0]
            n = heap_pop(gk[s], gs[s], n)
            out[m] = tok[s, seq]
            m += 1
            c = tcls[s, seq]
            sf[s, CAPSUM] -= caps[c]
            ci[s, c, CCOUNT] -= 1
            if ci[s, c, CCOUNT] == 0:
                gone = True
        si[s, GSIZE] = n
        left = si[s, ACTIVE] - (m - m0)
        si[s, ACTIVE] = left
        if not left:
            si[s, SHARED] = 0
            sf[s, LAM] = 0.0
            sf[s, RATE] = 0.0
            sf[s, NEXT] = INF
            _sample(st, s, now, 0.0)
            return m
        rate = sf[s, BW] / left
        if gone:
            sf[s, MINCAP] = _min_cap(st, s, caps)
        if rate <= sf[s, MINCAP]:
            sf[s, RATE] = rate
            sf[s, NEXT] = now + (gk[s, 0] - lam) / rate
        else:
            _to_classes(st, s, caps)
        return m
    sf[s, NOW] = now
    served = 0.0
    for c in range(len(caps)):
        k = ci[s, c, CSIZE]
        if not k:
            continue
        served += _advance(cf, s, c, now, k)
        v = cf[s, c, CV]
        limit = v + 1e-9 * (v + 1.0) + cf[s, c, CRATE] * (1e-9 * now + 1e-6)
        mk = m
        while k and hk[s, c, 0] <= limit:
            out[m] = tok[s, hs[s, c, 0]]
            m += 1
            k = heap_pop(hk[s, c], hs[s, c], k)
        ci[s, c, CSIZE] = k
        if m > mk:
            sf[s, CAPSUM] -= caps[c] * (m - mk)
            ci[s, c, CCOUNT] -= m - mk
        if not k:
            cf[s, c, CV] = 0.0
            cf[s, c, CRATE] = 0.0
    sf[s, SERVED] += served
    if m > m0:
        si[s, ACTIVE] -= m - m0
        if sf[s, CAPSUM] <= sf[s, BW]:
            best = INF
            for c in range(len(caps)):
                if ci[s, c, CSIZE]:
                    cf[s, c, CRATE] = caps[c]
                    t = now + (hk[s, c, 0] - cf[s, c, CV]) / caps[c]
                    if t < best:
                        best = t
            sf[s, NEXT] = best
            _sample(st, s, now, sf[s, CAPSUM])
        else:
            si[s, DIRTY] = 1
    return m


# -- the L2 (sim/l2.py L2Cache): an LRU list over region ids ------------------------------
# lru[0, :]: prev, lru[1, :]: next, lru[2, :]: bytes (-1: not resident), lru[3, :]: dirty;
# the list's head (least recently used) and tail are lru_state[0], lru_state[1] (-1: empty).
# lru_state: head, tail, used, capacity, hit_bytes, miss_bytes, write_bytes, evicted_bytes,
# hits, misses, writeback_bytes, to_hbm (L2Cache.to_hbm of the last read or write).
(HEAD, TAIL, USED, CAPACITY, HIT_B, MISS_B, WRITE_B, EVICT_B, HITS, MISSES, WB_B,
 TO_HBM) = range(12)
N_LS = 12


@njit(cache=True)
def _unlink(lru, ls, key):
    p = lru[0, key]
    n = lru[1, key]
    if p >= 0:
        lru[1, p] = n
    else:
        ls[HEAD] = n
    if n >= 0:
        lru[0, n] = p
    else:
        ls[TAIL] = p


@njit(cache=True)
def _append(lru, ls, key):
    t = ls[TAIL]
    lru[0, key] = t
    lru[1, key] = -1
    if t >= 0:
        lru[1, t] = key
    else:
        ls[HEAD] = key
    ls[TAIL] = key


@njit(cache=True)
def _write_back(lru, ls, key, nbytes):
    """A dirty key leaves (or changes): its bytes go to HBM."""
    if lru[3, key]:
        lru[3, key] = 0
        ls[TO_HBM] += nbytes
        ls[WB_B] += nbytes


@njit(cache=True)
def l2_install(lru, ls, key, nbytes):
    """L2Cache.install: make ``key`` resident (clean), evicting least recently used keys."""
    old = lru[2, key]
    if old >= 0:
        _unlink(lru, ls, key)
        lru[2, key] = -1
        ls[USED] -= old
        _write_back(lru, ls, key, old)
    if nbytes > ls[CAPACITY]:
        return
    while ls[USED] + nbytes > ls[CAPACITY]:
        h = ls[HEAD]
        gone = lru[2, h]
        _unlink(lru, ls, h)
        lru[2, h] = -1
        ls[USED] -= gone
        ls[EVICT_B] += gone
        _write_back(lru, ls, h, gone)
    _append(lru, ls, key)
    lru[2, key] = nbytes
    ls[USED] += nbytes


@njit(cache=True)
def l2_read(lru, ls, key, nbytes):
    """L2Cache.read: True on a hit (now most recently used); a miss installs the key."""
    ls[TO_HBM] = 0
    if lru[2, key] >= 0:
        _unlink(lru, ls, key)
        _append(lru, ls, key)
        ls[HIT_B] += nbytes
        ls[HITS] += 1
        return True
    ls[MISS_B] += nbytes
    ls[MISSES] += 1
    l2_install(lru, ls, key, nbytes)
    return False


@njit(cache=True)
def l2_write(lru, ls, key, nbytes, handoff):
    """L2Cache.write: the key resident; a hand-off slot's stays dirty (rewritten dirty
    with the same bytes: nothing to HBM), any other write goes on to HBM at once, as
    does a write too large to keep."""
    ls[WRITE_B] += nbytes
    ls[TO_HBM] = 0
    if lru[3, key] and lru[2, key] == nbytes:
        _unlink(lru, ls, key)
        _append(lru, ls, key)
        return
    l2_install(lru, ls, key, nbytes)
    if lru[2, key] >= 0 and handoff:
        lru[3, key] = 1
    else:
        ls[TO_HBM] += nbytes
        ls[WB_B] += nbytes


def new_l2(nkeys: int, capacity: int):
    """The L2's state arrays (``lru``, ``lru_state``) for ``nkeys`` region ids."""
    lru = np.full((4, nkeys), -1, dtype=np.int64)
    lru[3] = 0
    ls = np.zeros(N_LS, dtype=np.int64)
    ls[HEAD] = ls[TAIL] = -1
    ls[CAPACITY] = capacity
    return lru, ls


def l2_drain(lru, ls) -> int:
    """L2Cache.drain: the resident dirty keys' bytes, now written back (and clean)."""
    dirty = (lru[3] == 1) & (lru[2] >= 0)
    n = int(lru[2][dirty].sum())
    lru[3] = 0
    ls[WB_B] += n
    return n
