"""The split-cores step (ir/schedule/split_cores.py) on the 910B-like part: values handed
between the AIC and the AIV through GM workspace slots inside loops and in both directions,
simulated under the full debug options (buffers poisoned, copies landing at their wait,
races and 1-bit flags checked) against numpy."""
import os
import subprocess
import sys

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.ir.parser import parse_function
from npujit.ir.pipeline import schedule
from npujit.ir.printer import print_function
from npujit.sim import ASCEND_910B_LIKE, DebugOptions

SPEC = ASCEND_910B_LIKE
RNG = np.random.default_rng(11)


def blk(ptr, rows, cols, block_rows, block_cols):
    """A block pointer at (0, 0) into a row-major [rows, cols] array."""
    return nl.make_block_ptr(ptr, shape=(rows, cols), strides=(cols, 1), offsets=(0, 0),
                             block_shape=(block_rows, block_cols))


@npu_kernel
def dot_relu_sum_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK_M: nl.constexpr, BLOCK_N: nl.constexpr,
                        BLOCK_K: nl.constexpr, STAGES: nl.constexpr):
    # c = sum_k relu(a[:, k-block] @ b[k-block, :]): a fresh Cube result per iteration, read
    # by the Vector unit in the same iteration (a hand-off per iteration).
    a_blk = blk(a_ptr, BLOCK_M, K, BLOCK_M, BLOCK_K)
    b_blk = blk(b_ptr, K, BLOCK_N, BLOCK_K, BLOCK_N)
    acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    for k in nl.range(0, K, BLOCK_K, num_stages=STAGES):
        s = nl.dot(nl.load(a_blk), nl.load(b_blk))
        acc = acc + nl.maximum(s, 0.0)
        a_blk = nl.advance(a_blk, (0, BLOCK_K))
        b_blk = nl.advance(b_blk, (BLOCK_K, 0))
    nl.store(blk(c_ptr, BLOCK_M, BLOCK_N, BLOCK_M, BLOCK_N), acc)


@npu_kernel
def mlp_kernel(x_ptr, w1_ptr, w2_ptr, y_ptr, M: nl.constexpr, H: nl.constexpr,
               F: nl.constexpr):
    # y = relu(x @ w1) @ w2: Cube -> Vector -> Cube, stored by the FixPipe.
    x = nl.load(blk(x_ptr, M, H, M, H))
    w1 = nl.load(blk(w1_ptr, H, F, H, F))
    w2 = nl.load(blk(w2_ptr, F, H, F, H))
    h = nl.maximum(nl.dot(x, w1), 0.0).to(nl.float16)
    y = nl.dot(h, w2)
    nl.store(blk(y_ptr, M, H, M, H), y)


@npu_kernel
def ffn_kernel(x_ptr, wg_ptr, wu_ptr, wd_ptr, y_ptr, I, M: nl.constexpr, H: nl.constexpr,
               BLOCK_I: nl.constexpr, STAGES: nl.constexpr):
    # The expert FFN's shape: per I chunk, gate and up GEMMs on the Cube, silu(g) * u on the
    # Vector unit, back to the Cube for the down GEMM accumulating over I; the result
    # scaled by the Vector unit on the way out (the combine's routing weight).
    x = nl.load(blk(x_ptr, M, H, M, H))
    g_blk = blk(wg_ptr, H, I, H, BLOCK_I)
    u_blk = blk(wu_ptr, H, I, H, BLOCK_I)
    d_blk = blk(wd_ptr, I, H, BLOCK_I, H)
    acc = nl.zeros((M, H), dtype=nl.float32)
    for i in nl.range(0, I, BLOCK_I, num_stages=STAGES):
        g = nl.dot(x, nl.load(g_blk))
        u = nl.dot(x, nl.load(u_blk))
        a = (nl.silu(g) * u).to(nl.float16)
        acc = nl.dot(a, nl.load(d_blk), acc)
        g_blk = nl.advance(g_blk, (0, BLOCK_I))
        u_blk = nl.advance(u_blk, (0, BLOCK_I))
        d_blk = nl.advance(d_blk, (BLOCK_I, 0))
    nl.store(blk(y_ptr, M, H, M, H), acc * 0.5)


