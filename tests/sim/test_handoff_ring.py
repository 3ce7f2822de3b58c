"""The AI core's hand-off ring (``spec.handoff_slots``, sim/engine.py): how far a mixed
kernel's AIC runs ahead of its AIVs, against closed forms of a Cube-then-Vector group
(docs/npu-facts.md §A2), and the compiled engine against the Python one on rings that fill.

A group here: the AIC runs ``mmad`` (``A`` cycles) and a cross-core set (1 sync cycle);
its AIV waits on the set (1 sync cycle) and runs ``vec`` (``V`` cycles).
"""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npujit.sim import ASCEND_910B_LIKE, TINY, Launch, simulate
from npujit.sim.cost import instr_cycles
from npujit.sim.isa import (CoreProgram, copy, cross_set_flag, cross_wait_flag, mmad, set_flag,
                            vec, wait_flag)

from sim_strategies import programs
from test_fast_engine import _both, _same


def _launch(n: int, vec_bytes: int, handoff: bool = False) -> Launch:
    progs = []
    for g in range(n):
        slot = ("workspace", g, "acc.0")
        aic = [mmad(64, 64, 64)]
        aiv = [cross_wait_flag("VECTOR", 0)]
        if handoff:         # the hand-off itself: FixPipe into the slot, MTE2 out of it
            aic.append(copy("L0C_to_GM", 4096, gm_region=slot))
            aiv = [cross_wait_flag("MTE2", 0), copy("GM_to_UB", 4096, gm_region=slot),
                   set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR")]
        aic.append(cross_set_flag("FIXP" if handoff else "CUBE", 0))
        aiv.append(vec("exp", vec_bytes))
        progs += [CoreProgram("AIC", aic), CoreProgram("AIV", aiv)]
    return Launch(progs, groups=[(2 * g, 2 * g + 1) for g in range(n)])


def _costs(spec, vec_bytes: int) -> tuple[int, int]:
    return instr_cycles(mmad(64, 64, 64), spec), instr_cycles(vec("exp", vec_bytes), spec)


@pytest.mark.parametrize("n", [1, 2, 7])
def test_one_slot_runs_each_group_after_the_last(n):
    spec = TINY.replace(aic_cores=1, aiv_cores=1, handoff_slots=1)
    A, V = _costs(spec, 1024)
    assert simulate(_launch(n, 1024), spec).cycles == n * (A + 1 + 1 + V)


@pytest.mark.parametrize("n", [1, 2, 7])
def test_two_slots_hide_a_shorter_vector_epilogue(n):
    spec = TINY.replace(aic_cores=1, aiv_cores=1, handoff_slots=2)
    A, V = _costs(spec, 1024)
    assert V < A
    assert simulate(_launch(n, 1024), spec).cycles == n * (A + 1) + 1 + V


def test_a_longer_epilogue_bounds_the_time_by_the_aiv():
    spec = TINY.replace(aic_cores=1, aiv_cores=1, handoff_slots=3)
    n = 6
    A, V = _costs(spec, 40960)
    assert A < V
    assert simulate(_launch(n, 40960), spec).cycles == A + 1 + n * (1 + V)


def test_the_ai_cores_two_aivs_take_the_groups_in_turn():
    """Each AIV has every second group, so with three slots the AIC is the limit again
    while the epilogue is shorter than two of its groups; the AIVs share the groups."""
    spec = TINY.replace(aic_cores=1, aiv_cores=2, handoff_slots=3)
    n = 6
    A, V = _costs(spec, 3072)
    assert A < V <= 2 * A + 1
    report = simulate(_launch(n, 3072), spec)
    assert report.cycles == n * (A + 1) + 1 + V
    runs = sorted(report.programs, key=lambda r: r.program)
    assert [r.core for r in runs if r.kind == "AIV"] == ["AIV 0", "AIV 1"] * (n // 2)


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_rings_that_fill_time_the_same_on_both_engines(monkeypatch, slots):
    spec = ASCEND_910B_LIKE.replace(handoff_slots=slots)
    launch = _launch(3 * spec.aic_cores + 5, 65536, handoff=True)
    py, fast = _both(monkeypatch, lambda: simulate(launch, spec))
    _same(py, fast)
    # every hand-off is read back from the L2: its slot is the ring position's
    assert py.l2_hit_bytes == len(launch.groups) * 4096


def test_slots_must_be_positive():
    with pytest.raises(Exception, match="handoff_slots"):
        TINY.replace(handoff_slots=0)


@st.composite
def _groups(draw):
    spec = TINY.replace(aic_cores=draw(st.integers(1, 2)), aiv_cores=2,
                        handoff_slots=draw(st.integers(1, 3)),
                        overlap_fixpipe=draw(st.booleans()))
    spec = spec.replace(aiv_cores=spec.aic_cores * draw(st.integers(1, 2)))
    progs = []
    for g in range(draw(st.integers(1, 7))):
        aic = draw(programs(spec).filter(lambda p: p.core == "AIC"))
        aiv = draw(programs(spec).filter(lambda p: p.core == "AIV"))
        aic = CoreProgram("AIC", list(aic.instrs) + [cross_set_flag("CUBE", 0)])
        aiv = CoreProgram("AIV", [cross_wait_flag("VECTOR", 0)] + list(aiv.instrs))
        progs += [aic, aiv]
    return spec, Launch(progs, groups=[(2 * g, 2 * g + 1) for g in range(len(progs) // 2)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_groups())
def test_random_groups_time_alike_on_both_engines(case):
    """Random well-formed AIC and AIV programs (sim_strategies) paired by a cross-core
    flag, more groups than AI cores, rings of 1-3 slots, one or two AIVs per AI core:
    both engines agree and nothing deadlocks."""
    spec, launch = case
    with pytest.MonkeyPatch.context() as mp:
        py, fast = _both(mp, lambda: simulate(launch, spec))
    _same(py, fast)
