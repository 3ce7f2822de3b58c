"""The compile pipeline: one list of named steps, run in order over one frozen context.

``pipeline(ctx)`` is the list (DESIGN.md, "Data flow")::

    verify → check-strided-views → [index-checks] → fold → cse → dce → affine-access → cse →
    dot-accumulate → fuse-elementwise → dce → place-and-assign-pipes → [split-cores] →
    allocate-buffers → insert-sync → verify-schedule

Every step is a small object with a ``name`` and ``run(fn, ctx) -> bool`` (did it change
anything?); steps keep no state between runs, so one list may serve many threads.  The
schedule steps run when ``ctx.spec`` is set; split-cores changes the IR only on a separated
part (``ir/schedule/split_cores.py``).  ``NPUJIT_DUMP_IR=all`` prints the IR after
every step to stderr, ``after:fold,insert-sync`` after those only (each dump starts
``// -----// IR after <name> //----- //``, a comment the parser skips, so a dump can be
pasted back into ``parse_function``).  A backend adds its own named stages after these
(numba: ``source`` → ``njit``; see ``jit/compiler.py``).

Example::

    >>> from npujit.ir.parser import parse_function
    >>> fn = parse_function('''"func.func"() ({
    ... ^bb0:
    ...   "func.return"() : () -> ()
    ... }) {function_type = () -> (), sym_name = "k"} : () -> ()''')
    >>> [s.name for s in pipeline(CompileContext())][:4]
    ['verify', 'check-strided-views', 'fold', 'cse']
    >>> sorted(run_pipeline(fn, CompileContext(dump="")))
    ['ir']
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from npujit import knobs

from . import verifier
from .core import Function
from .passes.cse import CSE
from .passes.affine_access import AffineAccess
from .passes.dce import DCE
from .passes.dot_accumulate import DotAccumulate
from .passes.fold import Fold
from .passes.fuse import FuseElementwise
from .passes.index_checks import IndexChecks
from .passes.strided_views import CheckStridedViews
from .printer import print_function
from .schedule.allocate import AllocateBuffers
from .schedule.load_order import GroupLoads
from .schedule.model import CORE_ATTR, clear_schedule
from .schedule.placement import PlaceAndAssignPipes
from .schedule.split_cores import SplitCores
from .schedule.sync import InsertSync
from .schedule.verify import VerifySchedule, placed_buffers, scope_peaks


@dataclass(frozen=True)
class CompileContext:
    """What every step may read, fixed for one compile.

    ``kernel`` names the kernel in errors; ``spec`` is the ``npujit.target.NPUSpec`` to
    schedule for (None: stop after the IR steps); ``debug`` adds the int32 index checks;
    ``strided_args`` names the pointer arguments the launch passes as non-contiguous views;
    ``dump`` is the ``NPUJIT_DUMP_IR`` selection; ``verify_each`` runs the verifier after
    every step (tests); ``locs`` adds source locations to dumps.
    """

    kernel: str = "kernel"
    spec: object = None
    debug: bool = False
    strided_args: frozenset = frozenset()
    dump: str = field(default_factory=knobs.dump_ir)
    verify_each: bool = False
    locs: bool = False


class Verify:
    """The verifier as a step: checks, never changes anything."""

    name = "verify"

    def run(self, fn: Function, ctx=None) -> bool:
        verifier.verify(fn)
        return False


class ClearSchedule:
    """Drops any schedule attributes, so scheduling an already scheduled IR starts fresh."""

    name = "clear-schedule"

    def run(self, fn: Function, ctx=None) -> bool:
        clear_schedule(fn)
        return False


# The IR steps end here: the "ir" artifact is the IR after this step.
IR_END = "dce"


def schedule_steps() -> list:
    """The scheduling steps of the pipeline, in order."""
    return [ClearSchedule(), PlaceAndAssignPipes(), SplitCores(), GroupLoads(),
            AllocateBuffers(), InsertSync(), VerifySchedule()]


def pipeline(ctx: CompileContext) -> list:
    """The steps for ``ctx``, in order (fresh objects; none keeps state between runs)."""
    steps = [Verify(), CheckStridedViews()]
    if ctx.debug:      # int32 address arithmetic that wraps raises IndexOverflowError
        steps.append(IndexChecks())
    # cse again after affine-access: the block copies' scalars reuse the kernel's own
    steps += [Fold(), CSE(), DCE(), AffineAccess(), CSE(), DotAccumulate(), FuseElementwise(),
              DCE()]
    if ctx.spec is not None:
        steps += schedule_steps()
    return steps


def dump_selected(dump: str, name: str) -> bool:
    """Whether the ``NPUJIT_DUMP_IR`` value ``dump`` asks for the IR after step ``name``.

    Example::

        >>> dump_selected("after:fold,cse", "cse"), dump_selected("all", "dce")
        (True, True)
    """
    dump = dump.strip()
    if dump == "all":
        return True
    if dump.startswith("after:"):
        return name in {s.strip() for s in dump[len("after:"):].split(",")}
    return False


def run_pipeline(fn: Function, ctx: CompileContext, steps=None) -> dict:
    """Run ``steps`` (default ``pipeline(ctx)``) on ``fn`` in place; returns the artifacts:
    ``ir`` (the optimised IR text) and, when scheduled, ``schedule`` (the scheduled IR).

    Example::

        >>> run_pipeline(fn, CompileContext(spec=ASCEND_910B_LIKE))["schedule"]  # doctest: +SKIP
    """
    steps = pipeline(ctx) if steps is None else steps
    artifacts = {}
    last_ir = max((i for i, s in enumerate(steps) if s.name == IR_END), default=len(steps) - 1)
    for i, step in enumerate(steps):
        step.run(fn, ctx)
        if ctx.verify_each:
            try:
                verifier.verify(fn)
            except verifier.VerifyError as e:
                raise verifier.VerifyError(f"after step {step.name!r}: {e}") from None
        if ctx.dump and dump_selected(ctx.dump, step.name):
            print(f"// -----// IR after {step.name} //----- //", file=sys.stderr)
            print(print_function(fn, locs=ctx.locs), file=sys.stderr)
        if i == last_ir:
            artifacts["ir"] = print_function(fn)
    if ctx.spec is not None:
        artifacts["schedule"] = print_function(fn)
    return artifacts


@dataclass
class Schedule:
    """What scheduling decided, for people: the core kind, every buffer, each scope's peak
    bytes against its capacity (read from the scheduled IR's attributes, the source of
    truth: ``schedule/verify.py`` ``placed_buffers``)."""

    spec: object
    core: str
    buffers: list = field(default_factory=list)
    peaks: dict = field(default_factory=dict)

    @classmethod
    def of(cls, fn: Function, spec) -> "Schedule":
        """The summary of the scheduled ``fn``."""
        buffers = placed_buffers(fn)
        return cls(spec, fn.attrs[CORE_ATTR], buffers, scope_peaks(buffers))

    def describe(self) -> str:
        """A table of scopes and buffers.

        Example::

            >>> print(Schedule.of(fn, spec).describe())       # doctest: +SKIP
            core AIV on ASCEND_910B_LIKE
            UB: 12288 of 196608 B
              UB.0 ...
        """
        lines = [f"core {self.core} on {self.spec.name}"]
        for scope in sorted(self.peaks):
            lines.append(f"{scope}: {self.peaks[scope]} of {self.spec.capacity[scope]} B")
            for b in sorted((b for b in self.buffers if b.scope == scope),
                            key=lambda b: b.name):
                lines.append(f"  {b.describe()} at offset {b.offset}")
        return "\n".join(lines)


def schedule(fn: Function, spec, dump: str | None = None) -> Schedule:
    """Schedule the optimised ``fn`` for ``spec`` in place (the pipeline's scheduling
    steps); raises ``npujit.OutOfResources`` when its buffers (or flags) do not fit.

    Example::

        >>> schedule(fn, ASCEND_910B_LIKE).peaks["UB"]     # doctest: +SKIP
        12288
    """
    ctx = CompileContext(kernel=fn.name, spec=spec,
                         dump=knobs.dump_ir() if dump is None else dump)
    run_pipeline(fn, ctx, schedule_steps())
    return Schedule.of(fn, spec)


def run_passes(fn: Function, passes=None, verify: bool = False, dump: str | None = None,
               locs: bool = False) -> Function:
    """Run the IR steps of the pipeline (or ``passes``) on ``fn`` in place and return it;
    ``verify=True`` runs the verifier after every step, naming the step that broke the IR.

    Example::

        >>> run_passes(fn, passes=[Fold(), DCE()], verify=True)   # doctest: +SKIP
    """
    ctx = CompileContext(dump=knobs.dump_ir() if dump is None else dump, verify_each=verify,
                         locs=locs)
    run_pipeline(fn, ctx, passes)
    return fn
