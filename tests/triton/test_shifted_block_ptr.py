"""``tl.make_block_ptr(base=X + offset, ...)``: a block pointer on a moved base, as Triton's
attention tutorial (``base=Q + qvk_offset``) and batched kernels (``base=a_ptr + z *
stride_az``) write it.  It reads and writes what the same block on the unmoved array at
``offset`` elements further would (npujit/language/memory.py ``_shifted``), on every tier,
through loops and branches; numpy is the oracle."""
import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions


@triton.jit
def _scale_rows(x_ptr, y_ptr, M, N, stride_b, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    b = tl.program_id(1)
    xb = tl.make_block_ptr(base=x_ptr + b * stride_b, shape=(M, N), strides=(stride_m, 1),
                           offsets=(tl.program_id(0) * BM, 0), block_shape=(BM, BN),
                           order=(1, 0))
    yb = tl.make_block_ptr(base=y_ptr + b * stride_b, shape=(M, N), strides=(stride_m, 1),
                           offsets=(tl.program_id(0) * BM, 0), block_shape=(BM, BN),
                           order=(1, 0))
    for _ in range(0, tl.cdiv(N, BN)):
        x = tl.load(xb, boundary_check=(0, 1), padding_option="zero")
        if b == 1:
            x = x + 1.0
        tl.store(yb, x * 2.0, boundary_check=(0, 1))
        xb = tl.advance(xb, (0, BN))
        yb = tl.advance(yb, (0, BN))


@triton.jit
def _batched_matmul(a_ptr, b_ptr, c_ptr, M, N, K, s_az, s_bz, s_cz, BM: tl.constexpr,
                    BN: tl.constexpr, BK: tl.constexpr):
    z = tl.program_id(1)
    ab = tl.make_block_ptr(base=a_ptr + z * s_az, shape=(M, K), strides=(K, 1),
                           offsets=(tl.program_id(0) * BM, 0), block_shape=(BM, BK),
                           order=(1, 0))
    # B read transposed from its [N, K] rows, as the tutorial reads K
    bb = tl.make_block_ptr(base=b_ptr + z * s_bz, shape=(K, N), strides=(1, K),
                           offsets=(0, 0), block_shape=(BK, BN), order=(0, 1))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(ab, boundary_check=(0, 1)), tl.load(bb, boundary_check=(0, 1)))
        ab = tl.advance(ab, (0, BK))
        bb = tl.advance(bb, (BK, 0))
    cb = tl.make_block_ptr(base=c_ptr + z * s_cz, shape=(M, N), strides=(N, 1),
                           offsets=(tl.program_id(0) * BM, 0), block_shape=(BM, BN),
                           order=(1, 0))
    tl.store(cb, acc, boundary_check=(0, 1))


@triton.jit
def _rebased_in_loop(x_ptr, y_ptr, N, BN: tl.constexpr):
    xb = tl.make_block_ptr(base=x_ptr, shape=(N,), strides=(1,), offsets=(0,),
                           block_shape=(BN,), order=(0,))
    for i in range(0, 2):
        tl.store(y_ptr + tl.arange(0, BN), tl.load(xb, boundary_check=(0,)))
        xb = tl.make_block_ptr(base=x_ptr + BN, shape=(N,), strides=(1,), offsets=(0,),
                               block_shape=(BN,), order=(0,))


TIERS = ["cpu", ASCEND_910B_LIKE, ASCEND_910_LIKE]


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t if t == "cpu" else t.name)
def test_rows_of_a_batch_through_a_loop_and_a_branch(tier):
    B, M, N = 3, 37, 50
    x = np.random.default_rng(1).standard_normal((B, M, N)).astype(np.float32)
    y = np.zeros_like(x)
    args, grid, meta = (x, y, M, N, M * N, N), (2, B), dict(BM=32, BN=32)
    if tier == "cpu":
        _scale_rows[grid](*args, **meta)
    else:
        r = _scale_rows.simulate(*args, grid=grid, spec=tier, debug=DebugOptions.full(), **meta)
        assert r.races == [] and r.flag_issues == []
    want = 2 * x
    want[1] += 2.0
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t if t == "cpu" else t.name)
def test_a_batched_matmul_with_a_transposed_operand(tier):
    Z, M, N, K = 2, 40, 48, 72
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (Z, M, K)).astype(np.float16)
    bt = rng.integers(-3, 4, (Z, N, K)).astype(np.float16)      # B^T rows, as K in attention
    c = np.zeros((Z, M, N), np.float32)
    args, grid = (a, bt, c, M, N, K, M * K, N * K, M * N), (2, Z)
    meta = dict(BM=32, BN=64, BK=32)
    if tier == "cpu":
        _batched_matmul[grid](*args, **meta)
    else:
        r = _batched_matmul.simulate(*args, grid=grid, spec=tier, debug=DebugOptions.full(),
                                     **meta)
        assert r.races == [] and r.flag_issues == []
    np.testing.assert_array_equal(c, a.astype(np.float32) @ bt.astype(np.float32).transpose(0, 2, 1))


def test_a_loop_carried_block_pointer_keeps_its_base():
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(triton.CompilationError, match="from the same base"):
        _rebased_in_loop[(1,)](x, np.zeros(16, np.float32), 32, BN=16)
