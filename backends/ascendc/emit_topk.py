"""``nl.topk`` for the Ascend C emitter: the k largest along the last axis of a tile in UB,
largest first, with their indices.

The order is the reference interpreter's (backends/reference/semantics_reduce.py
``topk``): NaN ranks above every number, equal values go to the lower index first.  The
vector API's sorts (``Sort``, ``TopK``) work on 32-element regions with index proposals
and leave the order of equal values and of NaN to the hardware, so the emitted selection
runs on the scalar unit between a ``V_S`` and an ``S_V`` flag pair: per row, ``k`` rounds
of "the best lane not taken yet", a round scanning the row once.  A router's rows are a
few dozen experts and ``k`` is small, so this is ``k`` short passes per token.

Example (``_, ids = nl.topk(scores, 2, axis=1)`` on a [16, 64] tile)::

    for (int32_t r = 0; r < 16; ++r) {
        for (int32_t j = 0; j < 2; ++j) {
            int32_t best = -1;
            ...
            ids.SetValue(r * 2 + j, best);
"""
from __future__ import annotations

import math
import re

from . import schedule_view as sv
from .emit_rows import OWN_ID
from .lowering import cpp_type, not_lowered, source_line
from .values import Cell, Tile



class TopkLowering:
    """Mixin of ``KernelWriter``: ``npu.topk``."""

    def emit_topk(self, op) -> None:
        src = self.sym(op.operands[0])
        shape = tuple(int(x) for x in op.operands[0].type.shape)
        axis, k = int(op.attrs["axis"]), int(op.attrs["k"])
        if axis != len(shape) - 1:
            raise not_lowered(op, "top-k along an axis other than the last is not emitted yet")
        n = shape[-1]
        rows = math.prod(shape[:-1])          # a 3-D tile is rows of rows, row-major
        if isinstance(src, Cell):             # elements the scalar unit computes
            at = src.at
        elif isinstance(src, Tile):
            s = self.use_tile(src)
            at = (lambda r, c: f"{s.var}.GetValue({r} * {n} + {c})")
        else:
            raise not_lowered(op, "top-k of a value that is not a tile in UB")
        dt = src.dtype
        values, ids = op.results
        bufs = sv.buffers(op)
        self.emit_flags(op, "wait_flags")
        names = re.match(r"\s*(\w+)\s*,\s*(\w+)\s*=", source_line(op))
        hints = [n if names and n != "_" else d
                 for n, d in zip(names.groups() if names else ("", ""), ("top_values", "top_ids"))]
        val_out = self.result_tile(values, bufs[0], hints[0]) if values.users else None
        id_out = self.result_tile(ids, bufs[1], hints[1])
        if dt.is_float:
            self.helpers.add("ranks_above")
        r, j, c, q = (self.fresh(x) for x in ("r", "j", "c", "q"))
        best, best_v, taken, v = (self.fresh(x) for x in ("best", "best_value", "taken", "v"))
        key = "float" if dt.is_float else cpp_type(dt)
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});   // the scalar unit ranks the lanes")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{")
        self.line(f"    for (int32_t {j} = 0; {j} < {k}; ++{j}) {{   // the best lane not taken yet")
        self.line(f"        int32_t {best} = -1;")
        self.line(f"        {key} {best_v} = 0;")
        self.line(f"        for (int32_t {c} = 0; {c} < {n}; ++{c}) {{")
        self.line(f"            bool {taken} = false;")
        self.line(f"            for (int32_t {q} = 0; {q} < {j}; ++{q}) {{")
        self.line(f"                {taken} = {taken} || {id_out.var}.GetValue({r} * {k} + {q}) == {c};")
        self.line("            }")
        self.line(f"            const {key} {v} = static_cast<{key}>({at(r, c)});")
        above = f"RanksAbove({v}, {best_v})" if dt.is_float else f"{v} > {best_v}"
        self.line(f"            if (!{taken} && ({best} < 0 || {above})) {{")
        self.line(f"                {best} = {c};")
        self.line(f"                {best_v} = {v};")
        self.line("            }")
        self.line("        }")
        self.line(f"        {id_out.var}.SetValue({r} * {k} + {j}, {best});")
        if val_out is not None:
            self.line(f"        {val_out.var}.SetValue({r} * {k} + {j}, {at(r, best)});")
        self.line("    }")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});   // the vector unit reads the results")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        for res, out in ((values, val_out), (ids, id_out)):
            if out is not None:
                self.syms[id(res)] = out
                self.finish_tile(out)
        self.emit_flags(op, "set_flags")


# The comparison the emitted top-k ranks lanes by (a helper in the kernel file).
RANKS_ABOVE = [
    "// Whether a ranks above b in a top-k: NaN above every number, then the larger value",
    "// (equal values keep the lower index: the scan meets it first).",
    "__aicore__ inline bool RanksAbove(float a, float b)",
    "{",
    "    if (a != a) return b == b;",
    "    return a > b;",
    "}",
    "",
]
