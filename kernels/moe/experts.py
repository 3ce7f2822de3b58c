"""The expert FFN as a grouped GEMM over the dispatch's padded order (``dispatch.py``).

``fused_experts_kernel`` is dispatch + expert FFN + combine in one kernel: a program takes
``BLOCK_M`` rows of one expert (``expert_ids[pid]``), gathers their token rows of x by
index (activations are never copied), runs gate and up in one pass over H (two
accumulators on the Cube), ``act(gate) * up`` on the Vector unit, and the down GEMM chunk
by chunk of ``BLOCK_I``, so the ``[rows, I]`` intermediate never leaves the chip; the
result, scaled by the slot's routing weight, is added into the fp32 output row of its
token with ``atomic_add`` (the k choices of a token meet there).  Grid: (row blocks,
``cdiv(H, BLOCK_H)``): each H tile of the output recomputes gate/up, so ``BLOCK_H = H``
(one tile) is the cheap choice when the accumulator fits L0C.  Blocks past the used rows
(``expert_ids = -1``) run their loops zero times.

``grouped_gemm_kernel`` is one step of the unfused baseline: ``c[r] = a[r] @ w[e].T`` for
contiguous rows ``r`` of ``a`` (the permuted activations), ``w [E, N, K]``.

Example::

    >>> y = experts(x, aligned, topk_weights, gate_up_proj, down_proj)   # doctest: +SKIP
"""
from __future__ import annotations

import numpy as np

import npujit.language as nl
from npujit import cdiv, next_power_of_2, npu_kernel
from npujit.target import ASCEND_910B_LIKE

from .launch import KernelLaunch, run_all

ACTIVATIONS = ("silu", "gelu")
FORMS = ("onchip", "workspace")


def activate(g, GELU):
    """SiLU or GELU (erf form) of an fp32 tile, chosen at compile time."""
    if GELU:
        return nl.gelu(g)
    return nl.silu(g)


@npu_kernel
def fused_experts_kernel(x_ptr, sorted_ids_ptr, expert_ids_ptr, weights_ptr, gate_up_ptr,
                         down_ptr, out_ptr, S, H, I, stride_xt,
                         TOP_K: nl.constexpr, GELU: nl.constexpr, BLOCK_M: nl.constexpr,
                         BLOCK_H: nl.constexpr, BLOCK_K: nl.constexpr,
                         BLOCK_I: nl.constexpr, NUM_STAGES: nl.constexpr):
    pid_m = nl.program_id(0)
    pid_h = nl.program_id(1)
    e = nl.load(expert_ids_ptr + pid_m)
    live = (e >= 0).to(nl.int32)
    e = e * live                                   # -1 (unused block) reads expert 0's
    rows = pid_m * BLOCK_M + nl.arange(0, BLOCK_M)  # bounds but loops zero times
    slot = nl.load(sorted_ids_ptr + rows)
    valid = slot < S
    tok = slot // TOP_K
    w = nl.load(weights_ptr + slot, mask=valid, other=0.0)
    acc = nl.zeros((BLOCK_M, BLOCK_H), dtype=nl.float32)
    for i in nl.range(0, I * live, BLOCK_I):
        gate = nl.zeros((BLOCK_M, BLOCK_I), dtype=nl.float32)
        up = nl.zeros((BLOCK_M, BLOCK_I), dtype=nl.float32)
        # gate_up_proj [E, 2I, H] read transposed: gate rows e*2I + [0, I), up rows + I.
        g_blk = nl.make_block_ptr(gate_up_ptr, shape=(H, e * 2 * I + I), strides=(1, H),
                                  offsets=(0, e * 2 * I + i), block_shape=(BLOCK_K, BLOCK_I))
        u_blk = nl.make_block_ptr(gate_up_ptr, shape=(H, e * 2 * I + 2 * I), strides=(1, H),
                                  offsets=(0, e * 2 * I + I + i),
                                  block_shape=(BLOCK_K, BLOCK_I))
        for k in nl.range(0, H, BLOCK_K, num_stages=NUM_STAGES):
            cols = k + nl.arange(0, BLOCK_K)
            xt = nl.load(x_ptr + tok[:, None] * stride_xt + cols[None, :],
                         mask=valid[:, None] & (cols[None, :] < H))
            gate = nl.dot(xt, nl.load(g_blk, boundary_check=(0, 1)), gate)
            up = nl.dot(xt, nl.load(u_blk, boundary_check=(0, 1)), up)
            g_blk = nl.advance(g_blk, (BLOCK_K, 0))
            u_blk = nl.advance(u_blk, (BLOCK_K, 0))
        a = (activate(gate, GELU) * up).to(x_ptr.dtype.element_ty)
        # down_proj [E, H, I] read transposed: [I, H] rows of expert e.
        d_blk = nl.make_block_ptr(down_ptr, shape=(I, e * H + H), strides=(1, I),
                                  offsets=(i, e * H + pid_h * BLOCK_H),
                                  block_shape=(BLOCK_I, BLOCK_H))
        acc = nl.dot(a, nl.load(d_blk, boundary_check=(0, 1)), acc)
    hs = pid_h * BLOCK_H + nl.arange(0, BLOCK_H)
    nl.atomic_add(out_ptr + tok[:, None] * H + hs[None, :], acc * w[:, None],
                  mask=valid[:, None] & (hs[None, :] < H))


