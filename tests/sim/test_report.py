"""SimReport: profiler names, conservation, invariants, readable text, plots."""
import pytest

from npujit.sim import (ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, Launch, copy, mmad,
                        simulate, vec)
from npujit.sim.cost import gm_bytes
from npujit.sim.patterns import cube_pipeline, vector_pipeline


@pytest.fixture(scope="module")
def mixed():
    launch = Launch([vector_pipeline(12, 8192 + 1024 * i) for i in range(6)]
                    + [cube_pipeline(6, 128, 128, 64) for _ in range(3)], name="mixed")
    return launch, simulate(launch, ASCEND_910B_LIKE)


def test_profiler_names(mixed):
    _, r = mixed
    assert set(r.ratios) == {"aic_scalar_ratio", "aic_mte1_ratio", "aic_mte2_ratio",
                             "aic_cube_ratio", "aic_fixpipe_ratio", "aiv_scalar_ratio",
                             "aiv_mte2_ratio", "aiv_vec_ratio", "aiv_mte3_ratio"}
    assert set(r.bytes_by_path) == {"GM_to_UB", "UB_to_GM", "GM_to_L1", "L1_to_L0A",
                                    "L1_to_L0B", "L0C_to_GM"}


def test_byte_conservation(mixed):
    launch, r = mixed
    expected = sum(gm_bytes(i, ASCEND_910B_LIKE) for p in launch.programs for i in p.instrs)
    assert r.hbm_bytes == expected
    assert r.hbm_bytes_served == pytest.approx(expected, rel=1e-9)
    asked = sum(i.nbytes for p in launch.programs for i in p.instrs
                if i.kind == "copy" and "GM" in i.path)
    assert sum(n for path, n in r.bytes_by_path.items() if "GM" in path) == asked == r.hbm_bytes
    assert r.hbm_read_bytes == r.bytes_by_path["GM_to_UB"] + r.bytes_by_path["GM_to_L1"]


def test_busy_and_ratios_are_bounded(mixed):
    _, r = mixed
    for run in r.programs:
        assert all(0 <= b <= run.cycles for b in run.busy.values())
    assert all(0 <= v <= 1 for v in r.ratios.values())
    for core, pipes in r.core_busy.items():
        assert all(0 <= r.utilisation(core, p) <= 1 for p in pipes)
    assert r.ratios["aic_cube_ratio"] > 0 and r.ratios["aiv_vec_ratio"] > 0


def test_rates_and_bound(mixed):
    _, r = mixed
    assert r.time_s == r.cycles / 1.8e9
    assert r.achieved_flops == pytest.approx(r.cube_flops / r.time_s)
    assert r.cube_flops == 3 * 6 * 2 * 128 * 128 * 64
    assert 0 < r.achieved_hbm_bandwidth <= ASCEND_910B_LIKE.hbm_bytes_per_s
    assert 0 < r.roofline_fraction <= 1
    assert r.bound.kind in ("cube", "vector", "hbm", "port", "scalar")


def test_text_table(mixed):
    _, r = mixed
    text = str(r)
    for needle in ("launch 'mixed'", "ascend-910b-like", "waves 1", "aic_cube_ratio",
                   "aiv_vec_ratio", "GM_to_UB", "roofline", "% of it", "TFLOP/s"):
        assert needle in text


def test_program_runs_are_in_program_order():
    r = simulate([CoreProgram("AIV", [vec("add", 128 * (i + 1))]) for i in range(5)], TINY)
    assert [p.program for p in r.programs] == list(range(5))
    assert r.waves == 3


def test_coupled_report_uses_aic_names():
    r = simulate([CoreProgram("AIC", [copy("GM_to_UB", 4096), vec("exp", 2048), mmad(64, 64, 64)])],
                 ASCEND_910_LIKE)
    assert {"aic_vec_ratio", "aic_cube_ratio", "aic_mte3_ratio"} <= set(r.ratios)
    assert not any(k.startswith("aiv") for k in r.ratios)


def test_plots(tmp_path):
    pytest.importorskip("matplotlib")
    r = simulate(Launch([vector_pipeline(8, 4096)] * 2 + [cube_pipeline(4, 64, 64, 64)]), TINY)
    for name, plot in (("timeline.png", r.plot_timeline), ("roofline.png", r.plot_roofline)):
        path = tmp_path / name
        plot(path)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r.plot_timeline(tmp_path / "zoom.png", window=(0, 500), max_cores=1)
    assert (tmp_path / "zoom.png").stat().st_size > 0
