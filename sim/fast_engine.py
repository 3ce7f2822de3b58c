"""The timing engine's event loop compiled with numba, on array state.

The same model and the same order of events as :class:`npujit.sim.engine.Engine` (read its
docstring for the semantics): pipes run ahead through everything that does not touch GM,
GM copies enter the memory system through an arrival heap, cores becoming free are the only
other events, all keyed ``(cycle, seq)``.  Only the representation differs: queue entries
are rows of an int64 table ``E`` (columns below), a pipe run, a program run and a flag of
a run are rows of int64 arrays, heaps are ``(key, seq)`` arrays with their payload looked
up by seq, and the memory system is :mod:`npujit.sim.fast_memory`.

What it does not do itself: errors.  A set on a still-set 1-bit flag or a run left
blocked returns a nonzero status, and :mod:`npujit.sim.fastpath` runs the launch again on
the Python engine, which raises the error with its full message.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .fast_memory import (NOW, TO_HBM, add, heap_pop, heap_push, l2_read, l2_write, peek,
                          pop_finished)
from .queues import CSET, GATE, GM, LOCAL, OPEN, SET, SETD, WAIT

INF = np.inf

# Columns of the entry table E (WS: a hand-off workspace slot's number, else -1).
CODE, A, COST, MOVED, CLS, GMW, KEY, WS = range(8)
N_E = 8
# Columns of the distinct-program table DP.
NPIPES, QOFF, NGATES, NMARKS = range(4)
N_DP = 4
# Columns of a program run (RUN).
(R_CORE, R_PROG, R_START, R_END, R_LEFT, R_BARN, R_BART, R_PARTNER, R_AICORE, R_NPIPES,
 R_PRBASE, R_GTBASE, R_NBW, R_NGW, R_DIST, R_RING, R_TAILPR, R_BODYLEFT, R_BODYEND, R_NHELD,
 R_HELD) = range(21)
N_RUN = 23      # R_HELD, R_HELD + 1: the next run's Cube and FixPipe waiting on R_TAILPR
# Pipe classes (column of PCLS per queue row of PQ): L0C_CUBE and L0C_FIXP wait for the
# last run's FixPipe on the core (Engine._go, ``overlap_fixpipe``).
OTHER_PIPE, L0C_CUBE, L0C_FIXP = 0, 1, 2
# Group state G of a mixed launch: per AI core (STARTED, IN_FLIGHT, AIC_BUSY), per
# physical core (AIV_CUR, AIV_QH, AIV_QN: the AIV's running run and its queue of waiting
# runs, a ring of ``spec.handoff_slots`` columns in AIV_Q).
G_STARTED, G_INFLIGHT, G_AICBUSY, G_AIVCUR, G_AIVQH, G_AIVQN, G_AIVQ = range(7)
# Columns of a pipe run (PR).
P_I, P_N, P_T, P_START, P_END, P_DONE, P_IDLE, P_LAND, P_QB, P_RUN, P_MB, P_NM = range(12)
N_PR = 12
# Columns of a flag of a run (FLG, row r * nflags + f).
F_OFF, F_HEAD, F_TAIL, F_WAITER, F_TAKEN = range(5)
N_FLG = 5
# Counters (CTR).
(C_SEQ, C_NRUNS, C_NPR, C_MARKP, C_PSLP, C_GTP, C_WORKN, C_CHN, C_AHN, C_STATUS, C_GNEXT,
 C_ONCEP, C_MAXWORK, C_WSBASE, C_NWS) = range(15)
N_CTR = 15
# Status codes.
OK, STILL_SET, STUCK = 0, 1, 2
# Server rows of the memory state, and the token of a background write-back.  Typed
# np.int64 rather than literals so numba compiles each server function once, not once per
# literal argument (the cold compile is what a fresh numba cache pays).
HBM, L2 = np.int64(0), np.int64(1)
WRITE_BACK = np.int64(-1)
ZERO = np.int64(0)
NONE = np.int64(-1)        # run_pipe: not resuming from a GM copy; _new_run: no partner


@njit(cache=True)
def _push_work(WK, CTR, pr):
    n = CTR[C_WORKN]
    WK[n] = pr
    CTR[C_WORKN] = n + 1


@njit(cache=True)
def _mark(PR, MK, pr, t):
    n = PR[pr, P_NM]
    MK[PR[pr, P_MB] + n] = t
    PR[pr, P_NM] = n + 1


@njit(cache=True)
def _stall(PR, pr, t, until):
    """Pipe run ``pr`` at ``t`` held until ``until``: idle unless a copy is still landing
    meanwhile.  Returns its new clock."""
    if until > t:
        done = PR[pr, P_DONE]
        if until > done:
            PR[pr, P_IDLE] += until - (done if done > t else t)
        return until
    return t


@njit(cache=True)
def _set(FLG, PSL, WK, CTR, nflags, r, a, t):
    """Append a set at ``t`` to flag ``a`` of run ``r`` and wake its waiter."""
    row = r * nflags + a
    PSL[FLG[row, F_OFF] + FLG[row, F_TAIL]] = t
    FLG[row, F_TAIL] += 1
    w = FLG[row, F_WAITER]
    if w >= 0:
        FLG[row, F_WAITER] = -1
        _push_work(WK, CTR, w)


@njit(cache=True)
def run_pipe(pr, copied, S):
    """Engine._run_pipe: advance pipe run ``pr`` as far as it goes (``copied`` >= 0:
    resume from its GM copy, finished in that cycle).  Returns a status."""
    (E, qrow, PR, RUN, FLG, PSL, onebit, GT, BWL, GWL, MK, WK, CTR, AK, AS, APR, AROW, CK, CS,
     CRUN, LAST) = S
    nflags = len(onebit)
    i = PR[pr, P_I]
    n = PR[pr, P_N]
    t = PR[pr, P_T]
    qb = PR[pr, P_QB]
    r = PR[pr, P_RUN]
    if copied >= 0:
        end = t + E[qrow[qb + i], COST]
        t = copied if copied > end else end
        _mark(PR, MK, pr, t)
        if t + PR[pr, P_LAND] > PR[pr, P_DONE]:
            PR[pr, P_DONE] = t + PR[pr, P_LAND]
        i += 1
    while i < n:
        row = qrow[qb + i]
        code = E[row, CODE]
        a = E[row, A]
        if code == WAIT:
            fr = r * nflags + a
            head = FLG[fr, F_HEAD]
            if head == FLG[fr, F_TAIL]:
                FLG[fr, F_WAITER] = pr
                PR[pr, P_I] = i
                PR[pr, P_T] = t
                return OK
            off = FLG[fr, F_OFF]
            ts = PSL[off + head]
            head += 1
            FLG[fr, F_HEAD] = head
            t = _stall(PR, pr, t, ts)
            _mark(PR, MK, pr, t)
            FLG[fr, F_TAKEN] = t
            if head < FLG[fr, F_TAIL] and PSL[off + head] < t and onebit[a]:
                PR[pr, P_I] = i
                PR[pr, P_T] = t
                return STILL_SET
            t += E[row, COST]
        elif code == LOCAL:
            t += a
        elif code == SETD or code == SET:
            if code == SETD:
                if PR[pr, P_DONE] > t:
                    t = PR[pr, P_DONE]
                _mark(PR, MK, pr, t)
            t += E[row, COST]
            if t < FLG[r * nflags + a, F_TAKEN] and onebit[a]:
                PR[pr, P_I] = i
                PR[pr, P_T] = t
                return STILL_SET
            _set(FLG, PSL, WK, CTR, nflags, r, a, t)
        elif code == GM:
            PR[pr, P_I] = i
            PR[pr, P_T] = t
            seq = CTR[C_SEQ] + 1
            CTR[C_SEQ] = seq
            APR[seq] = pr
            AROW[seq] = row
            CTR[C_AHN] = heap_push(AK, AS, CTR[C_AHN], float(t + a), seq)
            return OK
        elif code == GATE:
            gt = GT[RUN[r, R_GTBASE] + a]
            if gt < 0:
                k = RUN[r, R_NGW]
                GWL[r, k, 0] = a
                GWL[r, k, 1] = pr
                RUN[r, R_NGW] = k + 1
                PR[pr, P_I] = i
                PR[pr, P_T] = t
                return OK
            t = _stall(PR, pr, t, gt)
            _mark(PR, MK, pr, t)
        elif code == OPEN:
            GT[RUN[r, R_GTBASE] + a] = t
            k = RUN[r, R_NGW]
            kept = 0
            for j in range(k):      # wake the pipes held by this gate, in arrival order
                if GWL[r, j, 0] == a:
                    _push_work(WK, CTR, GWL[r, j, 1])
                else:
                    GWL[r, kept, 0] = GWL[r, j, 0]
                    GWL[r, kept, 1] = GWL[r, j, 1]
                    kept += 1
            RUN[r, R_NGW] = kept
        elif code == CSET:
            if PR[pr, P_DONE] > t:
                t = PR[pr, P_DONE]
            _mark(PR, MK, pr, t)
            t += E[row, COST]
            _set(FLG, PSL, WK, CTR, nflags, RUN[r, R_PARTNER], a, t)
        else:   # BARRIER (ALL)
            if PR[pr, P_DONE] > t:
                t = PR[pr, P_DONE]
            RUN[r, R_BARN] += 1
            if t > RUN[r, R_BART]:
                RUN[r, R_BART] = t
            if RUN[r, R_BARN] < RUN[r, R_NPIPES]:
                k = RUN[r, R_NBW]
                BWL[r, k] = pr
                RUN[r, R_NBW] = k + 1
                PR[pr, P_I] = i
                PR[pr, P_T] = t
                return OK
            release = RUN[r, R_BART]
            cost = E[row, COST]
            for j in range(RUN[r, R_NBW]):
                w = BWL[r, j]
                PR[w, P_IDLE] += release - PR[w, P_T]
                _mark(PR, MK, w, release)
                PR[w, P_T] = release + cost
                PR[w, P_I] += 1
                _push_work(WK, CTR, w)
            RUN[r, R_BARN] = 0
            RUN[r, R_BART] = 0
            RUN[r, R_NBW] = 0
            PR[pr, P_IDLE] += release - t
            _mark(PR, MK, pr, release)
            t = release + cost
        i += 1
    PR[pr, P_I] = i
    PR[pr, P_T] = t
    RUN[r, R_LEFT] -= 1
    if PR[pr, P_DONE] > t:
        t = PR[pr, P_DONE]
    PR[pr, P_END] = t
    if t > RUN[r, R_END]:
        RUN[r, R_END] = t
    if pr == RUN[r, R_TAILPR]:      # L0C is free: the next run's Cube and FixPipe go on
        for k in range(RUN[r, R_NHELD]):
            w = RUN[r, R_HELD + k]
            _delay_pipe(PR, w, t)
            _push_work(WK, CTR, w)
        RUN[r, R_NHELD] = 0
        return OK
    RUN[r, R_BODYLEFT] -= 1
    if t > RUN[r, R_BODYEND]:
        RUN[r, R_BODYEND] = t
    if RUN[r, R_BODYLEFT] == 0:
        seq = CTR[C_SEQ] + 1
        CTR[C_SEQ] = seq
        CRUN[seq] = r
        CTR[C_CHN] = heap_push(CK, CS, CTR[C_CHN], float(RUN[r, R_BODYEND]), seq)
    return OK


@njit(cache=True)
def _new_run(S, D, core, prog, t, partner_prog):
    """Engine._new_run: a run of program ``prog`` on physical core ``core`` from cycle
    ``t``; returns its index."""
    (E, qrow, PR, RUN, FLG, PSL, onebit, GT, BWL, GWL, MK, WK, CTR, AK, AS, APR, AROW, CK, CS,
     CRUN, LAST) = S
    DP, PQ, SC, XC, pdist, groups, aic_core, aiv_core, land0, PCLS, TAILOK = D
    nflags = len(onebit)
    r = CTR[C_NRUNS]
    CTR[C_NRUNS] = r + 1
    d = pdist[prog]
    npipes = DP[d, NPIPES]
    RUN[r, R_CORE] = core
    RUN[r, R_PROG] = prog
    RUN[r, R_START] = t
    RUN[r, R_END] = t
    RUN[r, R_LEFT] = npipes
    RUN[r, R_BARN] = 0
    RUN[r, R_BART] = 0
    RUN[r, R_PARTNER] = -1
    RUN[r, R_AICORE] = -1
    RUN[r, R_RING] = -1
    RUN[r, R_TAILPR] = -1
    RUN[r, R_BODYLEFT] = npipes
    RUN[r, R_BODYEND] = t
    RUN[r, R_NHELD] = 0
    RUN[r, R_NPIPES] = npipes
    RUN[r, R_DIST] = d
    base = CTR[C_NPR]
    RUN[r, R_PRBASE] = base
    CTR[C_NPR] = base + npipes
    gt = CTR[C_GTP]
    RUN[r, R_GTBASE] = gt
    for g in range(DP[d, NGATES]):
        GT[gt + g] = -1
    CTR[C_GTP] = gt + DP[d, NGATES]
    RUN[r, R_NBW] = 0
    RUN[r, R_NGW] = 0
    for f in range(nflags):
        row = r * nflags + f
        FLG[row, F_OFF] = CTR[C_PSLP]
        FLG[row, F_HEAD] = 0
        FLG[row, F_TAIL] = 0
        FLG[row, F_WAITER] = -1
        FLG[row, F_TAKEN] = -1
        need = SC[d, f]
        if partner_prog >= 0:
            need += XC[pdist[partner_prog], f]
        CTR[C_PSLP] += need
    for p in range(npipes):
        pr = base + p
        k = DP[d, QOFF] + p
        PR[pr, P_I] = 0
        PR[pr, P_N] = PQ[k, 1]
        PR[pr, P_T] = t
        PR[pr, P_START] = t
        PR[pr, P_END] = t
        PR[pr, P_DONE] = t
        PR[pr, P_IDLE] = 0
        PR[pr, P_LAND] = land0
        PR[pr, P_QB] = PQ[k, 0]
        PR[pr, P_RUN] = r
        PR[pr, P_MB] = CTR[C_MARKP]
        PR[pr, P_NM] = 0
        CTR[C_MARKP] += PQ[k, 1]
        if TAILOK[d] and PCLS[k] == L0C_FIXP:
            RUN[r, R_TAILPR] = pr
            RUN[r, R_BODYLEFT] -= 1
    return r


@njit(cache=True)
def _delay_pipe(PR, pr, t):
    """PipeRun.delay: pipe run ``pr`` (not started yet) starts at ``t`` if that is later."""
    if t > PR[pr, P_T]:
        PR[pr, P_T] = t
        PR[pr, P_START] = t
        PR[pr, P_END] = t
        PR[pr, P_DONE] = t


@njit(cache=True)
def _go(S, D, r, t):
    """Engine._go for one run: its pipes onto the worklist (a run with no pipes but a
    tail is free at once); with the last run on its core still draining its FixPipe, the
    Cube and FixPipe wait for it."""
    PR, RUN, WK, CTR, CK, CS, CRUN, LAST = S[2], S[3], S[11], S[12], S[17], S[18], S[19], S[20]
    DP, PCLS = D[0], D[9]
    if RUN[r, R_BODYLEFT] == 0:
        seq = CTR[C_SEQ] + 1
        CTR[C_SEQ] = seq
        CRUN[seq] = r
        CTR[C_CHN] = heap_push(CK, CS, CTR[C_CHN], float(t), seq)
    c = RUN[r, R_CORE]
    prev = LAST[c]
    LAST[c] = r
    base = RUN[r, R_PRBASE]
    q0 = DP[RUN[r, R_DIST], QOFF]
    npipes = RUN[r, R_NPIPES]
    hold = prev >= 0 and RUN[prev, R_TAILPR] >= 0
    drained = False
    dt = t
    if hold:
        tp = RUN[prev, R_TAILPR]
        drained = PR[tp, P_I] >= PR[tp, P_N]
        dt = PR[tp, P_END]
    if hold and not drained:        # in the spec's pipe order, as the Python list
        for p in range(npipes):
            if PCLS[q0 + p] != OTHER_PIPE:
                RUN[prev, R_HELD + RUN[prev, R_NHELD]] = base + p
                RUN[prev, R_NHELD] += 1
    for p in range(npipes - 1, -1, -1):   # reversed: LIFO runs them in order
        if hold and PCLS[q0 + p] != OTHER_PIPE:
            if not drained:
                continue
            _delay_pipe(PR, base + p, dt)
        _push_work(WK, CTR, base + p)


@njit(cache=True)
def _drain(S):
    WK, CTR = S[11], S[12]
    while CTR[C_WORKN]:
        n = CTR[C_WORKN] - 1
        CTR[C_WORKN] = n
        st = run_pipe(WK[n], NONE, S)
        if st != OK:
            return st
    return OK


@njit(cache=True)
def _delay(S, r, t):
    """CoreRun.delay: run ``r`` (not started yet) starts at cycle ``t`` instead."""
    PR, RUN = S[2], S[3]
    RUN[r, R_START] = t
    RUN[r, R_END] = t
    base = RUN[r, R_PRBASE]
    for p in range(RUN[r, R_NPIPES]):
        _delay_pipe(PR, base + p, t)


@njit(cache=True)
def _start_group(S, D, G, j, t):
    """Engine._start_group: the next (AIC, AIV) group on AI core ``j``."""
    RUN, CTR = S[3], S[12]
    groups, aic_core, aiv_core = D[5], D[6], D[7]
    slots = G[G_AIVQ].shape[1]
    gi = CTR[C_GNEXT]
    CTR[C_GNEXT] = gi + 1
    n = G[G_STARTED][j]
    c = aiv_core[j, n % aiv_core.shape[1]]
    a = _new_run(S, D, aic_core[j], groups[gi, 0], t, groups[gi, 1])
    v = _new_run(S, D, c, groups[gi, 1], t, groups[gi, 0])
    RUN[a, R_PARTNER] = v
    RUN[v, R_PARTNER] = a
    RUN[a, R_AICORE] = j
    RUN[v, R_AICORE] = j
    RUN[a, R_RING] = j * slots + n % slots
    RUN[v, R_RING] = j * slots + n % slots
    G[G_STARTED][j] = n + 1
    G[G_INFLIGHT][j] += 1
    G[G_AICBUSY][j] = 1
    _go(S, D, a, t)
    if G[G_AIVCUR][c] < 0:
        G[G_AIVCUR][c] = v
        _go(S, D, v, t)
    else:
        q = G[G_AIVQ]
        q[c, (G[G_AIVQH][c] + G[G_AIVQN][c]) % q.shape[1]] = v
        G[G_AIVQN][c] += 1
    return _drain(S)


@njit(cache=True)
def _group_done(S, D, G, r, t):
    """Engine._group_done: grouped run ``r`` drained at ``t``; its cores' next runs."""
    RUN, CTR = S[3], S[12]
    groups, aic_core = D[5], D[6]
    j = RUN[r, R_AICORE]
    c = RUN[r, R_CORE]
    if c != aic_core[j]:
        G[G_INFLIGHT][j] -= 1
        G[G_AIVCUR][c] = -1
        if G[G_AIVQN][c] > 0:
            q = G[G_AIVQ]
            v = q[c, G[G_AIVQH][c]]
            G[G_AIVQH][c] = (G[G_AIVQH][c] + 1) % q.shape[1]
            G[G_AIVQN][c] -= 1
            G[G_AIVCUR][c] = v
            _delay(S, v, t)
            _go(S, D, v, t)
            st = _drain(S)
            if st != OK:
                return st
    else:
        G[G_AICBUSY][j] = 0
    if (G[G_AICBUSY][j] == 0 and G[G_INFLIGHT][j] < G[G_AIVQ].shape[1]
            and CTR[C_GNEXT] < groups.shape[0]):
        return _start_group(S, D, G, j, t)
    return OK