@npu_kernel
def gate_up_act_kernel(x_ptr, sorted_ids_ptr, expert_ids_ptr, weights_ptr, gate_up_ptr,
                       act_ptr, S, H, I, stride_xt, R, TOP_K: nl.constexpr, GELU: nl.constexpr,
                       BLOCK_M: nl.constexpr, BLOCK_K: nl.constexpr, BLOCK_I: nl.constexpr,
                       NUM_STAGES: nl.constexpr, L0_BLOCK_K: nl.constexpr = 0):
    """First half of the workspace form: gathered rows, gate and up in one pass,
    ``act(gate) * up`` scaled by the slot's routing weight into the workspace of ``R``
    rows (in the padded order; a block's pad rows are not stored: nothing reads them,
    ``down_combine_kernel``).  The workspace is panel-major: panel ``j`` holds columns
    ``j * BLOCK_I ...`` of every row, ``[R, BLOCK_I]`` row after row, so a program's
    ``[BLOCK_M, BLOCK_I]`` tile is one contiguous run of whole HBM bursts (row-major, each
    row's piece was 256 bytes, half a 910B burst, and cost a whole one: 29 MB of HBM writes
    at 512 Mixtral tokens).  The down GEMM is linear, so scaling its input rows is scaling
    its output rows, and the down kernel's accumulator goes to the output as it is (one
    fp32 tile in UB, not two)."""
    pid_m = nl.program_id(0)
    i = nl.program_id(1) * BLOCK_I
    e = nl.load(expert_ids_ptr + pid_m)
    if e < 0:           # a block past the used rows: nothing to compute or hand over
        return
    rows = pid_m * BLOCK_M + nl.arange(0, BLOCK_M)
    slot = nl.load(sorted_ids_ptr + rows)
    valid = slot < S
    tok = slot // TOP_K
    w = nl.load(weights_ptr + slot, mask=valid, other=0.0)
    gate = nl.zeros((BLOCK_M, BLOCK_I), dtype=nl.float32)
    up = nl.zeros((BLOCK_M, BLOCK_I), dtype=nl.float32)
    g_blk = nl.make_block_ptr(gate_up_ptr, shape=(H, e * 2 * I + I), strides=(1, H),
                              offsets=(0, e * 2 * I + i), block_shape=(BLOCK_K, BLOCK_I))
    u_blk = nl.make_block_ptr(gate_up_ptr, shape=(H, e * 2 * I + 2 * I), strides=(1, H),
                              offsets=(0, e * 2 * I + I + i), block_shape=(BLOCK_K, BLOCK_I))
    for k in nl.range(0, H, BLOCK_K, num_stages=NUM_STAGES):
        cols = k + nl.arange(0, BLOCK_K)
        xt = nl.load(x_ptr + tok[:, None] * stride_xt + cols[None, :],
                     mask=valid[:, None] & (cols[None, :] < H))
        gate = nl.dot(xt, nl.load(g_blk, boundary_check=(0, 1)), gate)
        up = nl.dot(xt, nl.load(u_blk, boundary_check=(0, 1)), up)
        g_blk = nl.advance(g_blk, (BLOCK_K, 0))
        u_blk = nl.advance(u_blk, (BLOCK_K, 0))
    a = activate(gate, GELU) * up * w[:, None]
    ii = i + nl.arange(0, BLOCK_I)
    # the workspace is panel-major: I tile pid(1) is panel pid(1), [R, BLOCK_I], and the
    # tile one contiguous run of whole bursts
    nl.store(act_ptr + nl.program_id(1) * (R * BLOCK_I) + rows[:, None] * BLOCK_I
             + nl.arange(0, BLOCK_I)[None, :], a, mask=valid[:, None] & (ii < I)[None, :])


