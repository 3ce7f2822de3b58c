"""The MoE report: a layer's fused and unfused forms through the NPU timing simulator,
beside the analytic floors (``npujit moe-report``, docs/moe.md).

For each (layer, tokens) row the layer runs as ``fused_plan(form="workspace")`` (the form
a separated part splits) and as ``unfused_plan``, every launch through ``kernel.simulate``
on the spec.  The launches that decide later launches' instruction streams (router,
score/top-k, dispatch metadata) run with their numbers; the expert GEMMs, the activation,
permute, combine and cast run timing-only (``numerics=False``): their outputs feed no
address, mask or trip count, so their cycles are the same as a full run's.  The expert
weights are zeros (only their addresses matter); x and the router weight are random, so
the routing -- which experts, how many tokens each -- is a real one.

Example::

    >>> from npujit.target import ASCEND_910B_LIKE
    >>> row = layer_row(dict(H=64, I=32, E=4, top_k=2, routing="mixtral"), 16,
    ...                 ASCEND_910B_LIKE)                       # doctest: +SKIP
    >>> row["fused_us"] < row["unfused_us"]                    # doctest: +SKIP
    True
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from . import reference
from .floors import active_experts, layer_floor, router_floor, workspace_bytes
from .layer import fused_plan, unfused_plan

# The layers the report describes: Mixtral 8x7B and a DeepSeek-V3-shaped layer (256 routed
# experts, 8 groups / top-4 groups, one shared expert), bf16.
LAYERS = {
    "mixtral": dict(H=4096, I=14336, E=8, top_k=2, routing="mixtral", shared_i=0,
                    tokens=(64, 512, 2048)),
    "deepseek_v3": dict(H=7168, I=2048, E=256, top_k=8, routing="deepseek_v3",
                        shared_i=2048, tokens=(512,)),
}
# The same layers scaled down (--quick, the demo, the tests): the same routing rules.
QUICK = {
    "mixtral": dict(H=512, I=1024, E=8, top_k=2, routing="mixtral", shared_i=0,
                    tokens=(16, 64)),
    "deepseek_v3": dict(H=512, I=256, E=32, top_k=8, routing="deepseek_v3", shared_i=256,
                        tokens=(64,)),
}

# Launches whose outputs decide no later launch's instruction stream: timing-only.
TIMING_ONLY = frozenset({"gate_up_act_kernel", "down_combine_kernel", "fused_experts_kernel",
                         "grouped_gemm_kernel", "act_kernel", "permute_kernel",
                         "combine_kernel", "cast_kernel"})


def layer_inputs(layer: dict, tokens: int, dtype=ml_dtypes.bfloat16, seed: int = 0) -> dict:
    """x, router weight (random), expert and shared-expert weights (zeros) of ``layer``.
    The router weight is scaled by ``1 / sqrt(H)``, as a linear layer's initialisation
    is, so the logits are of order 1 as a trained router's are: unscaled, DeepSeek-V3's
    sigmoid scores saturate at 1.0, tie, and the ties send every token to the lowest
    expert ids."""
    rng = np.random.default_rng(seed)
    H, I, E = layer["H"], layer["I"], layer["E"]
    inputs = dict(x=rng.standard_normal((tokens, H)).astype(dtype),
                  router_weight=(rng.standard_normal((E, H)) / np.sqrt(H)).astype(dtype),
                  gate_up_proj=np.zeros((E, 2 * I, H), dtype),
                  down_proj=np.zeros((E, H, I), dtype), shared_expert=None)
    if layer.get("shared_i"):
        si = layer["shared_i"]
        inputs["shared_expert"] = (np.zeros((2 * si, H), dtype), np.zeros((H, si), dtype))
    return inputs


def simulate_plan(launches, spec, start_jitter: int = 0) -> list:
    """``[(kernel name, SimReport)]``: each launch simulated in order, timing-only where
    its outputs decide nothing later (``TIMING_ONLY``); ``start_jitter``: see
    ``kernel.simulate``."""
    return [(launch.kernel.name,
             launch.simulate(spec, numerics=launch.kernel.name not in TIMING_ONLY,
                             start_jitter=start_jitter))
            for launch in launches]


def utilisation(reports) -> dict:
    """``{(core kind, pipe): busy fraction}`` over the launches, weighted by their cycles
    (each core kind's pipes averaged over the cores that ran a program)."""
    busy: dict = {}
    total = 0
    for _, r in reports:
        total += r.cycles
        for kind in ("AIC", "AIV"):
            cores = [c for c in r.core_busy if c.startswith(kind)]
            for c in cores:
                for pipe, cycles in r.core_busy[c].items():
                    key = (kind, pipe)
                    busy[key] = busy.get(key, 0.0) + cycles / len(cores)
    return {k: v / total for k, v in sorted(busy.items())} if total else {}


def imbalance(report) -> float:
    """Busiest core over the mean, each core's load its busiest pipe's cycles (1.0: every
    core equally loaded), over the core kind with the most work."""
    loads: dict = {}
    for core, pipes in report.core_busy.items():
        kind = core.rstrip("0123456789")
        loads.setdefault(kind, []).append(max(pipes.values(), default=0))
    if not loads:
        return 1.0
    per_kind = max(loads.values(), key=sum)
    mean = sum(per_kind) / len(per_kind)
    return max(per_kind) / mean if mean else 1.0


def layer_row(layer: dict, tokens: int, spec, dtype=ml_dtypes.bfloat16, seed: int = 0,
              keep_reports: bool = False) -> dict:
    """One row of the report: fused and unfused simulated time and HBM bytes, the floors,
    the router against its floor, utilisation and imbalance of the fused expert kernels."""
    inp = layer_inputs(layer, tokens, dtype, seed)
    H, I, E, k = layer["H"], layer["I"], layer["E"], layer["top_k"]
    args = (inp["x"], inp["router_weight"], inp["gate_up_proj"], inp["down_proj"], k)
    kw = dict(routing=layer["routing"], shared_expert=inp["shared_expert"])
    fused = simulate_plan(fused_plan(*args, form="workspace", **kw)[0], spec)
    unfused = simulate_plan(unfused_plan(*args, **kw)[0], spec)
    _, ids = reference.route(inp["x"], inp["router_weight"], k, layer["routing"])
    itemsize = np.dtype(dtype).itemsize
    floor = layer_floor(tokens, H, I, E, k, itemsize, spec, active=active_experts(ids),
                        shared_i=layer.get("shared_i", 0))
    rfloor = router_floor(tokens, H, E, k, itemsize, spec)
    clock = spec.clock_hz
    fused_cycles = sum(r.cycles for _, r in fused)
    unfused_cycles = sum(r.cycles for _, r in unfused)
    experts = [(n, r) for n, r in fused if n in TIMING_ONLY]
    row = dict(tokens=tokens, H=H, I=I, E=E, top_k=k,
               active_experts=active_experts(ids),
               fused_us=fused_cycles / clock * 1e6, unfused_us=unfused_cycles / clock * 1e6,
               fused_hbm=sum(r.hbm_bytes for _, r in fused),
               unfused_hbm=sum(r.hbm_bytes for _, r in unfused),
               floor_us=floor.seconds * 1e6, floor_bytes=floor.bytes, floor_bound=floor.bound,
               workspace_bytes=workspace_bytes(tokens, I, k, itemsize,
                                               layer.get("shared_i", 0)),
               router_us=fused[0][1].cycles / clock * 1e6, router_floor_us=rfloor.seconds * 1e6,
               steps_fused=[(n, r.cycles / clock * 1e6) for n, r in fused],
               steps_unfused=[(n, r.cycles / clock * 1e6) for n, r in unfused],
               utilisation=utilisation(experts),
               imbalance=max((imbalance(r) for _, r in experts), default=1.0))
    if keep_reports:
        row["reports"] = fused
    return row


def format_rows(name: str, rows: list) -> str:
    """The report's table for one layer, and the fused expert kernels' pipe use."""
    lines = [f"{name}: simulated time (us) and HBM bytes (MB), fused vs unfused vs the "
             "analytic floor",
             f"{'tokens':>7} {'experts':>7} {'fused':>9} {'unfused':>9} {'speed-up':>8} "
             f"{'floor':>8} {'x floor':>7} {'HBM fused':>10} {'unfused':>9} {'floor':>9} "
             f"{'router':>7} {'x floor':>7} {'imbal.':>6}"]
    for r in rows:
        lines.append(
            f"{r['tokens']:>7} {r['active_experts']:>7} {r['fused_us']:>9.1f} "
            f"{r['unfused_us']:>9.1f} {r['unfused_us'] / r['fused_us']:>7.2f}x "
            f"{r['floor_us']:>8.1f} {r['fused_us'] / r['floor_us']:>6.2f}x "
            f"{r['fused_hbm'] / 1e6:>10.1f} {r['unfused_hbm'] / 1e6:>9.1f} "
            f"{r['floor_bytes'] / 1e6:>9.1f} {r['router_us']:>7.1f} "
            f"{r['router_us'] / r['router_floor_us']:>6.2f}x {r['imbalance']:>6.2f}")
    if rows:
        use = rows[-1]["utilisation"]
        busy = ", ".join(f"{kind} {pipe} {100 * v:.0f}%" for (kind, pipe), v in use.items()
                         if v >= 0.005)
        lines.append(f"  fused expert kernels at {rows[-1]['tokens']} tokens, pipe busy: "
                     f"{busy or 'none'}")
    return "\n".join(lines)


def plot_steps(row: dict, path: str) -> None:
    """A PNG of one row's steps: unfused and fused simulated time per launch (needs
    matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.5))
    for y, (label, steps) in enumerate((("unfused", row["steps_unfused"]),
                                        ("fused", row["steps_fused"]))):
        left = 0.0
        for name, us in steps:
            ax.barh(y, us, left=left, edgecolor="black", linewidth=0.5)
            if us > 0.04 * (row["unfused_us"] or 1):
                ax.text(left + us / 2, y, name.replace("_kernel", ""), ha="center",
                        va="center", fontsize=7, rotation=90 if us < 0.12 * row["unfused_us"] else 0)
            left += us
    ax.axvline(row["floor_us"], color="red", linestyle="--", label="analytic floor")
    ax.set_yticks([0, 1], ["unfused", "fused"])
    ax.set_xlabel("simulated time (us)")
    ax.set_title(f"MoE layer, {row['tokens']} tokens, H {row['H']}, I {row['I']}, "
                 f"{row['E']} experts, top-{row['top_k']}")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
