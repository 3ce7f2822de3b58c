"""group-loads (ir/schedule/load_order.py) and the one flag after a run of loads
(ir/schedule/sync.py ``_LoadRuns``): a loop feeding two dots from one row tile, as an
MoE expert's gate and up projections do."""
import numpy as np
import pytest

from npujit.ir import Kind, parse_function
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions

from .kernels_for_tests import two_dots_kernel

FULL = DebugOptions.full()


def _inputs(M=32, N=32, K=256):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = rng.standard_normal((K, N)).astype(np.float16)
    return a, b, c, np.zeros((M, N), np.float32), np.zeros((M, N), np.float32), M, N, K


def _meta(stages, l0):
    return dict(BM=32, BN=32, BK=64, NUM_STAGES=stages, L0_BLOCK_K=l0)


def _body(stages, l0=0):
    k = two_dots_kernel.with_options(spec=ASCEND_910B_LIKE)
    fn = parse_function(k.inspect(*_inputs(), **_meta(stages, l0))["schedule"])
    (loop,) = [op for op in fn.walk() if op.kind is Kind.FOR]
    return [op for op in loop.body.ops if op.kind is not Kind.YIELD]


def _kinds(ops):
    return [op.kind for op in ops if op.kind in (Kind.BLOCK_LOAD, Kind.DOT)]


def _mte2_mte1_sets(ops):
    return [f for op in ops if op.attrs.get("pipe") == "MTE2"
            for f in op.attrs.get("set_flags", ()) if (f.src, f.dst) == ("MTE2", "MTE1")]


@pytest.mark.parametrize("l0", [0, 32])
def test_two_stage_loop_loads_its_tiles_first_and_flags_them_once(l0):
    ops = _body(2, l0)
    assert _kinds(ops) == [Kind.BLOCK_LOAD] * 3 + [Kind.DOT] * 2
    # one MTE2 -> MTE1 flag (two ids: its slots), set after the last load
    assert len(_mte2_mte1_sets(ops)) == 1
    last_load = [op for op in ops if op.kind is Kind.BLOCK_LOAD][-1]
    assert _mte2_mte1_sets([last_load]) == _mte2_mte1_sets(ops)


def test_one_stage_loop_keeps_its_order_and_a_flag_per_reader():
    # one slot: the first dot may start on a and b while c loads, so nothing moves
    ops = _body(1)
    assert _kinds(ops) == [Kind.BLOCK_LOAD, Kind.BLOCK_LOAD, Kind.DOT, Kind.BLOCK_LOAD,
                           Kind.DOT]
    assert len(_mte2_mte1_sets(ops)) == 2


@pytest.mark.parametrize("stages", [1, 2])
def test_grouped_loads_simulate_right_and_race_free(stages):
    a, b, c, o1, o2, M, N, K = _inputs()
    report = two_dots_kernel.simulate(a, b, c, o1, o2, M, N, K, grid=(1,),
                                      spec=ASCEND_910B_LIKE, debug=FULL, **_meta(stages, 0))
    a32 = a.astype(np.float32)
    np.testing.assert_allclose(o1, a32 @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(o2, a32 @ c.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert report.races == [] and report.flag_issues == []


@pytest.mark.parametrize("spec", [ASCEND_910_LIKE, ASCEND_910B_LIKE], ids=lambda s: s.name)
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_the_v_load_moves_past_the_softmax(spec, stages):
    """Flash attention's V load moves up past the fused softmax (on the 910B-like part:
    the AIV's softmax and the hand-offs, the other core's stream) to the K load, so the
    two share one MTE2 -> MTE1 flag per step.  The 910-like part's 4 ids held 2 stages of
    two flags, and at 3-4 stages the 910B-like part's 8 did not hold K's, V's and the
    hand-off's; its scores in L0C and hand-off tiles in UB are ping-pong (allocate.py
    ``_stages``): a slot per stage overflowed L0C at head dim 128 and UB at 4 stages."""
    from .kernels_for_tests import attention_kernel
    rng = np.random.default_rng(4)
    n, d = 100, 32
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) for _ in range(3))
    o = np.zeros((n, d), np.float32)
    meta = dict(D=d, BM=32, BN=32, NUM_STAGES=stages)
    fn = parse_function(attention_kernel.with_options(spec=spec)
                        .inspect(q, k, v, o, n, **meta)["schedule"])
    (loop,) = [op for op in fn.walk() if op.kind is Kind.FOR]
    kinds = [op.kind for op in loop.body.ops if op.kind in (Kind.BLOCK_LOAD, Kind.LOAD,
                                                            Kind.DOT)]
    assert kinds[:2] in ([Kind.BLOCK_LOAD] * 2, [Kind.LOAD] * 2) and len(kinds) == 4
    loads = [op for op in loop.body.ops if op.kind in (Kind.BLOCK_LOAD, Kind.LOAD)]
    assert len(_mte2_mte1_sets(loads)) == 1
    staged = [op.attrs["stages"] for op in loop.body.ops if op.kind is Kind.HANDOFF
              or (op.kind is Kind.DOT and op.attrs["scope"] == "L0C" and len(op.operands) == 2)]
    assert staged and all(s <= 2 for s in staged)
    if spec is ASCEND_910B_LIKE:     # handed to the AIV: a transfer, two slots
        assert all(s == min(stages, 2) for s in staged)
    report = attention_kernel.simulate(q, k, v, o, n, grid=(4,), spec=spec,
                                       debug=FULL, **meta)
    s = q.astype(np.float32) @ k.astype(np.float32).T
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v.astype(np.float32)
    np.testing.assert_allclose(o, want, atol=2e-2)
    assert report.races == [] and report.flag_issues == []
