"""Small kernels the schedule tests need beyond the bundled ones (the pipelined streaming
add is kernels/elementwise.add_stream_kernel): one whose trip count is read from GM, and
one with more loads than a part has event ids, and two dots sharing a row tile."""
import npujit.language as nl
from npujit import npu_kernel


@npu_kernel
def counted_scale_kernel(x_ptr, out_ptr, counts_ptr, BLOCK: nl.constexpr):
    # Like an MoE expert: how many tiles this program works on is data in GM.
    pid = nl.program_id(0)
    count = nl.load(counts_ptr + pid)
    for t in nl.range(0, count, 1, num_stages=2):
        offs = (pid * 64 + t) * BLOCK + nl.arange(0, BLOCK)
        nl.store(out_ptr + offs, nl.load(x_ptr + offs) * 2.0)


@npu_kernel
def many_sums_kernel(x_ptr, out_ptr, BLOCK: nl.constexpr):
    # Nine loads each read by its own reduction: nine MTE2 -> V flags, more than the
    # 910-like part's four event ids.
    offs = nl.arange(0, BLOCK)
    total = nl.sum(nl.load(x_ptr + offs), axis=0)
    for i in nl.static_range(1, 9):
        total = total + nl.sum(nl.load(x_ptr + i * BLOCK + offs), axis=0)
    nl.store(out_ptr + nl.arange(0, 1), nl.reshape(total, (1,)))


@npu_kernel
def pointer_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                          stride_bn, stride_cm, stride_cn, BLOCK_M: nl.constexpr,
                          BLOCK_N: nl.constexpr, BLOCK_K: nl.constexpr,
                          NUM_STAGES: nl.constexpr = 1):
    # Triton's matmul as people write it: pointer tiles, masked loads, acc += dot.
    pid_m = nl.program_id(0)
    pid_n = nl.program_id(1)
    offs_m = pid_m * BLOCK_M + nl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + nl.arange(0, BLOCK_N)
    offs_k = nl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    for k in nl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        a = nl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = nl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        acc += nl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    nl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@npu_kernel
def shifted_pointer_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, a_off, stride_am, stride_ak,
                                  stride_bk, stride_bn, BLOCK_M: nl.constexpr,
                                  BLOCK_N: nl.constexpr, BLOCK_K: nl.constexpr):
    # A starts a_off elements in: nothing proves its rows start at or after 0, so A keeps
    # the general path (offsets tile on the Vector, carried through the K loop) while B
    # becomes a block copy (ir/passes/affine_access.py)
    offs_m = nl.program_id(0) * BLOCK_M + nl.arange(0, BLOCK_M)
    offs_n = nl.program_id(1) * BLOCK_N + nl.arange(0, BLOCK_N)
    offs_k = nl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + a_off + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    for k in nl.range(0, K, BLOCK_K):
        a = nl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = nl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        acc += nl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    nl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@npu_kernel(backend="reference")
def two_dots_kernel(a_ptr, b_ptr, c_ptr, o1_ptr, o2_ptr, M, N, K,
                    BM: nl.constexpr, BN: nl.constexpr, BK: nl.constexpr,
                    NUM_STAGES: nl.constexpr, L0_BLOCK_K: nl.constexpr):
    a_blk = nl.make_block_ptr(a_ptr, shape=(M, K), strides=(K, 1), offsets=(0, 0),
                              block_shape=(BM, BK))
    b_blk = nl.make_block_ptr(b_ptr, shape=(K, N), strides=(N, 1), offsets=(0, 0),
                              block_shape=(BK, BN))
    c_blk = nl.make_block_ptr(c_ptr, shape=(K, N), strides=(N, 1), offsets=(0, 0),
                              block_shape=(BK, BN))
    # Two dots reading one row tile per K step, as an MoE expert's gate and up.
    acc1 = nl.zeros((BM, BN), dtype=nl.float32)
    acc2 = nl.zeros((BM, BN), dtype=nl.float32)
    for k in nl.range(0, K, BK, num_stages=NUM_STAGES):
        a = nl.load(a_blk)
        acc1 = nl.dot(a, nl.load(b_blk), acc1)
        acc2 = nl.dot(a, nl.load(c_blk), acc2)
        a_blk = nl.advance(a_blk, (0, BK))
        b_blk = nl.advance(b_blk, (BK, 0))
        c_blk = nl.advance(c_blk, (BK, 0))
    r = nl.arange(0, BM)[:, None] * N + nl.arange(0, BN)[None, :]
    nl.store(o1_ptr + r, acc1)
    nl.store(o2_ptr + r, acc2)


@npu_kernel(backend="reference")
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n, D: nl.constexpr, BM: nl.constexpr,
                     BN: nl.constexpr, NUM_STAGES: nl.constexpr):
    # Flash attention's forward as Triton's tutorial writes it: pointer tiles advanced per
    # step, the softmax between the K load's dot and the V load.
    offs_m = nl.program_id(0) * BM + nl.arange(0, BM)
    offs_n = nl.arange(0, BN)
    offs_d = nl.arange(0, D)
    q = nl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < n,
                other=0.0)
    k_ptrs = k_ptr + offs_n[None, :] * D + offs_d[:, None]
    v_ptrs = v_ptr + offs_n[:, None] * D + offs_d[None, :]
    m_i = nl.full((BM,), float("-inf"), nl.float32)
    l_i = nl.zeros((BM,), nl.float32)
    acc = nl.zeros((BM, D), nl.float32)
    for start in nl.range(0, n, BN, num_stages=NUM_STAGES):
        kt = nl.load(k_ptrs, mask=(start + offs_n)[None, :] < n, other=0.0)
        s = nl.where((start + offs_n)[None, :] < n, nl.dot(q, kt), float("-inf"))
        m_new = nl.maximum(m_i, nl.max(s, 1))
        alpha = nl.exp(m_i - m_new)
        p = nl.exp(s - m_new[:, None])
        l_i = l_i * alpha + nl.sum(p, 1)
        v = nl.load(v_ptrs, mask=(start + offs_n)[:, None] < n, other=0.0)
        acc = acc * alpha[:, None] + nl.dot(p.to(nl.float16), v)
        m_i = m_new
        k_ptrs += BN * D
        v_ptrs += BN * D
    nl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None],
             mask=offs_m[:, None] < n)
