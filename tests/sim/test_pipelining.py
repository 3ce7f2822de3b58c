"""Multi-buffering algebra and shared HBM bandwidth, against closed forms.

Stage times on TINY (no HBM contention: two 64 B/cycle ports under 256 B/cycle):
a = MTE2 copy-in, b = Vector work, c = MTE3 copy-out of one tile, each until its data
landed (a copy's pipe may issue the next copy before the previous one landed, so where two
copies follow each other with no set_flag between them, at the tail of a double-buffered
stream, they overlap by up to one landing latency; EXACT turns landing off to compare the
closed forms cycle for cycle).
"""
import pytest

from npujit.sim import TINY, CoreProgram, copy, simulate
from npujit.sim.patterns import vector_pipeline

SYNC0 = TINY.replace(sync_cycles=0)
EXACT = TINY.replace(sync_cycles=0, hbm_latency_cycles=0)


def stage_times(tile_bytes, vec_ops, out_bytes=None, spec=SYNC0):
    out_bytes = tile_bytes if out_bytes is None else out_bytes
    landing = spec.hbm_latency_cycles
    a = 10 + tile_bytes // 64 + landing              # issue 10, 64 B/cycle, landing
    b = vec_ops * (10 + tile_bytes // 256)           # elementwise, 256 B/cycle
    c = 10 + out_bytes // 64 + landing
    return a, b, c


CASES = [  # tile bytes, vector ops, out bytes: equal stages, vector-bound, load-bound, store-bound
    (16384, 5, None), (4096, 20, None), (16384, 1, 4096), (4096, 2, 16384)]


@pytest.mark.parametrize("tile, ops, out", CASES)
@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_single_buffer_serialises_every_stage(tile, ops, out, n):
    a, b, c = stage_times(tile, ops, out)
    prog = vector_pipeline(n, tile, vec_ops=ops, out_bytes=out, stages=1, inplace=True)
    assert simulate(prog, SYNC0).cycles == n * (a + b + c)


@pytest.mark.parametrize("tile, ops, out", CASES)
@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_double_buffer_overlaps_to_the_slowest_stage(tile, ops, out, n):
    prog = vector_pipeline(n, tile, vec_ops=ops, out_bytes=out, stages=2)
    a, b, c = stage_times(tile, ops, out, EXACT)
    assert simulate(prog, EXACT).cycles == a + b + c + (n - 1) * max(a, b, c)
    a, b, c = stage_times(tile, ops, out, SYNC0)
    formula = a + b + c + (n - 1) * max(a, b, c)
    assert formula - SYNC0.hbm_latency_cycles <= simulate(prog, SYNC0).cycles <= formula


@pytest.mark.parametrize("n", [4, 16, 64])
def test_algebra_holds_within_two_percent_with_sync_costs(n):
    """Default TINY: set/wait cost a cycle each (up to 4 per tile on the busiest pipe, ~1 %
    of a 370-cycle stage) and copies land 100 cycles after their transfer: the closed forms
    hold to 2 %, plus the tail overlap of one landing latency."""
    a, b, c = stage_times(16384, 5, spec=TINY)
    sb = simulate(vector_pipeline(n, 16384, vec_ops=5, stages=1, inplace=True), TINY).cycles
    db = simulate(vector_pipeline(n, 16384, vec_ops=5, stages=2), TINY).cycles
    assert abs(sb - n * (a + b + c)) <= 0.02 * sb
    assert abs(db - (a + b + c + (n - 1) * max(a, b, c))) <= 0.02 * db + TINY.hbm_latency_cycles


@pytest.mark.parametrize("n, expected", [(1, 1 / 3), (4, 2 / 3), (16, 8 / 9), (64, 32 / 33)])
def test_vector_utilisation_matches_ascends_one_third(n, expected):
    """Equal stages (an exp costs 4 cycles per 256 B, a copy 1 per 64 B, both 10 to start):
    Vector busy 1/3 single-buffered, N/(N+2) double-buffered (docs/npu-facts.md §S2)."""
    sb = simulate(vector_pipeline(n, 16384, op="exp", stages=1, inplace=True), EXACT)
    db = simulate(vector_pipeline(n, 16384, op="exp", stages=2), EXACT)
    stage = 10 + 16384 // 64
    assert sb.cycles == 3 * n * stage and db.cycles == (n + 2) * stage
    assert sb.ratios["aiv_vec_ratio"] == pytest.approx(1 / 3)
    assert db.ratios["aiv_vec_ratio"] == pytest.approx(expected)


def test_three_slots_do_not_beat_two_on_a_balanced_pipeline():
    n = 32
    two = simulate(vector_pipeline(n, 16384, vec_ops=5, stages=2), EXACT).cycles
    three = simulate(vector_pipeline(n, 16384, vec_ops=5, stages=3), EXACT).cycles
    assert three == two


@pytest.mark.parametrize("cores", range(1, 9))
def test_shared_bandwidth_knee_at_hbm_over_port(cores):
    """C cores each copying B bytes at once: T = L + max(C B / BW_hbm, B / BW_port); the
    knee sits at C* = 256 / 64 = 4 cores."""
    spec = TINY.replace(aiv_cores=8)
    nbytes = 64 * 1024
    r = simulate([CoreProgram("AIV", [copy("GM_to_UB", nbytes)])] * cores, spec)
    expected = 110 + max(cores * nbytes / 256, nbytes / 64)
    assert r.cycles == pytest.approx(expected, abs=1)
    if cores <= 4:
        assert r.cycles == 110 + nbytes // 64                # port-bound: flat
    else:
        assert r.cycles > 110 + nbytes // 64                 # HBM-bound: grows with cores


def test_mixed_port_caps_share_max_min_fairly():
    """GM_to_UB capped at 32 B/cycle next to 3 uncapped (128) copies on 256 B/cycle HBM:
    the capped one gets 32 and the others share 224 (74.67 each) until it ends; then they
    share all 256 (85.33 each)."""
    spec = TINY.replace(aiv_cores=4).with_path("GM_to_UB", bytes_per_cycle=32).with_path(
        "UB_to_GM", bytes_per_cycle=128)
    progs = [CoreProgram("AIV", [copy("GM_to_UB", 3200)])] + \
        [CoreProgram("AIV", [copy("UB_to_GM", 22400)])] * 3
    r = simulate(progs, spec)
    ends = sorted(p.end for p in r.programs)
    assert ends[0] == 110 + 100                     # 3200 B at its 32 B/cycle cap
    assert ends[-1] == pytest.approx(210 + (22400 - 100 * 224 / 3) / (256 / 3), abs=1)
