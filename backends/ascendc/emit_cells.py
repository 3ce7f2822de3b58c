"""Per-element scalar tiles (``Cell``) and folds on the scalar unit, for the Ascend C
emitter: a 2-D tile each of whose elements is a C++ expression in the row and column
(``slots[None, :] == i``, ``nl.where(one_hot, x, tile)``, ``x / row_sum[:, None]``),
built where a consumer needs it (a fold along an axis, a store), and reductions the
vector unit has no instruction for (integer sums, argmax / argmin).
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from .emit_rows import _ROW_OPS, OWN_ID
from .lowering import CMP_CPP, cpp_type, not_lowered
from .values import Cell, Index, OneHot, RowVal, Splat, Tile


class CellLowering:
    """Mixin of ``KernelWriter``: per-element scalar tiles and scalar-unit folds."""

    def cell_op(self, op, args, rt) -> Cell:
        """Scalar arithmetic, compares and casts on ``Cell`` elements."""
        k = op.kind
        dt = rt.dtype
        e = []
        for a in args:
            if isinstance(a, Cell):
                e.append(f"({a.expr})")
            elif isinstance(a, RowVal):
                e.append(f"({a.expr})")
            elif isinstance(a, Splat):
                e.append(a.value.expr)
            elif isinstance(a, Index):
                e.append(f"({a.base} + {{c}})")
            elif isinstance(a, OneHot):
                e.append(f"(({a.row.expr}) == ({a.col.base} + {{c}}))")
            elif isinstance(a, Tile) and k is Kind.SELECT:
                cols = int(rt.shape[1])
                e.append(self.row_of_tile(op, a).expr.replace("{r}", f"{{r}} * {cols} + {{c}}"))
            else:
                raise not_lowered(op, "this operand of a per-element scalar tile is not emitted yet")
        if k is Kind.SELECT:
            t = cpp_type(dt)
            expr = f"{e[0]} ? static_cast<{t}>({e[1]}) : static_cast<{t}>({e[2]})"
        elif k in _ROW_OPS:
            expr = f"{e[0]} {_ROW_OPS[k]} {e[1]}"
        elif k is Kind.CMP:
            expr = f"{e[0]} {CMP_CPP[op.attrs['predicate']]} {e[1]}"
        elif k is Kind.AND and dt.is_bool:
            expr = f"{e[0]} && {e[1]}"
        elif k is Kind.CAST and not dt.is_float:
            expr = f"static_cast<{cpp_type(dt)}>({e[0]})"
        elif k is Kind.DIV and dt.name == "f32":   # one IEEE division, as the reference's
            expr = f"static_cast<float>({e[0]}) / static_cast<float>({e[1]})"
        else:
            raise not_lowered(op, "this per-element scalar tile operation is not emitted yet")
        return Cell(expr, dt, int(rt.shape[0]), int(rt.shape[1]))

    def fold_lanes(self, op, s, result):
        """``nl.sum/max/min`` of an integer 1-D tile or of per-lane values to a scalar, on
        the scalar unit (exact, wrapping like the reference; ReduceSum takes floats)."""
        from .values import Scalar as _Scalar
        kind = op.attrs["kind"]
        if result.type.dtype.is_float:
            raise not_lowered(op, "a float reduction of per-lane values is not emitted yet")
        if kind not in ("sum", "max", "min"):
            raise not_lowered(op, f"a {kind} reduction of integer lanes is not emitted yet")
        rows = s if isinstance(s, RowVal) else self.row_of_tile(op, s)
        dt = result.type.dtype
        t = cpp_type(dt)
        name, r = self.user_name(op, kind), self.fresh("r")
        self.line(f"{t} {name} = static_cast<{t}>({rows.at('0')});")
        self.line(f"for (int32_t {r} = 1; {r} < {rows.rows}; ++{r}) {{")
        self.fold_step(kind, t, name, rows.at(r), "    ")
        self.line("}")
        return _Scalar(name, dt)

    def fold_step(self, kind: str, t: str, acc: str, value: str, indent: str,
                  floats: bool = False) -> None:
        """``acc`` takes one more value of a sum / max / min fold (ints wrap; float max
        and min skip NaN, as np.fmax does: NaN only for a line of NaNs)."""
        value = f"static_cast<{t}>({value})"
        if kind == "sum":
            self.line(f"{indent}{acc} = static_cast<{t}>({acc} + {value});")
        elif floats:
            v = self.fresh("v")
            self.line(f"{indent}const {t} {v} = {value};")
            self.line(f"{indent}if ({v} {'>' if kind == 'max' else '<'} {acc} || {acc} != {acc}) {acc} = {v};")
        else:
            self.line(f"{indent}if ({value} {'>' if kind == 'max' else '<'} {acc}) {acc} = {value};")

    def fold_cells(self, op, s, dest, R, C, axis, kind, dt) -> Tile:
        """A reduction along an axis of integer elements on the scalar unit (exact and
        wrapping, as the reference; the vector unit's ReduceSum takes floats), and
        argmax / argmin of any elements (the first extreme; a line's first NaN wins)."""
        if kind in ("argmax", "argmin"):
            return self.fold_cells_arg(op, s, dest, R, C, axis, kind, dt)
        if kind not in ("sum", "max", "min"):
            raise not_lowered(op, f"a {kind} of {dt} per-element values is not emitted yet")
        if isinstance(s, Tile):
            src = self.row_of_tile(op, s)
            s = Cell(src.expr.replace("{r}", f"{{r}} * {C} + {{c}}"), s.dtype, R, C)
        out = dest()
        t = "float" if dt.is_float else cpp_type(dt)      # floats accumulate in f32
        outer, inner = (R, C) if axis == 1 else (C, R)
        i, j, acc = self.fresh("i"), self.fresh("j"), self.fresh("folded")
        cell = (lambda a, b: s.at(a, b)) if axis == 1 else (lambda a, b: s.at(b, a))
        self.line(f"for (int32_t {i} = 0; {i} < {outer}; ++{i}) {{   // one {kind} per lane, on the scalar unit")
        self.line(f"    {t} {acc} = static_cast<{t}>({cell(i, '0')});")
        self.line(f"    for (int32_t {j} = 1; {j} < {inner}; ++{j}) {{")
        self.fold_step(kind, t, acc, cell(i, j), "        ", dt.is_float)
        self.line("    }")
        self.line(f"    {out.var}.SetValue({i}, static_cast<{cpp_type(dt)}>({acc}));")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});   // the vector unit reads the lanes")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return out

    def fold_cells_arg(self, op, s, dest, R, C, axis, kind, dt) -> Tile:
        """The index of the first largest (argmax) or smallest (argmin) element of each
        line, on the scalar unit; a line with a NaN gives its first NaN (as the reference,
        backends/reference/semantics_reduce.py)."""
        if isinstance(s, Tile):
            src = self.row_of_tile(op, s)
            s = Cell(src.expr.replace("{r}", f"{{r}} * {C} + {{c}}"), s.dtype, R, C)
        out = dest()
        src_dt = s.dtype
        t = "float" if src_dt.is_float else cpp_type(src_dt)
        outer, inner = (R, C) if axis == 1 else (C, R)
        i, j = self.fresh("i"), self.fresh("j")
        best, at, v = self.fresh("best"), self.fresh("best_at"), self.fresh("v")
        cell = (lambda a, b: s.at(a, b)) if axis == 1 else (lambda a, b: s.at(b, a))
        better = f"{v} {'>' if kind == 'argmax' else '<'} {best}"
        if src_dt.is_float:     # a NaN replaces a number; nothing replaces a NaN
            better = f"{best} == {best} && ({better} || {v} != {v})"
        self.line(f"for (int32_t {i} = 0; {i} < {outer}; ++{i}) {{   // one {kind} per lane, on the scalar unit")
        self.line(f"    {t} {best} = static_cast<{t}>({cell(i, '0')});")
        self.line(f"    int32_t {at} = 0;")
        self.line(f"    for (int32_t {j} = 1; {j} < {inner}; ++{j}) {{")
        self.line(f"        const {t} {v} = static_cast<{t}>({cell(i, j)});")
        self.line(f"        if ({better}) {{")
        self.line(f"            {best} = {v};")
        self.line(f"            {at} = {j};")
        self.line("        }")
        self.line("    }")
        self.line(f"    {out.var}.SetValue({i}, static_cast<{cpp_type(dt)}>({at}));")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});   // the vector unit reads the lanes")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return out

    def cells_as_tile(self, s: Cell, dtype) -> Tile:
        """Per-element values written into a scratch ``[R, C]`` tile by the scalar unit,
        for a store or vector work on them."""
        t = self.scratch(dtype, s.rows * s.cols, "cells")
        r, c = self.fresh("r"), self.fresh("c")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::V_S>({OWN_ID});")
        self.line(f"for (int32_t {r} = 0; {r} < {s.rows}; ++{r}) {{   // the elements, one by one")
        self.line(f"    for (int32_t {c} = 0; {c} < {s.cols}; ++{c}) {{")
        self.line(f"        {t.var}.SetValue({r} * {s.cols} + {c}, static_cast<{cpp_type(dtype)}>({s.at(r, c)}));")
        self.line("    }")
        self.line("}")
        self.line(f"AscendC::SetFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        self.line(f"AscendC::WaitFlag<AscendC::HardEvent::S_V>({OWN_ID});")
        return t
