"""Mixed Cube + Vector kernels on a separated part: grouped launches with cross-core flags
(engine), and the AIC / AIV split of a recorded stream through a GM workspace (lowering)."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import cdiv, npu_kernel
from npujit.sim import (ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, DebugOptions,
                        DeadlockError, Launch, ProgramError, mmad, simulate, vec)
from npujit.sim.engine import pipe_spans
from npujit.sim.isa import cross_set_flag, cross_wait_flag
from npujit.sim.split import split_stream


def _pair(aic_extra=(), aiv_first=None):
    aic = CoreProgram("AIC", [mmad(64, 64, 64), *aic_extra, cross_set_flag("CUBE", 0)])
    aiv = CoreProgram("AIV", [aiv_first or cross_wait_flag("VECTOR", 0), vec("add", 4096)])
    return aic, aiv


def test_cross_wait_passes_only_after_the_partner_set():
    aic, aiv = _pair()
    r = simulate(Launch([aic, aiv], groups=[(0, 1)]), TINY)
    aic_run, aiv_run = r.timeline.runs
    assert aic_run.partner is aiv_run and aiv_run.core == "AIV 0"
    mmad_end = pipe_spans(aic_run.pipes[0])[0][1]
    (wait, add), = [pipe_spans(p) for p in aiv_run.pipes]
    assert wait[0] >= mmad_end + TINY.sync_cycles        # the set ran after the mmad
    assert add[0] == wait[1] and r.cycles == add[1]


def test_groups_run_in_waves_per_ai_core():
    aic, aiv = _pair()
    progs = [aic, aiv] * 3                                  # 3 groups, TINY has 2 AI cores
    r = simulate(Launch(progs, groups=[(0, 1), (2, 3), (4, 5)]), TINY)
    first = [run for run in r.timeline.runs if run.program in (0, 1)]
    third = [run for run in r.timeline.runs if run.program in (4, 5)]
    assert third[0].start == third[1].start == max(run.end for run in first)
    assert {run.core for run in third} == {run.core for run in first}
    assert r.waves == 2


def test_cross_flags_need_groups_and_a_separated_part():
    aic, aiv = _pair()
    with pytest.raises(ProgramError, match="groups"):
        simulate(Launch([aic, aiv]), TINY)
    with pytest.raises(ProgramError, match="separated"):
        simulate(Launch([aic, aiv], groups=[(0, 1)]), ASCEND_910_LIKE)
    with pytest.raises(ValueError, match="AIC program, AIV program"):
        Launch([aic, aiv], groups=[(1, 0)])
    with pytest.raises(ValueError, match="exactly once"):
        Launch([aic, aiv], groups=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match="out of range"):
        cross_set_flag("CUBE", 11)


def test_a_cross_wait_nobody_sets_is_a_deadlock():
    aic, aiv = _pair(aiv_first=cross_wait_flag("VECTOR", 3))
    with pytest.raises(DeadlockError, match="cross-core flag 3"):
        simulate(Launch([aic, aiv], groups=[(0, 1)]), TINY)


def test_split_stream_refuses_a_crossing_the_schedule_did_not_split():
    """A Vector read of L0C with no hand-off: a stream scheduled for another part."""
    stream = [mmad(16, 16, 16, writes=[("L0C.0", 0)]), vec("relu", 256, "f32",
                                                            reads=[("L0C.0", 0)])]
    with pytest.raises(NotImplementedError, match="schedule the kernel for the separated"):
        split_stream(stream, 0, {})


@npu_kernel
def matmul_bias_relu_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, BLOCK_M: nl.constexpr,
                            BLOCK_N: nl.constexpr, BLOCK_K: nl.constexpr):
    # Cube work (the K loop) then Vector work on its result: on a 910B the result crosses
    # from the AIC to an AIV through GM.
    pid_m, pid_n = nl.program_id(0), nl.program_id(1)
    a_blk = nl.make_block_ptr(a_ptr, shape=(M, K), strides=(K, 1),
                              offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K))
    b_blk = nl.make_block_ptr(b_ptr, shape=(K, N), strides=(N, 1),
                              offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N))
    acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    for k in nl.range(0, K, BLOCK_K, num_stages=2):
        acc = nl.dot(nl.load(a_blk), nl.load(b_blk), acc)
        a_blk = nl.advance(a_blk, (0, BLOCK_K))
        b_blk = nl.advance(b_blk, (BLOCK_K, 0))
    cols = pid_n * BLOCK_N + nl.arange(0, BLOCK_N)
    y = nl.maximum(acc + nl.load(bias_ptr + cols)[None, :], 0.0)
    c_blk = nl.make_block_ptr(c_ptr, shape=(M, N), strides=(N, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N))
    nl.store(c_blk, y)


def _run_mixed(spec, m=64, n=96, k=64, block=32):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    r = matmul_bias_relu_kernel.simulate(
        a, b, bias, c, m, n, k, grid=(cdiv(m, block), cdiv(n, block)), spec=spec,
        BLOCK_M=block, BLOCK_N=block, BLOCK_K=block, debug=DebugOptions(detect_races=True))
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0.0)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3 * np.sqrt(k))
    assert r.races == [] and r.cycles >= r.bound.cycles
    return r, m * n * 4, cdiv(m, block) * cdiv(n, block)


@pytest.mark.parametrize("spec", [TINY, ASCEND_910B_LIKE])
def test_mixed_kernel_splits_into_aic_and_aiv_programs_through_a_workspace(spec):
    r, out_bytes, programs = _run_mixed(spec)
    kinds = [p.kind for p in r.programs]
    assert kinds.count("AIC") == kinds.count("AIV") == programs
    # FixPipe writes each f32 result tile to the workspace; the AIV reads it back (L2 hit)
    assert r.bytes_by_path["L0C_to_GM"] == out_bytes
    assert r.bytes_by_path["UB_to_GM"] == out_bytes
    assert r.l2_hit_bytes >= out_bytes
    assert r.ratios["aic_cube_ratio"] > 0 and r.ratios["aiv_vec_ratio"] > 0
    for run in r.programs:
        if run.kind == "AIV":     # the AIV cannot start its Vector work before the hand-off
            partner = r.programs[run.program - 1]
            assert run.start == partner.start


def test_mixed_kernel_stays_one_program_on_a_coupled_part():
    r, _, programs = _run_mixed(ASCEND_910_LIKE)
    assert [p.kind for p in r.programs] == ["AIC"] * programs
    assert "L0C_to_GM" not in r.bytes_by_path        # L0C -> UB through the Vector unit


def test_the_staging_buffer_is_a_buffer_of_the_schedule():
    """The hand-off's UB staging buffer is allocated by the schedule (split-cores runs
    before allocate-buffers), so a UB too small for it fails at compile time, at a line."""
    from npujit import OutOfResources
    small_ub = TINY.replace(capacity={**TINY.capacity, "UB": 6 * 1024})
    a, b = np.ones((32, 32), np.float16), np.ones((32, 32), np.float16)
    args = (a, b, np.zeros(32, np.float32), np.zeros((32, 32), np.float32), 32, 32, 32)
    meta = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
    # the f32 result tile, the bias and the 4 KB staging copy of the L0C tile: > 6 KB
    with pytest.raises(OutOfResources, match=r"(?s)test_split.py:\d+.*UB holds 6144 B"):
        matmul_bias_relu_kernel.with_options(spec=small_ub, backend="reference")[(1, 1)](
            *args, **meta)
    # on the coupled part nothing is handed over: the same UB is enough
    coupled = ASCEND_910_LIKE.replace(capacity={**ASCEND_910_LIKE.capacity, "UB": 6 * 1024})
    matmul_bias_relu_kernel.with_options(spec=coupled, backend="reference")[(1, 1)](*args, **meta)


def test_hand_off_flags_are_allocated_like_any_flag():
    """The hand-off waits for the Cube (CUBE -> FIXP) and the Vector op for the hand-off
    (MTE2 -> VECTOR) with ids from the schedule's allocator; nothing is reserved."""
    a, b = np.ones((32, 32), np.float16), np.ones((32, 32), np.float16)
    text = matmul_bias_relu_kernel.with_options(spec=TINY, backend="reference").inspect(
        a, b, np.zeros(32, np.float32), np.zeros((32, 32), np.float32), 32, 32, 32,
        BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)["schedule"]
    (line,) = [s for s in text.splitlines() if '"npu.handoff"' in s]
    assert 'wait_flags = ["M_FIX:0"]' in line and 'set_flags = ["MTE2_V:' in line
    assert "npu.handoff_ids" not in text
