"""Broadcasts the router's selection step needs on the vector and scalar units: a data row
``x[None, :]`` against a 2-D tile, ``nl.where`` under a 2-D mask, per-row values on rows
shorter than a 32-byte block, and 3-D tiles of scalar expressions (``ids[:, :, None] ==
cols[None, None, :]``) folded along an axis.

A ``DataRow`` stays one row in UB: ``scores + bias[None, :]`` is one ``Add`` per row of
``scores``.  A 2-D mask ``rows_ok[:, None] & (cols[None, :] < n)`` under ``nl.where`` is
the column bits made once (``Compares`` of an ``ArithProgression``) and one ``Select``
per row whose condition holds.  A 3-D tile is never written to UB: each element is a C++
expression the scalar unit evaluates where a reduction folds the tile along an axis
(``Cell3``), as ``Cell`` does for 2-D tiles (emit_rows.py).

Example (the IR of ``w = nl.sum(nl.where(ids[:, :, None] == cols, s[:, None, :], 0), 2)``)::

    for (int32_t r = 0; r < 16; ++r) {
        for (int32_t j = 0; j < 2; ++j) {
            float folded = ...;      // 16 elements (ids(r, j) == c ? s(r, c) : 0.0f)
"""
from __future__ import annotations

from npujit.ir.ops import Kind
from npujit.ir.types import int32

from .emit_vector import _U8
from .emit_rows import OWN_ID
from .lowering import CMP_CPP, VECTOR_BINARY, cpp_type, not_lowered
from .values import Cell, Cell3, DataRow, Index, Mask2, RowVal, Scalar, Splat, Tile, scalar_arg


# The placeholder of each axis of a 3-D Cell3 expression
_AXES = ("{r}", "{j}", "{c}")


