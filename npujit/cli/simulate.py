"""``npujit simulate FILE::KERNEL``: run the kernel's example launch through the NPU timing
simulator and print the report (cycles, pipe ratios as Ascend's profiler names them, bytes
per path, the roofline bound); optionally write a Chrome/Perfetto trace and a timeline PNG.

``--check`` turns the simulator's debug switches on (race detector, NaN-poisoned buffers,
copies landing at their wait, flag checks) and, when the example has a reference, compares
the outputs with it: any race, flag problem, deadlock or mismatch exits with 1.
"""
from __future__ import annotations

import importlib.util

import numpy as np

from .target import UsageError, add_target_arguments, resolve

NAME = "simulate"
HELP = "simulate a kernel's example launch on an NPU spec; write a trace or a plot"
TAKES_TARGET = True
EXAMPLE = ("npujit simulate npujit.kernels.elementwise::add_stream_kernel "
           "--spec ascend-910b-like --trace add.json")


def add_arguments(parser) -> None:
    add_target_arguments(parser)
    parser.add_argument("--spec", default=None,
                        help="an NPU preset name (default: the kernel's, else 910B-like)")
    parser.add_argument("--trace", metavar="OUT.json", default=None,
                        help="write a Chrome/Perfetto trace (open in ui.perfetto.dev)")
    parser.add_argument("--plot", metavar="OUT.png", default=None,
                        help="write a pipe-timeline plot (needs matplotlib)")
    parser.add_argument("--check", action="store_true",
                        help="run with the debug switches and compare with the reference; "
                             "exit 1 on a race, a flag problem or a mismatch")


def _spec(name):
    if name is None:
        return None
    from npujit.target import PRESETS
    if name not in PRESETS:
        raise UsageError(f"unknown --spec {name!r}; presets: {', '.join(sorted(PRESETS))}")
    return name


def run(args) -> int:
    from npujit.sim import DebugOptions
    from npujit.testing import mismatch_report
    from npujit.testing.tiers import copy_value, stored_arguments

    spec = _spec(args.spec)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise ImportError("--plot needs matplotlib: pip install matplotlib")
    kernel, _, grid, largs, kwargs, reference = resolve(args)
    debug = None
    if args.check:
        debug = DebugOptions.full()
    run_args = [copy_value(a) for a in largs]
    with np.errstate(all="ignore"):
        report = kernel.simulate(*run_args, grid=grid, spec=spec, debug=debug, **kwargs)
    print(report)
    if args.trace:
        report.to_chrome_trace(args.trace)
        print(f"trace written to {args.trace} (open it in ui.perfetto.dev)")
    if args.plot:
        report.plot_timeline(args.plot)
        print(f"timeline written to {args.plot}")
    if not args.check:
        return 0
    problems = [str(r) for r in report.races] + list(report.flag_issues)
    if reference is not None:
        from npujit.testing.tiers import expected_outputs
        outputs = stored_arguments(kernel, largs, kwargs)
        expected = expected_outputs(reference, largs, kwargs, kernel, outputs)
        got = {**dict(zip(kernel.params, run_args)), **kwargs}
        for name in outputs:
            msg = mismatch_report(got[name], expected[name])
            if msg:
                problems.append(f"output '{name}' differs from the reference: {msg}")
    if problems:
        print(f"check FAILED: {len(problems)} problem(s)")
        for p in problems:
            print("  " + p.replace("\n", "\n  "))
        return 1
    print("check ok: no races, no flag problems" +
          (", outputs match the reference" if reference is not None else ""))
    return 0
