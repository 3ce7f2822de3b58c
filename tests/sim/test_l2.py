"""The L2 model: LRU over region keys, hits at L2 bandwidth and latency, write-back (dirty
regions cross HBM once, when evicted or drained at the launch's end; hand-off workspace
slots are the AI core's ring), and the bound staying a bound."""
from hypothesis import given, settings, strategies as st

import pytest

from npujit.sim import (TINY, CoreProgram, Launch, copy, roofline_bound, set_flag, simulate,
                        wait_flag)
from npujit.sim.fastpath import FastTimeline
from npujit.sim.isa import cross_set_flag, cross_wait_flag
from npujit.sim.l2 import L2Cache

NO_L2 = TINY.replace(l2_bytes=0)


def test_lru_evicts_least_recently_used_by_bytes():
    c = L2Cache(100)
    assert not c.read("a", 40) and not c.read("b", 40)
    assert c.read("a", 40)                     # a is now most recent
    assert not c.read("c", 40)                 # evicts b (LRU), not a
    assert c.read("a", 40) and not c.read("b", 40)
    assert c.used <= 100 and c.evicted_bytes == 80
    c.install("huge", 101)                     # larger than the cache: not kept
    assert "huge" not in c.keys


def _reread(n_reads, nbytes=4096, region=("x", 0)):
    tile = copy("GM_to_UB", nbytes, gm_region=region)
    return CoreProgram("AIV", [tile] * n_reads)


def test_a_reread_tile_is_an_l2_hit_served_faster_than_hbm():
    r = simulate(_reread(4), TINY)
    assert r.l2_read_bytes == 4 * 4096 and r.l2_hit_bytes == 3 * 4096
    assert r.hbm_read_bytes == 4096                      # only the first touch
    assert r.hbm_bytes_served == r.hbm_read_bytes       # HBM served exactly the misses
    assert r.l2_bytes_served == r.l2_hit_bytes          # no writes here
    cold = simulate(_reread(4), NO_L2)
    assert cold.hbm_read_bytes == 4 * 4096 and cold.l2_read_bytes == 0
    assert r.cycles < cold.cycles                       # hits land after l2_latency
    # the last copy is a hit: it lands l2_latency (not hbm_latency) after its transfer
    assert cold.cycles - r.cycles == TINY.hbm_latency_cycles - TINY.l2_latency_cycles


def test_copies_without_a_region_time_exactly_as_without_l2():
    prog = CoreProgram("AIV", [copy("GM_to_UB", 6400), set_flag("MTE2", "MTE3"),
                               wait_flag("MTE2", "MTE3"), copy("UB_to_GM", 6400)])
    assert simulate(prog, TINY).cycles == simulate(prog, NO_L2).cycles


def test_capacity_overflow_streams_miss():
    # 32 distinct 4 KB tiles read twice round-robin: 128 KB > TINY's 64 KB L2 -> LRU thrashes
    tiles = [copy("GM_to_UB", 4096, gm_region=("x", i)) for i in range(32)]
    r = simulate(CoreProgram("AIV", tiles + tiles), TINY)
    assert r.l2_hit_bytes == 0 and r.hbm_read_bytes == 2 * 32 * 4096
    small = simulate(CoreProgram("AIV", tiles[:8] + tiles[:8]), TINY)   # 32 KB fits
    assert small.l2_hit_bytes == 8 * 4096


def test_written_region_is_read_back_from_l2_and_still_costs_hbm_bytes():
    w = copy("UB_to_GM", 4096, gm_region=("ws", 0))
    rd = copy("GM_to_UB", 4096, gm_region=("ws", 0))
    prog = CoreProgram("AIV", [w, set_flag("MTE3", "MTE2"), wait_flag("MTE3", "MTE2"), rd])
    r = simulate(prog, TINY)
    assert r.l2_hit_bytes == 4096 and r.hbm_read_bytes == 0
    assert r.hbm_write_bytes == 4096 and r.hbm_bytes_served == 4096   # the drain
    assert r.cycles >= r.bound.cycles


def test_a_dirty_hand_off_slot_crosses_hbm_once_when_evicted_or_drained():
    c = L2Cache(100)
    c.write("w", 40, handoff=True)
    c.write("w", 40, handoff=True)             # rewritten while dirty: nothing to HBM
    assert c.to_hbm == 0 and c.dirty_bytes() == 40
    c.read("r", 70)                            # evicts the dirty "w": written back once
    assert c.to_hbm == 40 and c.writeback_bytes == 40 and c.dirty_bytes() == 0
    c.write("v", 30, handoff=True)
    assert c.drain() == 30 and c.writeback_bytes == 70 and c.dirty_bytes() == 0
    c.write("big", 101, handoff=True)          # too large to keep: straight through
    assert c.to_hbm == 101


