"""The compiled engine (sim/fast_engine.py) against the Python engine (sim/engine.py), the
reference: bundled kernels on both Ascend presets, grouped and scalar-gated launches, the
debug checks, the errors (raised through the Python engine), and the ``auto`` threshold.

The first test in a fresh numba cache compiles the engine (~9 s); later processes load it.
"""
import importlib

import numpy as np
import pytest

from npujit import cdiv
from npujit.kernels.elementwise import add_stream_kernel
from npujit.kernels.layernorm import layernorm_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import (ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, DeadlockError,
                        DebugOptions, FlagStillSetError, Launch, copy, scalar, set_flag,
                        simulate, vec, wait_flag)
from npujit.sim import fast_engine
from npujit.sim.fastpath import FastTimeline
from npujit.sim.isa import cross_set_flag, cross_wait_flag, mmad
from npujit.sim.patterns import cube_pipeline, vector_pipeline
from npujit.sim.trace import trace_hash

# the module (``npujit.sim.simulate`` is also the function the package exports)
simulate_module = importlib.import_module("npujit.sim.simulate")

PRESETS = [ASCEND_910_LIKE, ASCEND_910B_LIKE]


def _same(a, b):
    """Two reports of one launch agree on everything the engine decides."""
    assert a.cycles == b.cycles
    assert a.programs == b.programs              # per program: core, start, end, busy per pipe
    assert a.ratios == b.ratios and a.waves == b.waves and a.instr_count == b.instr_count
    assert a.core_busy == b.core_busy
    assert a.bytes_by_path == b.bytes_by_path
    assert (a.hbm_read_bytes, a.hbm_write_bytes) == (b.hbm_read_bytes, b.hbm_write_bytes)
    assert a.hbm_bytes_served == b.hbm_bytes_served
    assert (a.l2_read_bytes, a.l2_hit_bytes, a.l2_write_bytes, a.l2_bytes_served) == (
        b.l2_read_bytes, b.l2_hit_bytes, b.l2_write_bytes, b.l2_bytes_served)
    assert trace_hash(a.timeline) == trace_hash(b.timeline)   # every span, flow and sample


def _both(monkeypatch, run):
    """``run()`` under each engine: (python report, compiled report)."""
    out = []
    for engine in ("python", "compiled"):
        monkeypatch.setenv("NPUJIT_SIM_ENGINE", engine)
        out.append(run())
    assert not isinstance(out[0].timeline, FastTimeline)
    assert isinstance(out[1].timeline, FastTimeline)
    return out


def _kernels():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 256)).astype(np.float32)
    w = rng.standard_normal(256).astype(np.float32)
    yield softmax_kernel, (24,), (x, np.empty_like(x), 256, 256, 256), {"BLOCK": 256}
    yield layernorm_kernel, (24,), (x, w, w, np.empty_like(x), 256, 1e-5), {"BLOCK": 256}
    a = rng.standard_normal((128, 96)).astype(np.float16)
    b = rng.standard_normal((96, 128)).astype(np.float16)
    yield (matmul_kernel, (2, 2), (a, b, np.empty((128, 128), np.float32), 128, 128, 96, 96,
                                   1, 128, 1, 128, 1),
           {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "NUM_STAGES": 2})
    n = 40000
    v = rng.standard_normal(n).astype(np.float16)
    per = cdiv(cdiv(n, 8), 1024) * 1024
    yield (add_stream_kernel, (cdiv(n, per),), (v, v, np.empty_like(v), n, per),
           {"BLOCK": 1024, "NUM_STAGES": 2})


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_bundled_kernels_time_the_same_on_both_engines(monkeypatch, spec):
    for kernel, grid, args, meta in _kernels():
        py, fast = _both(monkeypatch, lambda: kernel.simulate(
            *args, grid=grid, spec=spec, numerics=False, **meta))
        _same(py, fast)


