"""The compiled engine's front: a launch's compiled queues as arrays, the run, a Timeline.

:func:`run_fast` takes what :class:`npujit.sim.engine.Engine` builds (the validated, compiled
programs, the physical cores, the program queues, the jitter) and runs it through
:func:`npujit.sim.fast_engine.simulate_arrays`.  It returns ``None`` when the compiled
engine met an error (a set on a still-set 1-bit flag, a run left blocked): the caller then
runs the Python engine, which raises the error with its full message.  The
:class:`FastTimeline` it returns reads like the Python engine's :class:`Timeline`; its
``runs`` (pipe runs with their marks, for traces, plots and the flag checks) are built
only when asked for.

Example::

    >>> from npujit.target import TINY
    >>> from npujit.sim.isa import CoreProgram, Launch, copy, vec
    >>> tl = run_fast(Launch([CoreProgram("AIV", [copy("GM_to_UB", 6400), vec("add", 256)])]),
    ...               TINY)
    >>> tl.cycles, tl.runs[0].pipes[0].name
    (210, 'MTE2')
"""
from __future__ import annotations

import math

import numpy as np

from . import fast_engine as fe
from . import fast_memory as fm
from .engine import CoreRun, Engine, PipeRun, Timeline, fixpipe_overlaps
from .l2 import ONCE, MemorySystem
from .split import is_workspace
from .queues import CSET, GM, SET, SETD
from npujit.target import NPUSpec


class _FastCache:
    """The L2's counters after a compiled run (what the report reads of ``L2Cache``)."""

    def __init__(self, ls: np.ndarray):
        self.hit_bytes, self.miss_bytes = int(ls[fm.HIT_B]), int(ls[fm.MISS_B])
        self.write_bytes, self.evicted_bytes = int(ls[fm.WRITE_B]), int(ls[fm.EVICT_B])
        self.hits, self.misses = int(ls[fm.HITS]), int(ls[fm.MISSES])
        self.writeback_bytes = int(ls[fm.WB_B])


class _FastMemory:
    """What the report and the trace read of the memory system after a compiled run."""

    def __init__(self, mem, ls, has_l2: bool, drained: float, drain_bytes: int = 0):
        sf, si, samples = mem[0], mem[1], mem[10]
        self.served = float(sf[0, fm.SERVED]) + drain_bytes
        self.drain_bytes = drain_bytes
        self.samples = ([(t, r) for t, r in samples[:si[0, fm.NSAMP]].tolist()]
                        if si[0, fm.RECORD] else None)
        if has_l2:
            self.cache = _FastCache(ls)
            self.l2_served = float(sf[1, fm.SERVED])
            self.drained = drained