def _f16(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


def _checked(report):
    assert report.races == [] and report.flag_issues == []
    kinds = [p.kind for p in report.programs]
    assert kinds == ["AIC", "AIV"]                 # one program: one AIC + AIV group
    return report


@pytest.mark.parametrize("stages", [1, 2])
def test_cube_result_handed_to_the_vector_core_every_iteration(stages):
    m, n, k, bk = 32, 32, 128, 32
    a, b = _f16(m, k), _f16(k, n)
    c = np.zeros((m, n), np.float32)
    r = _checked(dot_relu_sum_kernel.simulate(
        a, b, c, k, grid=(1,), spec=SPEC, debug=DebugOptions.full(),
        BLOCK_M=m, BLOCK_N=n, BLOCK_K=bk, STAGES=stages))
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    want = sum(np.maximum(a32[:, j:j + bk] @ b32[j:j + bk], 0) for j in range(0, k, bk))
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3)
    trips, tile = k // bk, m * n * 4
    # every iteration's result crosses: FixPipe into the workspace, MTE2 back into UB
    assert r.bytes_by_path["L0C_to_GM"] == trips * tile
    assert r.bytes_by_path["GM_to_UB"] == trips * tile


def test_vector_result_handed_back_to_the_cube():
    m, h, f = 32, 64, 32
    x, w1, w2 = _f16(m, h), _f16(h, f, scale=0.2), _f16(f, h, scale=0.2)
    y = np.zeros((m, h), np.float32)
    r = _checked(mlp_kernel.simulate(x, w1, w2, y, grid=(1,), spec=SPEC,
                                     debug=DebugOptions.full(), M=m, H=h, F=f))
    hid = np.maximum(x.astype(np.float32) @ w1.astype(np.float32), 0).astype(np.float16)
    want = hid.astype(np.float32) @ w2.astype(np.float32)
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
    # Cube -> Vector: the f32 hidden tile; Vector -> Cube: its f16 cast, UB -> GM -> L1
    assert r.bytes_by_path["L0C_to_GM"] == m * f * 4 + m * h * 4   # + y stored by FixPipe
    assert r.bytes_by_path["UB_to_GM"] == m * f * 2
    assert r.bytes_by_path["GM_to_L1"] == (m * h + h * f + f * h) * 2 + m * f * 2


def _ffn_want(x, wg, wu, wd, block_i):
    x32 = x.astype(np.float32)
    acc = np.zeros((x.shape[0], wd.shape[1]), np.float32)
    for i in range(0, wg.shape[1], block_i):
        g = x32 @ wg[:, i:i + block_i].astype(np.float32)
        u = x32 @ wu[:, i:i + block_i].astype(np.float32)
        a = (g / (1 + np.exp(-g)) * u).astype(np.float16)
        acc += a.astype(np.float32) @ wd[i:i + block_i].astype(np.float32)
    return acc * 0.5


@pytest.mark.parametrize("stages", [1, 2])
def test_expert_ffn_in_one_kernel(stages):
    m, h, i_size, bi = 16, 64, 96, 32
    x = _f16(m, h)
    wg, wu = _f16(h, i_size, scale=0.2), _f16(h, i_size, scale=0.2)
    wd = _f16(i_size, h, scale=0.2)
    y = np.zeros((m, h), np.float32)
    r = _checked(ffn_kernel.simulate(x, wg, wu, wd, y, i_size, grid=(1,), spec=SPEC,
                                     debug=DebugOptions.full(), M=m, H=h, BLOCK_I=bi,
                                     STAGES=stages))
    np.testing.assert_allclose(y, _ffn_want(x, wg, wu, wd, bi), rtol=2e-3, atol=2e-3)
    trips = i_size // bi
    # per I chunk: g and u to the AIV (f32), a back to the AIC (f16); once: acc to the AIV
    assert r.bytes_by_path["L0C_to_GM"] == trips * 2 * m * bi * 4 + m * h * 4
    assert r.bytes_by_path["UB_to_GM"] == trips * m * bi * 2 + m * h * 4


def _scheduled_text(kernel, *args, **meta):
    return kernel.with_options(spec=SPEC, backend="reference").inspect(*args, **meta)["schedule"]


