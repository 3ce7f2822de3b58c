"""``npujit check FILE::KERNEL``: run the kernel's example launch on every execution tier
(reference, llvm, numba, scheduled with NaN-poisoned buffers, the Ascend C twin when installed)
and compare each with the example's reference (``npujit.testing.check_kernel``).  Exits
with 1 when a tier fails."""
from __future__ import annotations

from .target import UsageError, add_target_arguments, resolve

NAME = "check"
HELP = "run a kernel's example on every execution tier and compare with its reference"
TAKES_TARGET = True
EXAMPLE = "npujit check npujit.kernels.softmax::softmax_kernel --backend reference,scheduled"


def add_arguments(parser) -> None:
    add_target_arguments(parser)
    parser.add_argument("--backend", default="all",
                        help="tiers: all (default), or a comma-separated list of reference, "
                             "llvm, numba, scheduled, ascendc-twin")
    parser.add_argument("--rtol", type=float, default=None, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=None, help="absolute tolerance")
    parser.add_argument("--spec", default=None, help="the NPU preset of the scheduled tier")


def run(args) -> int:
    from npujit.testing import check_kernel, resolve_tiers
    try:    # "all" keeps unavailable tiers, so they show as skipped
        tiers = "all" if args.backend == "all" else resolve_tiers(args.backend)
    except ValueError as e:
        raise UsageError(str(e)) from None
    kernel, module, grid, largs, kwargs, reference = resolve(args)
    if reference is None:
        raise UsageError(f"example_args in {module.__name__} returns no reference for "
                         f"'{kernel.name}'; return (grid, args, kwargs, reference) to check it")
    result = check_kernel(kernel, grid, largs, reference, tiers, kwargs=kwargs,
                          rtol=args.rtol, atol=args.atol, spec=args.spec, strict=False)
    print(result)
    return 0 if result.ok else 1