@njit(cache=True)
def _admit(S, mem, caps, lru, ls, has_l2, hbm_latency, l2_latency, te, seq):
    """MemorySystem._admit / HBMServer.add of the arrival ``seq`` starting at ``te``."""
    E, PR, CTR, APR, AROW = S[0], S[2], S[12], S[15], S[16]
    pr = APR[seq]
    row = AROW[seq]
    nbytes = E[row, MOVED]
    c = E[row, CLS]
    if has_l2:
        w = E[row, GMW]
        if w >= 0:
            key = E[row, KEY]
            if key == -2:       # ONCE: a fresh key, a miss that still fills the cache
                key = CTR[C_ONCEP]
                CTR[C_ONCEP] = key + 1
            elif E[row, WS] >= 0:   # a hand-off slot: its ring position's, not the program's
                j = S[3][PR[pr, P_RUN], R_RING]
                if j >= 0:
                    key = CTR[C_WSBASE] + j * CTR[C_NWS] + E[row, WS]
            if w == 1:
                l2_write(lru, ls, key, nbytes, E[row, WS] >= 0)
                hit = True
            else:
                hit = l2_read(lru, ls, key, nbytes)
            if ls[TO_HBM]:      # dirty keys evicted (or a write too large to keep)
                add(mem, HBM, te, ls[TO_HBM], c, caps, WRITE_BACK)
            if hit:
                PR[pr, P_LAND] = l2_latency
                add(mem, L2, te, nbytes, c, caps, pr)
                return
        PR[pr, P_LAND] = hbm_latency
    add(mem, HBM, te, nbytes, c, caps, pr)