def test_grouped_gated_and_jittered_launches_time_the_same(monkeypatch):
    aic = CoreProgram("AIC", [mmad(64, 64, 64), cross_set_flag("CUBE", 0),
                              cross_wait_flag("CUBE", 1), mmad(32, 32, 32)])
    aiv = CoreProgram("AIV", [cross_wait_flag("VECTOR", 0), vec("exp", 4096),
                              cross_set_flag("VECTOR", 1)])
    grouped = Launch([aic, aiv] * 5, groups=[(2 * i, 2 * i + 1) for i in range(5)])
    # A scalar wait holds issue on every pipe (GATE / OPEN entries), then a barrier.
    gated = CoreProgram("AIV", [copy("GM_to_UB", 4096, gm_region=("x", 0)),
                                set_flag("MTE2", "SCALAR"), wait_flag("MTE2", "SCALAR"),
                                scalar(7), vec("add", 2048), copy("GM_to_UB", 4096),
                                copy("UB_to_GM", 2048, gm_region=("y", 0)),
                                copy("GM_to_UB", 4096, gm_region="<touched once>")])
    cases = [(grouped, ASCEND_910B_LIKE, {}), (Launch([gated] * 7), TINY, {}),
             (Launch([vector_pipeline(12, 8192 + 512 * c) for c in range(30)]
                     + [cube_pipeline(6, 128, 128, 64) for _ in range(9)]),
              ASCEND_910B_LIKE, {"start_jitter": 300, "seed": 3})]
    for launch, spec, kw in cases:
        _same(*_both(monkeypatch, lambda: simulate(launch, spec, **kw)))


def test_debug_checks_agree(monkeypatch):
    prog = CoreProgram("AIV", [copy("GM_to_UB", 256, writes="x"), vec("add", 2560),
                               set_flag("MTE2", "VECTOR"), set_flag("MTE2", "VECTOR"),
                               wait_flag("MTE2", "VECTOR"), vec("add", 128, reads="x"),
                               vec("add", 128, reads="z")])   # z: never written
    py, fast = _both(monkeypatch, lambda: simulate(
        Launch([prog] * 3), TINY, one_bit_flags=False, debug=DebugOptions.full()))
    _same(py, fast)
    assert fast.flag_issues == py.flag_issues and len(fast.flag_issues) == 3
    assert fast.races == py.races and fast.landings == py.landings and fast.races


def test_errors_come_from_the_python_engine(monkeypatch):
    monkeypatch.setenv("NPUJIT_SIM_ENGINE", "compiled")
    lost = CoreProgram("AIV", [vec("add", 2560), set_flag("MTE2", "VECTOR"),
                               set_flag("MTE2", "VECTOR"), wait_flag("MTE2", "VECTOR"),
                               wait_flag("MTE2", "VECTOR")])
    with pytest.raises(FlagStillSetError) as e:
        simulate(lost, TINY)
    assert (e.value.cycle, e.value.taken) == (2, 30)
    with pytest.raises(DeadlockError) as d:
        simulate(CoreProgram("AIV", [vec("add", 64), wait_flag("MTE2", "VECTOR", 1)]), TINY)
    assert d.value.flag == ("MTE2", "VECTOR", 1)


def test_auto_engine_threshold_both_ways(monkeypatch):
    launch = Launch([vector_pipeline(4, 4096)] * 3)
    n = launch.instr_count
    monkeypatch.setattr(fast_engine, "warm", lambda: True)    # compiled or cached
    monkeypatch.setenv("NPUJIT_SIM_ENGINE", "auto")
    monkeypatch.setenv("NPUJIT_SIM_COMPILED_MIN", str(n))
    at = simulate(launch, TINY)
    monkeypatch.setenv("NPUJIT_SIM_COMPILED_MIN", str(n + 1))
    below = simulate(launch, TINY)
    assert isinstance(at.timeline, FastTimeline)
    assert not isinstance(below.timeline, FastTimeline)
    _same(below, at)
    with pytest.raises(ValueError, match="engine must be one of"):
        simulate(launch, TINY, engine="fast")


def _named_flags(compiled, compiler) -> list:
    """A compiled program's queues with each flag number replaced by its flag."""
    from npujit.sim.queues import CSET, SET, SETD, WAIT
    flags = {v: k for k, v in compiler.flag_index.items()}
    return [[(e[0], flags[e[1]]) + e[2:] if e[0] in (SET, SETD, WAIT, CSET) else e for e in q]
            for q in compiled.queues]


