"""sim/ir_roofline.py, the IR's lower bound the autotuner prunes with before recording: never
above the simulated cycles (random matmul configs with ragged edges, transposed operands,
grids with idle programs; lane copies in loops; a dot with a vector epilogue), and a sweep pruned with it picks the
config that simulating every config directly ranks first."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import Config, autotune, cdiv, npu_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.moe.router import router_args, router_kernel
from npujit.sim import DebugOptions
from npujit.sim.ir_roofline import ir_bound
from npujit.target import ASCEND_910B_LIKE


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NPUJIT_AUTOTUNE_WORKERS", "0")
    monkeypatch.delenv("NPUJIT_DISABLE_CACHE", raising=False)


@npu_kernel(backend="reference")
def rows_kernel(x_ptr, out_ptr, n_rows, ROW: nl.constexpr):
    # unmasked lane copies in a loop: ROW elements per row, rows pid, pid + grid, ...
    acc = nl.zeros((ROW,), nl.float32)
    for r in nl.range(nl.program_id(0), n_rows, nl.num_programs(0)):
        acc += nl.load(x_ptr + r * ROW + nl.arange(0, ROW))
    nl.store(out_ptr + nl.program_id(0) * ROW + nl.arange(0, ROW), acc)


def _matmul_case(rng):
    M, N, K = (int(v) for v in rng.integers(20, 160, 3))
    bm, bn = (int(v) for v in rng.choice([16, 32, 64], 2))
    bk = int(rng.choice([16, 32, 64]))
    a = rng.integers(-2, 3, (M, K)).astype(np.float16)
    if rng.random() < 0.5:
        b = rng.integers(-2, 3, (K, N)).astype(np.float16)
    else:                                               # a transposed view: column strides
        b = rng.integers(-2, 3, (N, K)).astype(np.float16).T
    c = np.zeros((M, N), np.float32)
    extra = int(rng.integers(0, 2))                     # programs with nothing to do
    grid = (cdiv(M, bm) + extra, cdiv(N, bn))
    args = (a, b, c, M, N, K, a.strides[0] // 2, a.strides[1] // 2, b.strides[0] // 2,
            b.strides[1] // 2, N, 1)
    meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
            "NUM_STAGES": int(rng.integers(1, 3))}
    return grid, args, meta


def _bound_and_cycles(kernel, grid, args, meta):
    named = {**dict(zip(kernel.params, args)), **meta}
    bound = ir_bound(kernel.compile(*args, **meta).ir, grid, named, ASCEND_910B_LIKE)
    report = kernel.simulate(*args, grid=grid, debug=DebugOptions.full(), **meta)
    return bound, report


def test_ir_bound_is_never_above_the_simulated_cycles():
    rng = np.random.default_rng(14)
    for _ in range(10):
        grid, args, meta = _matmul_case(rng)
        bound, report = _bound_and_cycles(matmul_kernel, grid, args, meta)
        a, b, c = args[:3]
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
        assert 0 < bound.cycles <= report.cycles, (grid, meta, bound.terms, report.cycles)
    # tiles that divide the matrices: every program moves whole tiles, and the IR's MTE2
    # term is at least the recorded launch's (25 programs on 24 AIC cores: 2 rounds)
    S = 160
    a, b = np.ones((S, S), np.float16), np.ones((S, S), np.float16)
    args = (a, b, np.zeros((S, S), np.float32), S, S, S, S, 1, S, 1, S, 1)
    meta = {"BLOCK_M": 32, "BLOCK_N": 16 * 2, "BLOCK_K": 32, "NUM_STAGES": 2}
    bound, report = _bound_and_cycles(matmul_kernel, (5, 5), args, meta)
    assert report.bound.terms["mte2"] <= bound.terms["mte2"] <= bound.cycles <= report.cycles
    np.testing.assert_array_equal(args[2], S)
    x = rng.standard_normal(37 * 64).astype(np.float32)
    out = np.zeros(5 * 64, np.float32)
    bound, report = _bound_and_cycles(rows_kernel, (5,), (x, out, 37), {"ROW": 64})
    assert 0 < bound.cycles <= report.cycles and "mte2" in bound.terms
    want = [x.reshape(37, 64)[p::5].sum(axis=0) for p in range(5)]
    np.testing.assert_allclose(out.reshape(5, 64), want, rtol=1e-5)
    # a dot with a vector epilogue: split into AIC + AIV programs on the 910B-like part
    xs = rng.integers(-2, 3, (64, 128)).astype(np.float16)
    ws = rng.integers(-2, 3, (8, 128)).astype(np.float16)
    grid, args, meta, (weights, ids) = router_args(xs, ws, 2)
    bound, report = _bound_and_cycles(router_kernel, grid, args, meta)
    assert 0 < bound.cycles <= report.cycles and "mte2" in bound.terms
    logits = xs.astype(np.float32) @ ws.T.astype(np.float32)
    # the chosen experts' logits are the two largest (exact: small integers; any tie order)
    np.testing.assert_array_equal(np.sort(np.take_along_axis(logits, ids, axis=1), axis=1),
                                  np.sort(logits, axis=1)[:, -2:])


def test_sweep_pruned_by_the_ir_bound_picks_the_direct_simulations_best():
    S = 256
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (S, S)).astype(np.float16)
    b = rng.integers(-2, 3, (S, S)).astype(np.float16)
    configs = [Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "NUM_STAGES": s})
               for m in (16, 64, 128) for n in (16, 128) for k in (32, 64) for s in (1, 2)]
    args = (a, b, np.zeros((S, S), np.float32), S, S, S, S, 1, S, 1, S, 1)

    def grid(meta):
        return (cdiv(S, meta["BLOCK_M"]), cdiv(S, meta["BLOCK_N"]))

    tuned = autotune(configs=configs, key=["M", "N", "K"])(matmul_kernel)
    best = tuned.tune(*args, grid=grid)
    # the oracle: every config simulated directly, no pruning; ties to the earlier config
    direct = [matmul_kernel.simulate(*args, grid=grid(c.kwargs), numerics=False,
                                     **c.kwargs).cycles for c in configs]
    first = min(range(len(configs)), key=lambda i: (direct[i], i))
    assert best == configs[first]
    rows = {r["config"]: r for r in tuned.tuning_table()}
    pruned = [(i, rows[c.text]) for i, c in enumerate(configs)
              if rows[c.text]["status"] == "pruned"]
    assert any("the IR's" in r["reason"] for _, r in pruned)
    for i, r in pruned:
        assert direct[i] >= r["bound"] > direct[first] or \
            (r["bound"] == direct[first] and i > first)
    for c, d in zip(configs, direct):
        if rows[c.text]["status"] == "ok":
            assert rows[c.text]["value"] == d
