"""The MoE kernels through ``kernel.simulate``: the fused router and the fused layer on
the 910B-like preset (the expert FFN in its workspace form; the on-chip form there is in
tests/sim/test_core_split.py), the on-chip form on the coupled 910-like preset.
Outputs are the real ones; byte counts are checked against analytic counts."""
from __future__ import annotations

import numpy as np

from npujit.kernels.moe import reference as ref
from npujit.kernels.moe.launch import simulate_all
from npujit.kernels.moe.layer import fused_plan
from npujit.kernels.moe.router import router_launch
from npujit.target import ASCEND_910_LIKE, ASCEND_910B_LIKE

from .conftest import close, problem


def test_fused_router_on_910b():
    T, H, E, k = 40, 128, 16, 2
    x, router, *_ = problem(T=T, H=H, E=E, dtype=np.float16, seed=1)
    launch, (w, ids) = router_launch(x, router, k, "mixtral")
    report = launch.simulate(ASCEND_910B_LIKE)
    want_w, want_ids = ref.route(x, router, k, "mixtral")
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6)
    programs = launch.grid[0]
    b = report.bytes_by_path
    # x once, the router weight once per program of 16 tokens (fp16)
    assert b["GM_to_L1"] == T * H * 2 + programs * E * H * 2
    # only topk_weights and topk_ids leave the Vector unit ...
    assert b["UB_to_GM"] == T * k * (4 + 4)
    # ... the logits cross GM only as the AIC -> AIV hand-off workspace (16 x 16 fp32 each)
    assert b["L0C_to_GM"] == programs * 16 * 16 * 4
    assert report.cycles >= report.bound.cycles > 0


