"""Loads and stores of 1-D lanes at per-lane GM offsets, on the scalar unit: a gather
(``x[ids]``, strided lanes ``ptr + lanes * k``) reads each lane with
``GlobalTensor::GetValue`` into UB, a scatter (``out[pos] = s``) writes each lane with
``SetValue``; a lane's condition is ``lanes < n`` or a per-lane value (emit_rows.py).

Example (``nl.store(sorted_ids_ptr + pos, s, mask=keep)``)::

    for (int32_t r = 0; r < 16; ++r) {   // one element per lane, scattered
        if (keep(r)) sortedIdsGm_.SetValue(pos.GetValue(r), s + r);
"""
from __future__ import annotations

from .emit_rows import OWN_ID
from .lowering import cpp_type, not_lowered
from .values import Index, Mask, RowVal, Scalar, Splat, Tile, scalar_arg


class LaneLowering:
    """Mixin of ``KernelWriter``: gathers and scatters of 1-D lanes."""

    def lane_condition(self, op, mask, r: str) -> str | None:
        """Lane ``r``'s condition as C++ (``None``: every lane)."""
        if mask is None:
            return None
        if isinstance(mask, Mask):
            return f"static_cast<uint32_t>({r}) < {mask.count}"
        if isinstance(mask, RowVal) and mask.dtype.is_bool:
            return mask.at(r)
        raise not_lowered(op, "a mask the emitter cannot build for a gather or scatter")

    def lanes_load(self, op, gm: str, t: str, var: str, offs: RowVal, mask, fill: str) -> None:
        """A 1-D load at per-lane offsets (strided, or gathered by loaded indices): the
        scalar unit reads each in-bounds lane from GM into UB, then hands the tile to the
        vector unit."""
        r = self.fresh("r")
        cond = self.lane_condition(op, mask, r)
        if mask is not None:
            self.line(f"AscendC::Duplicate({var}, {fill}, {offs.rows});   // masked-off lanes")
            self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
            self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        read = f"{var}.SetValue({r}, {gm}.GetValue({offs.at(r)}));"
        self.line(f"for (int32_t {r} = 0; {r} < {offs.rows}; ++{r}) {{   // one element per lane")
        self.line(f"    {read}" if cond is None else f"    if ({cond}) {read}")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});   // the vector unit reads the lanes")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")

    def lanes_store(self, op, gm: str, offs: RowVal, value, mask) -> None:
        """A store at per-lane offsets (a scatter: ``out[pos] = s``): the scalar unit writes
        each lane whose condition holds, after the vector unit made the offsets."""
        r = self.fresh("r")
        cond = self.lane_condition(op, mask, r)
        if isinstance(value, Tile):
            value = self.row_of_tile(op, value)
        if isinstance(value, Index):
            at = f"static_cast<{cpp_type(op.operands[0].type.dtype)}>({value.base} + {r})"
        elif isinstance(value, RowVal):
            at = scalar_arg(Scalar(value.at(r), value.dtype), op.operands[0].type.dtype)
        elif isinstance(value, Splat):
            at = scalar_arg(value.value, op.operands[0].type.dtype)
        else:
            raise not_lowered(op, "this value of a scattered store is not emitted yet")
        write = f"{gm}.SetValue({offs.at(r)}, {at});"
        self.line(f"for (int32_t {r} = 0; {r} < {offs.rows}; ++{r}) {{   // one element per lane, scattered")
        self.line(f"    {write}" if cond is None else f"    if ({cond}) {write}")
        self.line("}")

