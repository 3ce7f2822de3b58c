"""2-D vector tiles for the Ascend C emitter: rows of a tile in UB, per-row addresses and
masks computed by the scalar unit, and block pointers on the vector unit.

A 2-D tile ``[R, C]`` lives in UB row-major with a row pitch of ``C`` elements, so
elementwise ops run on it as on a 1-D tile of ``R * C`` lanes; a row must then be a whole
number of 32-byte blocks (``C * itemsize % 32 == 0``) for each row's copy to land aligned.

Per-row values (``x[:, None]`` of ``nl.arange`` rows or of a loaded index tile, and
scalar arithmetic on them) stay ``RowVal`` expressions in the row number: an address
``row[:, None] * stride + cols[None, :]`` is one ``DataCopyPad`` per row (a gathered
row's index read with ``GetValue``), as the schedule places it (one descriptor per row,
ir/schedule/placement.py); ``w[:, None] * y`` is one ``Muls`` per row.
"""
from __future__ import annotations

import re

from npujit.ir.ops import Kind
from npujit.ir.types import float32

from . import schedule_view as sv
from .lowering import CMP_CPP, VECTOR_BINARY, cpp_type, not_lowered
from .values import (Cell, Cell3, DataRow, Grid, Index, Mask, Mask2, OneHot, Paneled, RowVal, Scalar,
                     Splat, Tile, Wrapped, scalar_arg)

# The event id of the emitter's own SetFlag/WaitFlag pairs here: the last of the 8 ids
# per event kind; the schedule hands ids out from 0 by liveness (ir/schedule/event_ids.py),
# and a clash would be caught by the twin as a set that is still pending.
OWN_ID = 7

# Scalar C++ operators of RowVal arithmetic (the scalar unit's, as in scalar_op).
_ROW_OPS = {Kind.ADD: "+", Kind.SUB: "-", Kind.MUL: "*"}


