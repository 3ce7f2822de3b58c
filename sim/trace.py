"""Chrome trace export (opens in ui.perfetto.dev and chrome://tracing).

Layout, as msprof's simulator trace (docs/npu-facts.md §A9): one process per physical core
(``AIC 0`` ... ``AIV 47``), one thread per pipe with Ascend's lane names (SCALAR, VECTOR,
CUBE, MTE1, MTE2, MTE3, FIXP); one ``"X"`` slice per instruction (``ts``/``dur`` in µs);
``"s"``/``"f"`` flow arrows from every ``set_flag`` to the ``wait_flag`` that consumed it;
and an ``HBM`` process with a ``"C"`` counter track of the bandwidth in use.

Example::

    >>> from npujit.sim import simulate, TINY
    >>> from npujit.sim.patterns import vector_pipeline
    >>> t = simulate(vector_pipeline(2, 1024), TINY).chrome_trace()
    >>> sorted({e["ph"] for e in t["traceEvents"]})
    ['C', 'M', 'X', 'f', 's']
"""
from __future__ import annotations

import hashlib
import json

from .engine import pipe_spans
from .isa import HARD_EVENT_PIPE
from .queues import GATE, OPEN, SET, SETD, WAIT

# Lane order of msprof's simulator trace.
LANES = ("SCALAR", "VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "FIXP")


def _label(ins) -> str:
    k = ins.kind
    if k == "copy":
        return ins.path
    if k == "mmad":
        return f"mmad {ins.m}x{ins.n}x{ins.k}"
    if k == "vec":
        return f"vec {ins.op}"
    if k in ("set_flag", "wait_flag"):
        src, dst, eid = ins.flag
        return f"{k} {HARD_EVENT_PIPE[src]}_{HARD_EVENT_PIPE[dst]} #{eid}"
    return k if k != "barrier" else f"barrier {ins.pipe}"


def chrome_trace(timeline, *, flows: bool = True, window: tuple | None = None,
                 cores: list | None = None) -> dict:
    """Build the trace dict.  ``window=(first, last)`` keeps instructions overlapping those
    cycles; ``cores`` keeps only the named physical cores (big launches make big files).

    Example::

        >>> from npujit.sim import simulate, TINY, CoreProgram, vec
        >>> t = simulate(CoreProgram("AIV", [vec("add", 128)]), TINY).chrome_trace()
        >>> [e["name"] for e in t["traceEvents"] if e["ph"] == "X"]
        ['vec elementwise']
    """
    spec = timeline.spec
    scale = 1e6 / spec.clock_hz          # cycles -> µs
    lo, hi = window if window else (float("-inf"), float("inf"))
    keep = set(cores) if cores is not None else None
    events: list[dict] = []
    pid_of = {name: i + 1 for i, name in enumerate(timeline.core_names)}
    named: set = set()
    labels: dict = {}
    flow_id = 0
    for run in timeline.runs:
        if keep is not None and run.core not in keep:
            continue
        pid = pid_of[run.core]
        if pid not in named:
            named.add(pid)
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": run.core}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                           "args": {"sort_index": pid}})
        comp = run.compiled
        instrs = comp.program.instrs
        sets: dict[int, list] = {}
        waits: dict[int, list] = {}
        for p, ps in enumerate(run.pipes):
            tid = LANES.index(ps.name) + 1
            if (pid, tid) not in named:
                named.add((pid, tid))
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": ps.name}})
                events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"sort_index": tid}})
            positions = comp.positions[p]
            ready = run.start
            for k, ((code, a, *_), (s, e)) in enumerate(zip(ps.q, pipe_spans(ps))):
                if e < lo or s > hi:
                    ready = e
                    continue
                if code == GATE or code == OPEN:   # issue gates: a stall shows on the next
                    continue
                idx = int(positions[k])
                ins = instrs[idx]
                label = labels.get(ins)
                if label is None:
                    label = labels[ins] = _label(ins)
                args = {"program": run.program, "instr": idx}
                if ins.tag:
                    args["tag"] = ins.tag
                if ins.kind == "copy":
                    args["bytes"] = ins.nbytes
                if s > ready:
                    args["stall_cycles"] = s - ready
                ts = round(s * scale, 6)
                events.append({"name": label, "cat": ins.kind, "ph": "X", "pid": pid,
                               "tid": tid, "ts": ts, "dur": round(e * scale, 6) - ts,
                               "args": args})
                if code == SET or code == SETD:
                    sets.setdefault(a, []).append((tid, ts))
                elif code == WAIT:
                    waits.setdefault(a, []).append((tid, ts))
                ready = e
        if flows:
            for f, ss in sets.items():
                name = _label_flag(timeline.flag_keys[f])
                for (stid, sts), (wtid, wts) in zip(ss, waits.get(f, ())):
                    flow_id += 1
                    events.append({"name": name, "cat": "flag", "ph": "s", "id": flow_id,
                                   "pid": pid, "tid": stid, "ts": sts})
                    events.append({"name": name, "cat": "flag", "ph": "f", "bp": "e",
                                   "id": flow_id, "pid": pid, "tid": wtid, "ts": wts})
    samples = timeline.hbm.samples
    if samples:
        events.append({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "HBM"}})
        last = None
        for t, rate in samples:
            if rate == last or t < lo or t > hi:
                continue
            last = rate
            events.append({"name": "HBM bandwidth", "ph": "C", "pid": 0,
                           "ts": round(t * scale, 6),
                           "args": {"GB/s": round(rate * spec.clock_hz / 1e9, 3)}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"spec": spec.name, "launch": timeline.launch.name,
                          "cycles": timeline.cycles, "clock_hz": spec.clock_hz}}


def _label_flag(flag: tuple) -> str:
    src, dst, eid = flag
    return f"{HARD_EVENT_PIPE[src]}_{HARD_EVENT_PIPE[dst]} #{eid}"


def write_chrome_trace(timeline, path, **options) -> None:
    """Write :func:`chrome_trace` as JSON to ``path``.

    Example::

        >>> import os, tempfile
        >>> from npujit.sim import simulate, TINY, CoreProgram, vec
        >>> path = os.path.join(tempfile.mkdtemp(), "t.json")
        >>> write_chrome_trace(simulate(CoreProgram("AIV", [vec("add", 128)]), TINY).timeline, path)
        >>> os.path.getsize(path) > 100
        True
    """
    with open(path, "w") as fh:
        json.dump(chrome_trace(timeline, **options), fh, separators=(",", ":"))


def trace_hash(timeline, **options) -> str:
    """SHA-256 of the canonical trace JSON: equal hashes mean identical timelines.

    Example::

        >>> from npujit.sim import simulate, TINY, CoreProgram, vec
        >>> r = simulate(CoreProgram("AIV", [vec("add", 128)]), TINY)
        >>> len(trace_hash(r.timeline))
        64
    """
    text = json.dumps(chrome_trace(timeline, **options), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
