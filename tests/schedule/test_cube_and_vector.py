"""A value the Cube and the Vector unit would share (ir/schedule/placement.py): a zero
init CSE made one for a dot accumulator and a Vector one, and a loaded tile read both
as a dot operand and by Vector work.  On a separated part the two cores share no
on-chip memory, so each side gets its own."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.ir import Kind, parse_function
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions

FULL = DebugOptions.full()
PRESETS = [ASCEND_910B_LIKE, ASCEND_910_LIKE]


@npu_kernel(backend="reference")
def dot_beside_vector_kernel(x_ptr, w_ptr, o_ptr, N, K, BM: nl.constexpr, BN: nl.constexpr,
                             BK: nl.constexpr, STAGES: nl.constexpr):
    rm, rn = nl.arange(0, BM), nl.arange(0, BN)
    acc = nl.zeros((BM, BN), dtype=nl.float32)      # CSE makes these two one zero tile
    hits = nl.zeros((BM, BN), dtype=nl.float32)
    rows = nl.zeros((BM,), dtype=nl.float32)
    for k0 in nl.range(0, K, BK, num_stages=STAGES):
        kk = k0 + nl.arange(0, BK)
        x = nl.load(x_ptr + rm[:, None] * K + kk[None, :])
        w = nl.load(w_ptr + kk[:, None] * N + rn[None, :])
        hits += 1.0
        rows += nl.sum(x.to(nl.float32), axis=1)     # x also feeds the dot below
        acc = nl.dot(x, w, acc)
    r = rm[:, None] * N + rn[None, :]
    nl.store(o_ptr + r, acc)
    nl.store(o_ptr + BM * N + r, hits)
    nl.store(o_ptr + 2 * BM * N + rm, rows)


def _problem(M=32, N=32, K=128):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((M, K)).astype(np.float16)
    w = rng.standard_normal((K, N)).astype(np.float16)
    return x, w, np.zeros(2 * M * N + M, np.float32), N, K, dict(BM=M, BN=N, BK=32)


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_dot_and_vector_accumulators_simulate_right_and_race_free(spec, stages):
    # Before: on the 910B-like part the simulator refused the split ("the Vector core
    # reads L0C"), and the Vector's row sum read an L1 tile nothing wrote for it.
    x, w, out, N, K, meta = _problem()
    M = meta["BM"]
    report = dot_beside_vector_kernel.simulate(x, w, out, N, K, grid=(1,), spec=spec,
                                               debug=FULL, STAGES=stages, **meta)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(out[:M * N].reshape(M, N), x32 @ w.astype(np.float32),
                               rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(out[M * N:2 * M * N], K // meta["BK"])
    np.testing.assert_allclose(out[2 * M * N:], x32.sum(axis=1), rtol=1e-5, atol=1e-4)
    assert report.races == [] and report.flag_issues == []


def test_a_tile_read_by_the_cube_and_the_vector_is_loaded_into_each():
    x, w, out, N, K, meta = _problem()
    k = dot_beside_vector_kernel.with_options(spec=ASCEND_910B_LIKE)
    fn = parse_function(k.inspect(x, w, out, N, K, STAGES=2, **meta)["schedule"])
    (loop,) = [op for op in fn.walk() if op.kind is Kind.FOR]
    loads = [op for op in loop.body.ops if op.kind is Kind.BLOCK_LOAD
             and op.operands[0].name == "x_ptr"]
    assert sorted(str(op.attrs["scope"]) for op in loads) == ["L1", "UB"]
    inits = [op.attrs.get("scope") for op in fn.body.ops if op.kind is Kind.SPLAT]
    assert "L0C" in [str(s) for s in inits] and "UB" in [str(s) for s in inits]


def test_cpu_run_matches_numpy():
    x, w, out, N, K, meta = _problem()
    M = meta["BM"]
    dot_beside_vector_kernel[(1,)](x, w, out, N, K, STAGES=2, **meta)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(out[:M * N].reshape(M, N), x32 @ w.astype(np.float32),
                               rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(out[2 * M * N:], x32.sum(axis=1), rtol=1e-5, atol=1e-4)