class RowLowering:
    """Mixin of ``KernelWriter``: 2-D tiles, per-row values, UB block pointers."""

    # --- per-row values ----------------------------------------------------------------
    def row_of_tile(self, op, s: Tile) -> RowVal:
        """A 1-D tile in UB read per row by the scalar unit: DeQue it, order the scalar
        reads after its producer, and keep its slot until the end of the block."""
        self.use_tile(s)
        home = getattr(s.home, "position", None)
        event = "MTE2_S" if home == "VECIN" else "V_S"
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::{event}>({OWN_ID});   // the scalar unit reads {s.var}")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::{event}>({OWN_ID});")
        if home == "VECIN" and self.queue_state.get(s.var) == "held":
            self.queue_state[s.var] = "pinned"
            self.pinned.append(s)
        return RowVal(f"{s.var}.GetValue({{r}})", s.dtype, s.length)

    def rows_symbolic(self, op, args, rt):
        """The 2-D and per-row patterns, or ``None`` when ``op`` is none of them."""
        k = op.kind
        shape = tuple(rt.shape)
        cells = self.cell3_symbolic(op, args, rt)
        if cells is not None:
            return cells
        if k is Kind.RESHAPE:
            src = op.operands[0].type
            if src.rank == 1 and len(shape) == 2:
                a = args[0]
                if shape[0] == 1:                      # [C] -> [1, C]: the same lanes
                    return a
                if isinstance(a, Index):
                    return RowVal(f"({a.base} + {{r}})", rt.dtype, shape[0])
                if isinstance(a, Wrapped):
                    self.helpers.add("irem")
                    return RowVal(f"IntRem<{cpp_type(rt.dtype)}>({a.base} + {{r}}, {a.bound})",
                                  rt.dtype, shape[0])
                if isinstance(a, RowVal):
                    return a
                if isinstance(a, Mask):              # (lanes < n)[:, None]: rows r < n
                    return RowVal(f"(static_cast<uint32_t>({{r}}) < {a.count})", rt.dtype, shape[0])
                if isinstance(a, Tile):
                    return self.row_of_tile(op, a)
                if isinstance(a, Splat):
                    return Splat(a.value, rt.numel)
            return None
        if k is Kind.BROADCAST:
            a = args[0]
            if isinstance(a, RowVal):
                return RowVal(a.expr, a.dtype, a.rows, shape[1])
            if isinstance(a, (Index, Wrapped, Grid, Mask2, Paneled)):
                return a if not isinstance(a, Mask) else Mask2(None, a, shape[0], shape[1])
            if isinstance(a, Mask):
                return Mask2(None, a, shape[0], shape[1])
            if isinstance(a, Splat):
                return Splat(a.value, rt.numel)
            if isinstance(a, Cell):            # [1, C] or [R, 1] elements along the other axis
                src = op.operands[0].type.shape
                fixed = "{r}" if src[0] == 1 else "{c}"
                return Cell(a.expr.replace(fixed, "0"), a.dtype, shape[0], shape[1])
            if isinstance(a, Tile) and op.operands[0].type.shape[-1] == 1:
                return RowVal(self.row_of_tile(op, a).expr, a.dtype, a.length, shape[1])
            if isinstance(a, Tile) and op.operands[0].type.shape[0] == 1 and len(shape) == 2:
                return DataRow(a, shape[0], shape[1])
            raise not_lowered(op, "this broadcast of a data tile is not emitted yet")
        if k is Kind.MUL and len(shape) == 1 and any(isinstance(a, Index) for a in args) \
                and any(isinstance(a, Splat) for a in args):
            a = next(a for a in args if isinstance(a, Index))
            b = next(a for a in args if isinstance(a, Splat))
            return RowVal(f"({a.base} + {{r}}) * {b.value.expr}", rt.dtype, a.length)
        if any(isinstance(a, DataRow) for a in args) and any(
                isinstance(a, (RowVal, Cell, Index)) for a in args):
            args = [self.data_row_as_cell(op, a) if isinstance(a, DataRow) else a for a in args]
        if (any(isinstance(a, Cell) for a in args) and k is not Kind.REDUCE) or (
                k is Kind.SELECT and isinstance(args[0], OneHot)):
            return self.cell_op(op, args, rt)
        if k is Kind.SELECT and len(shape) == 1 and isinstance(args[0], RowVal) and all(
                isinstance(a, (RowVal, Splat, Tile)) for a in args):
            args = [self.row_of_tile(op, a) if isinstance(a, Tile) else a for a in args]
            e = [f"({a.expr})" if isinstance(a, RowVal) else a.value.expr for a in args]
            return RowVal(f"{e[0]} ? {e[1]} : {e[2]}", rt.dtype, shape[0])
        if k is Kind.CMP and op.attrs["predicate"] in ("eq", "ne") and len(shape) == 2 \
                and shape[0] == 1 and {type(a) for a in args} == {Index, Splat}:
            # cols[None, :] == i: a condition on the column number (`< n` is a Mask)
            e = [f"({a.base} + {{c}})" if isinstance(a, Index) else a.value.expr for a in args]
            return Cell(f"{e[0]} {CMP_CPP[op.attrs['predicate']]} {e[1]}", rt.dtype, 1, int(shape[1]))
        if k is Kind.CMP and len(shape) == 2 and all(isinstance(a, (Tile, Splat)) for a in args) \
                and any(isinstance(a, Tile) and not a.dtype.is_float for a in args) \
                and all(u.kind is Kind.RESHAPE and u.result.type.rank == 3
                        for u in _users_through_fused(op)):
            # kept[:, :, None] of a tile the scalar unit made: compare element by element
            C = int(shape[1])
            e = [self.row_of_tile(op, a).expr.replace("{r}", f"{{r}} * {C} + {{c}}")
                 if isinstance(a, Tile) else a.value.expr for a in args]
            return Cell(f"({e[0]}) {CMP_CPP[op.attrs['predicate']]} ({e[1]})", rt.dtype,
                        int(shape[0]), C)
        if len(shape) == 1 and self.per_row_only(op, args):
            # integer division of a loaded index tile (no such vector instruction), or a
            # compare only read as a row condition: the scalar unit computes it per row
            args = [self.row_of_tile(op, a) if isinstance(a, Tile) else a for a in args]
        if k is Kind.AND and len(shape) == 1 and any(isinstance(a, RowVal) for a in args):
            # (lanes < n) & a per-row condition: one per-lane condition
            e = [f"(static_cast<uint32_t>({{r}}) < {a.count})" if isinstance(a, Mask) else f"({a.expr})"
                 for a in args]
            return RowVal(" && ".join(e), rt.dtype, shape[0])
        if k is Kind.MUL and len(shape) == 2 and shape[0] == 1 and len(args) == 2 and \
                any(isinstance(a, (Index, Wrapped)) for a in args) and \
                any(isinstance(a, Splat) for a in args):
            return self.unit_column_stride(op, args)
        if not any(isinstance(a, (RowVal, Grid, Mask2)) for a in args):
            if k is Kind.AND and len(shape) == 2 and any(isinstance(a, Mask) for a in args):
                return self.mask2(op, args, shape)
            return None
        if all(isinstance(a, (RowVal, Splat)) for a in args):
            return self.row_scalar(op, args, rt)
        if k is Kind.ADD:
            a, b = args
            if isinstance(b, RowVal):
                a, b = b, a
            if isinstance(a, RowVal) and isinstance(b, Index):
                return Grid(a, b, shape[0], shape[1])
            if isinstance(a, RowVal) and isinstance(b, Wrapped):
                return Grid(a, Index("0", b.length), shape[0], shape[1], wrap=b)
            if isinstance(a, RowVal) and isinstance(b, Paneled) and b.with_rem:
                return Grid(a, Index("0", b.length), shape[0], shape[1], panel=b)
            if isinstance(b, Grid) and isinstance(a, Splat):
                a, b = b, a
            if isinstance(a, Grid) and isinstance(b, Splat) and a.panel is None:
                return Grid(a.row, Index(f"{a.col.base} + {b.value.expr}", a.col.length), a.rows, a.cols,
                            a.wrap)
        if k is Kind.AND:
            return self.mask2(op, args, shape)
        if k is Kind.CMP and op.attrs["predicate"] == "eq" and len(shape) == 2:
            a, b = args
            if isinstance(b, RowVal):
                a, b = b, a
            if isinstance(a, RowVal) and isinstance(b, Index) and not a.dtype.is_float:
                return OneHot(a, b, shape[0], shape[1])
        return None

    def unit_column_stride(self, op, args):
        """``cols[None, :] * stride_x``: the columns stay contiguous when the stride is 1;
        a stride that is a kernel argument is checked to be 1 at launch (backend.py), as the
        Cube path's inner strides are."""
        cols = next(a for a in args if isinstance(a, (Index, Wrapped)))
        stride = next(a for a in args if isinstance(a, Splat)).value.expr
        m = re.fullmatch(r"(?:static_cast<\w+>\()?tiling_\.(\w+)\)?", stride)
        if stride not in ("1", "1LL") and m is None:
            raise not_lowered(op, "a strided index (only scalar + nl.arange offsets, or columns "
                                  "times a stride argument the launch checks is 1, are emitted)")
        if m is not None and m.group(1) not in self.info.unit_stride_args:
            self.info.unit_stride_args.append(m.group(1))
        return cols

    def per_row_only(self, op, args) -> bool:
        """Whether ``op`` on a 1-D int tile and scalars is better done per row by the
        scalar unit: ``//`` and ``%`` (the vector unit divides floats only), and compares
        whose results only become row conditions (``valid[:, None]``)."""
        if not (any(isinstance(a, Tile) for a in args)
                and all(isinstance(a, (Tile, Splat, RowVal)) for a in args)
                and all(not a.dtype.is_float for a in args if isinstance(a, Tile))):
            return False
        if op.kind in (Kind.IDIV, Kind.REM):
            return True
        return op.kind is Kind.CMP and all(_row_condition_use(u) for u in _users_through_fused(op))

    def row_scalar(self, op, args, rt) -> RowVal:
        """Scalar arithmetic on per-row values (and splats): a new per-row expression."""
        k = op.kind
        dt = rt.dtype
        e = [f"({a.expr})" if isinstance(a, RowVal) else a.value.expr for a in args]
        rows = next(a for a in args if isinstance(a, RowVal))
        t = cpp_type(dt)
        if k in _ROW_OPS:
            expr = f"{e[0]} {_ROW_OPS[k]} {e[1]}"
        elif k is Kind.AND and dt.is_bool:
            expr = f"{e[0]} && {e[1]}"
        elif k is Kind.CMP:
            expr = f"{e[0]} {CMP_CPP[op.attrs['predicate']]} {e[1]}"
        elif k in (Kind.IDIV, Kind.REM) and dt.is_int:
            self.helpers.add("idiv" if k is Kind.IDIV else "irem")
            expr = f"{'IntDiv' if k is Kind.IDIV else 'IntRem'}<{t}>({e[0]}, {e[1]})"
        elif k is Kind.CAST and (dt.is_int or dt.is_float) and not args[0].dtype.is_float:
            expr = f"static_cast<{t}>({e[0]})"
        elif rt.rank <= 1:
            return None          # data work on the lanes: a tile, or a scalar-unit fold
        else:
            raise not_lowered(op, "this per-row ([R, 1]) operation is not emitted yet")
        return RowVal(expr, dt, rows.rows, max(getattr(a, "cols", 1) for a in args))

    def rows_as_tile(self, s: RowVal, dtype) -> Tile:
        """Per-lane values written into a scratch tile by the scalar unit, for vector
        work on them (``nl.cumsum`` of ``x // k``, say)."""
        t = self.scratch(dtype, s.rows, "lanes")
        r = self.fresh("r")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"for (int32_t {r} = 0; {r} < {s.rows}; ++{r}) {{   // the lanes, one by one")
        self.line(f"    {t.var}.SetValue({r}, static_cast<{cpp_type(dtype)}>({s.at(r)}));")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return t

    def mask2(self, op, args, shape) -> Mask2:
        """``&`` of per-row conditions and column masks."""
        row, col = None, None
        for a in args:
            parts = ([a.row, a.col] if isinstance(a, Mask2) else [a])
            for p in parts:
                if p is None:
                    continue
                if isinstance(p, RowVal) and p.dtype.is_bool:
                    row = p if row is None else RowVal(f"({row.expr}) && ({p.expr})", p.dtype, p.rows)
                elif isinstance(p, Mask):
                    if col is not None:
                        name = self.fresh("both_len")
                        self.line(f"const uint32_t {name} = {col.count} < {p.count} ? {col.count} : {p.count};")
                        p = Mask(name, p.length)
                    col = p
                else:
                    raise not_lowered(op, "a 2-D mask that is not `rows_ok[:, None] & "
                                          "(cols[None, :] < bound)` is not emitted yet")
        return Mask2(row, col, shape[0], shape[1])

    # --- data with per-row values ------------------------------------------------------
    def row_binary(self, op, args, dt, dest) -> Tile:
        """``tile (op) x[:, None]`` on a 2-D tile, one row at a time: the scalar form of
        the API (``Adds``, ``Muls``, ``Maxs``, ``Mins``) where there is one, else the
        row's value duplicated into a scratch row and the tensor form."""
        k = op.kind
        if k not in VECTOR_BINARY:
            raise not_lowered(op, "a per-row ([R, 1]) operand of this op is not emitted yet")
        a, b = args
        row_left = isinstance(a, RowVal)
        tile, row = (b, a) if row_left else (a, b)
        if not isinstance(tile, Tile):
            tile = self.as_tile(tile, dt)
        tile_api, scalar_api = VECTOR_BINARY[k]
        commutes = k in (Kind.ADD, Kind.MUL, Kind.MAXIMUM, Kind.MINIMUM)
        rows, cols = row.rows, tile.length // row.rows
        src = self.use_tile(tile)
        if cols * dt.itemsize % 32:
            # rows shorter than a 32-byte block: the row values spread into a whole tile
            spread = self.spread_rows(row, cols, dt)
            out = dest()
            x, y = (spread.var, src.var) if row_left else (src.var, spread.var)
            self.line(f"AscendC::{tile_api}({out.var}, {x}, {y}, {rows * cols});")
            self.release(spread)
            if src is not a and src is not b:
                self.release(src)
            return out
        out = dest()
        r = self.fresh("r")
        value = scalar_arg(Scalar(row.at(r), row.dtype), dt)
        at = f"[{r} * {cols}]"
        self.line(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{   // {row.expr.replace('{r}', 'r')} per row")
        spread = None
        if scalar_api and (commutes or not row_left):
            self.line(f"    AscendC::{scalar_api}({out.var}{at}, {src.var}{at}, {value}, {cols});")
        elif k is Kind.SUB and not row_left:
            self.line(f"    AscendC::Adds({out.var}{at}, {src.var}{at}, static_cast<{cpp_type(dt)}>(-({value})), {cols});")
        else:
            spread = self.scratch(dt, cols, "row_value")
            decl = self.lines.pop()
            self.lines.insert(len(self.lines) - 1, decl)   # declared before the loop
            self.line(f"    AscendC::Duplicate({spread.var}, {value}, {cols});")
            x, y = (spread.var, src.var + at) if row_left else (src.var + at, spread.var)
            self.line(f"    AscendC::{tile_api}({out.var}{at}, {x}, {y}, {cols});")
        self.line("}")
        self.release(spread)
        if src is not tile and tile is not a and tile is not b:
            self.release(src)
        return out

    def one_hot(self, op, s: OneHot, dt, dest) -> Tile:
        """``(row[:, None] == cols[None, :]).to(dt)``: zeros, then the scalar unit sets
        the one lane of each row whose column is the row's value."""
        out = dest()
        R, C = s.rows, s.cols
        self.line(f"AscendC::Duplicate({out.var}, {_scalar(0, dt)}, {R * C});")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        r, c = self.fresh("r"), self.fresh("col")
        self.line(f"for (int32_t {r} = 0; {r} < {R}; ++{r}) {{   // one hot lane per row")
        self.line(f"    const int64_t {c} = static_cast<int64_t>({s.row.at(r)}) - ({s.col.base});")
        self.line(f"    if ({c} >= 0 && {c} < {C}) {out.var}.SetValue({r} * {C} + {c}, {_scalar(1, dt)});")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});   // the vector unit reads the tile")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return out

    # --- reductions along an axis of a 2-D tile ----------------------------------------
    def reduce_axis(self, op, s, result, dest) -> Tile:
        """``nl.sum/max/min(x, axis)`` of a 2-D tile: along rows (axis 0) the vector unit
        folds row after row (``Add``/``Max``/``Min``); along columns (axis 1) one
        ``ReduceSum``/``ReduceMax``/``ReduceMin`` per row, each row's result moved to its
        lane by the scalar unit.  Float sums accumulate in f32, as the reference does."""
        kind = op.attrs["kind"]
        axis = int(op.attrs["axis"])
        dt = result.type.dtype
        if isinstance(s, Cell3):
            return self.fold_cell3(op, s, dest, kind, axis, dt)
        src_shape = [int(x) for x in op.operands[0].type.shape]
        if len(src_shape) == 3 and axis == 2 and isinstance(s, Tile):
            src_shape, axis = [src_shape[0] * src_shape[1], src_shape[2]], 1   # rows of rows
        if len(src_shape) != 2:
            raise not_lowered(op, f"a {kind} reduction along an axis of {op.operands[0].type} "
                                  "is not emitted yet")
        R, C = src_shape
        short = isinstance(s, Tile) and C * dt.itemsize % 32 != 0
        if isinstance(s, Cell) or (isinstance(s, Tile) and (not dt.is_float or short) and axis == 1):
            return self.fold_cells(op, s, dest, R, C, axis, kind, dt)
        if kind not in ("sum", "max", "min") or not isinstance(s, Tile) or s.dtype != dt:
            raise not_lowered(op, f"a {kind} reduction along an axis of {op.operands[0].type} "
                                  "is not emitted yet")
        if not (dt.is_float or (dt.name == "i32" and axis == 0)):
            raise not_lowered(op, f"a {kind} reduction of {dt} along axis {axis} (ReduceSum/"
                                  "Max/Min take f16 and f32; rows fold in f16, f32, i32)")
        self.check_row_pitch(op, C, dt)
        src = self.use_tile(s)
        widened = None
        if dt.name == "bf16" or (kind == "sum" and dt.is_half):
            widened = self.scratch(float32, R * C, "widened")
            self.line(f"AscendC::Cast({widened.var}, {src.var}, AscendC::RoundMode::CAST_NONE, {R * C});")
            src = widened
        work_dt = src.dtype
        r = self.fresh("r")
        if axis == 0:
            api = {"sum": "Add", "max": "Max", "min": "Min"}[kind]
            acc = self.scratch(work_dt, C, "folded") if widened is not None else dest()
            self.line(f"AscendC::Muls({acc.var}, {src.var}, {_scalar(1, work_dt)}, {C});   // row 0")
            self.line(f"for (int32_t {r} = 1; {r} < {R}; ++{r}) {{")
            self.line(f"    AscendC::{api}({acc.var}, {acc.var}, {src.var}[{r} * {C}], {C});")
            self.line("}")
            if widened is None:
                return acc
            out = dest()
            self.line(f"AscendC::Cast({out.var}, {acc.var}, AscendC::RoundMode::CAST_RINT, {C});")
            self.release(acc)
            self.release(widened)
            return out
        api = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}[kind]
        one = self.scratch(work_dt, 1, f"{kind}_out")
        work = self.scratch(work_dt, C, "work")
        out = dest()
        value = f"{one.var}.GetValue(0)"
        if work_dt != dt:
            value = f"static_cast<{cpp_type(dt)}>({value})"
        self.line(f"for (int32_t {r} = 0; {r} < {R}; ++{r}) {{   // one reduction per row")
        self.line(f"    AscendC::{api}({one.var}, {src.var}[{r} * {C}], {work.var}, {C});")
        self.line(f"    AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"    AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"    {out.var}.SetValue({r}, {value});")
        self.line(f"    AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        self.line(f"    AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        self.line("}")
        for t in (work, one, widened):
            self.release(t)
        return out

    def scan(self, op, s, result, dest) -> Tile:
        """``nl.cumsum`` of a 1-D tile: the scalar unit keeps the running sum (f32 for
        floats, as the reference does, rounding each prefix once to the result dtype;
        wrapping for ints) and writes each lane."""
        dt = result.type.dtype
        if (op.attrs["kind"] == "sum" and result.type.rank == 2 and int(op.attrs["axis"]) == 0
                and isinstance(s, Tile) and dt.name in ("i32", "f32")):
            return self.scan_rows(op, s, dest, dt)
        if op.attrs["kind"] != "sum" or result.type.rank != 1 or not isinstance(s, Tile):
            raise not_lowered(op, "a scan other than cumsum of a 1-D tile or along the rows "
                                  "of an i32/f32 2-D tile is not emitted yet")
        acc_t = "float" if dt.is_float else cpp_type(dt)
        src = self.use_tile(s)
        out = dest()
        r, acc = self.fresh("r"), self.fresh("running")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});   // the scalar unit sums the lanes")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"{acc_t} {acc} = 0;")
        self.line(f"for (int32_t {r} = 0; {r} < {src.length}; ++{r}) {{")
        self.line(f"    {acc} = static_cast<{acc_t}>({acc} + static_cast<{acc_t}>({src.var}.GetValue({r})));")
        self.line(f"    {out.var}.SetValue({r}, static_cast<{cpp_type(dt)}>({acc}));")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});   // the vector unit reads the sums")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return out

    def scan_rows(self, op, s: Tile, dest, dt) -> Tile:
        """``nl.cumsum(x, axis=0)`` of a 2-D tile: row r is row r - 1 of the result plus
        row r of ``x``, one ``Add`` per row on the vector unit (the reference's running
        sum in order: exact for i32, wrapping; f32 rounds each prefix once)."""
        R, C = (int(n) for n in op.operands[0].type.shape)
        self.check_row_pitch(op, C, dt)
        src = self.use_tile(s)
        out = dest()
        r = self.fresh("r")
        self.line(f"AscendC::Muls({out.var}, {src.var}, {_scalar(1, dt)}, {C});   // row 0")
        self.line(f"for (int32_t {r} = 1; {r} < {R}; ++{r}) {{   // a running sum down the rows")
        self.line(f"    AscendC::Add({out.var}[{r} * {C}], {out.var}[({r} - 1) * {C}], {src.var}[{r} * {C}], {C});")
        self.line("}")
        return out

    # --- GM <-> UB of 2-D tiles and of lanes at per-lane offsets -------------------------
    def check_row_pitch(self, op, cols: int, dtype) -> None:
        if cols * dtype.itemsize % 32:
            raise not_lowered(op, f"a 2-D tile whose rows ({cols} x {dtype}) are not a whole "
                                  "number of 32-byte blocks")

    def grid_copy(self, op, load: bool, gm: str, t: str, var: str, offs: Grid, mask, fill: str) -> None:
        """One copy per row of a 2-D tile at ``offs`` under ``mask`` (a ``Mask2``)."""
        if mask is not None and not isinstance(mask, Mask2):
            raise not_lowered(op, "a 2-D mask the emitter cannot build")
        dt = op.operands[0].type.dtype
        R, C = offs.rows, offs.cols
        self.check_row_pitch(op, C, dt)
        r = self.fresh("r")
        col = mask.col if mask is not None else None
        count = col.count if col is not None else str(C)
        conds = ([mask.row.at(r)] if mask is not None and mask.row is not None else [])
        if col is not None:
            conds.append(f"{count} > 0")
        at_gm = f"{gm}[{offs.row.at(r)} + {offs.col.base}]"
        at_ub = f"{var}[{r} * {C}]"
        if col is None:
            copy = (f"AscendC::DataCopy({at_ub}, {at_gm}, {C});" if load
                    else f"AscendC::DataCopy({at_gm}, {at_ub}, {C});")
        else:
            self.helpers.add("tail_pad")
            params = f"{{1, static_cast<uint32_t>({count} * sizeof({t})), 0, 0, 0}}"
            copy = (f"AscendC::DataCopyPad({at_ub}, {at_gm}, {params}, "
                    f"{{true, 0, TailPad<{t}>({count}), {fill}}});" if load
                    else f"AscendC::DataCopyPad({at_gm}, {at_ub}, {params});")
        self.line(f"for (int32_t {r} = 0; {r} < {R}; ++{r}) {{   // one copy per row")
        if conds:
            self.line(f"    if ({' && '.join(conds)}) {{")
            self.line(f"        {copy}")
            self.line("    }")
        else:
            self.line(f"    {copy}")
        self.line("}")

    def ub_block_transfer(self, op) -> None:
        """``nl.load`` / ``nl.store`` of a block pointer into / out of UB: one
        ``DataCopyPad`` of the in-bounds rows, row stride in GM, row pitch in UB."""
        load = op.kind is Kind.BLOCK_LOAD
        shape0, shape1, stride0, stride1, off0, off1 = (self.sym(v) for v in op.operands[1:7])
        if stride1.expr not in ("1", "1LL") and int(op.attrs["block_shape"][1]) != 1:
            raise not_lowered(op, "a block pointer whose inner stride is not the constant 1 "
                                  "on the vector unit")
        if op.attrs.get("padding", "zero") != "zero" and load:
            raise not_lowered(op, "block-pointer padding other than zero")
        dt = op.operands[0].type.dtype
        t = cpp_type(dt)
        R, C = (int(x) for x in op.attrs["block_shape"])
        checked = {int(a) for a in op.attrs.get("boundary_check", ())}
        # rows shorter than a 32-byte block that follow each other in GM (row stride the
        # constant C, whole rows): the in-bounds rows are one run of elements
        packed = (C * dt.itemsize % 32 != 0 and stride0.expr.rstrip("L") == str(C)
                  and 1 not in checked)
        if not packed:
            self.check_row_pitch(op, C, dt)
        self.helpers.add("clamp")
        rows, cols = self.fresh("rows_in"), self.fresh("cols_in")
        self.line(f"const uint32_t {rows} = "
                  + (f"LanesInBounds({shape0.expr} - {off0.expr}, {R});" if 0 in checked else f"{R};"))
        self.line(f"const uint32_t {cols} = "
                  + (f"LanesInBounds({shape1.expr} - {off1.expr}, {C});" if 1 in checked else f"{C};"))
        gm = self.gm_members[id(op.operands[0])]
        at_gm = f"{gm}[static_cast<int64_t>({off0.expr}) * {stride0.expr} + {off1.expr}]"
        gm_gap = f"static_cast<uint32_t>(({stride0.expr} - {cols}) * sizeof({t}))"
        ub_gap = f"static_cast<uint32_t>(({C} * sizeof({t}) - ({cols} * sizeof({t}) + 31) / 32 * 32) / 32)"
        params = f"{{static_cast<uint16_t>({rows}), static_cast<uint32_t>({cols} * sizeof({t})), "
        if packed:
            gm_gap = ub_gap = "0"
            params = f"{{1, static_cast<uint32_t>({rows} * {C} * sizeof({t})), "
        self.emit_flags(op, "wait_flags")
        if load:
            buf = sv.buffers(op)[0]
            var = self.user_name(op, "x")
            m = self.member(buf, "TQue", "VECIN", var)
            self.line(f"AscendC::LocalTensor<{t}> {var} = {m.name}.AllocTensor<{t}>();")
            if checked:
                self.line(f"AscendC::Duplicate({var}, {_zero(dt)}, {R * C});   // out-of-bounds elements read 0")
                self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_MTE2>({OWN_ID});")
                self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>({OWN_ID});")
            self.helpers.add("tail_pad")
            self.line(f"if ({rows} > 0 && {cols} > 0) {{")
            self.line(f"    AscendC::DataCopyPad({var}, {at_gm}, {params}{gm_gap}, {ub_gap}, 0}},")
            pad = f"{rows} * {C}" if packed else cols
            self.line(f"                         {{true, 0, TailPad<{t}>({pad}), {_zero(dt)}}});")
            self.line("}")
            self.line(f"{m.name}.EnQue({var});")
            self.queue_state[var] = "enqueued"
            self.syms[id(op.result)] = Tile(var, dt, R * C, home=m)
        else:
            value = self.sym(op.operands[7])
            if isinstance(value, Splat):
                value = self.materialize_splat(value, dt, "stored")
            elif isinstance(value, Cell):
                value = self.cells_as_tile(value, dt)
            if not isinstance(value, Tile):
                raise not_lowered(op, "a block store of a value that is not a tile in UB")
            self.store_prologue(value)
            self.line(f"if ({rows} > 0 && {cols} > 0) {{")
            self.line(f"    AscendC::DataCopyPad({at_gm}, {value.var}, {params}{ub_gap}, {gm_gap}, 0}});")
            self.line("}")
            self.store_epilogue(op, value)
        self.emit_flags(op, "set_flags")


