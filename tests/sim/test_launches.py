"""Launch-level validation: the bundled kernels through ``kernel.simulate`` on random small
shapes.  The outputs equal numpy (the kernels stay correct through the schedule), the
simulated time never beats the analytic bound, bytes per path equal what the kernel's
loads and stores move (counted here from the shapes), busy <= total per pipe, the trace is
deterministic, and the L2 sees re-reads (matmul panels, layernorm weights) but not a stream.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import npujit.language as nl
from npujit import cdiv, npu_kernel
from npujit.kernels.elementwise import add_kernel, add_stream_kernel
from npujit.kernels.layernorm import layernorm_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910B_LIKE, TINY, DebugOptions
from npujit.sim.trace import trace_hash

SPECS = [TINY, ASCEND_910B_LIKE]
FAST = settings(max_examples=6, deadline=None)


def _invariants(r):
    """What holds for any launch: the bound, busy <= duration, byte conservation."""
    assert r.cycles >= r.bound.cycles - 1e-6
    for run in r.programs:
        for pipe, busy in run.busy.items():
            assert 0 <= busy <= run.cycles, (run.program, pipe)
    for ratio in r.ratios.values():
        assert 0.0 <= ratio <= 1.0
    assert abs(r.hbm_bytes_served - r.hbm_bytes) <= 1e-6 * max(1, r.hbm_bytes)
    assert abs(r.l2_bytes_served - r.l2_hit_bytes - r.l2_write_bytes) <= 1e-6 * max(
        1, r.l2_hit_bytes + r.l2_write_bytes)


def _pow2(n):
    return 1 << max(0, (n - 1).bit_length())


@FAST
@given(n=st.integers(1, 5000), block=st.sampled_from([128, 512, 1024]),
       spec=st.sampled_from(SPECS), seed=st.integers(0, 2**16))
def test_add(n, block, spec, seed):
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    out = np.zeros_like(x)
    r = add_kernel.simulate(x, y, out, n, grid=(cdiv(n, block),), spec=spec, BLOCK=block)
    np.testing.assert_array_equal(out, x + y)
    _invariants(r)
    assert r.bytes_by_path["GM_to_UB"] == 2 * 2 * n          # x and y, masked lanes free
    assert r.bytes_by_path["UB_to_GM"] == 2 * n
    assert r.vector_elems == cdiv(n, block) * block         # one add over each tile
    assert r.l2_hit_bytes == 0                               # a stream re-reads nothing


@FAST
@given(rows=st.integers(1, 6), cols=st.integers(1, 300), spec=st.sampled_from(SPECS),
       seed=st.integers(0, 2**16))
def test_softmax(rows, cols, spec, seed):
    x = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros_like(x)
    r = softmax_kernel.simulate(x, out, cols, cols, cols, grid=(rows,), spec=spec,
                                BLOCK=_pow2(cols))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    _invariants(r)
    assert r.bytes_by_path["GM_to_UB"] == 4 * rows * cols
    assert r.bytes_by_path["UB_to_GM"] == 4 * rows * cols


@FAST
@given(rows=st.integers(2, 6), cols=st.integers(8, 300), spec=st.sampled_from(SPECS),
       seed=st.integers(0, 2**16))
def test_layernorm_rereads_its_weights_from_l2(rows, cols, spec, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w, b = (rng.standard_normal(cols).astype(np.float32) for _ in range(2))
    out = np.zeros_like(x)
    r = layernorm_kernel.simulate(x, w, b, out, cols, 1e-5, grid=(rows,), spec=spec,
                                  BLOCK=_pow2(cols))
    xd = x.astype(np.float64)
    want = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    _invariants(r)
    assert r.bytes_by_path["GM_to_UB"] == 4 * rows * cols * 3       # x row, w, b per row
    # every program after the first finds w and b in the L2 (each one run of 4*cols B from
    # the array's start: whole GM bursts)
    burst = spec.alignment["GM"]
    wb = 2 * -(-4 * cols // burst) * burst
    assert r.l2_hit_bytes == (rows - 1) * wb
    assert r.hbm_read_bytes == r.l2_read_bytes - r.l2_hit_bytes


def _matmul(m, n, k, bm, bn, bk, spec, seed, l0k=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    r = matmul_kernel.simulate(a, b, c, m, n, k, k, 1, n, 1, n, 1, grid=(cdiv(m, bm), cdiv(n, bn)),
                               spec=spec, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, NUM_STAGES=2,
                               L0_BLOCK_K=l0k)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3 * np.sqrt(k))
    return r


@FAST
@given(m=st.integers(1, 96), n=st.integers(1, 96), k=st.integers(1, 96),
       spec=st.sampled_from(SPECS), seed=st.integers(0, 2**16))
def test_matmul(m, n, k, spec, seed):
    bm = bn = bk = 32
    r = _matmul(m, n, k, bm, bn, bk, spec, seed)
    _invariants(r)
    gm, gn = cdiv(m, bm), cdiv(n, bn)
    # each program reads its A row panel and B column panel, clipped to the arrays
    assert r.bytes_by_path["GM_to_L1"] == 2 * (gn * m * k + gm * k * n)
    assert r.bytes_by_path["L0C_to_GM"] == 4 * m * n
    assert r.cube_flops == 2 * gm * gn * bm * bn * bk * cdiv(k, bk)
    assert r.bound.terms["cube"] > 0


def test_matmul_panels_hit_in_l2_and_l0_split_keeps_the_numbers():
    r = _matmul(128, 128, 128, 32, 32, 64, ASCEND_910B_LIKE, 0)
    # GM moves whole bursts: rows of A and B are 256 B apart (128 f16), so each 512 B burst
    # holds two rows' runs; an A block (32 rows x 128 B) touches 32 / 2 bursts, a B block
    # (64 rows x 64 B) 64 / 2
    burst = ASCEND_910B_LIKE.alignment["GM"]
    a_block, b_block = cdiv(32 * 256, burst) * burst, cdiv(64 * 256, burst) * burst
    # 4 x 4 programs, 2 K steps each: each A block is read by 4 programs, each B block by 4
    # -> 3/4 hit; HBM reads each of the 4 x 2 A blocks and 2 x 4 B blocks once
    assert r.l2_read_bytes == 16 * 2 * (a_block + b_block)
    assert r.l2_hit_bytes == r.l2_read_bytes * 3 // 4
    assert r.hbm_read_bytes == 8 * a_block + 8 * b_block
    split = _matmul(128, 128, 128, 32, 32, 64, ASCEND_910B_LIKE, 0, l0k=16)
    assert split.cube_flops == r.cube_flops
    assert split.bytes_by_path == r.bytes_by_path
    assert split.cycles >= split.bound.cycles
    assert split.instr_count > r.instr_count              # 4 L0 chunks per dot


def test_streaming_add_with_two_stages_beats_one_and_is_deterministic():
    n = 1 << 15
    x = np.arange(n, dtype=np.float16)
    out = np.zeros_like(x)
    reports = {}
    for stages in (1, 2, 2):
        reports.setdefault(stages, []).append(add_stream_kernel.simulate(
            x, x, out, n, n // 2, grid=(2,), spec=TINY, BLOCK=1024, NUM_STAGES=stages))
        np.testing.assert_array_equal(out, x + x)
    one, (two, again) = reports[1][0], reports[2]
    assert two.cycles < one.cycles
    assert trace_hash(two.timeline) == trace_hash(again.timeline)
    assert two.l2_hit_bytes == 0


def test_kernel_simulate_rejects_unknown_spec_by_name():
    x = np.zeros(16, np.float16)
    with pytest.raises(Exception, match="spec"):
        add_kernel.simulate(x, x, x.copy(), 16, grid=(1,), spec="no-such-npu", BLOCK=16)


@npu_kernel
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, num_tiles, tiles_n,
                             BLOCK_M: nl.constexpr, BLOCK_N: nl.constexpr,
                             BLOCK_K: nl.constexpr):
    # Each program loops over output tiles: the L0C accumulator is re-zeroed per tile, so
    # the schedule must make the next tile's Cube wait for the previous tile's FixPipe.
    for t in nl.range(nl.program_id(0), num_tiles, nl.num_programs(0)):
        a_blk = nl.make_block_ptr(a_ptr, shape=(M, K), strides=(K, 1),
                                  offsets=((t // tiles_n) * BLOCK_M, 0),
                                  block_shape=(BLOCK_M, BLOCK_K))
        b_blk = nl.make_block_ptr(b_ptr, shape=(K, N), strides=(N, 1),
                                  offsets=(0, (t % tiles_n) * BLOCK_N),
                                  block_shape=(BLOCK_K, BLOCK_N))
        acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
        for k in nl.range(0, K, BLOCK_K, num_stages=2):
            acc = nl.dot(nl.load(a_blk, boundary_check=(0, 1)),
                         nl.load(b_blk, boundary_check=(0, 1)), acc)
            a_blk = nl.advance(a_blk, (0, BLOCK_K))
            b_blk = nl.advance(b_blk, (BLOCK_K, 0))
        c_blk = nl.make_block_ptr(c_ptr, shape=(M, N), strides=(N, 1),
                                  offsets=((t // tiles_n) * BLOCK_M, (t % tiles_n) * BLOCK_N),
                                  block_shape=(BLOCK_M, BLOCK_N))
        nl.store(c_blk, acc, boundary_check=(0, 1))


@pytest.mark.parametrize("spec", SPECS)
def test_persistent_matmul_reuses_l0c_without_a_race(spec):
    rng = np.random.default_rng(3)
    m, n, k, bm, bn = 64, 96, 48, 32, 32
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    tiles_n = cdiv(n, bn)
    tiles = cdiv(m, bm) * tiles_n
    r = persistent_matmul_kernel.simulate(
        a, b, c, m, n, k, tiles, tiles_n, grid=(2,), spec=spec, BLOCK_M=bm, BLOCK_N=bn,
        BLOCK_K=16, debug=DebugOptions(detect_races=True, check_flags=True))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3 * np.sqrt(k))
    assert r.races == [] and r.flag_issues == []
    _invariants(r)
    assert r.bytes_by_path["L0C_to_GM"] == 4 * m * n
