"""Scheduling: memory scopes, pipes, buffers, multi-buffering and sync as op attributes.

``schedule(fn, spec)`` runs ``SCHEDULE_PASSES`` in order on an optimised IR function (in
place) and returns a :class:`Schedule` summary.  The scheduled IR is the same IR with the
attributes of ``model.py`` on its ops, so it prints, parses, verifies and runs on every
backend unchanged; ``npujit.sim.lower`` turns it plus a real launch into an instruction
stream for the timing simulator.  Passes have the shape of ``ir/passes``: ``name`` and
``run(fn, spec) -> bool``.

Example::

    >>> from npujit.sim import ASCEND_910B_LIKE
    >>> sched = schedule(fn, ASCEND_910B_LIKE)      # doctest: +SKIP
    >>> sched.core, sched.peaks["UB"]               # doctest: +SKIP
    ('AIV', 12288)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core import Function
from .allocate import AllocateBuffers, Buffer, first_fit
from .model import (CORE_ATTR, SCHEDULE_ATTRS, clear_schedule, flag_text, parse_flag,
                    scheduled_ops)
from .placement import PlaceAndAssignPipes
from .sync import InsertSync, value_buffers


@dataclass
class Schedule:
    """What scheduling decided, for people: the core kind, every buffer, each scope's peak
    bytes against its capacity.  The IR attributes are the source of truth."""

    spec: object
    core: str
    buffers: list = field(default_factory=list)
    peaks: dict = field(default_factory=dict)

    def describe(self) -> str:
        """A table of scopes and buffers.

        Example::

            >>> print(sched.describe())       # doctest: +SKIP
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


def schedule_passes() -> list:
    """The scheduling steps, in order (fresh objects: the allocator keeps its buffers)."""
    return [PlaceAndAssignPipes(), AllocateBuffers(), InsertSync()]


def schedule(fn: Function, spec) -> Schedule:
    """Schedule ``fn`` for ``spec`` in place; raises ``npujit.OutOfResources`` when its
    buffers (or flags) do not fit.

    Example::

        >>> sched = schedule(fn, ASCEND_910B_LIKE)     # doctest: +SKIP
    """
    import sys

    from npujit import knobs

    from ..passes.pipeline import dump_selected
    from ..printer import print_function

    clear_schedule(fn)
    passes = schedule_passes()
    dump = knobs.dump_ir()
    for p in passes:
        p.run(fn, spec)
        if dump and dump_selected(dump, p.name):       # NPUJIT_DUMP_IR=after:insert-sync
            print(f"// -----// IR after {p.name} //----- //", file=sys.stderr)
            print(print_function(fn), file=sys.stderr)
    alloc = passes[1]
    return Schedule(spec, fn.attrs[CORE_ATTR], alloc.buffers, alloc.peaks)


__all__ = ["schedule", "schedule_passes", "Schedule", "Buffer", "PlaceAndAssignPipes",
           "AllocateBuffers", "InsertSync", "value_buffers", "first_fit", "clear_schedule",
           "flag_text", "parse_flag", "scheduled_ops", "CORE_ATTR", "SCHEDULE_ATTRS"]
