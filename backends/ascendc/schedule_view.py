"""What the Ascend C emitter reads from a scheduled function, in one place.

The schedule's attributes (ir/schedule/model.py) are read only through these functions,
so a change in how the schedule spells pipes, scopes, buffers or flags is adapted here.

Example::

    >>> flags_of(op, "wait_flags")           # doctest: +SKIP
    [Flag(src='MTE2', dst='VECTOR', first=0, count=2)]
"""
from __future__ import annotations

from dataclasses import dataclass

from npujit.ir.schedule.model import CORE_ATTR, Flag
from npujit.ir.schedule.model import operand_stages


@dataclass(frozen=True)
class BufferRef:
    """A buffer the schedule placed a tile result in."""

    name: str       # e.g. "UB.3"
    scope: str      # UB, L1, L0A, L0B, L0C
    offset: int
    bytes: int      # one slot
    stages: int


def core(fn) -> str:
    """``"AIV"`` (vector only) or ``"AIC"`` (the kernel has a dot)."""
    return fn.attrs[CORE_ATTR]


def pipe(op) -> str | None:
    """The pipe that runs ``op`` (``None`` for ops inside a fused region)."""
    return op.attrs.get("pipe")


def scope(op) -> str | None:
    return op.attrs.get("scope")


def buffers(op) -> list[BufferRef]:
    """One ``BufferRef`` per tile result of ``op``, in result order (``[]`` if none)."""
    names = op.attrs.get("buffer", ())
    offsets = list(op.attrs.get("offset", ()))
    sizes = list(op.attrs.get("bytes", ()))
    stages = int(op.attrs.get("stages", 1))
    return [BufferRef(n, n.split(".")[0], offsets[i], sizes[i], stages) for i, n in enumerate(names)]


def operand_buffers(op) -> list[BufferRef]:
    """A dot's staging buffers for its operands (L0A for a, L0B for b), or a coupled
    store's UB one: ``operand_stages`` slots (the loop's stages, at most two)."""
    names = op.attrs.get("operand_buffers", ())
    offsets = list(op.attrs.get("operand_offsets", ()))
    sizes = list(op.attrs.get("operand_bytes", ()))
    stages = operand_stages(op)
    return [BufferRef(n, n.split(".")[0], offsets[i], sizes[i], stages) for i, n in enumerate(names)]


def k_chunk(op) -> int | None:
    """A dot's L0 K-chunk when ``L0_BLOCK_K`` splits it, else ``None``."""
    v = op.attrs.get("k_chunk")
    return None if v is None else int(v)


def loop_stages(op) -> int:
    """An ``scf.for``'s ``num_stages``."""
    return int(op.attrs.get("num_stages", 1))


def flags_of(op, which: str) -> list[Flag]:
    """The flags in one of ``op``'s flag lists: ``wait_flags``, ``set_flags``,
    ``pre_set_flags`` or ``post_wait_flags``."""
    return list(op.attrs.get(which, ()))