class FastTimeline(Timeline):
    """A :class:`Timeline` whose runs are arrays until someone reads ``runs``."""

    def __init__(self, spec, launch, core_names, compiled, hbm, flag_keys, arrays):
        self.spec, self.launch, self.core_names = spec, launch, core_names
        self.compiled, self.hbm, self.flag_keys = compiled, hbm, flag_keys
        self._arrays = arrays
        self._runs = None
        RUN = arrays[0]
        end = int(RUN[:, fe.R_END].max()) if len(RUN) else 0
        self.cycles = max(end, math.ceil(getattr(hbm, "drained", 0)))

    @property
    def runs(self) -> list:
        """The program runs as :class:`~npujit.sim.engine.CoreRun` objects, in start order."""
        if self._runs is None:
            self._runs = self._build_runs()
        return self._runs

    def program_rows(self):
        """Per run: (program, core name, start, end, compiled, busy per pipe name), without
        building the run objects (what the report needs)."""
        RUN, PR = self._arrays[0], self._arrays[1]
        busy = (PR[:, fe.P_END] - PR[:, fe.P_START] - PR[:, fe.P_IDLE]).tolist()
        names, compiled = self.core_names, self.compiled
        out = []
        for prog, core, start, end, base in RUN[:, [fe.R_PROG, fe.R_CORE, fe.R_START, fe.R_END,
                                                    fe.R_PRBASE]].tolist():
            comp = compiled[prog]
            out.append((prog, names[core], start, end, comp,
                        dict(zip(comp.pipes, busy[base:base + len(comp.pipes)]))))
        return out

    def busy_totals(self) -> tuple:
        """:meth:`Timeline.busy_totals <npujit.sim.engine.Timeline.busy_totals>` from the
        run arrays, in a few numpy passes instead of a pass per run."""
        RUN, PR = self._arrays[0], self._arrays[1]
        names = self.core_names
        pipe_names: dict[str, int] = {}
        distinct, prog_d = self.distinct()
        tables = [[pipe_names.setdefault(p, len(pipe_names)) for p in c.pipes]
                  for c in distinct]
        width = max((len(t) for t in tables), default=0)
        table = np.zeros((len(tables), max(width, 1)), dtype=np.int64)
        for d, t in enumerate(tables):
            table[d, :len(t)] = t
        run_of = PR[:, fe.P_RUN]
        pipe = table[prog_d[RUN[run_of, fe.R_PROG]],
                     np.arange(len(PR)) - RUN[run_of, fe.R_PRBASE]]
        busy = PR[:, fe.P_END] - PR[:, fe.P_START] - PR[:, fe.P_IDLE]
        npn = len(pipe_names)
        pnames = list(pipe_names)
        run_core = RUN[:, fe.R_CORE]
        kinds = list(self.spec.core_counts)
        core_kind = np.array([kinds.index(n.split()[0]) for n in names], dtype=np.int64)

        def table_of(groups: np.ndarray, count: int) -> tuple:
            sums = np.zeros(count * npn, dtype=np.int64)
            np.add.at(sums, groups * npn + pipe, busy)
            seen = np.zeros(count * npn, dtype=bool)
            seen[groups * npn + pipe] = True
            return sums.reshape(count, npn).tolist(), seen.reshape(count, npn).tolist()

        def as_dict(sums, seen, k) -> dict:
            return {pnames[p]: sums[k][p] for p in range(npn) if seen[k][p]}

        cores, first = np.unique(run_core, return_index=True)
        order = cores[np.argsort(first)].tolist()      # cores as their first run starts
        sums, seen = table_of(run_core[run_of], len(names))
        core_busy = {names[k]: as_dict(sums, seen, k) for k in order}
        counts = np.bincount(run_core, minlength=len(names)).tolist()
        per_core_programs = {names[k]: counts[k] for k in order}
        run_kind = core_kind[run_core]
        ksums, kseen = table_of(run_kind[run_of], len(kinds))
        ktime = np.bincount(run_kind, RUN[:, fe.R_END] - RUN[:, fe.R_START],
                            len(kinds)).astype(np.int64).tolist()
        present = [kinds[k] for k in dict.fromkeys(core_kind[order].tolist())]
        kind_time = {k: ktime[kinds.index(k)] for k in present}
        kind_busy = {k: as_dict(ksums, kseen, kinds.index(k)) for k in present}
        return core_busy, per_core_programs, kind_time, kind_busy

    def _build_runs(self) -> list:
        RUN, PR, MK = self._arrays
        runs = []
        prs = PR.tolist()
        for row in RUN.tolist():
            comp = self.compiled[row[fe.R_PROG]]
            run = CoreRun.__new__(CoreRun)
            run.core, run.program, run.compiled = (self.core_names[row[fe.R_CORE]],
                                                   row[fe.R_PROG], comp)
            run.start, run.end = row[fe.R_START], row[fe.R_END]
            run.left, run.partner, run.ai_core = 0, None, row[fe.R_AICORE]
            run.ring = row[fe.R_RING]
            run.tail, run.body_left, run.body_end, run.held = None, 0, row[fe.R_BODYEND], []
            run.pipes = []
            for p, (name, q) in enumerate(zip(comp.pipes, comp.queues)):
                x = prs[row[fe.R_PRBASE] + p]
                ps = PipeRun.__new__(PipeRun)
                ps.name, ps.q, ps.i, ps.n, ps.t = name, q, x[fe.P_I], x[fe.P_N], x[fe.P_T]
                ps.start, ps.end, ps.done = x[fe.P_START], x[fe.P_END], x[fe.P_DONE]
                ps.idle, ps.landing, ps.core = x[fe.P_IDLE], x[fe.P_LAND], run
                ps.marks = MK[x[fe.P_MB]:x[fe.P_MB] + x[fe.P_NM]].tolist()
                run.pipes.append(ps)
            runs.append(run)
        for run, partner in zip(runs, RUN[:, fe.R_PARTNER].tolist()):
            run.partner = runs[partner] if partner >= 0 else None
        return runs


def _entry_table(entries: list, has_l2: bool):
    """The entry table E, the sorted port caps, the number of distinct region keys and of
    distinct hand-off workspace slots (a slot's key is its ring position's: see ``sim/l2.py``)."""
    E = np.zeros((len(entries), fe.N_E), dtype=np.int64)
    caps = sorted({e[4] for e in entries if e[0] == GM})
    cap_index = {c: i for i, c in enumerate(caps)}
    keys: dict = {}
    slots: dict = {}
    rows = []
    for code, a, cost, moved, rate, gm in entries:
        if code == GM:
            w, key, ws = -1, -1, -1
            if gm is not None and has_l2:
                w = 1 if gm[0] else 0
                if gm[1] == ONCE:
                    key = -2
                else:
                    key = keys.setdefault(gm[1], len(keys))
                    if is_workspace(gm[1]):
                        ws = slots.setdefault(gm[1][2], len(slots))
            rows.append((code, a, cost, moved, cap_index[rate], w, key, ws))
        else:
            rows.append((code, a, cost, 0, 0, -1, -1, -1))
    if rows:
        E[:] = rows
    return E, np.array(caps or [1.0], dtype=np.float64), len(keys), len(slots)


