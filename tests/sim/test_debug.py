"""Debug switches: race detector, uninitialised reads, landing points, flag checks."""
import pytest

from npujit.sim import (TINY, CoreProgram, DebugOptions, RaceError, barrier, copy, find_races,
                        landing_points, set_flag, simulate, vec, wait_flag)
from npujit.sim.patterns import cube_pipeline, vector_pipeline


def without(prog, drop):
    return CoreProgram(prog.core, [i for i in prog.instrs if not drop(i)], prog.name)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_correct_pipelines_have_no_races(stages):
    assert find_races(vector_pipeline(9, 4096, stages=stages)) == []
    assert find_races(vector_pipeline(9, 4096, stages=stages, inplace=True)) == []
    assert find_races(cube_pipeline(7, 64, 64, 64, stages=stages)) == []


def test_missing_slot_reuse_wait_is_a_war_race():
    good = vector_pipeline(6, 4096, stages=2)
    # MTE2 no longer waits for Vector to free x[s] before loading the next tile into it.
    bad = without(good, lambda i: i.flag is not None and i.flag[:2] == ("VECTOR", "MTE2"))
    races = find_races(bad)
    assert races and {r.kind for r in races} == {"WAR"}
    r = races[0]
    assert r.buffer == "x" and r.first[0] == "VECTOR" and r.second[0] == "MTE2"
    assert "missing slot-reuse wait" in str(r) and "x[0]" in str(r)
    # the timing run itself is fine: only the detector sees it
    assert simulate(bad, TINY).races == []
    report = simulate(bad, TINY, debug=DebugOptions(detect_races=True))
    assert [x.kind for x in report.races] == [x.kind for x in races]
    assert "races" in str(report)


def test_missing_producer_wait_is_a_raw_race():
    good = vector_pipeline(4, 4096, stages=2)
    bad = without(good, lambda i: i.flag is not None and i.flag[:2] == ("MTE2", "VECTOR"))
    kinds = {r.kind for r in find_races(bad)}
    assert "RAW" in kinds


def test_raise_on_race():
    prog = CoreProgram("AIV", [copy("GM_to_UB", 256, writes="x"), vec("add", 128, reads="x")])
    with pytest.raises(RaceError, match="RAW on x\\[0\\]"):
        simulate(prog, TINY, debug=DebugOptions(detect_races=True, raise_on_race=True))


def test_races_hidden_by_timing_are_still_found():
    """Vector happens to read long after the copy ended, but nothing orders the two."""
    prog = CoreProgram("AIV", [copy("GM_to_UB", 64, writes="x"), vec("add", 100000),
                               vec("add", 128, reads="x")])
    assert [r.kind for r in find_races(prog)] == ["RAW"]


def test_barrier_orders_everything():
    prog = CoreProgram("AIV", [copy("GM_to_UB", 256, writes="x"), barrier("ALL"),
                               vec("add", 128, reads="x", writes="y"), barrier("ALL"),
                               copy("UB_to_GM", 256, reads="y"), copy("GM_to_UB", 256, writes="x")])
    assert find_races(prog) == []


def test_uninitialised_reads_are_what_nan_poisoning_would_show():
    prog = CoreProgram("AIV", [vec("add", 128, reads="acc", writes="acc")])
    assert [r.kind for r in find_races(prog)] == ["UNINIT"]
    assert find_races(prog, uninitialized=False) == []
    r = simulate(prog, TINY, debug=DebugOptions(uninitialized="nan"))
    assert [x.kind for x in r.races] == ["UNINIT"]
    assert "NaN" in str(r.races[0])


def test_landing_points():
    prog = vector_pipeline(3, 1024, stages=2)
    lands = landing_points(prog)
    instrs = prog.instrs
    copies = [n for n, i in enumerate(instrs) if i.kind == "copy"]
    assert sorted(lands) == copies
    for c, w in lands.items():
        if instrs[c].path == "GM_to_UB":
            assert instrs[w].kind == "wait_flag" and instrs[w].flag[:2] == ("MTE2", "VECTOR")
            assert instrs[w].flag[2] == instrs[c].writes[0][1]          # the slot's event id
    last_store = max(c for c in copies if instrs[c].path == "UB_to_GM")
    assert lands[last_store] is None          # nothing waits for the final store
    r = simulate(prog, TINY, debug=DebugOptions(dma_execution_mode="on_wait"))
    assert r.landings == {0: lands}


def test_flag_checks():
    ok = simulate(vector_pipeline(8, 4096), TINY, debug=DebugOptions(check_flags=True))
    assert ok.flag_issues == []
    leftover = CoreProgram("AIV", [set_flag("MTE2", "VECTOR", 1)])
    issues = simulate(leftover, TINY, debug=DebugOptions(check_flags=True)).flag_issues
    assert len(issues) == 1 and "never waited on" in issues[0]
    double = CoreProgram("AIV", [vec("add", 25600), set_flag("MTE2", "VECTOR"),
                                 set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR"),
                                 wait_flag("MTE2", "VECTOR")])
    # Counting flags (the switch for streams that rely on it) accept the stream, and
    # check_flags reports what 1-bit flags would lose.
    issues = simulate(double, TINY, debug=DebugOptions(check_flags=True),
                      one_bit_flags=False).flag_issues
    assert len(issues) == 1 and "1-bit hardware flag would lose it" in issues[0]