def test_the_split_is_in_the_scheduled_ir_and_round_trips():
    m, h, i_size, bi = 16, 64, 64, 32
    args = (_f16(m, h), _f16(h, i_size), _f16(h, i_size), _f16(i_size, h),
            np.zeros((m, h), np.float32), i_size)
    text = _scheduled_text(ffn_kernel, *args, M=m, H=h, BLOCK_I=bi, STAGES=2)
    handoffs = [line for line in text.splitlines() if '"npu.handoff"' in line]
    # g, u (FixPipe -> UB) and a (MTE3 -> L1) per iteration, acc once after the loop
    assert sum('src_pipe = "FIXP"' in s and 'scope = "UB"' in s for s in handoffs) == 3
    assert sum('src_pipe = "MTE3"' in s and 'scope = "L1"' in s for s in handoffs) == 1
    assert 'npu.sides = ["AIC", "AIV"]' in text
    fn = parse_function(text)
    assert print_function(fn) == text
    # scheduling it again starts from the unsplit kernel (clear-schedule drops the
    # hand-offs) and splits it the same way
    schedule(fn, SPEC)
    assert print_function(fn) == text


def test_dump_after_split_cores_shows_the_hand_offs(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from test_core_split import mlp_kernel, SPEC\n"
        "x = np.ones((32, 64), np.float16); w = np.ones((64, 32), np.float16)\n"
        "mlp_kernel.with_options(spec=SPEC, backend='reference')[(1,)](\n"
        "    x, w, w.T.copy(), np.zeros((32, 64), np.float32), M=32, H=64, F=32)\n")
    env = dict(os.environ, NPUJIT_DUMP_IR="after:split-cores")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, check=True).stderr
    assert "// -----// IR after split-cores //----- //" in out
    assert out.count('"npu.handoff"') == 2 and "buffer =" not in out   # not allocated yet


def test_cpu_tiers_run_the_hand_off_as_the_identity():
    """The scheduled IR with its hand-offs on both CPU tiers (each has an entry for
    npu.handoff; tests/ir/test_op_records.py checks they exist)."""
    m, h, f = 32, 64, 32
    x, w1, w2 = _f16(m, h), _f16(h, f, scale=0.2), _f16(f, h, scale=0.2)
    hid = np.maximum(x.astype(np.float32) @ w1.astype(np.float32), 0).astype(np.float16)
    want = hid.astype(np.float32) @ w2.astype(np.float32)
    for backend in ("reference", "numba"):
        got = np.zeros((m, h), np.float32)
        mlp_kernel.with_options(spec=SPEC, backend=backend)[(1,)](x, w1, w2, got, M=m, H=h,
                                                                   F=f)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3, err_msg=backend)


