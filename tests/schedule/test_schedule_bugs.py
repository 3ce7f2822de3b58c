"""Schedules that are right on hardware (issue 10, bugs 1-6): each kernel runs through
``kernel.simulate`` on the reference backend with every debug switch on (NaN-poisoned
buffers, copies landing at their wait, the race detector, the 1-bit flag check); numpy
is the oracle for the numbers, and the reported races and flag issues must be empty."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.errors import OutOfResources
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions
from npujit.sim.debug import find_races
from npujit.sim.isa import CoreProgram

from .kernels_for_tests import two_dots_kernel

FULL = DebugOptions.full()
PRESETS = [ASCEND_910B_LIKE, ASCEND_910_LIKE]


def _gm_races(report_launch) -> list:
    """Races over GM, one region per pointer argument (a store then a load of the same
    argument must be ordered): the copies' GM regions as slots for the race detector."""
    out = []
    for i, prog in enumerate(report_launch.programs):
        instrs = []
        for ins in prog.instrs:
            region = ins.gm_region if isinstance(ins.gm_region, tuple) else None
            if ins.kind == "copy" and region is not None:
                slot = ((f"GM:{region[0]}", 0),)
                if ins.path.endswith("_to_GM"):
                    ins = ins._replace(writes=tuple(ins.writes) + slot)
                else:
                    ins = ins._replace(reads=tuple(ins.reads) + slot)
            instrs.append(ins)
        out += [r for r in find_races(CoreProgram(prog.core, instrs), uninitialized=False,
                                      program_index=i) if r.buffer.startswith("GM:")]
    return out


def _clean(report):
    assert report.races == [], report.races[:3]
    assert report.flag_issues == [], report.flag_issues[:3]


# --- bug 1: a carried value that starts from a constant ----------------------------------

@npu_kernel
def row_sum_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    row = nl.program_id(0)
    s = 0.0
    for i in nl.range(0, n, BLOCK):
        s = s + nl.sum(nl.load(x_ptr + row * n + i + nl.arange(0, BLOCK)), axis=0)
    nl.store(out_ptr + row + nl.arange(0, 1), nl.reshape(s, (1,)))


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_bug1_carried_scalar_init_is_written_before_the_loop(spec):
    x = np.random.default_rng(1).random((2, 256)).astype(np.float32)
    out = np.zeros(2, np.float32)
    report = row_sum_kernel.simulate(x, out, 256, grid=(2,), spec=spec, debug=FULL, BLOCK=64)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)
    _clean(report)


# --- bug 2: software prefetch (a carried tile read on MTE3, rewritten on MTE2) --------------

@npu_kernel
def prefetch_copy_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    y = nl.load(x_ptr + offs)
    for i in nl.range(1, n, num_stages=2):
        nl.store(out_ptr + (i - 1) * BLOCK + offs, y)
        y = nl.load(x_ptr + i * BLOCK + offs)
    nl.store(out_ptr + (n - 1) * BLOCK + offs, y)


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_bug2_software_prefetch_orders_the_back_edge(spec):
    x = np.random.default_rng(2).random(5 * 64).astype(np.float32)
    out = np.zeros_like(x)
    report = prefetch_copy_kernel.simulate(x, out, 5, grid=(1,), spec=spec, debug=FULL,
                                           BLOCK=64)
    np.testing.assert_array_equal(out, x)
    _clean(report)


# --- bug 3: a masked load's `other` and the accumulator are the same zero splat ------------

@npu_kernel
def masked_accumulate_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr, STAGES: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    acc = nl.zeros((BLOCK,), nl.float32)
    for i in nl.range(0, n, BLOCK, num_stages=STAGES):
        acc = acc + nl.load(x_ptr + i + offs, mask=i + offs < n, other=0.0)
    nl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("stages", [1, 2])
def test_bug3_masked_other_never_shares_the_accumulator(stages):
    x = np.random.default_rng(3).random(200).astype(np.float32)
    out = np.zeros(64, np.float32)
    report = masked_accumulate_kernel.simulate(x, out, 200, grid=(1,), spec=ASCEND_910B_LIKE,
                                               debug=FULL, BLOCK=64, STAGES=stages)
    ref = np.zeros(64, np.float32)
    for i in range(0, 200, 64):
        ref[:len(x[i:i + 64])] += x[i:i + 64]
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    _clean(report)


