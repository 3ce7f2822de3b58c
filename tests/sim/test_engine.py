"""Engine semantics: in-order pipes, flags, barriers, deadlock detection, waves, determinism."""
import pytest

from npujit.sim import (ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, DeadlockError,
                        Launch, ProgramError, barrier, copy, mmad, scalar, set_flag, simulate,
                        vec, wait_flag)
from npujit.sim.patterns import cube_pipeline, vector_pipeline
from npujit.sim.trace import trace_hash

SYNC0 = TINY.replace(sync_cycles=0)


def spans(report, pipe, program=0):
    """(start, end) of each instruction on one pipe of one program run."""
    from npujit.sim.engine import pipe_spans
    run = [r for r in report.timeline.runs if r.program == program][0]
    return [pipe_spans(ps) for ps in run.pipes if ps.name == pipe][0]


def test_pipes_run_in_parallel_without_flags():
    prog = CoreProgram("AIV", [vec("add", 2560), scalar(30), vec("add", 2560)])
    r = simulate(prog, SYNC0)
    assert spans(r, "VECTOR") == [(0, 30), (30, 60)]   # in order on VECTOR
    assert spans(r, "SCALAR") == [(0, 30)]             # SCALAR overlaps
    assert r.cycles == 60


def test_flag_orders_pipes():
    prog = CoreProgram("AIV", [scalar(30), set_flag("SCALAR", "VECTOR"),
                               wait_flag("SCALAR", "VECTOR"), vec("add", 2560)])
    r = simulate(prog, SYNC0)
    assert spans(r, "VECTOR") == [(30, 30), (30, 60)]


def test_set_fires_after_earlier_instructions_of_its_pipe():
    prog = CoreProgram("AIV", [scalar(10), scalar(15), set_flag("SCALAR", "MTE2", 3),
                               wait_flag("SCALAR", "MTE2", 3), scalar(1, pipe="MTE2")])
    assert simulate(prog, SYNC0).cycles == 26


def test_flags_count_sets_kth_wait_takes_kth_set():
    prog = CoreProgram("AIV", [scalar(5), set_flag("SCALAR", "VECTOR"), scalar(5),
                               set_flag("SCALAR", "VECTOR"), wait_flag("SCALAR", "VECTOR"),
                               wait_flag("SCALAR", "VECTOR"), vec("add", 128)])
    r = simulate(prog, SYNC0)
    assert [s for s, _ in spans(r, "VECTOR")] == [5, 10, 10]


def test_flags_with_different_ids_are_independent():
    prog = CoreProgram("AIV", [scalar(50), set_flag("SCALAR", "VECTOR", 1),
                               set_flag("SCALAR", "VECTOR", 0), wait_flag("SCALAR", "VECTOR", 0),
                               vec("add", 128)])
    assert simulate(prog, SYNC0).cycles == 50 + 11


def test_full_barrier_holds_every_pipe():
    prog = CoreProgram("AIV", [scalar(40), vec("add", 128), barrier("ALL"), vec("add", 128),
                               scalar(1)])
    r = simulate(prog, SYNC0)
    assert spans(r, "VECTOR")[2] == (40, 51)
    assert spans(r, "SCALAR")[2] == (40, 41)
    assert r.cycles == 51


def test_pipe_barrier_costs_sync_on_its_pipe_only():
    prog = CoreProgram("AIV", [vec("add", 128), barrier("VECTOR"), vec("add", 128), scalar(3)])
    r = simulate(prog, TINY)
    assert spans(r, "VECTOR") == [(0, 11), (11, 12), (12, 23)]
    assert spans(r, "SCALAR") == [(0, 3)]


def test_unmatched_wait_raises_deadlock_naming_pipe_and_flag():
    prog = CoreProgram("AIV", [copy("GM_to_UB", 256), wait_flag("MTE2", "VECTOR", 2),
                               vec("add", 128)], name="broken")
    with pytest.raises(DeadlockError) as e:
        simulate(prog, TINY)
    err = e.value
    assert (err.core, err.program, err.pipe) == ("AIV 0", 0, "VECTOR")
    assert err.flag == ("MTE2", "VECTOR", 2)
    msg = str(err)
    assert "pipe VECTOR" in msg and "MTE2->VECTOR id 2 (HardEvent::MTE2_V)" in msg
    assert "instr 1" in msg and "'broken'" in msg


