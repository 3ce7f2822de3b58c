"""Cube operands and results at pointer-tile addresses (Triton's tutorial matmul):
``ptrs = base + rows[:, None] * stride + cols[None, :]`` loaded into L1 one ND -> NZ row
descriptor per row, and an L0C result stored one ``Fixpipe`` row at a time under the
store's mask.

Triton's ``offs = (pid * BLOCK + nl.arange(0, BLOCK)) % N`` keeps every load in bounds by
wrapping the tail lanes to the first rows/columns.  Wrapped rows of A are gathered as they
are (each row has its own descriptor).  Wrapped columns of B cannot land in NZ fractals at
an unaligned column, so the columns past the wrap read 0 instead: column ``c`` of
``a @ b`` depends only on column ``c`` of B, so the product differs from the kernel's
only in those columns, and the emitter checks that every store the result reaches (through
elementwise ops only) masks them with the same ``base + c < N`` (``columns_to_mask``,
``check_wrap_masked``); anything else is refused, naming the store.
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from . import schedule_view as sv
from .emit_cube import CUBE_DTYPES, FRACTAL, _QUANT, CubeTile, _pad
from .emit_cube_f32 import c0, in_k_blocks
from .lowering import cpp_type, not_lowered
from .values import Splat


class PointerCubeLowering:
    """Mixin of ``KernelWriter``: Cube loads and stores at pointer tiles."""

    def gathered_load_l1(self, op) -> None:
        """Rows gathered by per-row offsets (``x[tok[:, None] * stride + cols[None, :]]``)
        into L1: the tile zeroed, then one ND -> NZ copy of each row whose condition holds
        (a row lands at its C0-element slice of every fractal column; a 4-byte B's in its
        block of 16 rows, emit_cube_f32.py)."""
        from .values import Grid, Mask2, RowVal
        dt = op.result.type.dtype
        offs = self.sym(op.operands[1])
        mask = self.sym(op.operands[2]) if len(op.operands) > 2 else None
        if isinstance(mask, RowVal) and mask.dtype.is_bool:    # rows_ok[:, None], broadcast
            mask = Mask2(mask, None, mask.rows, mask.cols)
        other = self.sym(op.operands[3]) if len(op.operands) > 3 else None
        if other is not None and not (isinstance(other, Splat) and _is_zero(other.value.expr)):
            raise not_lowered(op, "a gathered Cube operand with an `other=` that is not 0 "
                                  "(masked elements read 0)")
        if not isinstance(offs, Grid) or (mask is not None and not isinstance(mask, Mask2)):
            raise not_lowered(op, "a Cube operand loaded at offsets that are not rows of "
                                  "`row[:, None] + cols[None, :]`")
        if dt.name not in CUBE_DTYPES:
            raise not_lowered(op, f"a {dt} dot operand: the emitted Cube path takes f16, bf16 and f32")
        rows, cols = offs.rows, offs.cols
        if rows % FRACTAL or cols % FRACTAL:
            raise not_lowered(op, f"a block of {rows}x{cols}: the Cube path needs multiples of 16")
        side = "A1" if any(u.kind is Kind.DOT and u.operands[0] is op.result
                           for u in op.result.users) else "B1"
        buf = sv.buffers(op)[0]
        hint = self.user_name(op, "a" if side == "A1" else "b")
        m = self.cube_member(buf, side, hint + "L1")
        self.emit_flags(op, "wait_flags")
        tile = self.slot_view(m, dt, hint)
        t = cpp_type(dt)
        self.line(f"AscendC::InitConstValue({tile}, {{1, {rows * cols * dt.itemsize // 32}, 0, {t}(0.0f)}});"
                  "   // rows left out read 0")
        count = mask.col.count if mask is not None and mask.col is not None else str(cols)
        if offs.panel is not None:
            self.paneled_rows_l1(op, offs, mask, tile, dt, side, hint, rows, count)
            self.emit_flags(op, "set_flags")
            self.syms[id(op.result)] = CubeTile(tile, dt, (rows, cols), "L1")
            return
        wrapped, col_base = None, offs.col.base
        if offs.wrap is not None:
            if side != "B1":
                raise not_lowered(op, "an A operand whose columns wrap (`% K`) is not emitted")
            # (base + c) % bound: the run [base, bound) is copied, the wrapped columns read 0
            w = offs.wrap
            self.helpers.add("clamp")
            run = self.fresh(hint + "_cols_before_wrap")
            self.line(f"const uint32_t {run} = LanesInBounds({w.bound} - ({w.base}), {cols});"
                      "   // the columns past the wrap read 0 (the store drops them)")
            if count != str(cols):
                both = self.fresh(hint + "_cols")
                self.line(f"const uint32_t {both} = {count} < {run} ? {count} : {run};")
                run = both
            count, wrapped, col_base = run, w, f"{offs.col.base} + {w.base}"
        r = self.fresh("r")        # a fresh name: the row values may name kernel variables
        conds = [mask.row.at(r)] if mask is not None and mask.row is not None else []
        if count != str(cols):
            conds.append(f"{count} > 0")
        params = self.fresh(hint + "_row")
        gm = self.gm_members[id(op.operands[0])]
        self.line(f"AscendC::Nd2NzParams {params};   // one ND row in GM -> its slices of the NZ fractals")
        self.line(f"{params}.nValue = 1;")
        self.line(f"{params}.dValue = {count};")
        self.line(f"{params}.srcDValue = {count};")
        if in_k_blocks(dt, side, False):
            self.line(f"{params}.dstNzC0Stride = {FRACTAL};   // blocks of 16 rows of K")
            at = f"({r} / {FRACTAL}) * {FRACTAL * cols} + ({r} % {FRACTAL}) * {c0(dt)}"
        else:
            self.line(f"{params}.dstNzC0Stride = {_pad(rows)};")
            at = f"{r} * {c0(dt)}"
        self.line(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{   // one descriptor per row")
        copy = f"AscendC::DataCopy({tile}[{at}], {gm}[{offs.row.at(r)} + {col_base}], {params});"
        self.line(f"    if ({' && '.join(conds)}) {copy}" if conds else f"    {copy}")
        self.line("}")
        self.emit_flags(op, "set_flags")
        self.syms[id(op.result)] = CubeTile(tile, dt, (rows, cols), "L1", wrapped=wrapped)


    def paneled_rows_l1(self, op, offs, mask, tile, dt, side, hint, rows, count) -> None:
        """Rows of a panel-major workspace into an NZ tile: column ``c`` of row ``r`` is at
        ``row[r] + (k // P) * stride + k % P`` with ``k = base + c``, so each row is a
        contiguous run per panel it crosses: one ND -> NZ row copy per run, landing at the
        run's fractal column (``k`` starts on a fractal column: ``base`` and ``P`` are
        multiples of C0, as a kernel's column tiles are)."""
        p = offs.panel
        if in_k_blocks(dt, side, False):
            raise not_lowered(op, "a panel-major B operand of 4-byte elements")
        r = self.fresh("r")
        conds = [mask.row.at(r)] if mask is not None and mask.row is not None else []
        gm = self.gm_members[id(op.operands[0])]
        params = self.fresh(hint + "_run")
        C0 = c0(dt)
        self.line(f"AscendC::Nd2NzParams {params};   // one run of a row (within a panel) -> its NZ slices")
        self.line(f"{params}.nValue = 1;")
        self.line(f"{params}.dstNzC0Stride = {_pad(rows)};")
        # fresh names: the column base and the row values may name the kernel's variables
        c, k, left, n = (self.fresh(hint + x) for x in ("_col", "_ws_col", "_left", "_run_len"))
        self.line(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{   // one descriptor per row and panel")
        if conds:
            self.line(f"    if (!({' && '.join(conds)})) continue;")
        self.line(f"    for (int64_t {c} = 0; {c} < {count};) {{")
        self.line(f"        const int64_t {k} = ({p.base}) + {c};   // the workspace column")
        self.line(f"        const int64_t {left} = ({p.panel}) - {k} % ({p.panel});   // to the panel's end")
        self.line(f"        const int64_t {n} = {left} < {count} - {c} ? {left} : {count} - {c};")
        self.line(f"        {params}.dValue = {n};")
        self.line(f"        {params}.srcDValue = {n};")
        self.line(f"        AscendC::DataCopy({tile}[({c} / {C0}) * {C0 * _pad(rows)} + {r} * {C0}], "
                  f"{gm}[{offs.row.at(r)} + {k} / ({p.panel}) * ({p.stride}) + {k} % ({p.panel})], {params});")
        self.line(f"        {c} += {n};")
        self.line("    }")
        self.line("}")

    def columns_to_mask(self, op, value, wrapped) -> None:
        """``value``'s columns ``c >= bound - base`` are not the kernel's (B's wrapped
        columns read 0): every store it reaches must drop them, which ``check_wrap_masked``
        checks when the store is written."""
        stores = stores_of_columns(value)
        if stores is None:
            base, bound = wrapped.base, wrapped.bound
            raise not_lowered(op, f"a dot whose B columns wrap (`({base} + c) % {bound}`), "
                                  "read by more than elementwise ops and masked stores")
        for st in stores:
            self.wrapped_stores[id(st)] = wrapped

    def check_wrap_masked(self, op, mask) -> None:
        """A store of a dot's columns that wrap must mask them (``columns_to_mask``)."""
        from .values import Mask2
        wrapped = self.wrapped_stores.get(id(op))
        if wrapped is None:
            return
        col = mask.col if isinstance(mask, Mask2) else None
        if col is None or col.of != wrapped.key:
            base, bound = wrapped.base, wrapped.bound
            raise not_lowered(op, f"storing a dot whose B columns wrap (`({base} + c) % {bound}`) "
                                  f"without the mask `{base} + c < {bound}` on its columns")

    def fixpipe_rows_store(self, op) -> None:
        """``nl.store(ptrs, acc, mask)`` of an L0C tile at ``row[:, None] + cols[None, :]``
        addresses: one ``Fixpipe`` per row the mask keeps (a row's elements are
        contiguous in GM, the rows anywhere), of the columns the mask keeps."""
        from .values import Grid, Mask2, RowVal
        ptr = op.operands[0]
        offs, acc = self.sym(op.operands[1]), self.sym(op.operands[2])
        mask = self.sym(op.operands[3]) if len(op.operands) > 3 else None
        if isinstance(mask, RowVal) and mask.dtype.is_bool:
            mask = Mask2(mask, None, mask.rows, mask.cols)
        if not isinstance(offs, Grid) or offs.wrap is not None or not (
                mask is None or isinstance(mask, Mask2)):
            raise not_lowered(op, "a matmul result stored at offsets that are not rows of "
                                  "`row[:, None] + cols[None, :]`")
        out_dt = ptr.type.dtype
        if (acc.out_dtype or acc.dtype) != out_dt:
            raise not_lowered(op, f"storing a {acc.out_dtype or acc.dtype} tile to a {out_dt} array")
        if out_dt.name not in ("f32",) + tuple(_QUANT):
            raise not_lowered(op, f"a {out_dt} matmul result (Fixpipe writes f32, f16 or bf16)")
        col_mask = mask.col if mask is not None else None
        if acc.wrapped is not None and (col_mask is None or col_mask.of != acc.wrapped.key):
            base, bound = acc.wrapped.base, acc.wrapped.bound
            raise not_lowered(op, f"storing a dot whose B columns wrap (`({base} + c) % {bound}`) "
                                  f"without the mask `{base} + c < {bound}` on its columns")
        rows, cols = offs.rows, offs.cols
        count = col_mask.count if col_mask is not None else str(cols)
        self.emit_flags(op, "wait_flags")
        gm = self.gm_members[id(ptr)]
        fix = self.fresh("fixpipe")
        self.line(f"AscendC::FixpipeParamsV220 {fix};   // one row of L0C (NZ, f32) -> GM (ND)")
        self.line(f"{fix}.mSize = 1;")
        self.line(f"{fix}.nSize = {count};")
        self.line(f"{fix}.srcStride = {_pad(rows)};")
        self.line(f"{fix}.dstStride = {count};")
        if out_dt.name in _QUANT:
            self.line(f"{fix}.quantPre = AscendC::QuantMode_t::{_QUANT[out_dt.name]};")
        r = self.fresh("r")
        conds = [mask.row.at(r)] if mask is not None and mask.row is not None else []
        if count != str(cols):
            conds.append(f"{count} > 0")
        store = (f"AscendC::Fixpipe<{cpp_type(out_dt)}, float, AscendC::CFG_ROW_MAJOR>("
                 f"{gm}[{offs.row.at(r)} + {offs.col.base}], {acc.var}[{r} * {FRACTAL}], {fix});")
        self.line(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{   // the rows the mask keeps")
        self.line(f"    if ({' && '.join(conds)}) {store}" if conds else f"    {store}")
        self.line("}")
        self.emit_flags(op, "set_flags")
        self.line("// the next program's Mmad reuses L0C: wait for the Fixpipe to drain it")
        self.line("AscendC::SetFlag<AscendC::HardEvent::FIX_M>(0);")
        self.line("AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(0);")

def _is_zero(expr: str) -> bool:
    """Whether a C++ literal is a zero (``0``, ``0.0f``, ``half(0.0f)`` ...)."""
    return expr.replace("half(", "").replace("bfloat16_t(", "").rstrip(")").rstrip("fL") in ("0", "0.0", "-0.0")


# Families of ops whose element (r, c) depends only on their operands' elements (r, c).
_ELEMENTWISE = ("binary", "unary", "compare", "select", "cast")


def stores_of_columns(value) -> list | None:
    """The stores that write ``value``'s elements, following it through elementwise ops
    (fused or not), or ``None`` when anything else reads it (a reduction, a dot, a
    reshape...): then a column of ``value`` may reach more than its own column."""
    from npujit.ir.ops import INFO
    stores, todo, seen = [], [value], set()
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for use, index in v.uses:
            if use.kind is Kind.STORE and index == 2:
                stores.append(use)
            elif use.kind is Kind.FUSED:
                todo.append(use.body.args[index])
            elif use.kind is Kind.YIELD and use.parent is not None and \
                    getattr(use.parent.parent_op, "kind", None) is Kind.FUSED:
                todo.append(use.parent.parent_op.results[index])
            elif INFO[use.kind].family in _ELEMENTWISE and use.results:
                todo.append(use.result)
            else:
                return None
    return stores
