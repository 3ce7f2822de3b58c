"""Mixture-of-Experts operators on npujit (kernels in ``npujit.kernels.moe``).

* ``route(x, router_weight, top_k, scoring=...)`` -> ``(topk_weights, topk_ids)``
* ``fused_moe(x, router_weight, gate_up_proj, down_proj, top_k, routing=..., ...)``
* ``fused_experts(x, topk_weights, topk_ids, gate_up_proj, down_proj, ...)``
* ``unfused_moe(...)``: the baseline, every step its own kernel
* ``route_and_balance`` -> ``(topk_weights, topk_ids, LoadBalance)``: the routing and its
  load-balance statistics (per-expert load, aux loss, CV, drops) from the kernels
* ``align`` / ``permute`` (dispatch), ``Routing`` and its presets, ``reference`` (numpy)
* ``fused_plan`` / ``unfused_plan`` / ``simulate_all``: the layers' launches, through the
  simulator; ``layer_floor`` / ``router_floor``: the analytic floors to set beside them

Weight layouts as HF / vLLM hold them: ``router_weight [E, H]``, ``gate_up_proj
[E, 2I, H]`` (gate rows first), ``down_proj [E, H, I]``.

Example::

    import npujit.moe as moe
    w, ids = moe.route(x, router_weight, 2, scoring="mixtral")
    y = moe.fused_moe(x, router_weight, gate_up_proj, down_proj, 2)
    assert np.allclose(y, moe.reference.moe(x, router_weight, gate_up_proj, down_proj, 2))
"""
from npujit.kernels.moe import reference
from npujit.kernels.moe.balance import LoadBalance, route_and_balance
from npujit.kernels.moe.dispatch import AlignedRouting, align, permute
from npujit.kernels.moe.floors import Floor, layer_floor, router_floor
from npujit.kernels.moe.launch import KernelLaunch, run_all, simulate_all
from npujit.kernels.moe.layer import (expert_capacity, experts_plan, fused_experts, fused_moe,
                                      fused_plan, unfused_moe, unfused_plan)
from npujit.kernels.moe.router import route, route_unfused
from npujit.kernels.moe.routing import PRESETS, Routing

__all__ = ["route", "route_unfused", "route_and_balance", "LoadBalance", "fused_moe",
           "fused_experts", "unfused_moe", "align", "permute", "AlignedRouting", "expert_capacity", "Routing", "PRESETS",
           "fused_plan", "experts_plan", "unfused_plan", "KernelLaunch", "run_all",
           "simulate_all", "Floor", "layer_floor", "router_floor", "reference"]