def test_debug_options_are_validated():
    with pytest.raises(ValueError, match="uninitialized"):
        DebugOptions(uninitialized="zero")
    with pytest.raises(ValueError, match="dma_execution_mode"):
        DebugOptions(dma_execution_mode="lazy")


# -- GM regions ---------------------------------------------------------------------------------

def _ws_round_trip(order: bool, load_region=("ws", 0, 127, 128)):
    """Store a tile to a GM workspace, then load it back (two-phase kernels)."""
    store = copy("UB_to_GM", 256, reads="y", gm_region=("ws", 0, 127, 128))
    load = copy("GM_to_UB", 256, writes="x", gm_region=load_region)
    sync = [set_flag("MTE3", "MTE2"), wait_flag("MTE3", "MTE2")] if order else []
    return CoreProgram("AIV", [vec("add", 128, writes="y"), set_flag("VECTOR", "MTE3"),
                               wait_flag("VECTOR", "MTE3"), store, *sync, load,
                               set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR"),
                               vec("add", 128, reads="x")])


def test_gm_store_then_load_without_mte3_to_mte2_order_is_a_raw_race():
    races = find_races(_ws_round_trip(order=False), uninitialized=False)
    assert [(r.kind, r.buffer, r.first[0], r.second[0]) for r in races] == [
        ("RAW", "GM ws", "MTE3", "MTE2")]
    assert "GM region ('ws', 0, 127, 128)" in str(races[0])
    assert "MTE3 -> MTE2 flag" in str(races[0])
    assert find_races(_ws_round_trip(order=True), uninitialized=False) == []
    # Overlapping bytes under another key race too; disjoint ones or another argument do not.
    assert [r.kind for r in find_races(_ws_round_trip(False, ("ws", 64, 191, 128)),
                                       uninitialized=False)] == ["RAW"]
    assert find_races(_ws_round_trip(False, ("ws", 128, 255, 128)), uninitialized=False) == []
    assert find_races(_ws_round_trip(False, ("x", 0, 127, 128)), uninitialized=False) == []
    report = simulate(_ws_round_trip(order=False), TINY, debug=DebugOptions(detect_races=True))
    assert [r.kind for r in report.races] == ["RAW"]


def test_gm_load_then_overlapping_store_is_war_and_blocks_compare_by_box():
    a, b = ("o", ((0, 64), (0, 32))), ("o", ((0, 64), (32, 64)))
    prog = CoreProgram("AIV", [copy("GM_to_UB", 256, writes="x", gm_region=a),
                               copy("UB_to_GM", 256, reads="y", gm_region=b),
                               copy("UB_to_GM", 256, reads="y", gm_region=a)])
    races = find_races(prog, uninitialized=False)
    assert [(r.kind, r.second[1]) for r in races] == [("WAR", 2)]


def test_gm_stores_land_at_the_wait_that_orders_them_before_the_load():
    prog = _ws_round_trip(order=True)
    lands = landing_points(prog)
    store = next(n for n, i in enumerate(prog.instrs) if i.path == "UB_to_GM")
    wait = lands[store]
    assert prog.instrs[wait].kind == "wait_flag" and prog.instrs[wait].flag[:2] == ("MTE3", "MTE2")
    load = next(n for n, i in enumerate(prog.instrs) if i.path == "GM_to_UB")
    assert wait < load
    # Without the flag the store lands nowhere inside the program: the load cannot see it.
    unordered = _ws_round_trip(order=False)
    store = next(n for n, i in enumerate(unordered.instrs) if i.path == "UB_to_GM")
    assert landing_points(unordered)[store] is None


def test_a_scalar_wait_orders_what_is_issued_after_it():
    """The Vector add is issued after the scalar wait, which waits for MTE2's set after the
    copy: ordered on hardware (the scalar unit issues in order), so no race."""
    gated = CoreProgram("AIV", [copy("GM_to_UB", 256, writes="x"), set_flag("MTE2", "SCALAR"),
                                wait_flag("MTE2", "SCALAR"), vec("add", 128, reads="x")])
    assert find_races(gated) == []
    # Issued before the scalar wait, the add is not held by it: a RAW.
    early = CoreProgram("AIV", [copy("GM_to_UB", 256, writes="x"), vec("add", 128, reads="x"),
                                set_flag("MTE2", "SCALAR"), wait_flag("MTE2", "SCALAR")])
    assert [r.kind for r in find_races(early)] == ["RAW"]


def test_a_copy_lands_at_the_earliest_wait_of_any_later_set_on_its_pipe():
    # MTE2 runs in order: the MTE2 -> VECTOR set after the second copy also covers the
    # first, so the first copy is visible at that (earlier) wait, not only at MTE2 -> MTE3's.
    p = CoreProgram("AIV", [copy("GM_to_UB", 256), set_flag("MTE2", "MTE3"),
                            copy("GM_to_UB", 256), set_flag("MTE2", "VECTOR"),
                            wait_flag("MTE2", "VECTOR"), vec("add", 128),
                            wait_flag("MTE2", "MTE3"), copy("GM_to_UB", 64)])
    assert landing_points(p) == {0: 4, 2: 4, 7: None}
