"""Engine semantics: in-order pipes, flags, barriers, deadlock detection, waves, determinism."""
import pytest

from npujit.sim import (ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, DeadlockError,
                        FlagStillSetError,
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


# -- 1-bit flags (the default) --------------------------------------------------------------

def test_a_set_on_a_still_set_flag_is_an_error_naming_flag_pipes_core_and_cycle():
    # VECTOR is busy 30 cycles, so both MTE2 sets (1 sync cycle each) fire before the
    # first wait takes the flag: set 2 at cycle 2, the wait takes set 1 at cycle 30.
    prog = CoreProgram("AIV", [vec("add", 2560), set_flag("MTE2", "VECTOR"),
                               set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR"),
                               wait_flag("MTE2", "VECTOR")], name="twice")
    with pytest.raises(FlagStillSetError) as e:
        simulate(prog, TINY)
    err = e.value
    assert (err.core, err.program, err.flag) == ("AIV 0", 0, ("MTE2", "VECTOR", 0))
    assert (err.set_pipe, err.wait_pipe, err.cycle, err.taken) == ("MTE2", "VECTOR", 2, 30)
    msg = str(err)
    for part in ("MTE2->VECTOR id 0", "pipe MTE2", "pipe VECTOR", "cycle 2", "cycle 30",
                 "AIV 0", "program 0", "'twice'", "one_bit_flags=False"):
        assert part in msg
    # Counting flags (the documented switch): the k-th wait takes the k-th set.
    assert simulate(prog, TINY, one_bit_flags=False).cycles == 30 + 1 + 1


def test_a_set_found_late_in_simulation_order_is_still_caught():
    """The second set runs after the wait took the first one in simulation order, but
    earlier in simulated time: SCALAR sets at 1 and (after MTE2's copy landed) 213, the
    VECTOR wait takes the first set only at 410."""
    prog = CoreProgram("AIV", [
        set_flag("SCALAR", "VECTOR"),
        vec("add", 51200), wait_flag("SCALAR", "VECTOR"),          # 10 + 400 = 410
        copy("GM_to_UB", 6400), set_flag("MTE2", "SCALAR"),      # 110 + 100 landing, +1
        wait_flag("MTE2", "SCALAR"), set_flag("SCALAR", "VECTOR"),  # 211 + 1, set at 213
        wait_flag("SCALAR", "VECTOR")])
    with pytest.raises(FlagStillSetError) as e:
        simulate(prog, TINY)
    assert (e.value.cycle, e.value.taken) == (213, 410)


def test_one_bit_flags_accept_a_set_after_the_wait_took_the_flag():
    prog = CoreProgram("AIV", [set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR"),
                               set_flag("VECTOR", "MTE2"), wait_flag("VECTOR", "MTE2"),
                               set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR")])
    assert simulate(prog, SYNC0).cycles == 0
    assert simulate(prog, TINY).cycles == 6      # six sync cycles in a chain


def test_cross_core_flags_still_count():
    """CrossCoreSetFlag keeps a counter on hardware: two sets before the partner's first
    wait are both taken (the AIV is busy 30 cycles; each set costs 1 sync cycle)."""
    from npujit.sim.isa import cross_set_flag, cross_wait_flag
    aic = CoreProgram("AIC", [cross_set_flag("CUBE", 0), cross_set_flag("CUBE", 0)])
    aiv = CoreProgram("AIV", [vec("add", 2560), cross_wait_flag("VECTOR", 0),
                              cross_wait_flag("VECTOR", 0)])
    assert simulate(Launch([aic, aiv], groups=[(0, 1)]), TINY).cycles == 30 + 1 + 1


def test_one_bit_default_follows_the_knob(monkeypatch):
    prog = CoreProgram("AIV", [vec("add", 2560), set_flag("MTE2", "VECTOR"),
                               set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR"),
                               wait_flag("MTE2", "VECTOR")])
    monkeypatch.setenv("NPUJIT_ONE_BIT_FLAGS", "0")
    assert simulate(prog, TINY).cycles == 32
    monkeypatch.setenv("NPUJIT_ONE_BIT_FLAGS", "1")
    with pytest.raises(FlagStillSetError):
        simulate(prog, TINY)


# -- scalar waits hold the issue of everything after them --------------------------------------

def test_scalar_wait_gates_the_pipes_after_it():
    """A trip count read from GM: MTE2 copy (10 + 6400/64 = 110, lands 100 later at 210),
    MTE2 -> SCALAR flag, SCALAR waits.  Vector work issued before the wait runs at once;
    the loop body after it (Vector and the next copy) starts only at 210."""
    prog = CoreProgram("AIV", [vec("add", 2560), copy("GM_to_UB", 6400),
                               set_flag("MTE2", "SCALAR"), wait_flag("MTE2", "SCALAR"),
                               vec("add", 2560), copy("GM_to_UB", 64)])
    r = simulate(prog, SYNC0)
    assert spans(r, "VECTOR") == [(0, 30), (210, 210), (210, 240)]   # (the gate, then add)
    assert spans(r, "MTE2")[-1] == (210, 221)                         # 10 + 64/64
    assert r.cycles == 221 + 100                                      # its landing


def test_pipes_before_a_scalar_wait_do_not_wait_for_it():
    # VECTOR's set, issued before the scalar wait, releases it at 30; SCALAR's own work
    # ends at 50, so the wait and the add after it start at 50.
    ok = CoreProgram("AIV", [vec("add", 2560), set_flag("VECTOR", "SCALAR"), scalar(50),
                             wait_flag("VECTOR", "SCALAR"), vec("add", 2560)])
    r = simulate(ok, SYNC0)
    assert spans(r, "SCALAR") == [(0, 50), (50, 50), (50, 50)]       # work, wait, opening
    assert spans(r, "VECTOR") == [(0, 30), (30, 30), (50, 50), (50, 80)]


def test_a_scalar_wait_whose_set_is_issued_after_it_deadlocks():
    prog = CoreProgram("AIV", [wait_flag("VECTOR", "SCALAR"), vec("add", 2560),
                               set_flag("VECTOR", "SCALAR")])
    with pytest.raises(DeadlockError, match="scalar unit is held") as e:
        simulate(prog, SYNC0)
    assert sorted(b["pipe"] for b in e.value.blocked) == ["SCALAR", "VECTOR"]


# -- per-core start jitter ------------------------------------------------------------------

def test_start_jitter_is_bounded_deterministic_and_off_by_default():
    spec = TINY.replace(aiv_cores=8)                  # 8 x 64 B/cycle ports on 256 B/cycle HBM
    launch = Launch([vector_pipeline(12, 4096, name=f"p{i}") for i in range(8)])
    plain = simulate(launch, spec)
    assert {p.start for p in plain.programs} == {0}
    assert simulate(launch, spec, start_jitter=0, seed=5).cycles == plain.cycles
    jitter = 400
    runs = [simulate(launch, spec, start_jitter=jitter, seed=7) for _ in range(2)]
    assert trace_hash(runs[0].timeline) == trace_hash(runs[1].timeline)
    starts = [p.start for p in runs[0].programs]
    assert all(0 <= s <= jitter for s in starts) and len(set(starts)) > 1
    # HBM-bound: no slower than the delayed start costs (here faster: in lockstep every
    # core waits for its landing at once and HBM idles meanwhile), never below the bound.
    assert plain.bound.kind == "hbm"
    assert plain.bound.cycles <= runs[0].cycles <= plain.cycles + jitter
    other = simulate(launch, spec, start_jitter=jitter, seed=8)
    assert [p.start for p in other.programs] != starts
    with pytest.raises(ValueError, match="start_jitter"):
        simulate(launch, spec, start_jitter=-1)