def test_fused_moe_layer_runs_its_one_kernel_expert_ffn_on_the_910b():
    """kernels/moe's on-chip form (fused_experts_kernel: gate/up GEMMs, act * up on the
    Vector unit, the down GEMM per I chunk, the weighted atomic add) in one kernel on the
    separated part, where it needed the two-kernel workspace form before."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from moe.conftest import close, problem
    from npujit.kernels.moe import reference as ref
    from npujit.kernels.moe.launch import simulate_all
    from npujit.kernels.moe.layer import fused_plan

    x, router, gate_up, down, _ = problem(T=24, H=64, I=32, E=8, dtype=np.float16, seed=4)
    launches, out = fused_plan(x, router, gate_up, down, 2, "mixtral", form="onchip")
    reports = dict(simulate_all(launches, SPEC, debug=DebugOptions.full()))
    close(out, ref.moe(x, router, gate_up, down, 2, "mixtral"), np.float16)
    r = reports["fused_experts_kernel"]
    assert r.races == [] and r.flag_issues == []
    kinds = [p.kind for p in r.programs]
    assert kinds == ["AIC", "AIV"] * (len(kinds) // 2)
    # a used block hands gate and up to the AIV and act * up back per I chunk (I = one
    # chunk here), and its fp32 accumulator once at the end
    assert r.bytes_by_path["L0C_to_GM"] > 0 and r.bytes_by_path["GM_to_L1"] > 0


@npu_kernel
def matmul_relu_kernel(a_ptr, b_ptr, c_ptr, M: nl.constexpr, N: nl.constexpr,
                       K: nl.constexpr):
    acc = nl.zeros((M, N), dtype=nl.float32)
    acc = nl.dot(nl.load(blk(a_ptr, M, K, M, K)), nl.load(blk(b_ptr, K, N, K, N)), acc)
    nl.store(blk(c_ptr, M, N, M, N), nl.maximum(acc, 0.0))


def test_ascend_c_emits_the_cube_to_vector_hand_off():
    # the AIC's L0C result reaches the AIV through the GM workspace (CrossCoreSetFlag /
    # CrossCoreWaitFlag), run on the CPU twin against numpy
    rng = np.random.default_rng(4)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    c = np.zeros((32, 32), np.float32)
    matmul_relu_kernel.with_options(backend="ascendc-twin")[(1,)](a, b, c, M=32, N=32, K=32)
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


@npu_kernel
def relu_matmul_kernel(a_ptr, b_ptr, c_ptr, M: nl.constexpr, N: nl.constexpr, K: nl.constexpr):
    a = nl.maximum(nl.load(blk(a_ptr, M, K, M, K)), 0.0)     # on the Vector, then to the Cube
    acc = nl.zeros((M, N), dtype=nl.float32)
    acc = nl.dot(a, nl.load(blk(b_ptr, K, N, K, N)), acc)
    nl.store(blk(c_ptr, M, N, M, N), acc)


def test_ascend_c_emits_the_vector_to_cube_hand_off():
    # relu on the AIV, UB -> GM workspace -> L1 on the AIC (CrossCoreSetFlag<2, PIPE_MTE3>),
    # against numpy on the CPU twin
    a, b = _f16(32, 32), _f16(32, 32)
    c = np.zeros((32, 32), np.float32)
    relu_matmul_kernel.with_options(backend="ascendc-twin")[(1,)](a, b, c, M=32, N=32, K=32)
    want = np.maximum(a.astype(np.float32), 0) @ b.astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("stages", [1, 2])
def test_ascend_c_hand_offs_both_ways_inside_a_loop(stages):
    # the expert FFN's shape: per I chunk gate/up to the AIV and silu(g) * u back to the
    # AIC, a workspace slot per stage and a flag back per hand-off; the twin runs the
    # block's AIC and AIV side by side
    m, h, i_size, bi = 16, 64, 96, 32
    args = (_f16(m, h), _f16(h, i_size, scale=0.2), _f16(h, i_size, scale=0.2),
            _f16(i_size, h, scale=0.2))
    y = np.zeros((m, h), np.float32)
    ffn_kernel.with_options(backend="ascendc-twin")[(1,)](
        *args, y, i_size, M=m, H=h, BLOCK_I=bi, STAGES=stages)
    np.testing.assert_allclose(y, _ffn_want(*args, bi), rtol=2e-3, atol=2e-3)


def test_twin_names_a_cross_core_flag_both_cores_wait_for():
    # without the AIV's flag back, the AIC waits for it before rewriting the gate slot in
    # the second iteration while the AIV waits for that slot: both cores wait, the twin
    # says so (a hang on the device) instead of hanging
    from npujit.backends.ascendc import AscendCTwinKernel, TwinDeviceError
    args = (_f16(16, 64), _f16(64, 96, scale=0.2), _f16(64, 96, scale=0.2), _f16(96, 64, scale=0.2))
    y = np.zeros((16, 64), np.float32)
    k = ffn_kernel.with_options(backend="ascendc-twin")
    k[(1,)](*args, y, 96, M=16, H=64, BLOCK_I=32, STAGES=1)
    run = next(iter(k.cache.values())).runnable()
    gate = next(op for op in run.fn.walk() if op.kind.value == "npu.handoff")
    back = int(gate.attrs["cross_flags"][1])          # the gate slot's way back
    edited = run.source.replace(f"AscendC::CrossCoreSetFlag<2, PIPE_MTE2>({back});", "", 1)
    assert edited != run.source
    with pytest.raises(TwinDeviceError, match=r"CrossCoreWaitFlag\(\d+\) with no CrossCoreSetFlag"):
        AscendCTwinKernel(run.fn, run.options, source=edited)((1,), [*(a.ravel() for a in args), y.ravel(), 96])


def test_verify_schedule_refuses_hand_offs_sharing_a_cross_core_flag():
    from npujit.ir.pipeline import CompileContext
    from npujit.ir.schedule.verify import ScheduleError, VerifySchedule
    x, w = np.ones((32, 64), np.float16), np.ones((64, 32), np.float16)
    text = _scheduled_text(mlp_kernel, x, w, w.T.copy(), np.zeros((32, 64), np.float32),
                           M=32, H=64, F=32)
    assert "cross_flags = array<i64: 1>" in text          # the second hand-off's own id
    bad = parse_function(text.replace("cross_flags = array<i64: 1>",
                                      "cross_flags = array<i64: 0>"))
    with pytest.raises(ScheduleError, match="cross-core flags"):
        VerifySchedule().run(bad, CompileContext(spec=SPEC, dump=""))


def test_numba_recording_lowers_the_hand_offs_as_the_reference_does():
    m, h, i_size, bi = 16, 64, 96, 32
    args = (_f16(m, h), _f16(h, i_size, scale=0.2), _f16(h, i_size, scale=0.2),
            _f16(i_size, h, scale=0.2))
    cycles = {}
    for backend in ("reference", "numba"):
        y = np.zeros((m, h), np.float32)
        r = ffn_kernel.with_options(backend=backend).simulate(
            *args, y, i_size, grid=(2,), spec=SPEC, M=m, H=h, BLOCK_I=bi, STAGES=2)
        np.testing.assert_allclose(y, _ffn_want(*args, bi), rtol=2e-3, atol=2e-3)
        cycles[backend] = r.cycles
    assert cycles["numba"] == cycles["reference"] > 0


@npu_kernel(backend="reference")
def two_loop_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n, D: nl.constexpr,
                              B: nl.constexpr, STAGES: nl.constexpr):
    # Causal flash attention's shape: two KV loops one after the other, each handing the
    # scores to the Vector core and the probabilities back to the Cube.
    r = nl.arange(0, B)
    d = nl.arange(0, D)
    q = nl.load(q_ptr + r[:, None] * D + d[None, :])
    acc = nl.zeros((B, D), dtype=nl.float32)
    for half in nl.static_range(2):
        for s in nl.range(half * (n // 2), (half + 1) * (n // 2), B, num_stages=STAGES):
            kt = nl.load(k_ptr + d[:, None] + (s + r)[None, :] * D)
            p = nl.exp(nl.dot(q, kt) * 0.125)
            v = nl.load(v_ptr + (s + r)[:, None] * D + d[None, :])
            acc = acc * 0.5 + nl.dot(p.to(nl.float16), v)
    nl.store(o_ptr + r[:, None] * D + d[None, :], acc)


@pytest.mark.parametrize("stages", [1, 2])
def test_loops_one_after_another_take_the_same_cross_core_flag_ids(stages):
    """Three hand-offs per loop take 6 of the 11 cross-core flag ids; the second loop takes
    the first loop's again (the sender's post-loop waits took the receiver's last "slot
    read" flags), where a kernel-wide pool ran out at 12 (causal flash attention raised
    OutOfResources on every launch, CPU ones included)."""
    n, d, b = 128, 32, 32
    q, k, v = (_f16(n, d, scale=0.3) for _ in range(3))
    o = np.zeros((b, d), np.float32)
    meta = dict(D=d, B=b, STAGES=stages)
    fn = parse_function(_scheduled_text(two_loop_attention_kernel, q, k, v, o, n, **meta))
    by_loop: dict = {}
    for op in fn.walk():
        if op.kind.value == "npu.handoff":
            loop = op.parent.parent_op
            by_loop.setdefault(id(loop), []).extend(int(i) for i in op.attrs["cross_flags"])
    first, second = by_loop.values()
    assert len(first) == len(set(first)) and sorted(first) == sorted(second)
    _checked(two_loop_attention_kernel.simulate(q, k, v, o, n, grid=(1,), spec=SPEC,
                                                debug=DebugOptions.full(), **meta))
    acc = np.zeros((b, d), np.float32)
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
    for s in range(0, n, b):
        p = np.exp(q32[:b] @ k32[s:s + b].T * 0.125).astype(np.float16).astype(np.float32)
        acc = acc * 0.5 + p @ v32[s:s + b]
    np.testing.assert_allclose(o, acc, rtol=2e-3, atol=2e-3)
