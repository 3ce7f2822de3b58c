"""Single instructions alone on an idle chip take exactly the table's cycles."""
import math

import pytest

from npujit.sim import (ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, ProgramError,
                        barrier, copy, instr_cycles, mmad, scalar, set_flag, simulate, vec,
                        wait_flag)
from npujit.sim.cost import copy_bytes, round_up

SPECS = [TINY, ASCEND_910B_LIKE, ASCEND_910_LIKE]


def alone(ins, spec, kind):
    return simulate(CoreProgram(kind, [ins]), spec).cycles


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("m, n, k", [(16, 16, 16), (128, 256, 64), (17, 1, 33), (1, 1, 1),
                                     (256, 256, 512)])
@pytest.mark.parametrize("dtype", ["f16", "i8", "f32"])
def test_mmad(spec, m, n, k, dtype):
    steps = math.ceil(m / 16) * math.ceil(n / 16) * math.ceil(k / 16)
    expected = spec.cube_startup_cycles + math.ceil(steps / {"f16": 1, "i8": 2, "f32": 0.25}[dtype])
    ins = mmad(m, n, k, dtype)
    assert instr_cycles(ins, spec) == expected
    assert alone(ins, spec, "AIC") == expected


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("op, cls_cost", [("add", 1), ("exp", 4), ("div", 2), ("sum", 2),
                                          ("cast", 1), ("gather", 8), ("topk", 16)])
@pytest.mark.parametrize("elems, dtype", [(128, "f16"), (1000, "f32"), (1, "f16"), (65536, "f16")])
def test_vec(spec, op, cls_cost, elems, dtype):
    nbytes = elems * {"f16": 2, "f32": 4}[dtype]
    expected = spec.vector_startup_cycles + math.ceil(nbytes / 256) * cls_cost
    ins = vec(op, elems, dtype)
    assert instr_cycles(ins, spec) == expected
    kind = "AIV" if spec.arch == "separated" else "AIC"
    assert alone(ins, spec, kind) == expected


PATHS = {
    TINY: [("GM_to_UB", "AIV"), ("UB_to_GM", "AIV"), ("GM_to_L1", "AIC"), ("L1_to_L0A", "AIC"),
           ("L1_to_L0B", "AIC"), ("L0C_to_GM", "AIC"), ("L0C_to_L1", "AIC")],
    ASCEND_910B_LIKE: [("GM_to_UB", "AIV"), ("UB_to_GM", "AIV"), ("GM_to_L1", "AIC"),
                       ("GM_to_L0A", "AIC"), ("L1_to_L0A", "AIC"), ("L1_to_L0B", "AIC"),
                       ("L0C_to_GM", "AIC"), ("L0C_to_L1", "AIC")],
    ASCEND_910_LIKE: [("GM_to_UB", "AIC"), ("UB_to_GM", "AIC"), ("L1_to_UB", "AIC"),
                      ("UB_to_L1", "AIC"), ("L0C_to_UB", "AIC")],
}


@pytest.mark.parametrize("spec, path, kind", [(s, p, k) for s, ps in PATHS.items() for p, k in ps],
                         ids=lambda x: getattr(x, "name", x))
@pytest.mark.parametrize("nbytes", [1, 32, 100, 4096, 65536])
def test_copy(spec, path, kind, nbytes):
    src, dst = path.split("_to_")
    moved = round_up(nbytes, max(spec.alignment[src], spec.alignment[dst]))
    port = spec.paths[path]
    if "GM" in (src, dst):
        expected = port.latency + spec.hbm_latency_cycles + math.ceil(
            moved / min(port.bytes_per_cycle, spec.hbm_bytes_per_cycle))
    else:
        expected = port.latency + math.ceil(moved / port.bytes_per_cycle)
    ins = copy(path, nbytes, pipe=port.pipe)
    assert copy_bytes(path, nbytes, spec) == moved
    assert instr_cycles(ins, spec) == expected
    assert alone(ins, spec, kind) == expected


def test_alignment_rounding():
    assert copy_bytes("L1_to_L0A", 1, TINY) == 512       # one L0A fractal
    assert copy_bytes("L0C_to_GM", 65, TINY) == 128       # L0C 64 B
    assert copy_bytes("GM_to_UB", 33, TINY) == 64         # UB 32 B


@pytest.mark.parametrize("ins", [scalar(37), set_flag("MTE2", "VECTOR"), barrier("VECTOR"),
                                 barrier("ALL")])
def test_scalar_and_sync(ins):
    expected = 37 if ins.kind == "scalar" else TINY.sync_cycles
    assert instr_cycles(ins, TINY) == expected
    assert alone(ins, TINY, "AIV") == expected


def test_wait_costs_sync_cycles_once_its_flag_is_set():
    prog = CoreProgram("AIV", [set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR")])
    assert simulate(prog, TINY.replace(sync_cycles=5)).cycles == 10


def test_costs_follow_spec_overrides():
    spec = TINY.replace(vector_op_cost={**TINY.vector_op_cost, "transcendental": 10},
                        cube_rate={**TINY.cube_rate, "f16": 2.0})
    assert instr_cycles(vec("exp", 128, "f16"), spec) == 10 + 10
    assert instr_cycles(mmad(64, 64, 64), spec) == 10 + 32


@pytest.mark.parametrize("ins, kind, message", [
    (copy("L1_to_UB", 64, pipe="MTE1"), "AIC", "has no path 'L1_to_UB'"),
    (copy("GM_to_L1", 64), "AIV", "AIV cores of TINY have no L1"),
    (copy("GM_to_UB", 64, pipe="MTE3"), "AIV", "runs GM_to_UB on MTE2, not MTE3"),
    (mmad(16, 16, 16), "AIV", "have no pipe CUBE"),
    (mmad(16, 16, 16, "f64"), "AIC", "no rate for dtype 'f64'"),
    (vec("mystery", 16), "AIV", "unknown vector op class 'mystery'"),
    (set_flag("MTE2", "VECTOR", 8), "AIV", "event id 8 out of range"),
    (set_flag("MTE1", "CUBE", 0), "AIV", "have no pipe MTE1"),
])
def test_instructions_that_do_not_fit_the_spec(ins, kind, message):
    with pytest.raises(ProgramError, match=message) as e:
        simulate(CoreProgram(kind, [scalar(1), ins]), TINY)
    assert "program 0 instr 1" in str(e.value)