def test_circular_wait_reports_every_blocked_pipe():
    prog = CoreProgram("AIV", [wait_flag("VECTOR", "MTE2"), set_flag("MTE2", "VECTOR"),
                               wait_flag("MTE2", "VECTOR"), set_flag("VECTOR", "MTE2")])
    with pytest.raises(DeadlockError) as e:
        simulate(prog, TINY)
    assert sorted(b["pipe"] for b in e.value.blocked) == ["MTE2", "VECTOR"]


def test_barrier_deadlock_is_reported():
    prog = CoreProgram("AIV", [wait_flag("MTE2", "VECTOR"), barrier("ALL"), scalar(1, pipe="MTE2"),
                               set_flag("MTE2", "VECTOR")])
    with pytest.raises(DeadlockError, match="barrier"):
        simulate(prog, TINY)


def test_waves_when_programs_exceed_cores():
    prog = CoreProgram("AIV", [vec("add", 2560)])       # 30 cycles on TINY (2 AIV cores)
    r = simulate([prog] * 5, TINY)
    assert r.waves == 3 and r.cycles == 90
    assert [p.start for p in r.programs] == [0, 0, 30, 30, 60]
    assert [p.core for p in r.programs] == ["AIV 0", "AIV 1", "AIV 0", "AIV 1", "AIV 0"]


def test_a_free_core_takes_the_next_program():
    long, short = CoreProgram("AIV", [scalar(100)]), CoreProgram("AIV", [scalar(10)])
    r = simulate([long, short, short, short], TINY)
    assert r.waves == 3 and r.cycles == 100
    assert [p.core for p in r.programs] == ["AIV 0", "AIV 1", "AIV 1", "AIV 1"]


def test_aic_and_aiv_programs_use_their_own_cores():
    r = simulate([CoreProgram("AIC", [mmad(64, 64, 64)]),
                  CoreProgram("AIV", [vec("add", 128)])] * 2, TINY)
    assert r.waves == 1
    assert sorted(p.core for p in r.programs) == ["AIC 0", "AIC 1", "AIV 0", "AIV 1"]


def test_coupled_part_runs_both_kinds_on_one_core_kind():
    r = simulate([CoreProgram("AIV", [vec("add", 128)]), CoreProgram("AIC", [mmad(16, 16, 16)])],
                 ASCEND_910_LIKE)
    assert {p.core.split()[0] for p in r.programs} == {"AIC"}
    assert "aic_vec_ratio" in r.ratios and "aic_cube_ratio" in r.ratios


def test_launch_needs_cores_of_its_kind():
    with pytest.raises(ProgramError, match="no AIV cores"):
        simulate(CoreProgram("AIV", [scalar(1)]), TINY.replace(aiv_cores=0))


def test_empty_programs_finish_at_once():
    r = simulate([CoreProgram("AIV", [])] * 3, TINY)
    assert r.cycles == 0 and r.waves == 2


def test_data_dependent_streams_differ_per_program():
    progs = [vector_pipeline(n, 2048) for n in (1, 8, 2, 4)]
    r = simulate(progs, TINY.replace(aiv_cores=4))
    lengths = [p.cycles for p in r.programs]
    assert lengths[1] == max(lengths) and lengths[0] == min(lengths)
    assert r.cycles == lengths[1]


def test_same_launch_gives_identical_trace():
    def launch():
        return Launch([vector_pipeline(6 + i, 4096 + 256 * i) for i in range(5)]
                      + [cube_pipeline(4, 64, 64, 64) for _ in range(3)])
    hashes = {trace_hash(simulate(launch(), TINY).timeline) for _ in range(3)}
    assert len(hashes) == 1
    other = simulate(Launch([vector_pipeline(6, 4096)]), TINY).timeline
    assert trace_hash(other) not in hashes


def test_program_objects_shared_across_the_grid_compile_once():
    prog = vector_pipeline(4, 4096)
    r = simulate([prog] * 4, TINY)
    comps = r.timeline.compiled
    assert all(c is comps[0] for c in comps)
    assert r.waves == 2


def test_engine_is_fast_enough_for_a_quick_sanity_check():
    """Not the benchmark (benchmarks/bench_sim.py): just catches an accidental O(n^2)."""
    import time
    progs = [vector_pipeline(1000, 16384 + 512 * c) for c in range(8)]
    t = time.process_time()
    r = simulate(progs, ASCEND_910B_LIKE, trace=False)
    assert r.instr_count == sum(len(p) for p in progs) > 80000
    assert time.process_time() - t < 5.0