def test_fused_layer_on_910b_workspace_form():
    T, H, I, E, k = 24, 64, 32, 8, 2
    x, router, gate_up, down, _ = problem(T=T, H=H, I=I, E=E, dtype=np.float16, seed=4)
    launches, out = fused_plan(x, router, gate_up, down, k, "mixtral", form="workspace")
    reports = dict(simulate_all(launches, ASCEND_910B_LIKE))
    assert list(reports) == ["router_kernel", "count_kernel", "offsets_kernel",
                             "scatter_kernel", "gate_up_act_kernel", "down_combine_kernel",
                             "cast_kernel"]
    close(out, ref.moe(x, router, gate_up, down, k, "mixtral"), np.float16)
    for name, r in reports.items():
        assert r.cycles >= r.bound.cycles > 0, name
    # Analytic GM traffic for this routing (one K step, one I tile, one H tile): a used
    # block of 16 rows loads its valid token rows and its expert's gate and up tiles and
    # stores the activation of its valid rows; down + combine reads those rows back (not
    # the pad rows) and the down tile; unused blocks load nothing.
    _, ids = ref.route(x, router, k, "mixtral")
    blocks = int(sum(-(-c // 16) for c in np.bincount(ids.ravel(), minlength=E)))
    first, second = reports["gate_up_act_kernel"], reports["down_combine_kernel"]
    assert first.bytes_by_path["GM_to_L1"] == T * k * H * 2 + blocks * 2 * I * H * 2
    assert first.bytes_by_path["UB_to_GM"] == T * k * I * 2
    assert second.bytes_by_path["GM_to_L1"] == T * k * I * 2 + blocks * I * H * 2
    # every slot adds one fp32 row into the output (block_h covers H: one tile)
    assert second.bytes_by_path["UB_to_GM"] == T * k * H * 4


def test_onchip_experts_on_the_coupled_part():
    """The one-kernel expert FFN simulates on the 910-like part (no AIC/AIV split); two
    stages need more MTE2 -> MTE1 event ids than it has, so one stage."""
    T, H, I, E, k = 24, 64, 32, 8, 2
    x, router, gate_up, down, shared = problem(T=T, H=H, I=I, E=E, seed=5, shared_i=16)
    launches, out = fused_plan(x, router, gate_up, down, k, "qwen", shared_expert=shared,
                               num_stages=1, form="onchip")
    reports = simulate_all(launches, ASCEND_910_LIKE)
    names = [n for n, _ in reports]
    assert names.count("fused_experts_kernel") == 2          # routed + shared
    close(out, ref.moe(x, router, gate_up, down, k, "qwen", shared_expert=shared),
          np.float32)
    assert all(r.cycles >= r.bound.cycles > 0 for _, r in reports)


def test_split_lets_the_aic_load_by_a_loaded_index():
    """sim/split.py: a GM -> L1 copy addressed by a Vector-loaded index (the expert id of a
    grouped GEMM) stays on the AIC; the Cube computing on a Vector result still raises."""
    import pytest

    from npujit.sim.isa import copy, mmad
    from npujit.sim.split import split_stream

    expert_id = copy("GM_to_UB", 4, writes=[("UB.0", 0)])
    weights = copy("GM_to_L1", 2048, reads=[("UB.0", 0)], writes=[("L1.0", 0)])
    result = copy("L0C_to_GM", 1024, reads=[("L0C.0", 0), ("UB.0", 0)])
    aic, aiv = split_stream([expert_id, weights, result], 0, {})
    # the AIC's scalar unit reads the index: its copies do not read the AIV's UB
    assert aic == [weights._replace(reads=()), result._replace(reads=(("L0C.0", 0),))]
    assert aiv == [expert_id]
    with pytest.raises(NotImplementedError, match="a Vector result"):
        split_stream([expert_id, mmad(16, 16, 16, reads=[("UB.0", 0)])], 0, {})


def test_unfused_layer_on_910b_moves_more_hbm_bytes_than_fused():
    """Every unfused step is Cube-only or Vector-only, so the baseline simulates on the
    910B-like part as it is; its GM intermediates make it move more bytes than the fused
    layer (workspace form) and take longer, and both give the reference's numbers."""
    from npujit.kernels.moe.layer import unfused_plan

    T, H, I, E, k = 24, 64, 32, 8, 2
    x, router, gate_up, down, _ = problem(T=T, H=H, I=I, E=E, dtype=np.float16, seed=4)
    want = ref.moe(x, router, gate_up, down, k, "mixtral")
    totals = {}
    for name, plan in (("fused", fused_plan(x, router, gate_up, down, k, form="workspace")),
                       ("unfused", unfused_plan(x, router, gate_up, down, k))):
        launches, out = plan
        reports = [r for _, r in simulate_all(launches, ASCEND_910B_LIKE)]
        close(out, want, np.float16)
        totals[name] = (sum(r.hbm_read_bytes + r.hbm_write_bytes for r in reports),
                        sum(r.cycles for r in reports))
    assert totals["unfused"][0] > totals["fused"][0]
    assert totals["unfused"][1] > totals["fused"][1]


def test_routing_256_experts_fits_the_910b():
    # DeepSeek-V3's 256 experts: the router's [K, BLOCK_E] weight chunk and the dispatch
    # kernels' [BLOCK_S, BLOCK_E] one-hot tiles are sized to fit L0B and UB (both raised
    # OutOfResources at 256 experts before)
    from npujit.kernels.moe.dispatch import align_launches
    from npujit.sim import DebugOptions
    T, H, E, k = 40, 1024, 256, 8
    x, router, *_ = problem(T=T, H=H, E=E, dtype=np.float16, seed=3)
    router = (router / 32).astype(np.float16)            # logits of a few units
    launch, (w, ids) = router_launch(x, router, k, "deepseek_v3")
    assert launch.meta["L0_BLOCK_K"] and launch.meta["L0_BLOCK_K"] < launch.meta["BLOCK_H"]
    report = launch.simulate(ASCEND_910B_LIKE, debug=DebugOptions.full())
    assert report.races == [] and report.flag_issues == []
    want_w, want_ids = ref.route(x, router, k, "deepseek_v3")
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6)
    launches, aligned = align_launches(ids, E, block_m=16)
    assert launches[0].meta["BLOCK_S"] < 64
    for dispatch in launches:
        dispatch.simulate(ASCEND_910B_LIKE)
    sorted_ids, expert_ids, total = ref.align_block_size(ids, E, 16)
    assert aligned.total == total
    np.testing.assert_array_equal(aligned.sorted_ids[:total], sorted_ids[:total])
    np.testing.assert_array_equal(aligned.expert_ids[:total // 16], expert_ids[:total // 16])


def test_start_jitter_spreads_the_cores_and_keeps_the_numbers():
    """``kernel.simulate(start_jitter=...)``: the same routing and bytes, each
    core's first program within the jitter, not all at cycle 0."""
    T, H, E, k = 40, 128, 16, 2
    x, router, *_ = problem(T=T, H=H, E=E, dtype=np.float16, seed=1)
    launch, (w, ids) = router_launch(x, router, k, "mixtral")
    plain = launch.simulate(ASCEND_910B_LIKE)
    spread = launch.simulate(ASCEND_910B_LIKE, start_jitter=400)
    np.testing.assert_array_equal(ids, ref.route(x, router, k, "mixtral")[1])
    assert spread.bytes_by_path == plain.bytes_by_path

    def first_starts(report):
        first = {}
        for p in report.programs:
            first[p.core] = min(first.get(p.core, p.start), p.start)
        return set(first.values())
    assert first_starts(plain) == {0}
    spread_starts = first_starts(spread)
    assert all(0 <= t <= 400 for t in spread_starts) and len(spread_starts) > 1