def _row_condition_use(user) -> bool:
    """``valid[:, None]``, the mask of a load or store of 1-D lanes, the condition of a 1-D
    ``nl.where``, or ``&`` with one of these uses."""
    if user.kind is Kind.RESHAPE:
        return True
    if user.kind is Kind.LOAD:
        return user.operands[1].type.rank == 1 and not user.result.type.dtype.is_bool
    if user.kind is Kind.STORE:
        return user.operands[1].type.rank == 1
    if user.kind is Kind.SELECT:
        return user.result.type.rank == 1
    if user.kind is Kind.AND and user.result.type.rank == 1:
        return all(_row_condition_use(u) for u in _users_through_fused(user))
    return False


def _users_through_fused(op) -> list:
    """The ops reading ``op``'s result, looking through the fused regions that yield it."""
    out = []
    for u in op.result.users:
        region = u.parent.parent_op if u.parent is not None else None
        if u.kind is Kind.YIELD and region is not None and region.kind is Kind.FUSED:
            for j, v in enumerate(u.operands):
                if v is op.result:
                    out.extend(region.results[j].users)
        else:
            out.append(u)
    return out


def _scalar(v, dtype) -> str:
    return f"static_cast<{cpp_type(dtype)}>({v})"


def _zero(dtype) -> str:
    from .emit_memory import _zero as zero
    return zero(dtype)