def run_fast(launch, spec: NPUSpec, record_hbm: bool = True, one_bit_flags: bool = True,
             start_jitter: int = 0, seed: int = 0):
    """Simulate ``launch`` with the compiled engine: a :class:`FastTimeline` with the same
    cycles, busy cycles and bytes as :func:`npujit.sim.engine.run`, or ``None`` when the
    run met an error (rerun it on the Python engine to raise it)."""
    eng = Engine(launch, spec, record_hbm, one_bit_flags, start_jitter, seed)
    comp = eng.compiler
    has_l2 = isinstance(eng.hbm, MemorySystem)
    E, caps, nkeys, nslots = _entry_table(comp.entries, has_l2)
    nflags = len(comp.flag_index)
    code, arg = E[:, fe.CODE], E[:, fe.A]
    # Distinct compiled programs and their queues.
    distinct, pdist = eng.distinct
    nd = len(distinct)
    DP = np.zeros((nd, fe.N_DP), dtype=np.int64)
    # Every distinct program's queues end to end: qrow, with (offset, length) per queue
    # in PQ and each program's queues from row DP[d, QOFF]; counts per program by bincount.
    qs = [ids for c in distinct for ids in c.entry_ids]
    qlen = np.array([len(ids) for ids in qs], dtype=np.int64)
    npipes = np.array([len(c.entry_ids) for c in distinct], dtype=np.int64)
    DP[:, fe.NPIPES] = npipes
    DP[:, fe.QOFF] = np.cumsum(npipes) - npipes
    DP[:, fe.NGATES] = [c.gates for c in distinct]
    pq = np.stack([np.cumsum(qlen) - qlen, qlen], axis=1) if qs else []
    qrow = np.concatenate(qs) if qs else np.empty(0, dtype=np.int64)
    row_d = np.repeat(np.repeat(np.arange(nd, dtype=np.int64), npipes), qlen)
    DP[:, fe.NMARKS] = np.bincount(row_d, minlength=nd)
    cd, ca = code[qrow], arg[qrow]
    SC = np.zeros((nd, max(nflags, 1)), dtype=np.int64)
    XC = np.zeros_like(SC)
    if nflags:
        sets = (cd == SET) | (cd == SETD)
        SC[:] = np.bincount(row_d[sets] * nflags + ca[sets], minlength=nd * nflags
                            ).reshape(nd, nflags)
        cross = cd == CSET
        XC[:] = np.bincount(row_d[cross] * nflags + ca[cross], minlength=nd * nflags
                            ).reshape(nd, nflags)
    gm = cd == GM
    gm_n = np.bincount(row_d[gm], minlength=nd)
    once_n = np.bincount(row_d[gm & (E[qrow, fe.KEY] == -2)], minlength=nd)
    PQ = np.array(pq, dtype=np.int64).reshape(-1, 2)
    cls = {"CUBE": fe.L0C_CUBE, "FIXP": fe.L0C_FIXP}
    PCLS = np.array([cls.get(name, fe.OTHER_PIPE) for c in distinct for name in c.pipes],
                    dtype=np.int64)
    TAILOK = np.array([fixpipe_overlaps(spec, c) for c in distinct], dtype=np.bool_)
    nprog = len(pdist)
    total_gm = int(gm_n[pdist].sum())
    total_wb = total_gm      # any GM copy may evict dirty keys: one write-back each
    npr = int(DP[pdist, fe.NPIPES].sum())
    partner_sets = 0
    groups = np.array(launch.groups or [], dtype=np.int64).reshape(-1, 2)
    if len(groups):
        partner_sets = int(XC[pdist[groups[:, 0]]].sum() + XC[pdist[groups[:, 1]]].sum())
    # Physical cores, program queues, groups.
    kinds = list(spec.core_counts)
    names = eng.core_names
    core_kind = np.array([kinds.index(n.split()[0]) for n in names], dtype=np.int64)
    jitter = np.array([eng.jitter[n] for n in names], dtype=np.int64)
    pkind = np.zeros(len(launch.programs), dtype=np.int64)
    for k, kind in enumerate(kinds):            # every program is in its kind's queue
        pkind[list(eng.queues[kind])] = k
    kq = np.array([i for k in kinds for i in eng.queues[k]], dtype=np.int64)
    kqoff = np.cumsum([0] + [len(eng.queues[k]) for k in kinds]).astype(np.int64)
    if len(groups):
        ratio = spec.aiv_cores // spec.aic_cores
        aic_core = np.array([names.index(f"AIC {j}") for j in range(spec.aic_cores)],
                            dtype=np.int64)
        aiv_core = np.array([[names.index(f"AIV {j * ratio + m}") for m in range(ratio)]
                             for j in range(spec.aic_cores)], dtype=np.int64)
    else:
        aic_core = np.zeros(0, dtype=np.int64)
        aiv_core = np.zeros((0, 1), dtype=np.int64)
    slots = spec.handoff_slots
    n_ai, n_phys = len(aic_core), len(names)
    G = (np.zeros(n_ai, dtype=np.int64), np.zeros(n_ai, dtype=np.int64),
         np.zeros(n_ai, dtype=np.int64), np.full(n_phys, -1, dtype=np.int64),
         np.zeros(n_phys, dtype=np.int64), np.zeros(n_phys, dtype=np.int64),
         np.zeros((n_phys, slots), dtype=np.int64))
    # State.
    maxp = max(int(DP[:, fe.NPIPES].max()) if nd else 1, 1)
    max_active = len(names) * maxp + total_wb + 2
    max_adds = total_gm + total_wb + 2
    mem = fm.new_servers((spec.hbm_bytes_per_cycle, spec.l2_bytes_per_cycle), len(caps),
                         max_active, max_adds, 6 * max_adds + 16 if record_hbm else 1,
                         record_hbm)
    once_total = int(once_n[pdist].sum())
    ws_base = nkeys + once_total
    lru, ls = fm.new_l2(ws_base + spec.aic_cores * slots * nslots + 1, spec.l2_bytes)
    onebit = np.array([one_bit_flags and key[0] != "CROSS"
                       for key in sorted(comp.flag_index, key=comp.flag_index.get)],
                      dtype=np.bool_)
    RUN = np.zeros((nprog, fe.N_RUN), dtype=np.int64)
    PR = np.zeros((npr, fe.N_PR), dtype=np.int64)
    FLG = np.zeros((nprog * nflags, fe.N_FLG), dtype=np.int64)
    PSL = np.zeros(int(SC[pdist].sum()) + partner_sets + 1, dtype=np.int64)
    GT = np.zeros(int(DP[pdist, fe.NGATES].sum()) + 1, dtype=np.int64)
    BWL = np.zeros((nprog, maxp), dtype=np.int64)
    GWL = np.zeros((nprog, maxp, 2), dtype=np.int64)
    MK = np.zeros(int(DP[pdist, fe.NMARKS].sum()) + 1, dtype=np.int64)
    WK = np.zeros(npr + 1, dtype=np.int64)
    CTR = np.zeros(fe.N_CTR, dtype=np.int64)
    CTR[fe.C_ONCEP] = nkeys
    CTR[fe.C_WSBASE], CTR[fe.C_NWS] = ws_base, nslots
    nseq = total_gm + nprog + 2
    AK, AS = np.zeros(len(names) * maxp + 1), np.zeros(len(names) * maxp + 1, dtype=np.int64)
    CK, CS = np.zeros(len(names) + 1), np.zeros(len(names) + 1, dtype=np.int64)
    APR = np.zeros(nseq, dtype=np.int64)
    AROW = np.zeros(nseq, dtype=np.int64)
    CRUN = np.zeros(nseq, dtype=np.int64)
    LAST = np.full(len(names), -1, dtype=np.int64)
    S = (E, qrow, PR, RUN, FLG, PSL, onebit, GT, BWL, GWL, MK, WK, CTR, AK, AS, APR, AROW, CK,
         CS, CRUN, LAST)
    D = (DP, PQ, SC, XC, pdist, groups, aic_core, aiv_core, spec.hbm_latency_cycles, PCLS,
         TAILOK)
    outf = np.zeros(1)
    done_buf = np.zeros(max_active + 1, dtype=np.int64)
    status = fe.simulate_arrays(S, D, G, pkind, kq, kqoff, core_kind, jitter, len(kinds), caps,
                                mem, lru, ls, has_l2, spec.hbm_latency_cycles,
                                spec.l2_latency_cycles, outf, done_buf)
    if status != fe.OK:
        return None
    drained, drain_bytes = float(outf[0]), 0
    if has_l2:      # MemorySystem.drain: what is still dirty crosses HBM at the end
        drain_bytes = fm.l2_drain(lru, ls)
        if drain_bytes:
            end = float(RUN[:, fe.R_END].max()) if nprog else 0.0
            start = max(end, float(mem[0][0, fm.NOW]))
            drained = max(drained, start + drain_bytes / float(mem[0][0, fm.BW]) +
                          spec.hbm_latency_cycles)
    hbm = _FastMemory(mem, ls, has_l2, drained, drain_bytes)
    timeline = FastTimeline(spec, launch, names, eng.compiled, hbm,
                            {v: k for k, v in comp.flag_index.items()}, (RUN, PR, MK))
    timeline._distinct = eng.distinct
    return timeline