def test_an_ordinary_write_goes_on_to_hbm_at_once_and_stays_readable():
    c = L2Cache(100)
    c.write("y", 40)
    assert c.to_hbm == 40 and c.dirty_bytes() == 0
    c.write("y", 40)                           # each write of an output crosses HBM
    assert c.to_hbm == 40 and c.writeback_bytes == 80
    assert c.read("y", 40) and c.drain() == 0


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_streaming_output_crosses_hbm_once_inside_the_launch(monkeypatch, engine):
    # 8 distinct written tiles: each is HBM bytes once, sent on as it is written (no
    # drain after the last program), and the launch ends when the last of them lands
    monkeypatch.setenv("NPUJIT_SIM_ENGINE", engine)
    outs = [copy("UB_to_GM", 4096, gm_region=("y", i)) for i in range(8)]
    r = simulate(Launch([CoreProgram("AIV", [o]) for o in outs]), TINY)
    assert r.hbm_write_bytes == 8 * 4096 == r.hbm_bytes_served
    assert r.timeline.hbm.drain_bytes == 0
    assert r.cycles >= 8 * 4096 / TINY.hbm_bytes_per_cycle
    assert r.cycles >= r.bound.cycles


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_hand_off_slot_is_the_ai_cores_ring(monkeypatch, engine):
    # 6 programs on TINY's 2 AI cores, each handing 8 KB AIC -> AIV through its slot: the
    # programs a core runs rewrite one slot, so HBM sees 2 slots (the drain), not 6
    monkeypatch.setenv("NPUJIT_SIM_ENGINE", engine)
    progs, groups = [], []
    for pid in range(6):
        slot = ("workspace", pid, "acc.0")
        progs += [CoreProgram("AIC", [copy("L0C_to_GM", 8192, gm_region=slot),
                                      cross_set_flag("FIXP", 0)]),
                  CoreProgram("AIV", [cross_wait_flag("MTE2", 0),
                                      copy("GM_to_UB", 8192, gm_region=slot)])]
        groups.append((2 * pid, 2 * pid + 1))
    r = simulate(Launch(progs, groups=groups), TINY)
    assert isinstance(r.timeline, FastTimeline) == (engine == "compiled")
    assert r.l2_write_bytes == 6 * 8192 and r.l2_hit_bytes == 6 * 8192
    assert r.hbm_write_bytes == 2 * 8192 == r.hbm_bytes_served and r.hbm_read_bytes == 0
    assert r.cycles >= r.bound.cycles


regions = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5))


@st.composite
def keyed_launches(draw):
    progs = []
    for _ in range(draw(st.integers(1, 5))):
        instrs = []
        for _ in range(draw(st.integers(1, 12))):
            path = draw(st.sampled_from(["GM_to_UB", "UB_to_GM"]))
            region = draw(st.one_of(st.none(), regions))
            instrs.append(copy(path, draw(st.integers(1, 20000)), gm_region=region))
        progs.append(CoreProgram("AIV", instrs))
    return Launch(progs)


@settings(max_examples=60, deadline=None)
@given(keyed_launches(), st.sampled_from([TINY, TINY.replace(l2_bytes=8192)]))
def test_sim_never_beats_the_bound_and_bytes_are_conserved_with_l2(launch, spec):
    r = simulate(launch, spec)
    assert r.cycles >= r.bound.cycles - 1e-6
    assert r.cycles >= roofline_bound(launch, spec).cycles - 1e-6
    assert abs(r.hbm_bytes_served - r.hbm_bytes) <= 1e-6 * max(1, r.hbm_bytes)
    l2 = r.l2_hit_bytes + r.l2_write_bytes
    assert abs(r.l2_bytes_served - l2) <= 1e-6 * max(1, l2)
    cache = getattr(r.timeline.hbm, "cache", None)
    if cache is not None:                   # each dirty region at most once per write
        assert cache.writeback_bytes <= r.l2_write_bytes
    reads = sum(n for p, n in r.bytes_by_path.items() if p.startswith("GM_"))
    assert r.hbm_read_bytes + r.l2_hit_bytes >= reads      # moved bytes are aligned up
    assert r.cycles == simulate(launch, spec).cycles     # deterministic