def test_queue_compiler_over_a_launch_matches_instruction_by_instruction_totals():
    """``Compiler.compile_all`` deals and totals every program of a launch in one numpy
    pass; each result must equal compiling that program alone, and its totals must equal
    the roofline's instruction-by-instruction sums (``program_work``, the oracle) and
    plain sums of the instructions' own bytes, FLOPs and elements."""
    from npujit.sim import barrier
    from npujit.sim.queues import GATE, OPEN, Compiler
    from npujit.sim.roofline import program_work

    def gated(r):
        return CoreProgram("AIV", [
            copy("GM_to_UB", 4096 + 512 * r, gm_region=("x", r % 3)),
            set_flag("MTE2", "SCALAR"), wait_flag("MTE2", "SCALAR"), scalar(7),
            vec("add", 2048), barrier("ALL"), copy("GM_to_UB", 4096),
            copy("UB_to_GM", 2048, gm_region=("y", r)), vec("exp", 1024 * (r + 1)),
            copy("GM_to_UB", 1000, gm_region="<touched once>", burst_bytes=1536)])
    programs = ([gated(r) for r in range(5)] + [vector_pipeline(6, 4096 + 512 * c)
                                                 for c in range(3)]
                + [cube_pipeline(4, 128, 64 + 16 * c, 64) for c in range(3)] + [gated(1)])
    for spec in (ASCEND_910B_LIKE, TINY):
        launch_compiler = Compiler(spec)
        together = launch_compiler.compile_all(programs)
        for prog, c in zip(programs, together):
            one = Compiler(spec)
            alone = one.compile(prog)
            assert c.pipes == alone.pipes and c.gates == alone.gates
            assert all(np.array_equal(x, y) for x, y in zip(c.positions, alone.positions,
                                                            strict=True))
            # entries by value; flag numbers are per compiler, so compare the flags
            assert _named_flags(c, launch_compiler) == _named_flags(alone, one)
            w = program_work(prog, spec)
            assert c.pipe_work == {p: w.pipe_work[p] for p in c.pipes}
            assert (c.hbm_read + c.hbm_write, c.gm_latency_min, c.cube_flops) == (
                w.gm_bytes, w.gm_latency_min, w.cube_flops)
            assert (c.hbm_floor, c.read_regions, c.written_regions) == (
                w.hbm_floor, w.read_regions, w.written_regions)
            paths: dict = {}
            for ins in prog.instrs:
                if ins.kind == "copy":
                    paths[ins.path] = paths.get(ins.path, 0) + ins.nbytes
            assert c.bytes_by_path == paths
            assert c.vector_elems == sum(i.elems for i in prog.instrs if i.kind == "vec")
            assert c.instr_count == len(prog.instrs)
            # every instruction in its pipe's queue, in program order (a full barrier in
            # each); the rest are the scalar wait's issue gates
            for name, pos, q in zip(c.pipes, c.positions, c.queues):
                got = [x for x, e in zip(pos.tolist(), q) if e[0] not in (GATE, OPEN)]
                assert got == [i for i, ins in enumerate(prog.instrs)
                               if ins.pipe in (name, "ALL")]
                assert len(got) < len(q) if c.gates and name in ("MTE3", "VECTOR") else True


def test_auto_engine_compiles_a_cold_engine_only_after_enough_python_work(monkeypatch):
    """A compiled engine numba has not compiled or cached yet costs 15-25 s to compile:
    ``auto`` runs launches past ``NPUJIT_SIM_COMPILED_MIN`` on the Python engine until the
    process has run ``NPUJIT_SIM_COMPILED_COLD_MIN`` instructions there, then compiles."""
    launch = Launch([vector_pipeline(4, 4096)] * 3)
    n = launch.instr_count
    monkeypatch.setattr(fast_engine, "warm", lambda: False)
    monkeypatch.setattr(simulate_module, "_cold_instrs", 0)
    monkeypatch.setenv("NPUJIT_SIM_ENGINE", "auto")
    monkeypatch.setenv("NPUJIT_SIM_COMPILED_MIN", str(n))
    monkeypatch.setenv("NPUJIT_SIM_COMPILED_COLD_MIN", str(2 * n))
    picks = [simulate_module.use_compiled(launch) for _ in range(3)]
    assert picks == [False, False, True]          # n, 2n on Python; past 2n: compile
    small = Launch([vector_pipeline(2, 4096)])
    assert not simulate_module.use_compiled(small)   # below the size threshold: Python
    monkeypatch.setattr(fast_engine, "warm", lambda: True)
    monkeypatch.setattr(simulate_module, "_cold_instrs", 0)
    assert simulate_module.use_compiled(launch)      # a warm engine: at once


def test_warm_sees_the_engine_compiled_in_this_process():
    simulate(vector_pipeline(4, 4096), TINY, engine="compiled")
    assert fast_engine.warm()
