"""Scheduling: memory scopes, pipes, buffers, multi-buffering and sync as op attributes.

The scheduling steps of the compile pipeline (``ir/pipeline.py``: ``schedule(fn, spec)``
runs them on an optimised IR function) set the attributes of ``model.py`` on its ops, so
the scheduled IR prints, parses, verifies and runs on every backend unchanged; the
simulator's stream recorder (``sim/lower.py``) turns it plus a real launch into
instruction streams.  Steps have the pipeline's shape: ``name`` and ``run(fn, ctx) -> bool``
with ``ctx.spec`` the NPU spec.

Example::

    >>> from npujit.ir.pipeline import schedule
    >>> from npujit.target import ASCEND_910B_LIKE
    >>> sched = schedule(fn, ASCEND_910B_LIKE)      # doctest: +SKIP
    >>> sched.core, sched.peaks["UB"]               # doctest: +SKIP
    ('AIV', 12288)
"""
from .allocate import AllocateBuffers, Buffer, first_fit
from .model import CORE_ATTR, FLAG_ATTRS, SCHEDULE_ATTRS, Flag, clear_schedule, scheduled_ops
from .placement import PlaceAndAssignPipes
from .sync import InsertSync, value_buffers
from .verify import VerifySchedule, placed_buffers, scope_peaks

__all__ = ["Buffer", "PlaceAndAssignPipes", "AllocateBuffers", "InsertSync",
           "VerifySchedule", "value_buffers", "first_fit", "clear_schedule", "Flag",
           "FLAG_ATTRS", "scheduled_ops", "placed_buffers", "scope_peaks", "CORE_ATTR",
           "SCHEDULE_ATTRS"]
