"""Gathered rows (ir/schedule/placement.py): a 2-D pointer tile made of per-row values
(``idx[:, None] * stride``) and affine columns (``cols[None, :]``), and its mask, are one
descriptor per row made by the scalar unit -- no address tile in UB, no Vector work per
tile -- on loads, stores and atomics, with the same numbers as numpy on every tier and
through the simulator under the full debug options."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import cdiv, npu_kernel
from npujit.ir import Kind, parse_function
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions
from npujit.testing import check_kernel

R, C, BR, BC = 11, 40, 8, 16


@npu_kernel
def gather_scale_scatter_add_kernel(x_ptr, idx_ptr, dst_ptr, w_ptr, out_ptr, N, C,
                                    BR: nl.constexpr, BC: nl.constexpr,
                                    STAGES: nl.constexpr = 2):
    # out[dst[r], :] += w[r] * x[idx[r], :] for the program's rows
    rows = nl.program_id(0) * BR + nl.arange(0, BR)
    live = rows < N
    src = nl.load(idx_ptr + rows, mask=live, other=0)
    dst = nl.load(dst_ptr + rows, mask=live, other=0)
    w = nl.load(w_ptr + rows, mask=live, other=0.0)
    for c in nl.range(0, C, BC, num_stages=STAGES):
        cols = c + nl.arange(0, BC)
        inside = live[:, None] & (cols[None, :] < C)
        x = nl.load(x_ptr + src[:, None] * C + cols[None, :], mask=inside, other=0.0)
        nl.atomic_add(out_ptr + dst[:, None] * C + cols[None, :], x * w[:, None], mask=inside)


def _args(seed=5):
    rng = np.random.default_rng(seed)
    x = rng.integers(-8, 9, (7, C)).astype(np.float32)
    idx = rng.integers(0, 7, R).astype(np.int32)
    dst = rng.integers(0, 4, R).astype(np.int32)
    w = rng.integers(-2, 3, R).astype(np.float32)
    return [x, idx, dst, w, np.zeros((4, C), np.float32), R, C]


def _want(x, idx, dst, w, out, N, C):
    out = out.copy()
    np.add.at(out, dst, w[:, None] * x[idx])
    return out


def test_gathered_rows_match_numpy_on_the_cpu_tiers():
    res = check_kernel(gather_scale_scatter_add_kernel, (cdiv(R, BR),), _args(), _want,
                       kwargs={"BR": BR, "BC": BC}, backends="reference,numba,scheduled")
    assert res.ok, res


def test_the_row_descriptors_leave_no_address_tile_in_ub():
    k = gather_scale_scatter_add_kernel.with_options(backend="reference",
                                                     spec=ASCEND_910B_LIKE)
    fn = parse_function(k.compile(*_args(), BR=BR, BC=BC).ir_text)
    ub_2d = [op for op in fn.walk() if op.attrs.get("scope") == "UB" and op.results
             and getattr(op.results[0].type, "rank", 0) == 2
             and op.results[0].type.shape[-1] > 1]
    # what is left in UB at [BR, BC]: the loaded x tile, its ``other`` and x * w -- no
    # i32 addresses, no i1 mask, and no old values of the atomic (nothing reads them)
    assert sorted(op.kind.value for op in ub_2d) == ["npu.fused", "npu.load", "npu.splat"], \
        [(op.kind.value, str(op.results[0].type)) for op in ub_2d]
    assert all(op.results[0].type.dtype.name == "f32" for op in ub_2d)
    scalar_2d = [op for op in fn.walk() if str(op.attrs.get("pipe")) == "SCALAR"
                 and op.results and getattr(op.results[0].type, "rank", 0) == 2
                 and op.results[0].type.shape[-1] > 1]
    assert scalar_2d                      # the per-row address and mask tiles
    assert any(op.kind is Kind.ATOMIC_RMW and "buffer" not in op.attrs for op in fn.walk())


# (the 910-like part's 4 MTE2 -> Vector event ids do not cover the three row loads and a
# double-buffered loop: one stage there)
@pytest.mark.parametrize("spec,stages", [(ASCEND_910B_LIKE, 2), (ASCEND_910_LIKE, 1)],
                         ids=["910b-like", "910-like"])
def test_gathered_rows_simulate_right_under_the_full_debug_options(spec, stages):
    args = _args(seed=6)
    want = _want(*args)
    report = gather_scale_scatter_add_kernel.simulate(
        *args, grid=(cdiv(R, BR),), spec=spec, debug=DebugOptions.full(), BR=BR, BC=BC,
        STAGES=stages)
    np.testing.assert_array_equal(args[4], want)
    # the gathered rows move their bytes: every live row's C floats in, and out again
    assert report.bytes_by_path["GM_to_UB"] >= R * C * 4


@npu_kernel
def gathered_dot_kernel(x_ptr, idx_ptr, w_ptr, out_ptr, N, K, BM: nl.constexpr,
                        BK: nl.constexpr, BN: nl.constexpr, STAGES: nl.constexpr = 2):
    # out[r, :] = x[idx[r], :] @ w for the program's rows (a grouped GEMM's gathered A)
    rows = nl.program_id(0) * BM + nl.arange(0, BM)
    live = rows < N
    src = nl.load(idx_ptr + rows, mask=live, other=0)
    n = nl.arange(0, BN)
    acc = nl.zeros((BM, BN), dtype=nl.float32)
    for k in nl.range(0, K, BK, num_stages=STAGES):
        kk = k + nl.arange(0, BK)
        a = nl.load(x_ptr + src[:, None] * K + kk[None, :], mask=live[:, None])
        acc = nl.dot(a, nl.load(w_ptr + kk[:, None] * BN + n[None, :]), acc)
    nl.store(out_ptr + rows[:, None] * BN + n[None, :], acc, mask=live[:, None])


@pytest.mark.parametrize("debug", [DebugOptions(dma_execution_mode="on_wait"),
                                   DebugOptions(uninitialized="nan"), DebugOptions.full()],
                         ids=["on_wait", "nan", "full"])
@pytest.mark.parametrize("spec,stages", [(ASCEND_910B_LIKE, 2), (ASCEND_910_LIKE, 1)],
                         ids=["910b-like", "910-like"])
def test_a_gathered_dot_operand_in_a_loop_is_right_in_the_buffered_debug_modes(spec, stages,
                                                                                 debug):
    # The buffered modes once gave wrong sums for a pointer-load dot operand in an
    # nl.range loop (the MTE2 -> MTE1 wait read stale L1); the rows here are gathered,
    # so the load stays a pointer load (not a block copy).  Small integers: exact sums.
    N, K, BM, BK, BN = 20, 64, 16, 16, 16
    rng = np.random.default_rng(8)
    x = rng.integers(-3, 4, (31, K)).astype(np.float16)
    idx = rng.permutation(31)[:N].astype(np.int32)
    w = rng.integers(-3, 4, (K, BN)).astype(np.float16)
    out = np.full((N, BN), 7.0, np.float32)
    gathered_dot_kernel.simulate(x, idx, w, out, N, K, grid=(cdiv(N, BM),), spec=spec,
                                 debug=debug, BM=BM, BK=BK, BN=BN, STAGES=stages)
    np.testing.assert_array_equal(out, x[idx].astype(np.float32) @ w.astype(np.float32))
