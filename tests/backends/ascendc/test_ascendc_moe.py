"""The MoE kernels that emit as Ascend C (kernels/moe/), built against the CPU twin and
compared with the reference backend on small ragged shapes: 2-D tiles, rows gathered by
loaded indices, per-row broadcasts, strided lanes, reductions along an axis, sigmoid and
silu, the grouped GEMM's transposed weight tiles on the Cube, and the AIC/AIV split of
the mixed expert kernels (workspace form).  What does not emit yet raises a NotImplementedError naming the op and its line.

Run: NPUJIT_CACHE_DIR=/tmp/c python -m pytest -n 0 -q tests/backends/ascendc/test_ascendc_moe.py
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from npujit.kernels.moe import combine, dispatch, experts, router

from ascendc_support import TWIN, assert_matches

rng = np.random.default_rng(12)


def _routing(T, E, k, block_m=16):
    ids = np.stack([rng.permutation(E)[:k] for _ in range(T)]).astype(np.int32)
    return dispatch.align(ids, E, block_m=block_m, backend="reference")


def test_combine_gathers_rows_and_weights_them():
    # H = 40 and 72 are ragged in a 64- / 128-wide tile; row_idx -1 are dropped slots
    for T, H, shared in ((10, 40, False), (3, 40, True), (17, 33, True)):
        k = 2
        rows = T * k + 5
        y = rng.standard_normal((rows, H)).astype(np.float32)
        row_idx = rng.permutation(rows)[:T * k].astype(np.int32)
        row_idx[::3] = -1
        w = rng.random((T, k)).astype(np.float32)
        sh = rng.standard_normal((T, H)).astype(np.float32) if shared else None
        want = combine.combine(y, row_idx, w, np.float32, shared=sh, backend="reference")
        got = combine.combine(y, row_idx, w, np.float32, shared=sh, backend=TWIN)
        assert_matches(got, want, f"combine T={T} H={H} shared={shared}")


@pytest.mark.parametrize("dtype, activation", [(np.float32, "silu"), (np.float16, "silu"),
                                               (np.float32, "gelu"), (np.float16, "gelu")])
def test_activation_step(dtype, activation):
    # act(gate) * up on [R, 2I] rows: a block pointer into UB and an offset 2-D load; gelu
    # (erf form) step by step with the math library's Erf, f16 on f32 copies
    for R, I in ((20, 40), (3, 64)):
        h = (rng.standard_normal((R, 2 * I)) * 4).astype(dtype)
        want = experts.act(h, activation, backend="reference")
        got = experts.act(h, activation, backend=TWIN)
        assert_matches(got, want, f"{activation} R={R} I={I} {np.dtype(dtype)}")


def test_permute_gathers_token_rows():
    # rows by loaded slot ids (slot // TOP_K per row on the scalar unit), pad rows zero
    x = rng.standard_normal((9, 48)).astype(np.float16)
    aligned = _routing(9, 4, 2)
    want = dispatch.permute(x, aligned, backend="reference")
    got = dispatch.permute(x, aligned, backend=TWIN)
    assert_matches(got, want, "permute")


def test_dispatch_histogram_offsets_and_scatter():
    # count_kernel: one-hot rows (ids[:, None] == cols[None, :]) summed along axis 0 and
    # added by an atomic; offsets_kernel: per-lane // on the scalar unit, cumsum, an int
    # sum, each block's expert as a count of (end[None, :] <= first_row[:, None]) along
    # axis 1, pad rows filled through a block pointer (the capacity rule in the second case);
    # scatter_kernel: the earlier blocks' counts summed into a tile the loop carries, a
    # cumsum down the rows of the one-hot tile, offsets gathered by expert id, the slots
    # scattered to their rows by the scalar unit
    from npujit.kernels.moe.launch import run_all
    for T, E, k, cap in ((37, 6, 2, None), (50, 16, 3, 20)):
        ids = np.stack([rng.permutation(E)[:k] for _ in range(T)]).astype(np.int32)
        got = {}
        for backend in ("reference", TWIN):
            launches, aligned = dispatch.align_launches(ids, E, 16, capacity=cap, block_s=16)
            run_all(launches, backend)
            got[backend] = (aligned.counts, launches[0].args[2], aligned.offsets,
                            aligned.expert_ids, aligned.sorted_ids, aligned.total_buf,
                            aligned.row_idx)
        np.testing.assert_array_equal(got[TWIN][0], np.bincount(ids.ravel(), minlength=E))
        for name, g, w in zip(("counts", "block counts", "offsets", "expert ids", "sorted ids",
                               "total", "row idx"), got[TWIN], got["reference"]):
            np.testing.assert_array_equal(g, w, err_msg=f"{name}, T={T} E={E}")


@pytest.mark.parametrize("dtype, out_dtype, K", [(np.float16, np.float16, 200),
                                                  (ml_dtypes.bfloat16, np.float32, 48)])
def test_grouped_gemm(dtype, out_dtype, K):
    # a @ w[e].T per row block: the weight tile read transposed (strides (1, K)) is copied
    # into L1 as its transpose's NZ fractals; K = 200 runs 256-wide K tiles in L0 chunks
    T, E, N = 10, 4, 80
    aligned = _routing(T, E, 2)
    a = rng.standard_normal((aligned.sorted_ids.size, K)).astype(dtype)
    w = rng.standard_normal((E, N, K)).astype(dtype)
    want = experts.grouped_gemm(a, aligned.expert_ids, w, 16, out_dtype, backend="reference")
    got = experts.grouped_gemm(a, aligned.expert_ids, w, 16, out_dtype, backend=TWIN)
    assert_matches(got, want, f"grouped gemm {np.dtype(dtype)} -> {np.dtype(out_dtype)}")


def _down_combine_case(T, E, H, I, dtype):
    aligned = _routing(T, E, 2)
    x = np.zeros((T, H), dtype)
    gate_up = np.zeros((E, 2 * I, H), dtype)
    down = (rng.standard_normal((E, H, I)) * 0.1).astype(dtype)
    launch = experts.experts_launches(x, aligned, np.ones((T, 2), np.float32), gate_up, down,
                                      np.zeros((T, H), np.float32))[1]
    work = rng.standard_normal(launch.args[0].shape).astype(dtype)
    out_at = launch.kernel.params.index("out_ptr")
    return launch, (work,) + launch.args[1:out_at], launch.args[out_at + 1:]


def test_expert_ffn_workspace_form():
    # gate_up_act_kernel: x rows gathered by slot into L1 (one ND -> NZ copy per row), gate
    # and up on the Cube, handed to the Vector for silu(gate) * up * w; down_combine_kernel:
    # the down GEMM handed to the Vector, added into the token rows by an atomic
    # (the cross-core flag test below runs down + combine in f16)
    for T, E, H, I, dtype in ((21, 3, 100, 72, ml_dtypes.bfloat16),):
        aligned = _routing(T, E, 2)
        x = rng.standard_normal((T, H)).astype(dtype)
        gate_up = (rng.standard_normal((E, 2 * I, H)) * 0.3).astype(dtype)
        down = (rng.standard_normal((E, H, I)) * 0.3).astype(dtype)
        w = rng.random((T, 2)).astype(np.float32)
        want = experts.experts(x, aligned, w, gate_up, down, backend="reference")
        got = experts.experts(x, aligned, w, gate_up, down, backend=TWIN)
        assert_matches(got, want, f"experts T={T} H={H} I={I} {np.dtype(dtype)}")


@pytest.mark.parametrize("dtype, activation", [(np.float16, "silu"), (ml_dtypes.bfloat16, "gelu")])
def test_expert_ffn_on_chip_form(dtype, activation):
    # fused_experts_kernel: per I chunk, gate and up handed from the AIC to the AIV and the
    # activation handed back for the down GEMM inside the loop (a flag back per hand-off),
    # the down accumulator handed to the AIV after it and added by an atomic; the twin runs
    # the block's two cores side by side
    T, E, H, I = 21, 3, 48, 40
    aligned = _routing(T, E, 2)
    x = rng.standard_normal((T, H)).astype(dtype)
    gate_up = (rng.standard_normal((E, 2 * I, H)) * 0.3).astype(dtype)
    down = (rng.standard_normal((E, H, I)) * 0.3).astype(dtype)
    w = rng.random((T, 2)).astype(np.float32)
    kw = dict(activation=activation, form="onchip")
    want = experts.experts(x, aligned, w, gate_up, down, backend="reference", **kw)
    got = experts.experts(x, aligned, w, gate_up, down, backend=TWIN, **kw)
    # the activation goes to the down GEMM in x's dtype: the twin's expf and numpy's exp
    # may round an element of it to neighbouring 16-bit values
    assert_matches(got, want, f"on-chip experts {np.dtype(dtype)} {activation}",
                   rounded=dtype)


def test_a_removed_cross_core_set_fails_naming_the_flag():
    from npujit.backends.ascendc import AscendCTwinKernel, TwinDeviceError
    from ascendc_support import compiled
    launch, head, tail = _down_combine_case(10, 4, 48, 40, np.float16)
    out = np.zeros((10, 48), np.float32)
    k = launch.kernel.with_options(backend=TWIN, debug=False)   # a variant of its own
    k[launch.grid](*head, out, *tail, **launch.meta)
    run = compiled(k, **launch.meta).runnable()
    edited = run.source.replace("AscendC::CrossCoreSetFlag<2, PIPE_FIX>(0);", "", 1)
    assert edited != run.source
    broken = AscendCTwinKernel(run.fn, run.options, source=edited)
    with pytest.raises(TwinDeviceError, match=r"CrossCoreWaitFlag\(0\) with no CrossCoreSetFlag"):
        broken(launch.grid, [a.ravel() if isinstance(a, np.ndarray) else a
                             for a in (*head, out, *tail)])


@pytest.mark.parametrize("sigmoid", [True, False])
def test_router_scores(sigmoid):
    # sigmoid, or softmax along the rows of a 2-D tile (reductions along axis 1)
    for T, E in ((33, 60), (5, 37)):        # one 64-wide tile of experts, ragged
        logits = (rng.standard_normal((T, E)) * 3).astype(np.float32)
        outs = {}
        for backend in ("reference", TWIN):
            scores = np.zeros((T, E), np.float32)
            router.score_kernel.with_options(backend=backend)[(-(-T // 16),)](
                logits, scores, T, E, SIGMOID=sigmoid, BLOCK_T=16,
                BLOCK_E=max(16, 1 << (E - 1).bit_length()))
            outs[backend] = scores
        assert_matches(outs[TWIN], outs["reference"], f"scores T={T} E={E}")


def _router_outputs(launch_of):
    """{backend: outputs} of the launches ``launch_of()`` makes, run on the reference and
    on the twin."""
    got = {}
    for backend in ("reference", TWIN):
        launches, outs = launch_of()
        for launch in launches:
            launch.run(backend)
        got[backend] = outs
    return got


@pytest.mark.parametrize("scoring, T, E, k, prob", [
    ("mixtral", 21, 8, 2, False),          # softmax, renormalised; a ragged last block
    ("qwen3", 5, 60, 4, True),             # 60 of a 64-wide expert tile; router probabilities
    ("sigmoid-bias", 19, 16, 1, False),    # sigmoid with a correction bias, top-1
    ("deepseek_v3", 21, 16, 4, True),      # groups: [T, 8, 2] best-2 sums, top-4 groups kept
])
def test_fused_router(scoring, T, E, k, prob):
    # x @ w.T on the Cube handed to the Vector; where on the padded experts, softmax or
    # sigmoid, the bias row added to every token, group-limited selection (the expert tile
    # seen as [T, groups, size], top-k along each group, the kept groups as a per-element
    # mask), top-k on the scalar unit, the weights
    # gathered at the ids (a 3-D one-hot folded along the experts), renormalised, stored as
    # [T, k] rows shorter than a 32-byte block.  Zero rows of x tie every expert: the ids
    # must be the lowest, as the reference orders ties.
    from npujit.kernels.moe.routing import Routing
    rule = scoring
    if scoring == "sigmoid-bias":
        bias = rng.standard_normal(E) * 0.1
        bias[[5, 11]] = bias.max() + 0.2          # two experts tie for the biased best
        rule = Routing("sigmoid", renormalize=True, correction_bias=bias)
    x = rng.standard_normal((T, 40)).astype(np.float16)
    x[::4] = 0
    w = rng.standard_normal((E, 40)).astype(np.float16)

    def launches():
        ps = np.zeros(E, np.float32) if prob else None
        launch, (weights, ids) = router.router_launch(x, w, k, scoring=rule, prob_sum=ps)
        return [launch], (weights, ids) + ((ps,) if prob else ())
    got = _router_outputs(launches)
    for name, g, want in zip(("weights", "ids", "prob_sum"), got[TWIN], got["reference"]):
        assert_matches(g, want, f"router {scoring} {name}")
    tied = [5] if scoring == "sigmoid-bias" else np.arange(k)
    assert (got[TWIN][1][::4] == tied).all()     # ties go to the lower expert id


def test_unfused_router():
    # the logits matmul with B = router_weight.T (run-time strides (1, H): B's columns are
    # copied), score_kernel, and select_kernel: scores [T, E] in GM, the bias row, top-k,
    # the weights at the ids
    for T, E, k, scoring in ((21, 8, 2, "mixtral"), (19, 8, 1, "switch"), (21, 64, 8, "deepseek_v3")):
        x = rng.standard_normal((T, 24)).astype(np.float16)
        x[1] = 0
        w = rng.standard_normal((E, 24)).astype(np.float16)
        got = _router_outputs(lambda: router.route_unfused_launches(x, w, k, scoring=scoring))
        for name, g, want in zip(("weights", "ids"), got[TWIN], got["reference"]):
            assert_matches(g, want, f"select {scoring} {name}")