# --- bug 4: GM read-after-write in one program ----------------------------------------------

@npu_kernel
def workspace_kernel(x_ptr, ws_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(ws_ptr + offs, nl.load(x_ptr + offs) * 3.0)
    nl.store(out_ptr + n + offs, nl.load(ws_ptr + offs) + 1.0)
    for i in nl.range(0, n, BLOCK):                  # phase 1 writes the workspace...
        nl.store(ws_ptr + i + offs, nl.load(x_ptr + i + offs) * 2.0)
    for i in nl.range(0, n, BLOCK):                  # ... phase 2 reads it back
        nl.store(out_ptr + i + offs, nl.load(ws_ptr + i + offs) + 1.0)


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_bug4_store_then_load_of_one_argument_is_ordered(spec):
    from npujit.jit.simulate import lower
    from npujit.sim import simulate

    x = np.random.default_rng(4).random(256).astype(np.float32)
    ws, out = np.zeros_like(x), np.zeros(320, np.float32)
    report = workspace_kernel.simulate(x, ws, out, 256, grid=(1,), spec=spec, debug=FULL,
                                       BLOCK=64)
    np.testing.assert_allclose(out[:256], x * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(out[256:], x[:64] * 3 + 1, rtol=1e-6)
    _clean(report)
    fn = workspace_kernel.with_options(spec=spec).compile(x, ws, out, 256, BLOCK=64).ir
    launch = lower(fn, (1,), [x, ws, out, 256], spec=spec)
    assert _gm_races(launch) == []
    assert simulate(launch, spec).cycles > 0


# --- bug 5: event ids given back by liveness --------------------------------------------------

@npu_kernel
def sequential_loops_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr, LOOPS: nl.constexpr,
                            STAGES: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    for k in nl.static_range(LOOPS):              # LOOPS loops, one after the other
        for i in nl.range(0, n, BLOCK, num_stages=STAGES):
            m = i + offs < n
            x = nl.load(x_ptr + k * n + i + offs, mask=m, other=0.0)
            nl.store(out_ptr + k * n + i + offs, x * 2.0 + k, mask=m)


@pytest.mark.parametrize("spec,loops,stages", [(ASCEND_910_LIKE, 2, 2),
                                               (ASCEND_910B_LIKE, 3, 3)],
                         ids=["910-like-2x2", "910b-like-3x3"])
def test_bug5_sequential_pipelined_loops_reuse_event_ids(spec, loops, stages):
    x = np.random.default_rng(5).random(loops * 200).astype(np.float16)
    out = np.zeros_like(x)
    report = sequential_loops_kernel.simulate(x, out, 200, grid=(1,), spec=spec, debug=FULL,
                                              BLOCK=64, LOOPS=loops, STAGES=stages)
    k = np.repeat(np.arange(loops), 200).astype(np.float16)
    np.testing.assert_array_equal(out, x * np.float16(2) + k)
    _clean(report)


@npu_kernel
def many_stages_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    for i in nl.range(0, n, BLOCK, num_stages=5):
        nl.store(out_ptr + i + offs, nl.load(x_ptr + i + offs) * 2.0)


def test_bug5_running_out_names_the_line_that_needs_the_ids():
    x = np.zeros(256, np.float32)
    with pytest.raises(OutOfResources) as err:
        many_stages_kernel.with_options(spec=ASCEND_910_LIKE).compile(x, x.copy(), 256,
                                                                      BLOCK=64)
    line = many_stages_kernel.fn.__code__.co_firstlineno + 3
    assert err.value.loc.line == line
    assert "event ids" in str(err.value) and "num_stages" in str(err.value)


# --- bug 6: ten tiles loaded up front, then reduced (1-bit flags) -----------------------------

@npu_kernel
def ten_tiles_kernel(x_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    tiles = []
    for k in nl.static_range(10):
        tiles.append(nl.load(x_ptr + k * BLOCK + offs))
    s = 0.0
    for k in nl.static_range(10):
        t = tiles[k]
        for j in nl.static_range(8):         # Vector work per tile > its load: MTE2 runs ahead
            t = t * 0.5 + tiles[k]
        s = s + nl.sum(t, axis=0)
    nl.store(out_ptr + nl.arange(0, 1), nl.reshape(s, (1,)))


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_bug6_no_set_finds_its_flag_still_set(spec):
    x = np.random.default_rng(8).random(10 * 2048).astype(np.float32)
    out = np.zeros(1, np.float32)
    report = ten_tiles_kernel.simulate(x, out, grid=(1,), spec=spec, debug=FULL, BLOCK=2048)
    t = x.reshape(10, 2048)
    ref = t.copy()
    for _ in range(8):
        ref = ref * np.float32(0.5) + t
    np.testing.assert_allclose(out[0], ref.sum(), rtol=1e-5)
    _clean(report)


# --- a K loop that runs no trips: the Cube's zero init must still reach L0C ---------------

@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_a_zero_trip_k_loop_still_writes_the_accumulator(spec):
    # The accumulator's zero init is the first mmad's cmatrixInitVal; with K = 0 no mmad
    # runs, so the schedule must zero L0C itself before the store reads it.
    from npujit.kernels.matmul import matmul_kernel
    M, N, K = 32, 48, 0
    a, b = np.ones((M, 1), np.float16), np.ones((1, N), np.float16)   # K = 0: never read
    out = np.full((M, N), 7.0, np.float32)
    report = matmul_kernel.with_options(backend="reference").simulate(
        a, b, out, M, N, K, 1, 1, N, 1, N, 1, grid=(1, 2), spec=spec, debug=FULL,
        BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, NUM_STAGES=2)
    np.testing.assert_array_equal(out, a[:, :K].astype(np.float32) @ b[:K].astype(np.float32))
    _clean(report)



# --- a persistent matmul: the scalar unit's loop flag in a loop inside a loop --------------

@npu_kernel
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_PROGRAMS: nl.constexpr,
                             BM: nl.constexpr, BN: nl.constexpr, BK: nl.constexpr):
    """Triton's persistent form: each program strides over output tiles; the offsets of
    every tile come from the scalar unit, the K loop's index tiles from the Vector."""
    tiles_n = nl.cdiv(N, BN)
    for tile in nl.range(nl.program_id(0), nl.cdiv(M, BM) * tiles_n, NUM_PROGRAMS):
        rm = (tile // tiles_n) * BM + nl.arange(0, BM)
        rn = (tile % tiles_n) * BN + nl.arange(0, BN)
        rk = nl.arange(0, BK)
        acc = nl.zeros((BM, BN), dtype=nl.float32)
        for k0 in range(0, K, BK):
            a = nl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
            b = nl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
            acc = nl.dot(a, b, acc)
        nl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("programs", [1, 2])
def test_a_loop_flag_of_the_scalar_unit_inside_an_outer_loop_is_set_once_at_a_time(programs):
    """The K loop's one-slot SCALAR -> VECTOR flag was pre-set at every tile (outer
    iteration) while the Vector had not yet drained the last one: FlagStillSetError.
    It is now pre-set around the outer loop (sync._presetting)."""
    rng = np.random.default_rng(11)
    M, N, K = 64, 48, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    report = persistent_matmul_kernel.with_options(backend="reference").simulate(
        a, b, c, M, N, K, grid=(programs,), spec=ASCEND_910B_LIKE, debug=FULL,
        NUM_PROGRAMS=programs, BM=16, BN=16, BK=32)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)
    _clean(report)


# --- a Cube accumulator the Vector rescales: flash attention -------------------------------

@npu_kernel
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, D: nl.constexpr, BM: nl.constexpr,
                     BN: nl.constexpr):
    """Triton's flash-attention forward: the accumulator is rescaled on the Vector
    (``acc * alpha``) and then given to the dot as its accumulator."""
    rm = nl.program_id(0) * BM + nl.arange(0, BM)
    rd = nl.arange(0, D)
    q = nl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = nl.full((BM,), float("-inf"), nl.float32)
    l_i = nl.zeros((BM,), nl.float32)
    acc = nl.zeros((BM, D), nl.float32)
    for start in range(0, S, BN):
        rn = start + nl.arange(0, BN)
        k = nl.load(k_ptr + rn[None, :] * D + rd[:, None])
        s = nl.dot(q, k)
        m_new = nl.maximum(m_i, nl.max(s, axis=1))
        p = nl.exp(s - m_new[:, None])
        alpha = nl.exp(m_i - m_new)
        l_i = l_i * alpha + nl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        v = nl.load(v_ptr + rn[:, None] * D + rd[None, :])
        acc = nl.dot(p.to(nl.float16), v, acc)
        m_i = m_new
    nl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


@npu_kernel
def decayed_dot_kernel(a_ptr, b_ptr, c_ptr, K, BM: nl.constexpr, BK: nl.constexpr):
    r = nl.arange(0, BM)
    rk = nl.arange(0, BK)
    acc = nl.zeros((BM, BM), nl.float32)
    for k0 in range(0, K, BK):
        a = nl.load(a_ptr + r[:, None] * K + (k0 + rk)[None, :])
        b = nl.load(b_ptr + (k0 + rk)[:, None] * BM + r[None, :])
        acc = acc * 0.5 + nl.dot(a, b)
    nl.store(c_ptr + r[:, None] * BM + r[None, :], acc)


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_an_accumulator_the_vector_rescales_stays_on_the_vector(spec):
    """``dot(p, v, acc * alpha)`` and ``acc * 0.5 + dot(a, b)``: the Vector's value cannot
    reach L0C, so the dot runs without it and the Vector adds (dot_accumulate.py); the
    910B-like part's simulation refused both before (the Vector core read L0C)."""
    rng = np.random.default_rng(12)
    S, D, BM, BN = 64, 16, 16, 16
    q, k, v = (rng.standard_normal((S, D)).astype(np.float16) for _ in range(3))
    o = np.zeros((S, D), np.float32)
    report = attention_kernel.with_options(backend="reference").simulate(
        q, k, v, o, S, grid=(S // BM,), spec=spec, debug=FULL, D=D, BM=BM, BN=BN)
    s = q.astype(np.float32) @ k.astype(np.float32).T
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v.astype(np.float32)
    np.testing.assert_allclose(o, want, rtol=2e-2, atol=2e-2)     # p rounded to f16
    _clean(report)
    K = 64
    a = rng.standard_normal((16, K)).astype(np.float16)
    b = rng.standard_normal((K, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    report = decayed_dot_kernel.with_options(backend="reference").simulate(
        a, b, c, K, grid=(1,), spec=spec, debug=FULL, BM=16, BK=32)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    want = (a32[:, :32] @ b32[:32]) * 0.5 + a32[:, 32:] @ b32[32:]
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    _clean(report)

# --- the checks that keep these fixed ---------------------------------------------------------

@pytest.mark.parametrize("stages", [1, 2])
def test_verify_schedule_refuses_a_carried_buffer_holding_two_live_values(stages):
    from npujit.ir import parse_function
    from npujit.ir.ops import Kind
    from npujit.ir.pipeline import CompileContext
    from npujit.ir.schedule import VerifySchedule
    from npujit.ir.schedule.verify import ScheduleError

    x = np.zeros(200, np.float32)
    sched = masked_accumulate_kernel.inspect(x, np.zeros(64, np.float32), 200, BLOCK=64,
                                             STAGES=stages)["schedule"]
    fn = parse_function(sched)
    VerifySchedule().run(fn, CompileContext(spec=ASCEND_910B_LIKE))      # as scheduled: fine
    (loop,) = [op for op in fn.body.ops if op.kind is Kind.FOR]
    copy = loop.operands[3].op               # the accumulator's own zero splat ...
    load = next(op for op in loop.body.ops if op.kind is Kind.LOAD)
    loop.set_operand(3, load.operand("other"))  # ... replaced by the load's `other` again
    with pytest.raises(ScheduleError, match="two live values"):
        VerifySchedule().run(fn, CompileContext(spec=ASCEND_910B_LIKE))
    assert copy.kind is Kind.SPLAT


@pytest.mark.parametrize("stages", [1, 2])
def test_two_dots_split_into_l0_chunks_in_one_loop(stages):
    # Each dot cycles its own L0 slots chunk by chunk; the slot-release flag of the loop
    # was merged across the two dots (the first dot waited for it, the second set it), so
    # the first dot's second chunk waited for a set that came only after it: a deadlock.
    M, N, K = 32, 32, 256
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = rng.standard_normal((K, N)).astype(np.float16)
    o1, o2 = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    report = two_dots_kernel.simulate(a, b, c, o1, o2, M, N, K, grid=(1,),
                                        spec=ASCEND_910B_LIKE, debug=FULL, BM=M, BN=N,
                                        BK=128, NUM_STAGES=stages, L0_BLOCK_K=32)
    a32 = a.astype(np.float32)
    np.testing.assert_allclose(o1, a32 @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(o2, a32 @ c.astype(np.float32), rtol=1e-3, atol=1e-3)
    _clean(report)


# --- bug 7: a masked load with a non-zero `other`, three or four stages ----------------------

@npu_kernel
def sum_and_max_kernel(a_ptr, b_ptr, out_ptr, R, C, BR: nl.constexpr, BC: nl.constexpr,
                       STAGES: nl.constexpr):
    rows = nl.program_id(0) * BR + nl.arange(0, BR)
    s = nl.zeros((BR,), dtype=nl.float32)
    mx = nl.full((BR,), float("-inf"), nl.float32)
    for c0 in nl.range(0, C, BC, num_stages=STAGES):
        cols = c0 + nl.arange(0, BC)
        m = (rows[:, None] < R) & (cols[None, :] < C)
        a = nl.load(a_ptr + rows[:, None] * C + cols[None, :], mask=m, other=0.0)
        b = nl.load(b_ptr + rows[:, None] * C + cols[None, :], mask=m, other=-1e4)
        s += nl.sum(a, axis=1)
        mx = nl.maximum(mx, nl.max(b, axis=1))
    nl.store(out_ptr + rows, s, mask=rows < R)
    nl.store(out_ptr + R + rows, mx, mask=rows < R)


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_bug7_a_filled_slot_is_released_by_its_data_flag(stages):
    # The Vector fills b's slot with -1e4, MTE2 loads into it, and its MTE2_V data flag
    # also says the slot is free for the next fill: one MTE2_V flag, not two.  With two
    # (and a's), 3 stages needed 9 ids of the 8 (OutOfResources).
    R, C = 20, 300
    rng = np.random.default_rng(9)
    a = rng.standard_normal((R, C)).astype(np.float32)
    b = rng.standard_normal((R, C)).astype(np.float32)
    out = np.zeros(2 * R, np.float32)
    report = sum_and_max_kernel.simulate(a, b, out, R, C, grid=(1,), spec=ASCEND_910B_LIKE,
                                         debug=FULL, BR=32, BC=64, STAGES=stages)
    np.testing.assert_allclose(out[:R], a.sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(out[R:], b.max(axis=1))
    _clean(report)


# --- bug 8: a masked load's fill in a slot of its own ---------------------------------------

@npu_kernel
def row_softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: nl.constexpr,
                       STAGES: nl.constexpr):
    cols = nl.arange(0, BLOCK)
    for r in nl.range(nl.program_id(0), n_rows, nl.num_programs(0), num_stages=STAGES):
        x = nl.load(x_ptr + r * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        e = nl.exp(x - nl.max(x, 0))
        nl.store(out_ptr + r * n_cols + cols, e / nl.sum(e, 0), mask=cols < n_cols)


@pytest.mark.parametrize("spec", [ASCEND_910_LIKE, ASCEND_910B_LIKE], ids=lambda s: s.name)
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_bug8_a_masked_load_is_filled_in_its_own_slot(spec, stages):
    # Triton's softmax tutorial loads with other=-inf.  The fill was a UB tile of its own
    # (a second buffer per stage) and a second V_MTE2 flag per slot: at 3 and 4 stages the
    # 910-like part's 4 ids ran out (OutOfResources).  Now the Vector fills the load's
    # slot, MTE2 lands the masked-in lanes on top, as the emitted Ascend C does.
    from npujit.ir import Kind, parse_function
    n_rows, n_cols = 13, 300
    rng = np.random.default_rng(8)
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    out = np.zeros_like(x)
    meta = dict(BLOCK=512, STAGES=stages)
    fn = parse_function(row_softmax_kernel.with_options(spec=spec)
                        .inspect(x, out, n_rows, n_cols, **meta)["schedule"])
    (load,) = [op for op in fn.walk() if op.kind is Kind.LOAD]
    fill = load.operand("other").op
    assert fill.kind is Kind.SPLAT and fill.attrs["buffer"] == load.attrs["buffer"]
    report = row_softmax_kernel.simulate(x, out, n_rows, n_cols, grid=(4,), spec=spec,
                                         debug=FULL, **meta)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-6, atol=1e-7)
    _clean(report)