@njit(cache=True)
def simulate_arrays(S, D, G, pkind, kq, kqoff, core_kind, jitter, nkinds, caps, mem, lru,
                    ls, has_l2, hbm_latency, l2_latency, outf, done_buf):
    """Engine.run on arrays: fills the run, pipe-run and mark arrays of ``S`` and the
    memory state; returns a status (``OK``, or ``STILL_SET`` / ``STUCK``: the caller
    reruns the launch on the Python engine, which raises the error)."""
    RUN, CTR, AK, AS, CK, CS, CRUN = S[3], S[12], S[13], S[14], S[17], S[18], S[19]
    pdist, groups, aic_core = D[4], D[5], D[6]
    nprog = len(pdist)
    ncores = len(core_kind)
    grouped = groups.shape[0] > 0
    khead = kqoff[:-1].copy()
    if grouped:
        for j in range(len(aic_core)):
            if CTR[C_GNEXT] < groups.shape[0]:
                st = _start_group(S, D, G, j, jitter[aic_core[j]])
                if st != OK:
                    return st
    else:
        for kind in range(nkinds):
            for c in range(ncores):
                if core_kind[c] != kind:
                    continue
                if khead[kind] >= kqoff[kind + 1]:
                    break
                prog = kq[khead[kind]]
                khead[kind] += 1
                r = _new_run(S, D, c, prog, jitter[c], NONE)
                _go(S, D, r, jitter[c])
                st = _drain(S)
                if st != OK:
                    return st
    while True:
        tc = CK[0] if CTR[C_CHN] else INF
        # next_completion(tc): admit the arrivals that start before the next finish.
        while CTR[C_AHN]:
            te = AK[0]
            if te > tc:
                break
            if has_l2:
                if te > mem[0][0, NOW] and te > mem[0][1, NOW]:
                    nt = peek(mem, HBM, caps)
                    t2 = peek(mem, L2, caps)
                    if te >= (t2 if t2 < nt else nt):
                        break
            elif te > mem[0][0, NOW]:
                if te >= peek(mem, HBM, caps):
                    break
            seq = AS[0]
            CTR[C_AHN] = heap_pop(AK, AS, CTR[C_AHN])
            _admit(S, mem, caps, lru, ls, has_l2, hbm_latency, l2_latency, te, seq)
        tf = peek(mem, HBM, caps)
        if has_l2:
            t2 = peek(mem, L2, caps)
            if t2 < tf:
                tf = t2
        if tc < tf:
            seq = CS[0]
            CTR[C_CHN] = heap_pop(CK, CS, CTR[C_CHN])
            r = CRUN[seq]
            tci = int(tc)
            if grouped:
                st = _group_done(S, D, G, r, tci)
                if st != OK:
                    return st
                continue
            kind = pkind[RUN[r, R_PROG]]
            if khead[kind] < kqoff[kind + 1]:    # the core takes the next program of its kind
                prog = kq[khead[kind]]
                khead[kind] += 1
                r2 = _new_run(S, D, RUN[r, R_CORE], prog, tci, NONE)
                _go(S, D, r2, tci)
                st = _drain(S)
                if st != OK:
                    return st
            continue
        if tf == INF:
            break
        finished = np.int64(math.ceil(tf))
        m = ZERO
        if has_l2:
            if peek(mem, HBM, caps) <= tf:
                m0 = pop_finished(mem, HBM, tf, caps, done_buf, ZERO)
                for j in range(m0):
                    if done_buf[j] < 0:     # a background write-back
                        d = tf + hbm_latency
                        if d > outf[0]:
                            outf[0] = d
                    else:
                        done_buf[m] = done_buf[j]
                        m += 1
            if peek(mem, L2, caps) <= tf:
                m = pop_finished(mem, L2, tf, caps, done_buf, m)
        else:
            m = pop_finished(mem, HBM, tf, caps, done_buf, ZERO)
        for j in range(m):
            st = run_pipe(done_buf[j], finished, S)
            if st != OK:
                return st
            st = _drain(S)
            if st != OK:
                return st
    for r in range(CTR[C_NRUNS]):
        if RUN[r, R_LEFT] > 0:
            return STUCK
    if CTR[C_NRUNS] < nprog:
        return STUCK
    return OK


_warm = False       # warm() found the engine compiled or cached (it stays so)


def warm() -> bool:
    """Whether :func:`simulate_arrays` is compiled in this process or numba's cache holds
    its machine code for the current source (then loading it takes a fraction of a
    second, where compiling the engine takes 15-25 s); ``npujit.sim.simulate.use_compiled``
    asks before it picks this engine for a launch."""
    global _warm
    if not _warm:
        try:
            cache = getattr(simulate_arrays, "_cache", None)
            _warm = bool(simulate_arrays.signatures) or bool(
                cache is not None and cache._cache_file._load_index())
        except Exception:         # an unreadable or foreign index: as good as none
            _warm = False
    return _warm
