"""``npujit demo``: compile, run and check the bundled kernels against numpy, then time two
of them on the simulated NPU (the README's first command; npujit/demo.py)."""
from __future__ import annotations

NAME = "demo"
HELP = "compile and run the bundled kernels, check them against numpy, simulate two"
TAKES_TARGET = False
EXAMPLE = "npujit demo --trace demo_trace.json"


def add_arguments(parser) -> None:
    parser.add_argument("--trace", metavar="OUT.json", default=None,
                        help="also write the simulated streaming add's Chrome/Perfetto trace")


def run(args) -> int:
    from npujit.demo import run_demo
    return 1 if run_demo(trace=args.trace) else 0
