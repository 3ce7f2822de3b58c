"""The sensitivity table against cycle counts computed by hand on TINY (docs: cost.py)."""
from __future__ import annotations

import pytest

from npujit.provenance import SOURCES, constants, source_of, uncertain_fields
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, copy
from npujit.sim.sensitivity import GROUPS, sensitivity


def test_one_copy_moves_with_each_of_its_constants_as_the_cost_formula_says():
    # GM_to_UB on TINY: issue 10 + 6400 B / 64 B per cycle + HBM latency 100 = 210.
    prog = CoreProgram("AIV", [copy("GM_to_UB", 6400)])
    t = sensitivity(prog, TINY, factor=2.0)
    assert t.base == 10 + 100 + 100
    assert (t.row("HBM latency").divided, t.row("HBM latency").multiplied) == (160, 310)
    assert (t.row("copy issue latency").divided, t.row("copy issue latency").multiplied) == (205, 220)
    # port 64 B/cycle and HBM 256 B/cycle: the port is the limit, so only its rate counts
    assert (t.row("GM port rates").divided, t.row("GM port rates").multiplied) == (310, 160)
    assert t.row("HBM bandwidth").spread() == 0
    assert t.rows[0].spread() >= t.rows[-1].spread()
    assert "HBM latency" in str(t)


def test_only_uncertain_constants_of_a_preset_are_varied():
    t = sensitivity(CoreProgram("AIV", [copy("GM_to_UB", 4096)]), ASCEND_910B_LIKE)
    for row in t.rows:
        assert all("assumed" in s or "[U]" in s for s in row.sources), row
    assert not any("capacity" in c or "cube_fractal" in c for r in t.rows for c in r.constants)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="factor"):
        sensitivity(CoreProgram("AIV", [copy("GM_to_UB", 64)]), TINY, factor=1.0)
    with pytest.raises(ValueError, match="unknown sensitivity groups"):
        sensitivity(CoreProgram("AIV", [copy("GM_to_UB", 64)]), TINY, groups=["clock"])
    assert set(GROUPS) >= {"HBM bandwidth", "L2 bandwidth", "HBM latency", "GM port rates"}


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE], ids=lambda s: s.name)
def test_every_preset_constant_has_a_source(spec):
    table = SOURCES[spec.name]
    names = set(constants(spec))
    assert names == set(table), (sorted(names - set(table)), sorted(set(table) - names))
    for n, src in table.items():
        assert src == "npujit" or "§A" in src or src == "assumed", (n, src)


def test_a_replaced_constant_is_the_users_not_the_sources():
    fast = ASCEND_910B_LIKE.replace(hbm_bytes_per_s=3.2e12)
    assert source_of(ASCEND_910B_LIKE, "hbm_bytes_per_s") != "user"
    assert source_of(fast, "hbm_bytes_per_s") == "user"
    assert source_of(fast, "capacity.UB") == "§A3 [O]"
    assert "capacity.UB" not in uncertain_fields(fast)