class BroadcastLowering:
    """Mixin of ``KernelWriter``: data rows, 2-D masked selects, short rows, 3-D cells."""

    # --- a data row broadcast along rows -------------------------------------------------
    def data_row_as_cell(self, op, d: DataRow) -> Cell:
        """The row read element by element by the scalar unit (``end[None, :] <=
        first[:, None]``: a data row against per-row values)."""
        col = self.row_of_tile(op, d.tile).expr.replace("{r}", "{c}")
        return Cell(col, d.tile.dtype, d.rows, d.cols)

    def data_row_binary(self, op, args, dt, dest) -> Tile:
        """``x (op) row[None, :]``: one tensor-tensor call per row of ``x``."""
        if op.kind not in VECTOR_BINARY:
            raise not_lowered(op, "this op on a broadcast data row is not emitted yet")
        a, b = args
        d = a if isinstance(a, DataRow) else b
        other = b if d is a else a
        rows, cols = d.rows, d.cols
        self.check_row_pitch(op, cols, dt)
        row = self.use_tile(d.tile)
        if isinstance(other, DataRow):
            raise not_lowered(op, "two broadcast data rows (broadcast one operand first)")
        full = self.as_tile(other, dt) if not isinstance(other, Tile) else self.use_tile(other)
        out = dest()
        r = self.fresh("r")
        x, y = (row.var, f"{full.var}[{r} * {cols}]") if d is a else (f"{full.var}[{r} * {cols}]", row.var)
        self.line(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{   // the row against each row")
        self.line(f"    AscendC::{VECTOR_BINARY[op.kind][0]}({out.var}[{r} * {cols}], {x}, {y}, {cols});")
        self.line("}")
        if full is not other:
            self.release(full)
        return out

    # --- nl.where under a 2-D mask --------------------------------------------------------
    def select_rows(self, op, cond: Mask2, a, b, dt, dest) -> Tile:
        """``nl.where(rows_ok[:, None] & (cols[None, :] < n), a, b)``: per row, the
        column bits (made once) select ``a`` over ``b``; a row whose condition fails is
        ``b`` whole."""
        R, C = cond.rows, cond.cols
        if C * dt.itemsize % 32 and cond.row is None and cond.col is not None:
            return self.select_short_rows(op, cond, a, b, dt, dest)
        self.check_row_pitch(op, C, dt)
        ta = self.as_tile(a, dt)
        tb = None if isinstance(b, Splat) else self.as_tile(b, dt)
        bits = None
        if cond.col is not None:
            idx = self.scratch(int32, C, "lane")
            bits = self.scratch(_U8, C, "in_bounds")
            self.line(f"AscendC::ArithProgression<int32_t>({idx.var}, 0, 1, {C});")
            self.line(f"AscendC::Compares({bits.var}, {idx.var}, static_cast<int32_t>({cond.col.count}), "
                      f"AscendC::CMPMODE::LT, {C});")
            self.release(idx)
        out = dest()
        r = self.fresh("r")
        at = f"[{r} * {C}]"
        other = scalar_arg(b.value, dt) if tb is None else tb.var + at
        if bits is not None:
            mode = "VSEL_TENSOR_SCALAR_MODE" if tb is None else "VSEL_TENSOR_TENSOR_MODE"
            take = (f"AscendC::Select({out.var}{at}, {bits.var}, {ta.var}{at}, {other}, "
                    f"AscendC::SELMODE::{mode}, {C});")
        else:
            take = f"AscendC::Muls({out.var}{at}, {ta.var}{at}, {_one(dt)}, {C});"
        drop = (f"AscendC::Duplicate({out.var}{at}, {other}, {C});" if tb is None
                else f"AscendC::Muls({out.var}{at}, {other}, {_one(dt)}, {C});")
        if cond.row is not None:
            # the scalar unit tests each row's condition; the vector unit wrote a and b
            self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
            self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"for (int32_t {r} = 0; {r} < {R}; ++{r}) {{   // one select per row")
        if cond.row is None:
            self.line(f"    {take}")
        else:
            self.line(f"    if ({cond.row.at(r)}) {{")
            self.line(f"        {take}")
            self.line("    } else {")
            self.line(f"        {drop}")
            self.line("    }")
        self.line("}")
        for t, orig in ((ta, a), (tb, b), (bits, None)):
            if t is not None and t is not orig:
                self.release(t)
        return out

    def select_short_rows(self, op, cond: Mask2, a, b, dt, dest) -> Tile:
        """``nl.where(cols[None, :] < n, a, b)`` on rows shorter than a 32-byte block (the
        router's ``[T, 4]`` logits of 3 or 4 experts): a vector call cannot start at each
        row, so the scalar unit writes each lane's column number into a whole-tile scratch,
        one ``Compares`` makes the bits and one ``Select`` takes ``a`` or ``b`` over the
        whole tile (its ``R * C`` lanes are whole 32-byte blocks)."""
        R, C = cond.rows, cond.cols
        if R * C * dt.itemsize % 32:
            raise not_lowered(op, f"a [{R}, {C}] {dt} tile that is not a whole number of 32-byte blocks")
        ta = self.as_tile(a, dt)
        tb = None if isinstance(b, Splat) else self.as_tile(b, dt)
        col = self.scratch(int32, R * C, "column")
        bits = self.scratch(_U8, R * C, "in_bounds")
        r, c = self.fresh("r"), self.fresh("c")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"for (int32_t {r} = 0; {r} < {R}; ++{r}) {{   // each lane's column")
        self.line(f"    for (int32_t {c} = 0; {c} < {C}; ++{c}) {{")
        self.line(f"        {col.var}.SetValue({r} * {C} + {c}, {c});")
        self.line("    }")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        self.line(f"AscendC::Compares({bits.var}, {col.var}, static_cast<int32_t>({cond.col.count}), "
                  f"AscendC::CMPMODE::LT, {R * C});")
        self.release(col)
        out = dest()
        if tb is None:
            self.line(f"AscendC::Select({out.var}, {bits.var}, {ta.var}, {scalar_arg(b.value, dt)}, "
                      f"AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, {R * C});")
        else:
            self.line(f"AscendC::Select({out.var}, {bits.var}, {ta.var}, {tb.var}, "
                      f"AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, {R * C});")
        for t, orig in ((ta, a), (tb, b), (bits, None)):
            if t is not None and t is not orig:
                self.release(t)
        return out

    # --- per-row values on short rows ---------------------------------------------------
    def spread_rows(self, row: RowVal, cols: int, dt) -> Tile:
        """A per-row value written into every column of a scratch ``[rows, cols]`` tile by
        the scalar unit, where rows are shorter than a 32-byte block (the vector unit
        cannot start a call at each row)."""
        t = self.scratch(dt, row.rows * cols, "spread")
        r, c = self.fresh("r"), self.fresh("c")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"for (int32_t {r} = 0; {r} < {row.rows}; ++{r}) {{   // each row's value, {cols} times")
        self.line(f"    for (int32_t {c} = 0; {c} < {cols}; ++{c}) {{")
        self.line(f"        {t.var}.SetValue({r} * {cols} + {c}, {scalar_arg(Scalar(row.at(r), row.dtype), dt)});")
        self.line("    }")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return t

    # --- 3-D tiles of scalar expressions ------------------------------------------------
    def cell3_symbolic(self, op, args, rt):
        """Reshapes into 3-D, broadcasts, compares, casts and selects of 3-D tiles as
        ``Cell3`` expressions; ``None`` when ``op`` is none of them."""
        k = op.kind
        shape = tuple(int(x) for x in rt.shape)
        src_shape = tuple(int(x) for x in op.operands[0].type.shape) if op.operands else ()
        if k is Kind.RESHAPE and len(shape) == 3:
            return self.cell3_of(op, args[0], src_shape, shape)
        if not any(isinstance(a, Cell3) for a in args) or k is Kind.REDUCE:
            return None
        if k is Kind.RESHAPE and len(shape) == 2 and shape == (src_shape[0], src_shape[1] * src_shape[2]):
            # [R, J, C] -> [R, J * C]: column c is element (c / C, c % C) of the row
            n = src_shape[2]
            expr = _rename(args[0].expr, {"{j}": f"({{c}} / {n})", "{c}": f"({{c}} % {n})"})
            return Cell(expr, args[0].dtype, shape[0], shape[1])
        if k is Kind.BROADCAST:
            return Cell3(args[0].expr, args[0].dtype, shape)
        e = []
        for a in args:
            if isinstance(a, Cell3):
                e.append(f"({a.expr})")
            elif isinstance(a, Splat):
                e.append(a.value.expr)
            else:
                raise not_lowered(op, "this operand of a 3-D tile is not emitted yet")
        dt = rt.dtype
        if k is Kind.CMP:
            expr = f"{e[0]} {CMP_CPP[op.attrs['predicate']]} {e[1]}"
        elif k is Kind.SELECT:
            t = cpp_type(dt)
            expr = f"{e[0]} ? static_cast<{t}>({e[1]}) : static_cast<{t}>({e[2]})"
        elif k is Kind.AND and dt.is_bool:
            expr = f"{e[0]} && {e[1]}"
        elif k is Kind.CAST:
            expr = f"static_cast<{cpp_type(dt)}>({e[0]})"
        elif k in (Kind.ADD, Kind.SUB, Kind.MUL):
            expr = f"{e[0]} {({Kind.ADD: '+', Kind.SUB: '-', Kind.MUL: '*'})[k]} {e[1]}"
        else:
            raise not_lowered(op, "this operation on a 3-D tile is not emitted yet")
        return Cell3(expr, dt, shape)

    def cell3_of(self, op, s, src_shape: tuple, shape: tuple) -> Cell3:
        """A 1-D or 2-D value reshaped into 3-D by inserting axes of size 1."""
        kept = [i for i, n in enumerate(shape) if n != 1]
        if [n for n in src_shape if n != 1] != [shape[i] for i in kept]:
            if isinstance(s, Tile):
                return s          # row-major in UB either way: the same tile, seen as 3-D
            raise not_lowered(op, "a reshape into 3-D that is not inserting axes of size 1")
        if isinstance(s, Cell):
            names = iter(_AXES[d] for d in kept)
            return Cell3(_rename(s.expr, {p: next(names) for p, n in zip(("{r}", "{c}"), src_shape)
                                          if n != 1}), s.dtype, shape)
        src_axes = [i for i, n in enumerate(src_shape) if n != 1]
        strides = [1] * len(src_shape)
        for i in range(len(src_shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * src_shape[i + 1]
        lanes = " + ".join(f"{_AXES[d]} * {strides[s]}" if strides[s] != 1 else _AXES[d]
                           for s, d in zip(src_axes, kept)) or "0"
        if isinstance(s, Index):
            return Cell3(lanes if s.base == "0" else f"({s.base} + {lanes})", int32, shape)
        if isinstance(s, Splat):
            return Cell3(s.value.expr, s.value.dtype, shape)
        if isinstance(s, Tile):
            var = self.row_of_tile(op, s).expr.replace("{r}", lanes)
            return Cell3(var, s.dtype, shape)
        raise not_lowered(op, "a reshape of this value into 3-D is not emitted yet")

    def fold_cell3(self, op, s: Cell3, dest, kind: str, axis: int, dt) -> Tile:
        """A reduction along one axis of a 3-D tile of expressions: the scalar unit folds
        each line (floats in f32, rounded once, as the reference accumulates) and writes
        the 2-D result row-major."""
        if kind not in ("sum", "max", "min"):
            raise not_lowered(op, f"a {kind} of a 3-D tile is not emitted yet")
        out = dest()
        idx = [self.fresh(n) for n in ("r", "j", "c")]
        keep = [i for i in range(3) if i != axis]
        n0, n1, n = s.shape[keep[0]], s.shape[keep[1]], s.shape[axis]
        acc_t = "float" if dt.is_float else cpp_type(dt)
        acc = self.fresh("folded")
        a, b, f = idx[keep[0]], idx[keep[1]], idx[axis]
        at = s.at(*idx)
        first = s.at(*("0" if i == axis else idx[i] for i in range(3)))
        self.line(f"for (int32_t {a} = 0; {a} < {n0}; ++{a}) {{   // one {kind} of {n} elements per lane")
        self.line(f"    for (int32_t {b} = 0; {b} < {n1}; ++{b}) {{")
        self.line(f"        {acc_t} {acc} = static_cast<{acc_t}>({first});")
        self.line(f"        for (int32_t {f} = 1; {f} < {n}; ++{f}) {{")
        self.fold_step(kind, acc_t, acc, at, "            ", dt.is_float)
        self.line("        }")
        self.line(f"        {out.var}.SetValue({a} * {n1} + {b}, static_cast<{cpp_type(dt)}>({acc}));")
        self.line("    }")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});   // the vector unit reads the lanes")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return out


def _rename(expr: str, subst: dict) -> str:
    """``expr`` with each placeholder replaced at once (a replacement may itself hold
    placeholders that must not be replaced again)."""
    for i, p in enumerate(subst):
        expr = expr.replace(p, f"\x00{i}\x00")
    for i, q in enumerate(subst.values()):
        expr = expr.replace(f"\x00{i}\x00", q)
    return expr


def _one(dtype) -> str:
    return f"static_cast<{cpp_type(dtype)}>(1)"
