"""Chrome trace JSON: well-formed for ui.perfetto.dev."""
import json
from collections import defaultdict

import pytest

from npujit.sim import TINY, Launch, simulate
from npujit.sim.patterns import cube_pipeline, vector_pipeline
from npujit.sim.trace import LANES


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    launch = Launch([vector_pipeline(6, 4096 + 512 * i) for i in range(3)]
                    + [cube_pipeline(3, 64, 64, 64)] * 3)
    r = simulate(launch, TINY)
    path = tmp_path_factory.mktemp("trace") / "t.json"
    r.to_chrome_trace(path)
    return r, json.loads(path.read_text())


def test_processes_and_threads_are_named(trace):
    r, t = trace
    ev = t["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
               if e["ph"] == "M" and e["name"] == "thread_name"}
    assert procs[0] == "HBM"
    assert {n for p, n in procs.items() if p} == {p.core for p in r.programs}
    assert set(threads.values()) <= set(LANES)
    for e in ev:
        if e["ph"] == "X":
            assert e["pid"] in procs and (e["pid"], e["tid"]) in threads
            assert threads[(e["pid"], e["tid"])] == LANES[e["tid"] - 1]


def test_events_on_a_lane_do_not_overlap(trace):
    _, t = trace
    lanes = defaultdict(list)
    for e in t["traceEvents"]:
        if e["ph"] == "X":
            assert e["dur"] >= 0
            lanes[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    assert lanes
    for spans in lanes.values():
        assert spans == sorted(spans)
        for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
            assert e0 <= s1 + 1e-9


def test_flows_pair_sets_with_waits(trace):
    r, t = trace
    ev = t["traceEvents"]
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    xs = defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            xs[(e["pid"], e["tid"])].append(e)
    for fid, s in starts.items():
        f = ends[fid]
        assert f["bp"] == "e" and s["pid"] == f["pid"] and s["ts"] <= f["ts"]
        # each end of the arrow sits on a set_flag / wait_flag slice
        assert any(x["ts"] == s["ts"] and x["name"].startswith("set_flag")
                   for x in xs[(s["pid"], s["tid"])])
        assert any(x["ts"] == f["ts"] and x["name"].startswith("wait_flag")
                   for x in xs[(f["pid"], f["tid"])])
    n_sets = sum(1 for p in r.programs for i in r.timeline.compiled[p.program].program.instrs
                 if i.kind == "set_flag")
    assert len(starts) <= n_sets


def test_hbm_counter_track(trace):
    r, t = trace
    counters = [e for e in t["traceEvents"] if e["ph"] == "C"]
    assert counters and all(e["pid"] == 0 and "GB/s" in e["args"] for e in counters)
    assert max(e["args"]["GB/s"] for e in counters) <= TINY.hbm_bytes_per_s / 1e9 + 1e-6
    assert [e["ts"] for e in counters] == sorted(e["ts"] for e in counters)


def test_times_are_microseconds(trace):
    r, t = trace
    last = max(e["ts"] + e["dur"] for e in t["traceEvents"] if e["ph"] == "X")
    end = r.cycles / TINY.clock_hz * 1e6
    # the launch ends when the last copy's data has landed, after its last slice
    landing = TINY.hbm_latency_cycles / TINY.clock_hz * 1e6
    assert end - landing - 1e-6 <= last <= end + 1e-6
    assert t["displayTimeUnit"] == "ns" and t["otherData"]["cycles"] == r.cycles


def test_window_and_core_filters(trace):
    r, _ = trace
    t = r.chrome_trace(window=(0, 100), cores=["AIV 0"])
    xs = [e for e in t["traceEvents"] if e["ph"] == "X"]
    assert xs and all(e["ts"] <= 100 / TINY.clock_hz * 1e6 for e in xs)
    assert {e["pid"] for e in xs} == {r.timeline.core_names.index("AIV 0") + 1}


def test_trace_without_hbm_samples():
    r = simulate(vector_pipeline(2, 1024), TINY, trace=False)
    assert not [e for e in r.chrome_trace()["traceEvents"] if e["ph"] == "C"]
