"""verify-schedule: the last step of the pipeline checks what the schedule decided.

The scheduled IR's attributes (``model.py``) are the source of truth, so the check reads
them back, independently of the passes that wrote them:

* every scope's buffers, slots included, fit the spec's capacity;
* every flag waited (``wait_flags``, ``post_wait_flags``) is set somewhere with the same
  pipes and id (``set_flags``, ``pre_set_flags``), and every id is within the spec's count;
* no two buffers of a scope that are live at the same time share a byte;
* no buffer of a loop-carried variable holds two live values, or starts unwritten
  (``carried.py``), whatever the loop's ``num_stages``;
* every AIC <-> AIV hand-off (``split_cores.py``) has a buffer and cross-core flag ids of
  its own within ``CROSS_FLAG_IDS``, and only a separated part has hand-offs.

:func:`placed_buffers` is the one reading of the placed buffers from the attributes: the
schedule summary (``Schedule``), this check and the simulator's hand-off sizes use it.

Example::

    >>> VerifySchedule().run(fn, ctx)        # doctest: +SKIP
    False
"""
from __future__ import annotations

from npujit.errors import CompilationError
from npujit.target import CROSS_FLAG_IDS

from ..core import Function
from ..ops import Kind
from .allocate import Buffer, collect_buffers
from .carried import carried_conflicts
from .model import FLAG_ATTRS, Positions, outermost_loop, scheduled_ops

_SETS = ("set_flags", "pre_set_flags")


class ScheduleError(CompilationError):
    """The schedule breaks one of its own rules (a compiler bug, not the user's)."""


def placed_buffers(fn: Function) -> list[Buffer]:
    """Every buffer of the scheduled ``fn`` as placed: name, scope, offset, slot bytes,
    stages and live interval (program positions), read from the attributes.

    Example::

        >>> [b.name for b in placed_buffers(fn)]       # doctest: +SKIP
        ['UB.0', 'UB.1']
    """
    out: dict[str, Buffer] = {}
    staged_seen: dict[int, int] = {}      # id(op) -> staging buffers of it read so far
    for b in collect_buffers(fn, Positions(fn)):
        if b.values:              # a tile's buffer: the attrs of the op that makes it
            op = b.op
            tiles = [r for r in op.results if any(r is v for v in b.values)]
            i = op.results.index(tiles[0]) if len(op.attrs["buffer"]) > 1 else 0
            names, offsets, sizes = op.attrs["buffer"], op.attrs["offset"], op.attrs["bytes"]
        else:                     # a dot's L0A/L0B (or a coupled store's UB) staging buffer
            op = b.op
            i = staged_seen.get(id(op), 0)
            staged_seen[id(op)] = i + 1
            names = op.attrs["operand_buffers"]
            offsets, sizes = op.attrs["operand_offsets"], op.attrs["operand_bytes"]
        b.name, b.offset, b.slot_bytes = names[i], int(offsets[i]), int(sizes[i])
        out.setdefault(b.name, b)
    return sorted(out.values(), key=lambda b: (b.scope, int(b.name.split(".")[1])))


def scope_peaks(buffers: list[Buffer]) -> dict[str, int]:
    """The end of the highest placed slot per scope (bytes in use at the peak)."""
    peaks: dict[str, int] = {}
    for b in buffers:
        peaks[b.scope] = max(peaks.get(b.scope, 0), b.offset + b.total)
    return peaks


class VerifySchedule:
    """Checks the schedule's attributes (see the module doc); never changes anything."""

    name = "verify-schedule"

    def run(self, fn: Function, ctx) -> bool:
        spec = ctx.spec
        buffers = placed_buffers(fn)
        for scope, peak in scope_peaks(buffers).items():
            if peak > spec.capacity[scope]:
                raise ScheduleError(f"{scope} buffers end at byte {peak}, past the "
                                    f"{spec.capacity[scope]} B of {spec.name}", None, fn.name)
        by_scope: dict[str, list[Buffer]] = {}
        for b in buffers:
            by_scope.setdefault(b.scope, []).append(b)
        for scope, mine in by_scope.items():
            for i, a in enumerate(mine):
                for b in mine[i + 1:]:
                    live = a.start <= b.end and b.start <= a.end
                    share = a.offset < b.offset + b.total and b.offset < a.offset + a.total
                    if live and share:
                        raise ScheduleError(
                            f"buffers {a.name} and {b.name} are live at once but share bytes "
                            f"of {scope}", b.op.loc, fn.name)
        for loop, why in carried_conflicts(fn):
            raise ScheduleError(f"the buffer of a {why} (it would hold two live values, or "
                                "none)", loop.loc, fn.name)
        sets, waits = set(), []
        for op in scheduled_ops(fn.body):
            for attr in FLAG_ATTRS:
                for flag in op.attrs.get(attr, ()):
                    if flag.first + flag.count > spec.event_ids:
                        raise ScheduleError(f"flag {flag} uses an id past the {spec.event_ids} "
                                            f"event ids of {spec.name}", op.loc, fn.name)
                    for k in flag.ids(0, every=True):
                        if attr in _SETS:
                            sets.add((flag.src, flag.dst, k))
                        else:
                            waits.append(((flag.src, flag.dst, k), op, flag))
        for key, op, flag in waits:
            if key not in sets:
                raise ScheduleError(f"flag {flag} is waited for but never set", op.loc, fn.name)
        _check_handoffs(fn, spec)
        return False


def _check_handoffs(fn: Function, spec) -> None:
    """Each hand-off's cross-core flag ids are its own: a hand-off outside loops shares
    its id with no other, one in a loop with none in the same outermost loop (the next
    loop may take them again, split_cores.py ``_cross_flag_ids``)."""
    handoffs = [op for op in scheduled_ops(fn.body) if op.kind is Kind.HANDOFF]
    kernel_wide = {i for op in handoffs if outermost_loop(op) is None
                   for i in op.attrs.get("cross_flags", ())}
    taken: dict = {}
    for op in handoffs:
        ids = [int(i) for i in op.attrs.get("cross_flags", ())]
        loop = outermost_loop(op)
        mine = taken.setdefault(id(loop), set())
        others = kernel_wide if loop is not None else ()   # kernel-wide ones: in ``mine``
        why = None
        if spec.arch != "separated":
            why = f"a hand-off on {spec.name}, which is not a separated part"
        elif not op.attrs.get("buffer") or "src_pipe" not in op.attrs:
            why = "a hand-off without a buffer or a sending pipe"
        elif not ids or any(not 0 <= i < CROSS_FLAG_IDS or i in mine or i in others
                            for i in ids):
            why = f"a hand-off whose cross-core flags {ids} are not its own ids below " \
                  f"{CROSS_FLAG_IDS}"
        if why:
            raise ScheduleError(why, op.loc, fn.name)
        mine.update(ids)
