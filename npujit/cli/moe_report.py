"""``npujit moe-report``: Mixture-of-Experts layers, fused against unfused, through the NPU
timing simulator beside their analytic floors (kernels/moe/report.py, docs/moe.md).

Layers: Mixtral 8x7B (H 4096, I 14336, 8 experts, top-2) at 64, 512 and 2048 tokens and a
DeepSeek-V3-shaped layer (H 7168, 256 experts of I 2048, top-8, 8 groups / top-4, one
shared expert) at 512 tokens, bf16, on the 910B-like part.  ``--quick`` runs the same
routing rules on layers scaled down to seconds.  The full sizes allocate the expert
weights (zeros; Mixtral 2.8 GB, DeepSeek-V3 22.5 GB of address space) and take minutes.

Columns: simulated microseconds of the fused layer (router, dispatch metadata, the expert
kernels in the workspace form) and of the unfused baseline (every step a kernel with its
result in GM), the speed-up, the analytic floor (the touched experts' weights, x, y and
the routing over HBM bandwidth, or the FLOPs over Cube peak) and how far the fused layer
is from it, HBM bytes of both and the floor's, the router against its own floor, and the
busiest core over the mean (1.00: balanced).
"""
from __future__ import annotations

import importlib.util
import json

from .target import UsageError

NAME = "moe-report"
HELP = "fused vs unfused MoE layers through the simulator, beside the analytic floors"
EXAMPLE = "npujit moe-report --quick --png moe.png --trace moe.json"
TAKES_TARGET = False


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="scaled-down layers (seconds instead of minutes)")
    parser.add_argument("--layer", choices=("mixtral", "deepseek_v3", "all"), default="all",
                        help="which layer (default: all)")
    parser.add_argument("--tokens", default=None,
                        help="comma-separated token counts (default: the layer's own)")
    parser.add_argument("--png", metavar="OUT.png", default=None,
                        help="plot the last row's steps, unfused vs fused (needs matplotlib)")
    parser.add_argument("--trace", metavar="OUT.json", default=None,
                        help="Perfetto trace of the last row's fused expert kernels")
    parser.add_argument("--json", metavar="OUT.json", default=None,
                        help="write the rows as JSON")


def _tokens(text: str | None, default: tuple) -> tuple:
    if text is None:
        return default
    try:
        tokens = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise UsageError(f"--tokens takes comma-separated integers, got {text!r}") from None
    if any(t < 1 for t in tokens):
        raise UsageError(f"--tokens must be positive, got {text!r}")
    return tokens


def run(args) -> int:
    from npujit.kernels.moe import report
    from npujit.target import ASCEND_910B_LIKE

    if args.png and importlib.util.find_spec("matplotlib") is None:
        raise ImportError("--png needs matplotlib: pip install matplotlib")
    layers = report.QUICK if args.quick else report.LAYERS
    names = list(layers) if args.layer == "all" else [args.layer]
    out, last = {}, None
    for name in names:
        layer = layers[name]
        rows = []
        for t in _tokens(args.tokens, layer["tokens"]):
            last = report.layer_row(layer, t, ASCEND_910B_LIKE, keep_reports=bool(args.trace))
            rows.append(last)
        print(report.format_rows(name, rows))
        print()
        out[name] = [{k: v for k, v in r.items() if k not in ("reports", "utilisation")}
                     | {"utilisation": {f"{c} {p}": v for (c, p), v in r["utilisation"].items()}}
                     for r in rows]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")
    if args.png and last is not None:
        report.plot_steps(last, args.png)
        print(f"wrote {args.png}")
    if args.trace and last is not None:
        name, rep = max(((n, r) for n, r in last["reports"] if n in report.TIMING_ONLY),
                        key=lambda nr: nr[1].cycles)
        rep.to_chrome_trace(args.trace)
        print(f"wrote {args.trace} ({name}, open in ui.perfetto.dev)")
    return 0
