"""``npujit ir FILE::KERNEL``: the kernel's IR at every compile stage, or after one pass.

Stages: ``trace`` (as traced, with source locations), ``ir`` (after the pass pipeline),
``schedule`` (pipes, scopes, buffers and flags for the NPU spec), ``buffers`` (a table of
the schedule's buffers) and, with ``--backend llvm`` or ``numba``, the generated source
(LLVM IR, or Python for numba).  ``--after
PASS`` prints the IR after one named step of the pipeline instead (the steps
``NPUJIT_DUMP_IR=after:PASS`` knows).
"""
from __future__ import annotations

import contextlib
import io
import os

from .target import UsageError, add_target_arguments, resolve

NAME = "ir"
HELP = "print a kernel's IR at every compile stage, or after one named pass"
TAKES_TARGET = True
EXAMPLE = "npujit ir npujit.kernels.softmax::softmax_kernel --after fold"
STAGES = ("trace", "ir", "schedule", "buffers", "backend")


def add_arguments(parser) -> None:
    add_target_arguments(parser)
    parser.add_argument("--after", metavar="PASS", default=None,
                        help="print only the IR after this pass (e.g. fold, cse, dce)")
    parser.add_argument("--stage", choices=STAGES, action="append", default=None,
                        help="print only this stage (repeatable); default: every stage")
    parser.add_argument("--backend", choices=("reference", "llvm", "numba"),
                        default="reference",
                        help="the backend to compile for (llvm and numba add their generated "
                             "source: LLVM IR, Python)")
    parser.add_argument("--spec", default=None, help="the NPU preset the schedule is for")


def pass_names() -> list[str]:
    """The names ``--after`` accepts: the IR pipeline's steps."""
    from npujit.ir.pipeline import CompileContext, pipeline
    from npujit.target import ASCEND_910B_LIKE
    steps = pipeline(CompileContext(spec=ASCEND_910B_LIKE, debug=True, dump=""))
    return list(dict.fromkeys(p.name for p in steps))


def _fresh(kernel, args):
    """A new kernel object for the same function (an empty in-memory cache, so this
    compile runs every stage, and prints its dumps, even if the kernel ran before)."""
    from npujit.jit.kernel import NPUKernel
    options = {**kernel.options, "backend": args.backend}
    if args.spec:
        options["spec"] = args.spec
    return NPUKernel(kernel.fn, **options)


def after_pass(kernel, largs, kwargs, name: str) -> str:
    """The IR text right after the pipeline step ``name``."""
    names = pass_names()
    if name not in names:
        raise UsageError(f"unknown pass {name!r}; --after takes one of {', '.join(names)}")
    buf = io.StringIO()
    old = os.environ.get("NPUJIT_DUMP_IR")
    os.environ["NPUJIT_DUMP_IR"] = f"after:{name}"
    try:
        with contextlib.redirect_stderr(buf):
            kernel.inspect(*largs, **kwargs)
    finally:
        if old is None:
            os.environ.pop("NPUJIT_DUMP_IR", None)
        else:
            os.environ["NPUJIT_DUMP_IR"] = old
    text = buf.getvalue()
    # A step that runs twice (dce) dumps twice: the first is the one after that step.
    marker = "// -----// IR after"
    dumps = [marker + d for d in text.split(marker)[1:]]
    return dumps[0].rstrip() + "\n" if dumps else text


def run(args) -> int:
    kernel, _, _, largs, kwargs, _ = resolve(args)
    kernel = _fresh(kernel, args)
    if args.after:
        print(after_pass(kernel, largs, kwargs, args.after), end="")
        return 0
    artifacts = kernel.inspect(*largs, **kwargs)
    for stage in args.stage or STAGES:
        text = artifacts.get(stage)
        if text is None:
            if args.stage:
                raise UsageError(f"stage '{stage}' has no text for the {args.backend} "
                                 "backend (use --backend llvm or --backend numba for "
                                 "generated source)")
            continue
        print(f"// ===== {stage} =====")
        print(text.rstrip())
        print()
    return 0
