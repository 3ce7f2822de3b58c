"""The analytic bound: simulated cycles are never below it, and it is tight where it should be."""
import pytest
from hypothesis import HealthCheck, given, settings

from npujit.sim import (ASCEND_910B_LIKE, TINY, CoreProgram, Launch, copy, mmad, roofline_bound,
                        simulate, vec)
from npujit.sim.patterns import cube_pipeline, vector_pipeline
from npujit.sim.roofline import ProgramWork, bound_from_work

from sim_strategies import launches

EPS = 1e-9   # the HBM server works in floats; the bound may sit this close above an integer


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(launches())
def test_sim_is_never_below_the_bound(case):
    launch, spec = case
    r = simulate(launch, spec)
    assert r.cycles >= r.bound.cycles * (1 - EPS)
    # the report's bound (from the engine's compiled totals) equals the independent one
    independent = roofline_bound(launch, spec)
    assert r.bound.cycles == pytest.approx(independent.cycles)
    assert r.bound.kind == independent.kind


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(launches())
def test_invariants_on_random_launches(case):
    launch, spec = case
    r = simulate(launch, spec)
    for run in r.programs:
        assert 0 <= run.start <= run.end <= r.cycles
        for pipe, busy in run.busy.items():
            assert 0 <= busy <= run.cycles, (pipe, busy, run)
    for name, v in r.ratios.items():
        assert 0.0 <= v <= 1.0 + 1e-12, name
    for core, pipes in r.core_busy.items():
        for pipe in pipes:
            assert 0.0 <= r.utilisation(core, pipe) <= 1.0
    assert r.hbm_bytes_served == pytest.approx(r.hbm_bytes, rel=1e-6, abs=1e-3)
    if r.cycles:
        assert r.achieved_hbm_bandwidth <= spec.hbm_bytes_per_s * (1 + 1e-9)
    assert r.instr_count == launch.instr_count
    again = simulate(launch, spec)
    assert [(p.core, p.start, p.end) for p in again.programs] == \
        [(p.core, p.start, p.end) for p in r.programs]


def test_bound_terms():
    prog = CoreProgram("AIV", [copy("GM_to_UB", 6400), vec("exp", 6400, "f16")])
    b = roofline_bound(Launch([prog] * 4), TINY)
    # per program: MTE2 110 + 100 = 210, VECTOR 10 + 50 x 4 = 210; 4 programs on 2 cores
    assert b.terms["mte2"] == 420 and b.terms["vector"] == 420
    assert b.terms["cores"] == 420
    assert b.terms["hbm"] == 110 + 4 * 6400 / 256
    assert b.cycles == 420 and b.kind in ("port", "vector")


def test_hbm_bound_wins_when_many_cores_stream():
    spec = TINY.replace(aiv_cores=16)
    b = roofline_bound(Launch([CoreProgram("AIV", [copy("GM_to_UB", 65536)])] * 16), spec)
    assert b.kind == "hbm" and b.term == "hbm"
    r = simulate(Launch([CoreProgram("AIV", [copy("GM_to_UB", 65536)])] * 16), spec)
    assert r.cycles == pytest.approx(b.cycles, abs=1)          # the stream hits the HBM roof


def test_cube_bound_gemm_runs_close_to_the_cube_roof():
    """256x256 output tiles, 128-deep K steps, double-buffered, on 4 cores: Cube-bound
    (without an L2 model, 24 such cores would be HBM-bound on this part)."""
    r = simulate(Launch([cube_pipeline(32, 256, 256, 128)] * 4), ASCEND_910B_LIKE)
    assert r.bound.kind == "cube"
    assert r.roofline_fraction > 0.9 and r.ratios["aic_cube_ratio"] > 0.9


def test_streaming_vector_add_runs_close_to_its_roof():
    """48 AIV cores, 32 KB tiles double-buffered: HBM-bound; each set_flag after a copy
    exposes one landing latency, which costs ~10 % at this tile size."""
    r = simulate(Launch([vector_pipeline(64, 32768)] * 48), ASCEND_910B_LIKE)
    assert r.bound.kind == "hbm"
    assert r.roofline_fraction > 0.85


def test_more_cores_or_bandwidth_never_raise_the_bound():
    launch = Launch([vector_pipeline(8, 8192)] * 12 + [cube_pipeline(4, 64, 64, 64)] * 6)
    base = roofline_bound(launch, TINY).cycles
    assert roofline_bound(launch, TINY.replace(aiv_cores=6, aic_cores=6)).cycles <= base
    assert roofline_bound(launch, TINY.replace(hbm_bytes_per_s=1e12)).cycles <= base


def test_empty_launch():
    b = bound_from_work([], TINY)
    assert b.cycles == 0 and b.kind == "none"
    assert bound_from_work([ProgramWork("AIC", {"CUBE": 10})], TINY).kind == "cube"


def test_cube_term_counts_aic_cores():
    b = roofline_bound(Launch([CoreProgram("AIC", [mmad(256, 256, 256)])] * 6), TINY)
    assert b.terms["cube"] == 3 * (10 + 4096)
