"""``spec.overlap_fixpipe`` (sim/engine.py): an AIC takes its next program while the last
one's FixPipe drains L0C, and the next program's Cube and FixPipe wait for that drain (the
emitted Ascend C's FIX_M wait), against closed forms; both engines agree.

A program here: MTE1 copies an L0A tile (``M1`` cycles) and sets MTE1 -> Cube; the Cube
waits, runs ``mmad`` (``A``) and sets Cube -> FixPipe; the FixPipe waits and copies L0C
out (``F``, landing included).  Each set and wait costs one sync cycle.
"""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npujit.sim import ASCEND_910B_LIKE, TINY, Launch, simulate
from npujit.sim.cost import copy_cycles, instr_cycles
from npujit.sim.isa import CoreProgram, copy, mmad, set_flag, wait_flag

from sim_strategies import programs
from test_fast_engine import _both, _same

OUT = 65536     # bytes the FixPipe copies out: long enough to hide the next MTE1 copy


def _program(out_path: str = "L0C_to_GM") -> CoreProgram:
    return CoreProgram("AIC", [
        copy("L1_to_L0A", 4096), set_flag("MTE1", "CUBE"),
        wait_flag("MTE1", "CUBE"), mmad(64, 64, 64), set_flag("CUBE", "FIXP"),
        wait_flag("CUBE", "FIXP"), copy(out_path, OUT)])


def _costs(spec, out_path: str = "L0C_to_GM") -> tuple[int, int, int]:
    return (instr_cycles(copy("L1_to_L0A", 4096), spec), instr_cycles(mmad(64, 64, 64), spec),
            copy_cycles(out_path, OUT, spec))


@pytest.mark.parametrize("n", [1, 2, 5])
def test_without_overlap_each_program_waits_for_the_last_to_drain(n):
    spec = TINY.replace(aic_cores=1, overlap_fixpipe=False)
    M1, A, F = _costs(spec)
    assert simulate(Launch([_program()] * n), spec).cycles == n * (M1 + A + F + 4)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_the_next_program_loads_while_the_fixpipe_drains(n):
    spec = TINY.replace(aic_cores=1, overlap_fixpipe=True)
    M1, A, F = _costs(spec)
    assert M1 <= F
    # the first program as before; each next one's Cube starts when the FixPipe drained,
    # its MTE1 copy already done
    report = simulate(Launch([_program()] * n), spec)
    assert report.cycles == (M1 + A + F + 4) + (n - 1) * (A + F + 3)
    starts = sorted(r.start for r in report.programs)
    assert all(b - a == A + F + 3 for a, b in zip(starts[1:], starts[2:]))


def test_a_fixpipe_that_writes_l1_is_not_overlapped():
    """A FixPipe copy into L1 (a Cube result handed to the next Cube step) may still be
    writing L1 when the next program's loads would: no overlap."""
    spec = TINY.replace(aic_cores=1, overlap_fixpipe=True)
    M1, A, F = _costs(spec, "L0C_to_L1")
    n = 3
    assert simulate(Launch([_program("L0C_to_L1")] * n), spec).cycles == n * (M1 + A + F + 4)


def test_overlapped_programs_time_the_same_on_both_engines(monkeypatch):
    spec = ASCEND_910B_LIKE
    assert spec.overlap_fixpipe
    progs = [_program()] * (2 * spec.aic_cores + 3) + [_program("L0C_to_L1")] * 5
    _same(*_both(monkeypatch, lambda: simulate(Launch(progs), spec)))


def test_the_knob_is_a_bool():
    with pytest.raises(Exception, match="overlap_fixpipe"):
        TINY.replace(overlap_fixpipe=1)


OVERLAP_SPECS = [TINY.replace(aic_cores=1, aiv_cores=1, overlap_fixpipe=True),
                 TINY.replace(aic_cores=2, aiv_cores=1, overlap_fixpipe=True, sync_cycles=0)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(OVERLAP_SPECS).flatmap(
    lambda spec: st.tuples(st.just(spec), st.lists(programs(spec), min_size=2, max_size=7))))
def test_random_programs_sharing_a_core_time_alike_on_both_engines(case):
    """Random well-formed programs (sim_strategies), several per core, so each next
    program overlaps the last one's FixPipe: both engines agree, nothing deadlocks, and a
    run never ends before it started."""
    spec, progs = case
    with pytest.MonkeyPatch.context() as mp:
        py, fast = _both(mp, lambda: simulate(Launch(progs), spec))
    _same(py, fast)
    assert all(r.end >= r.start for r in py.programs)
