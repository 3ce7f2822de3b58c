"""carried-addresses: a pointer tile a loop advances by a fixed step is recomputed from the
induction variable where a load or store reads it.

Triton's matmul advances its pointer tiles in the K loop (``a_ptrs += BLOCK_K *
stride_ak``).  ``affine-access`` turns such an access into a block copy when its offsets
are affine; when they are not -- the tutorial's ``offs_am = (pid_m * BLOCK_M +
nl.arange(0, BLOCK_M)) % M`` wraps rows, a gathered ``tok[:, None] * stride`` picks them
-- the tile stays loop-carried, and the add that advances it is Vector work in every
iteration: the loads wait on the Vector for their addresses, and on a separated part the
Cube kernel needs an AIV.  Yet the tile in iteration ``(k - lb) / step`` is only
``init + (k - lb) * D / step`` (``AffineForms.advance``): this pass reads it so at each
load or store that takes it as offsets, ``init + splat(moved)`` with ``moved`` built on
the Scalar unit from the induction variable.  The carried tile then only feeds its own
next value and dce drops it; the access's offsets are ``init`` (rows of per-row values
plus affine columns, made once before the loop) plus a scalar, one descriptor per row for
the DMA engine (``ir/schedule/placement.py`` ``_address_ops``), as the emitted Ascend C
addresses them (``backends/ascendc/emit_cube_pointers.py``).

Integer offsets wrap the same way either way (``t`` adds of ``D`` and one add of ``t * D``
agree modulo ``2**bits``), so the rewrite changes no address.  Only accesses that
``affine-access`` left as pointer accesses are rewritten (it runs first); a carried tile
read by anything else is left as it is.

Example::

    for k in range(0, n):                       for k in range(0, n):
        x = load(p, offs)             ->            x = load(p, offs0 + splat(k * D))
        offs = offs + splat(D)                      offs = offs + splat(D)     // dce: dead
"""
from __future__ import annotations

from ..builder import Builder
from ..core import Block, Function, Op, Value
from ..ops import Kind
from .affine_access import Materialise
from .affine_forms import AffineForms

# (op kind, operand number) reads of a tile as the addresses of a memory access.
_OFFSET_USES = {(Kind.LOAD, 1), (Kind.STORE, 1), (Kind.ATOMIC_RMW, 1)}


class CarriedAddresses:
    """Recomputes loop-advanced pointer tiles from the induction variable at the loads and
    stores that read them (see the module doc); returns whether it rewrote any.

    Example::

        >>> CarriedAddresses().run(fn)      # doctest: +SKIP
        True
    """

    name = "carried-addresses"

    def run(self, fn: Function, ctx=None) -> bool:
        forms = AffineForms()
        changed = False
        for loop in [op for op in fn.walk() if op.kind is Kind.FOR]:
            for arg in loop.body.args[1:]:
                changed |= _rewrite(loop, arg, forms)
        return changed


def _rewrite(loop: Op, arg: Value, forms: AffineForms) -> bool:
    t = arg.type
    if not (hasattr(t, "shape") and len(t.shape) >= 1 and t.dtype.is_int
            and not t.dtype.is_bool):
        return False
    update = loop.body.terminator.operands[arg.index - 1].op
    reads = [(u, i) for u, i in arg.uses if u is not update]
    if not reads or any((u.kind, i) not in _OFFSET_USES for u, i in reads):
        return False
    moved = forms.advance(loop, arg)
    if moved is None:
        return False
    init = loop.operands[3 + arg.index - 1]
    scratch = Builder(Block(), loc=loop.loc)
    scalar = Materialise(scratch, forms, t.dtype)(moved)
    offsets = scratch.op(Kind.ADD, [init, scratch.op(Kind.SPLAT, [scalar],
                                                     {"shape": tuple(t.shape)})])
    body = loop.body
    for i, op in enumerate(scratch.block.ops):
        body.insert(i, op)
    for u, i in reads:
        u.set_operand(i, offsets)
    return True
