"""The MoE report (kernels/moe/report.py, ``npujit moe-report``) on a tiny layer: the
floor is the analytic byte count, no simulated layer beats it, the fused layer moves fewer
HBM bytes than the unfused one (which writes every intermediate to GM), and the table
shows the row."""
import ml_dtypes
import numpy as np

from npujit.kernels.moe import reference
from npujit.kernels.moe.report import TIMING_ONLY, format_rows, layer_row
from npujit.sim import ASCEND_910B_LIKE

LAYER = dict(H=64, I=32, E=4, top_k=2, routing="mixtral", shared_i=0)


def test_a_tiny_layer_row_against_its_analytic_floor():
    T = 24
    row = layer_row(LAYER, T, ASCEND_910B_LIKE)
    H, I, E, k, b = 64, 32, 4, 2, np.dtype(ml_dtypes.bfloat16).itemsize
    rng = np.random.default_rng(0)             # layer_inputs' draws, seed 0
    x = rng.standard_normal((T, H)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((E, H)).astype(ml_dtypes.bfloat16)
    active = np.unique(reference.route(x, w, k, "mixtral")[1]).size
    assert row["active_experts"] == active
    want_bytes = active * 3 * H * I * b + E * H * b + 2 * T * H * b + T * k * 8
    assert row["floor_bytes"] == want_bytes
    assert row["fused_hbm"] >= want_bytes and row["unfused_hbm"] > row["fused_hbm"]
    assert row["fused_us"] >= row["floor_us"] > 0 and row["unfused_us"] >= row["floor_us"]
    steps = [name for name, _ in row["steps_fused"]]
    assert steps[0] == "router_kernel" and "down_combine_kernel" in steps
    assert abs(sum(us for _, us in row["steps_fused"]) - row["fused_us"]) < 1e-6
    assert row["imbalance"] >= 1.0
    assert set(n for n, _ in row["steps_fused"] if n in TIMING_ONLY) >= {"gate_up_act_kernel"}
    table = format_rows("tiny", [row])
    assert f"{T:>7} {active:>7}" in table and "pipe busy" in table
