"""NPU specs: presets are valid and sourced, user specs are validated with clear errors."""
import dataclasses
import inspect
import re

import pytest

from npujit import target as spec_mod
from npujit.target import (ASCEND_910_LIKE, ASCEND_910B_LIKE, PRESETS, TINY, NPUSpec, PathSpec,
                             SpecError)


def test_presets_match_reference_section_6():
    s = ASCEND_910B_LIKE
    assert (s.arch, s.aic_cores, s.aiv_cores, s.clock_hz) == ("separated", 24, 48, 1.8e9)
    assert dict(s.capacity) == {"UB": 192 * 1024, "L1": 512 * 1024, "L0A": 64 * 1024,
                                "L0B": 64 * 1024, "L0C": 128 * 1024}
    assert (s.alignment["UB"], s.alignment["L1"], s.alignment["L0A"], s.alignment["L0B"],
            s.alignment["L0C"]) == (32, 32, 512, 512, 64)
    assert s.cube_fractal == 16 and s.cube_rate["i8"] == 2 and s.cube_rate["f32"] == 0.25
    assert s.vector_bytes_per_cycle == 256 and s.vector_op_cost["transcendental"] == 4
    assert s.paths["L1_to_L0A"].bytes_per_cycle == 512
    assert s.paths["L1_to_L0B"].bytes_per_cycle == 256
    assert 1.6e12 <= s.hbm_bytes_per_s <= 1.8e12
    assert s.event_ids == 8
    assert s.pipes["AIC"] == ("SCALAR", "MTE1", "MTE2", "CUBE", "FIXP")
    assert s.pipes["AIV"] == ("SCALAR", "MTE2", "VECTOR", "MTE3")
    # 24 AIC x 4096 MAC x 2 x 1.8 GHz ~ 354 TFLOPS (docs/npu-facts.md §A5)
    assert round(s.peak_cube_flops / 1e12) == 354


def test_coupled_preset():
    s = ASCEND_910_LIKE
    assert s.arch == "coupled" and s.aic_cores == 32 and s.aiv_cores == 0
    assert s.core_counts == {"AIC": 32}
    assert s.core_kind_for("AIV") == "AIC"
    assert "VECTOR" in s.pipes["AIC"] and "CUBE" in s.pipes["AIC"] and "FIXP" not in s.pipes["AIC"]
    assert s.paths["L0C_to_UB"].pipe == "VECTOR"
    assert abs(s.hbm_bytes_per_s - 1.2e12) < 1e9


def test_every_preset_constant_says_where_it_came_from():
    """Each line of a preset that sets a number carries a comment (a source or 'assumed'),
    on the line or just above it, or sits in TINY (all assumed, said once) or a table whose
    comment covers it."""
    src = inspect.getsource(spec_mod)
    start = src.index("# --- Presets")
    tiny = src.index("TINY = NPUSpec(")
    lines = src[start:tiny].splitlines()
    missing = []
    for above, line in zip([""] + lines, lines):
        code = line.split("#")[0]
        commented = "#" in line or above.strip().startswith("#")
        if re.search(r"=\s*[\d(]|PathSpec\(|: \d", code) and not commented \
                and not code.strip().startswith(("def", "return", "_VECTOR", "_CUBE", "_910")):
            missing.append(line.strip())
    assert not missing, "constants without a source comment:\n" + "\n".join(missing)
    assert "All assumed" in src[tiny - 200:tiny]


def test_specs_are_hashable_values():
    assert hash(TINY) == hash(TINY.replace())
    assert TINY == TINY.replace() and TINY != TINY.replace(aiv_cores=3)
    assert {ASCEND_910B_LIKE: 1}[ASCEND_910B_LIKE.replace()] == 1
    assert set(PRESETS) == {"ascend-910b-like", "ascend-910-like", "TINY"}


def test_replace_and_with_path():
    s = TINY.replace(hbm_bytes_per_s=512e9)
    assert s.hbm_bytes_per_cycle == 512.0
    s2 = TINY.with_path("GM_to_UB", bytes_per_cycle=32, latency=3)
    assert s2.paths["GM_to_UB"] == PathSpec("MTE2", 32, 3)
    assert TINY.paths["GM_to_UB"].bytes_per_cycle == 64   # the original is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        TINY.aic_cores = 3


@pytest.mark.parametrize("changes, message", [
    (dict(clock_hz=0), "clock_hz must be > 0"),
    (dict(aic_cores=-1), "aic_cores must be an int >= 0"),
    (dict(aic_cores=0, aiv_cores=0), "at least one core"),
    (dict(arch="fused"), "arch must be one of"),
    (dict(arch="coupled"), "coupled part has no separate AIV"),
    (dict(pipes={"AIC": ("CUBE",)}), "no entry for core kind 'AIV'"),
    (dict(pipes={"AIC": ("CUBE", "TENSOR"), "AIV": ("VECTOR",)}), "unknown pipe 'TENSOR'"),
    (dict(alignment={"GM": 32, "UB": 48, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 64}),
     "alignment['UB'] must be a power of two"),
    (dict(capacity={"UB": 0, "L1": 1, "L0A": 1, "L0B": 1, "L0C": 1}),
     "capacity['UB'] must be an int > 0"),
    (dict(cube_rate={"i8": 2.0}), "must give the f16 rate"),
    (dict(vector_op_cost={"elementwise": 0}), "must be > 0 cycles per repeat"),
    (dict(paths={"GM_to_XX": PathSpec("MTE2", 1, 1)}), "must read '<scope>_to_<scope>'"),
    (dict(pipes={"AIC": ("CUBE",), "AIV": ("VECTOR",)}), "runs on MTE2, which no core kind has"),
    (dict(scopes={"AIC": ("L1",), "AIV": ("GM",)}), "'GM' is not an on-core scope"),
    (dict(event_ids=0), "event_ids must be > 0"),
])
def test_bad_specs_say_what_is_wrong(changes, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        TINY.replace(**changes)


def test_bad_path_spec():
    with pytest.raises(SpecError, match="port rate must be > 0"):
        PathSpec("MTE2", 0, 1)
    with pytest.raises(SpecError, match="not one of"):
        PathSpec("DMA", 1, 1)


def test_user_built_spec():
    s = NPUSpec(
        name="mine", arch="coupled", aic_cores=4, aiv_cores=0, clock_hz=2e9,
        pipes={"AIC": ("SCALAR", "MTE2", "MTE3", "VECTOR")}, scopes={"AIC": ("UB",)},
        capacity={"UB": 65536}, alignment={s: 32 for s in ("GM", "UB", "L1", "L0A", "L0B", "L0C")},
        cube_fractal=16, cube_rate={"f16": 1.0}, cube_startup_cycles=0,
        vector_bytes_per_cycle=128, vector_startup_cycles=0, vector_op_cost={"elementwise": 1},
        paths={"GM_to_UB": PathSpec("MTE2", 32, 0), "UB_to_GM": PathSpec("MTE3", 32, 0)},
        hbm_bytes_per_s=1e11, hbm_latency_cycles=0, event_ids=2, sync_cycles=0)
    assert s.hbm_bytes_per_cycle == 50.0 and s.core_counts == {"AIC": 4}


def test_docstring_examples():
    """The target description's docstring examples run and print what they say."""
    import doctest
    result = doctest.testmod(spec_mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_provenance_docstring_examples():
    """npujit/provenance.py's examples run and print what they say."""
    import doctest
    import npujit.provenance
    result = doctest.testmod(npujit.provenance, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