@npu_kernel
def down_combine_kernel(act_ptr, sorted_ids_ptr, expert_ids_ptr, counts_ptr, offsets_ptr,
                        down_ptr, out_ptr, S, H, I, capacity, R,
                        TOP_K: nl.constexpr, BLOCK_M: nl.constexpr, BLOCK_H: nl.constexpr,
                        BLOCK_I: nl.constexpr, NUM_STAGES: nl.constexpr,
                        L0_BLOCK_K: nl.constexpr = 0, H_FASTEST: nl.constexpr = False,
                        PANEL: nl.constexpr = 128):
    """Second half of the workspace form: the down GEMM over the workspace rows (already
    scaled by the routing weight) added into the token's fp32 output row.  Grid: (row
    blocks, H tiles), or (H tiles, row blocks) with ``H_FASTEST`` (``down_h_fastest``).
    The workspace is ``gate_up_act_kernel``'s panel-major one (``PANEL`` its ``BLOCK_I``,
    ``R`` its rows): column ``c`` of row ``r`` is at ``(c // PANEL) * R * PANEL + r *
    PANEL + c % PANEL``, so a K step's ``[BLOCK_M, BLOCK_I]`` tile is a run of
    ``BLOCK_M`` whole rows in each panel it crosses (the division and remainder are the
    scalar unit's address work; on Ascend one ND -> NZ copy per row and panel,
    backends/ascendc/emit_cube_pointers.py).  An expert's kept slots fill the first rows
    of its segment (``dispatch.py``), so the activation rows are read only up to the
    segment's last kept slot (``offsets[e] + min(counts[e], capacity)``): the block's pad
    rows are neither read nor written (``gate_up_act_kernel`` stores kept rows only), the
    mask gives the Cube zeros for them, and the masked ``atomic_add`` drops their
    results."""
    if H_FASTEST:
        pid_h = nl.program_id(0)
        pid_m = nl.program_id(1)
    else:
        pid_m = nl.program_id(0)
        pid_h = nl.program_id(1)
    e = nl.load(expert_ids_ptr + pid_m)
    live = (e >= 0).to(nl.int32)
    e = e * live
    rows = pid_m * BLOCK_M + nl.arange(0, BLOCK_M)
    slot = nl.load(sorted_ids_ptr + rows)
    valid = slot < S
    kept_end = nl.load(offsets_ptr + e) + nl.minimum(nl.load(counts_ptr + e), capacity)
    kk = nl.arange(0, BLOCK_I)
    a_rows = (rows < kept_end)[:, None]
    d_blk = nl.make_block_ptr(down_ptr, shape=(I, e * H + H), strides=(1, I),
                              offsets=(0, e * H + pid_h * BLOCK_H),
                              block_shape=(BLOCK_I, BLOCK_H))
    acc = nl.zeros((BLOCK_M, BLOCK_H), dtype=nl.float32)
    for i in nl.range(0, I * live, BLOCK_I, num_stages=NUM_STAGES):
        cols = i + kk      # column c: panel c // PANEL, c % PANEL in it
        a = nl.load(act_ptr + ((cols // PANEL) * (R * PANEL) + cols % PANEL)[None, :]
                    + rows[:, None] * PANEL, mask=a_rows & (cols < I)[None, :], other=0.0)
        acc = nl.dot(a, nl.load(d_blk, boundary_check=(0, 1)), acc)
        d_blk = nl.advance(d_blk, (BLOCK_I, 0))
    hs = pid_h * BLOCK_H + nl.arange(0, BLOCK_H)
    nl.atomic_add(out_ptr + (slot // TOP_K)[:, None] * H + hs[None, :], acc,
                  mask=valid[:, None] & (hs[None, :] < H))


@npu_kernel
def grouped_gemm_kernel(a_ptr, expert_ids_ptr, w_ptr, c_ptr, N, K,
                        BLOCK_M: nl.constexpr, BLOCK_N: nl.constexpr, BLOCK_K: nl.constexpr,
                        NUM_STAGES: nl.constexpr, L0_BLOCK_K: nl.constexpr = 0):
    pid_m = nl.program_id(0)
    pid_n = nl.program_id(1)
    e = nl.load(expert_ids_ptr + pid_m)
    live = (e >= 0).to(nl.int32)
    e = e * live
    a_blk = nl.make_block_ptr(a_ptr, shape=(pid_m * BLOCK_M + BLOCK_M, K), strides=(K, 1),
                              offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K))
    # w [E, N, K] read transposed: [K, N] columns of expert e.
    w_blk = nl.make_block_ptr(w_ptr, shape=(K, e * N + N), strides=(1, K),
                              offsets=(0, e * N + pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N))
    acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    for k in nl.range(0, K * live, BLOCK_K, num_stages=NUM_STAGES):
        acc = nl.dot(nl.load(a_blk, boundary_check=(1,)),
                     nl.load(w_blk, boundary_check=(0, 1)), acc)
        a_blk = nl.advance(a_blk, (0, BLOCK_K))
        w_blk = nl.advance(w_blk, (BLOCK_K, 0))
    c_blk = nl.make_block_ptr(c_ptr, shape=(pid_m * BLOCK_M + BLOCK_M, N), strides=(N, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N))
    nl.store(c_blk, acc.to(c_ptr.dtype.element_ty), boundary_check=(1,))


@npu_kernel
def act_kernel(h_ptr, out_ptr, R, I, GELU: nl.constexpr, BLOCK_R: nl.constexpr,
               BLOCK_I: nl.constexpr):
    """The unfused baseline's activation step: ``h [R, 2I] -> act(gate) * up [R, I]``."""
    rows = nl.program_id(0) * BLOCK_R + nl.arange(0, BLOCK_R)
    cols = nl.program_id(1) * BLOCK_I + nl.arange(0, BLOCK_I)
    inside = (rows[:, None] < R) & (cols[None, :] < I)
    gate = nl.load(h_ptr + rows[:, None] * (2 * I) + cols[None, :], mask=inside)
    up = nl.load(h_ptr + rows[:, None] * (2 * I) + I + cols[None, :], mask=inside)
    a = activate(gate.to(nl.float32), GELU) * up.to(nl.float32)
    nl.store(out_ptr + rows[:, None] * I + cols[None, :], a, mask=inside)


# Bytes of one HBM burst on the Ascend presets (spec.alignment["GM"]): the weight rows a
# K tile reads should be at least this long.
HBM_BURST = 512


def tile(n: int, cap: int) -> int:
    """A power-of-two tile covering ``n`` up to ``cap`` (at least 16, the Cube's edge)."""
    return max(16, min(cap, next_power_of_2(n)))


def experts_launches(x, aligned, topk_weights, gate_up_proj, down_proj, out,
                     activation: str = "silu", form: str = "workspace",
                     block_h: int | None = None, block_k: int | None = None,
                     block_i: int | None = None, num_stages: int | None = None) -> list:
    """The expert launches (``KernelLaunch``) that add the routed FFN into ``out``:
    ``form="onchip"``: ``fused_experts_kernel``; ``form="workspace"``: ``gate_up_act_kernel``
    then ``down_combine_kernel`` with the ``[rows, I]`` activation (x's dtype) in a
    panel-major GM workspace between them.  On a separated (AIC + AIV) part the on-chip form hands the
    Vector's activation back to the Cube through a GM workspace the schedule's
    split-cores step adds, and is much slower (docs/moe.md).  The workspace form is the
    default: it is the faster one on both presets, and on the CPU it computes gate/up once per row block where the on-chip form
    does it once per H tile (fp32, 512 tokens, H 1024, I 3584, 8 experts, top-2, numba:
    568 ms against 5.0 s; 64 tokens, H 256, I 512: 5.2 against 9.5 ms).

    ``block_k`` (the K tile of the GEMMs that stream weight rows: gate/up over H, and the
    workspace form's down over I) defaults, in the workspace form, to whole HBM bursts of
    a weight row: a shorter row still costs a whole burst (sim/bursts.py).  On chip it
    is 128 bytes of an x row (64 bf16 / fp16 elements, 32 fp32): the gate, up and down
    tiles share L0B, burst-long gate/up tiles do not fit it twice, and x's K tile is in
    L0A once per gate and up dot (at fp32 and ``block_m`` 64, 64-element tiles overflowed
    it).  ``block_h`` defaults to 128, ``block_i`` to 32 on chip and 128 in the
    workspace form.  ``num_stages`` (a given value applies to every kernel) defaults to 2
    on chip.

    The workspace form's kernels stream their weights through the AIC's MTE2, which pays
    a fixed latency per copy, so their tiles are as long as the on-chip buffers allow and
    reach L0 in ``L0_BLOCK_K`` chunks (``workspace_tiles``): gate/up reads one burst of
    each weight row per K step into ``[block_k, 128]`` gate and up tiles, down + combine
    two bursts per step, both double-buffered (the gathered x rows' addresses are one
    descriptor per row, made by the scalar unit: ir/schedule/placement.py).  ``npujit
    moe-report``, Mixtral 8x7B (bf16) on the 910B-like part, expert kernels before ->
    after: 64 tokens 1479.9 + 775.7 -> 1291.7 + 609.1 us, 512 tokens 3322.3 + 1728.7 ->
    2577.3 + 986.6 us; with gate/up double-buffered, 128-row blocks and 256-wide down
    tiles (``down_block_h``): 64 tokens 1240.7 + 604.1 us, 512 tokens 1604.2 + 692.9 us
    (docs/moe.md)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    H = x.shape[1]
    I = gate_up_proj.shape[1] // 2
    rows, bm, S, k = aligned.sorted_ids.size, aligned.block_m, aligned.num_slots, aligned.top_k
    if form == "onchip":      # three weight tiles share L0B: keep them short
        # x's K tile reaches L0A once per gate and up dot: 128 B rows fit both twice
        block_k = 128 // x.itemsize if block_k is None else block_k
        block_i = 32 if block_i is None else block_i
        num_stages = 2 if num_stages is None else num_stages
    if form != "onchip":
        bh = tile(H, down_block_h(bm, gate_up_proj.itemsize) if block_h is None else block_h)
        gate_up, down = workspace_tiles(H, I, bm, gate_up_proj.itemsize, bh, block_k,
                                        block_i, num_stages)
    else:
        bh = tile(H, 128 if block_h is None else block_h)
        bi, bk = tile(I, block_i), tile(H, block_k)
    w = np.ascontiguousarray(topk_weights, dtype=np.float32)
    sx = x.strides[0] // x.itemsize
    gelu = activation == "gelu"
    if form == "onchip":
        return [KernelLaunch(
            fused_experts_kernel, (rows // bm, cdiv(H, bh)),
            (x, aligned.sorted_ids, aligned.expert_ids, w, gate_up_proj, down_proj, out, S,
             H, I, sx),
            dict(TOP_K=k, GELU=gelu, BLOCK_M=bm, BLOCK_H=bh, BLOCK_K=bk, BLOCK_I=bi,
                 NUM_STAGES=num_stages))]
    work = np.empty(cdiv(I, gate_up["BLOCK_I"]) * rows * gate_up["BLOCK_I"], x.dtype)
    blocks, h_tiles, h_fastest = rows // bm, cdiv(H, bh), down_h_fastest(work.nbytes)
    return [
        KernelLaunch(gate_up_act_kernel, (rows // bm, cdiv(I, gate_up["BLOCK_I"])),
                     (x, aligned.sorted_ids, aligned.expert_ids, w, gate_up_proj, work, S,
                      H, I, sx, rows),
                     dict(TOP_K=k, GELU=gelu, BLOCK_M=bm, **gate_up)),
        KernelLaunch(down_combine_kernel,
                     (h_tiles, blocks) if h_fastest else (blocks, h_tiles),
                     (work, aligned.sorted_ids, aligned.expert_ids, aligned.counts,
                      aligned.offsets, down_proj, out, S, H, I, aligned.capacity, rows),
                     dict(TOP_K=k, BLOCK_M=bm, BLOCK_H=bh, **down, H_FASTEST=h_fastest,
                          PANEL=gate_up["BLOCK_I"])),
    ]


# On-chip bytes of the 910B-like part's AIC (npujit/target.py) the workspace form's tiles
# are sized for.
L0A_BYTES = ASCEND_910B_LIKE.capacity["L0A"]
L0B_BYTES = ASCEND_910B_LIKE.capacity["L0B"]
L0C_BYTES = ASCEND_910B_LIKE.capacity["L0C"]
L1_BYTES = ASCEND_910B_LIKE.capacity["L1"]
L2_BYTES = ASCEND_910B_LIKE.l2_bytes


def down_h_fastest(work_bytes: int) -> bool:
    """The down + combine grid's order (``H_FASTEST``).  Programs run in grid order, axis
    0 fastest.  Row blocks fastest: the programs running together read one H tile of
    every expert's weights, and each H tile re-reads every block's activation rows --
    hits in the shared L2 while the ``[rows, I]`` workspace fits in half of it.  Past
    that (Mixtral 8x7B at 2048 tokens: 147 MB of a 192 MB L2), H tiles fastest: the
    programs running together share one block's rows, and an expert's weight tile comes
    back for its next block within one block's sweep of H.  Simulated, 910B-like, down +
    combine: 2048 tokens 2147 -> 1223 MB of HBM reads and writes (1778 -> 1774 us, the
    ports are the limit there); at 512 tokens rows fastest is the faster (693 against
    786 us).

    Example::

        >>> down_h_fastest(29 * 2**20), down_h_fastest(147 * 2**20)
        (False, True)
    """
    return work_bytes > L2_BYTES // 2


def down_block_h(bm: int, itemsize: int) -> int:
    """The down GEMM's H tile in the workspace form: 256 for blocks of 128 rows or more
    when its ``[bm, 256]`` fp32 accumulator fits L0C and one burst-deep step (activations
    and weights) fits L1 twice, else 128.  Each H tile reads the block's whole activation
    rows again -- as many bytes as its weights at 128 rows and 128 columns -- so a wider
    tile moves fewer bytes (Mixtral 8x7B, bf16, 910B-like, down + combine: 512 tokens,
    128-row blocks, 795 -> 693 us; 2048 tokens 2245 -> 1778 us); with 32-row blocks the
    activations are a quarter of the bytes already and the wider tile only halves the
    programs (64 tokens: 604 against 623 us).

    Example::

        >>> down_block_h(128, 2), down_block_h(32, 2), down_block_h(64, 4)
        (256, 128, 128)
    """
    burst = HBM_BURST // itemsize
    fits = (bm >= 128 and bm * 256 * 4 <= L0C_BYTES
            and 2 * (bm + 256) * burst * itemsize <= L1_BYTES)
    return 256 if fits else 128


def _l0_chunk(k: int, fits: int) -> int:
    """``L0_BLOCK_K`` for a K tile of ``k``: the largest power of two up to ``fits`` (what
    L0 holds), 0 (no chunks) when the whole tile fits."""
    chunk = 1 << max(fits, 16).bit_length() - 1
    return 0 if chunk >= k else max(16, chunk)


def workspace_tiles(H: int, I: int, bm: int, itemsize: int, bh: int,
                    block_k: int | None = None, block_i: int | None = None,
                    num_stages: int | None = None) -> tuple[dict, dict]:
    """The constexprs of ``gate_up_act_kernel`` and ``down_combine_kernel`` (without
    ``BLOCK_M``/``BLOCK_H``): K tiles of whole HBM bursts of a weight row, L0 chunks that
    fit the weight tiles in L0B (gate and up together) and the row tile in L0A, for each
    kernel's stages.

    Example::

        >>> gate_up, down = workspace_tiles(4096, 14336, 32, 2, 128)
        >>> gate_up, down
        ({'BLOCK_K': 256, 'BLOCK_I': 128, 'NUM_STAGES': 2, 'L0_BLOCK_K': 64}, {'BLOCK_I': 512, 'NUM_STAGES': 2, 'L0_BLOCK_K': 128})
    """
    burst = HBM_BURST // itemsize
    bk = tile(H, burst if block_k is None else block_k)
    bi = tile(I, 128 if block_i is None else block_i)
    stages = 2 if num_stages is None else num_stages
    fits = min(L0B_BYTES // (2 * bi * itemsize * stages),
               L0A_BYTES // (bm * itemsize * stages))
    gate_up = dict(BLOCK_K=bk, BLOCK_I=bi, NUM_STAGES=stages,
                   L0_BLOCK_K=_l0_chunk(bk, fits))
    d_stages = 2 if num_stages is None else num_stages
    if block_k is None and d_stages * (bm + bh) * 2 * burst * itemsize > L1_BYTES:
        block_k = burst            # two bursts a step would not fit L1 for every stage
    dk, l0 = streamed_k(I, bm, bh, itemsize, d_stages, block_k)
    down = dict(BLOCK_I=dk, NUM_STAGES=d_stages, L0_BLOCK_K=l0)
    return gate_up, down


def streamed_k(K: int, bm: int, bn: int, itemsize: int, stages: int,
               block_k: int | None = None) -> tuple[int, int]:
    """``(BLOCK_K, L0_BLOCK_K)`` of a GEMM streaming ``[BLOCK_K, bn]`` weight tiles under
    ``[bm, BLOCK_K]`` row tiles: two HBM bursts of a weight row per step (``block_k``
    when given), in L0 chunks that fit both tiles ``stages`` times."""
    bk = tile(K, 2 * HBM_BURST // itemsize if block_k is None else block_k)
    fits = min(L0B_BYTES // (bn * itemsize * stages), L0A_BYTES // (bm * itemsize * stages))
    return bk, _l0_chunk(bk, fits)


def experts(x, aligned, topk_weights, gate_up_proj, down_proj, out=None,
            activation: str = "silu", backend: str | None = None, form: str = "workspace",
            **tiles) -> np.ndarray:
    """Add ``sum_j w[t, j] * FFN_{e(t, j)}(x[t])`` into ``out`` (fp32 [T, H], zeros when
    None) for the slots ``aligned`` (``dispatch.align``) keeps; returns ``out``.
    ``form`` and ``tiles`` (``block_h, block_k, block_i, num_stages``): see
    ``experts_launches``.

    Example::

        out = experts(x, align(ids, E), w, gate_up_proj, down_proj)
    """
    out = np.zeros(x.shape, np.float32) if out is None else out
    run_all(experts_launches(x, aligned, topk_weights, gate_up_proj, down_proj, out,
                             activation, form, **tiles), backend)
    return out


def grouped_gemm_launch(a, expert_ids, w, c, block_m: int, block_n: int = 128,
                        block_k: int | None = None, num_stages: int = 2) -> KernelLaunch:
    """The launch of ``grouped_gemm_kernel`` writing ``a @ w[e].T`` per row block into
    ``c``; its K tiles as the fused form's down GEMM (``streamed_k``)."""
    R, K = a.shape
    N = w.shape[1]
    bn = tile(N, block_n)
    bk, l0 = streamed_k(K, block_m, bn, w.itemsize, num_stages, block_k)
    return KernelLaunch(grouped_gemm_kernel, (R // block_m, cdiv(N, bn)),
                        (a, expert_ids, w, c, N, K),
                        dict(BLOCK_M=block_m, BLOCK_N=bn, BLOCK_K=bk, NUM_STAGES=num_stages,
                             L0_BLOCK_K=l0))


def grouped_gemm(a, expert_ids, w, block_m: int, out_dtype=None,
                 backend: str | None = None, **tiles) -> np.ndarray:
    """``c[r] = a[r] @ w[expert_ids[r // block_m]].T`` for ``a [R, K]``, ``w [E, N, K]``;
    rows of blocks with expert id -1 are zeros.  ``tiles``: ``block_n, block_k,
    num_stages``.

    Example::

        h = grouped_gemm(expanded_x, aligned.expert_ids, gate_up_proj, aligned.block_m)
    """
    c = np.empty((a.shape[0], w.shape[1]), out_dtype or a.dtype)
    grouped_gemm_launch(a, expert_ids, w, c, block_m, **tiles).run(backend)
    return c


def act_launch(h, out, activation: str = "silu", block_r: int = 16,
               block_i: int = 64) -> KernelLaunch:
    """The launch of ``act_kernel`` writing ``act(h[:, :I]) * h[:, I:]`` into ``out``."""
    R, I = h.shape[0], h.shape[1] // 2
    bi = tile(I, block_i)
    return KernelLaunch(act_kernel, (cdiv(R, block_r), cdiv(I, bi)), (h, out, R, I),
                        dict(GELU=activation == "gelu", BLOCK_R=block_r, BLOCK_I=bi))


def act(h, activation: str = "silu", backend: str | None = None,
        block_r: int = 16, block_i: int = 64) -> np.ndarray:
    """``act(h[:, :I]) * h[:, I:]`` for ``h [R, 2I]``, in h's dtype.

    Example::

        a = act(grouped_gemm(expanded_x, expert_ids, gate_up_proj, 16))
    """
    out = np.empty((h.shape[0], h.shape[1] // 2), h.dtype)
    act_launch(h, out, activation, block_r, block_i).run(backend)
    return out
