"""The Cube path of ``nl.dot`` (separated architecture, docs/npu-facts.md §A8 and
docs/ascendc.md): block loads GM (ND) -> L1 (NZ) with ``DataCopy`` + ``Nd2NzParams``,
``LoadData`` L1 -> L0A / L0B (B transposed into its ZN layout; a 4-byte B by
``LoadDataWithTranspose``, emit_cube_f32.py), ``Mmad`` accumulating in L0C in f32,
``Fixpipe`` L0C -> GM (NZ -> ND, with the cast to f16/bf16 when the kernel stores a
narrower tile).  The schedule's flags between MTE2, MTE1, M and FIX become
``SetFlag`` / ``WaitFlag``, with event ids rotating over the buffer slots.  An N side
that is not a multiple of 16 is padded to whole fractals with zeros in L1, L0B and L0C;
loads and stores at pointer tiles are in emit_cube_pointers.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from npujit.ir.ops import Kind

from . import schedule_view as sv
from .emit_cube_f32 import FRACTAL, F32CubeLowering, c0, fractal_elems, in_k_blocks
from .lowering import cpp_type, not_lowered
from .values import Scalar

CUBE_DTYPES = ("f16", "bf16", "f32")
_QUANT = {"f16": "F322F16", "bf16": "F322BF16"}


@dataclass
class CubeTile:
    """A tile in L1 (``scope == "L1"``) or the f32 accumulator in L0C (``"L0C"``)."""

    var: str
    dtype: object
    shape: tuple
    scope: str
    fresh_flag: str | None = None   # L0C: the bool that says "the next Mmad starts from zero"
    out_dtype: object = None        # L0C: the dtype Fixpipe writes (a folded cast)
    transposed: bool | str = False  # L1: a B tile held as the NZ fractals of B^T (its
                                    # columns were the contiguous rows in GM); a C++ bool
                                    # variable when the strides decide it at run time
    wrapped: object = None          # a Wrapped: B's columns were `(base + c) % bound`,
                                    # and the columns c >= bound - base hold zeros instead
                                    # (L1), so the accumulator's columns there are not the
                                    # kernel's (L0C): only a store that masks them may read it


def _pad(n: int) -> int:
    return (n + FRACTAL - 1) // FRACTAL * FRACTAL


class CubeLowering(F32CubeLowering):
    """Mixin of ``KernelWriter``: block loads to L1, dot, Fixpipe stores."""

    def carries_in_place(self, s) -> bool:
        return isinstance(s, CubeTile) and s.scope == "L0C"

    def emit_cube_op(self, op) -> None:
        k = op.kind
        if k is Kind.SPLAT and sv.scope(op) == "L0C":
            return self.cube_accumulator(op)
        if k is Kind.BLOCK_LOAD and sv.scope(op) == "L1":
            return self.block_load_l1(op)
        if k is Kind.LOAD and sv.scope(op) == "L1":
            return self.gathered_load_l1(op)
        if k is Kind.DOT:
            if op.operands[0].type.rank != 2:
                raise not_lowered(op, "a batched (3-D) dot is not emitted yet")
            return self.mmad(op)
        if k is Kind.CAST and sv.scope(op) == "L0C":
            s = self.sym(op.operands[0])
            self.syms[id(op.result)] = CubeTile(s.var, s.dtype, s.shape, "L0C", s.fresh_flag,
                                                op.result.type.dtype, wrapped=s.wrapped)
            return None
        if k is Kind.BLOCK_STORE and isinstance(self.sym(op.operands[-1]), CubeTile):
            return self.fixpipe_store(op)
        raise not_lowered(op, "block pointers on the vector unit are not emitted yet"
                          if k in (Kind.BLOCK_LOAD, Kind.BLOCK_STORE) else None)

    def cube_member(self, buf, position: str, hint: str, nbytes: int = 0):
        """The TBuf of a Cube buffer; a slot of at least ``nbytes`` (a tile whose N side
        is padded to whole fractals needs more than the schedule's tile)."""
        from .emit_kernel import Member
        m = self.members.get(buf.name)
        if m is None:
            m = Member(self.fresh(hint + "Buf_"), "TBuf", position, buf.stages, max(buf.bytes, nbytes))
            self.members[buf.name] = m
        m.bytes = max(m.bytes, nbytes)
        return m

    def slot_view(self, m, dtype, hint: str) -> str:
        """A local variable for the current slot of a (multi-slot) Cube buffer."""
        t = cpp_type(dtype)
        name = self.fresh(hint)
        at = ""
        if m.depth > 1:
            at = f"[{self.slot(m.depth)} * {m.bytes // dtype.itemsize}]"
        self.line(f"AscendC::LocalTensor<{t}> {name} = {m.name}.Get<{t}>(){at};")
        return name

    def cube_accumulator(self, op) -> None:
        value = self.sym(op.operands[0])
        if not (isinstance(value, Scalar) and value.expr in ("0.0f", "0")):
            raise not_lowered(op, "an accumulator that does not start at zero")
        # inside a loop, the accumulator's L0C may still be read by the last Fixpipe
        self.emit_flags(op, "wait_flags")
        self.syms[id(op.result)] = self.fresh_accumulator(op, sv.buffers(op)[0], "acc")
        self.emit_flags(op, "set_flags")

    def fresh_accumulator(self, op, buf, hint: str) -> CubeTile:
        """An f32 tile in L0C whose first ``Mmad`` starts from zero (``cmatrixInitVal``)."""
        shape = tuple(int(d) for d in op.result.type.shape)
        if shape[0] % FRACTAL:
            raise not_lowered(op, f"a dot tile of shape {shape}: the Cube path needs M a multiple of 16")
        name = self.user_name(op, hint)
        m = self.cube_member(buf, "CO1", name, shape[0] * _pad(shape[1]) * 4)
        if shape[1] % FRACTAL:
            self.line(f"// {shape[1]} columns padded to {_pad(shape[1])} in L0C (the Cube works on whole fractals)")
        self.line(f"AscendC::LocalTensor<float> {name} = {m.name}.Get<float>();")
        fresh = self.fresh(name + "_empty")
        self.line(f"bool {fresh} = true;   // the first Mmad starts from zero (cmatrixInitVal)")
        return CubeTile(name, op.result.type.dtype, shape, "L0C", fresh)

    def gm_extent(self, op, shape_vals, offsets, block_shape, axis: int) -> str:
        """The rows (axis 0) or columns (axis 1) of a block that are in bounds."""
        checked = axis in tuple(op.attrs.get("boundary_check", ()))
        if not checked:
            return str(block_shape[axis])
        self.helpers.add("clamp")
        n = f"{shape_vals[axis].expr} - {offsets[axis].expr}"
        name = self.fresh(("rows" if axis == 0 else "cols") + "_in_bounds")
        self.line(f"const uint32_t {name} = LanesInBounds({n}, {block_shape[axis]});")
        return name

    def unit_stride(self, op, value) -> None:
        """The Cube path copies rows of contiguous elements: the inner stride (the IR
        ``value``) must be 1, or a kernel argument the launch checks is 1 (seen through a
        widening cast: int arguments are i32 when they fit)."""
        if self.sym(value).expr == "1":
            return
        while value.op is not None and value.op.kind is Kind.CAST:
            value = value.op.operands[0]
        arg = next((a for a in self.fn.args if a is value), None)
        if arg is None:
            raise not_lowered(op, "a block pointer whose inner stride is computed in the kernel")
        if arg.name not in self.info.unit_stride_args:
            self.info.unit_stride_args.append(arg.name)

    def stride_args(self, op, values) -> bool:
        """Whether both strides are kernel arguments (seen through widening casts); if so
        the launch is told that one of them must be 1."""
        args = []
        for value in values:
            while value.op is not None and value.op.kind is Kind.CAST:
                value = value.op.operands[0]
            arg = next((a for a in self.fn.args if a is value), None)
            if arg is None:
                return False
            args.append(arg.name)
        if tuple(args) not in self.info.unit_stride_choices:
            self.info.unit_stride_choices.append(tuple(args))
        return True

    def either_layout(self, transposed, emit) -> None:
        """``emit(transposed)`` for a B tile's layout known when emitting, or both under
        a C++ ``if`` on the run-time flag."""
        if not isinstance(transposed, str):
            return emit(transposed)
        self.line(f"if ({transposed}) {{")
        with self.indented():
            emit(True)
        self.line("} else {")
        with self.indented():
            emit(False)
        self.line("}")

    def block_load_l1(self, op) -> None:
        ptr = op.operands[0]
        shape_vals = [self.sym(v) for v in op.operands[1:3]]
        strides = [self.sym(v) for v in op.operands[3:5]]
        offsets = [self.sym(v) for v in op.operands[5:7]]
        dt = op.result.type.dtype
        if dt.name not in CUBE_DTYPES:
            raise not_lowered(op, f"a {dt} dot operand: the emitted Cube path takes f16, bf16 and f32")
        rows, cols = op.attrs["block_shape"]
        users = op.result.users
        side = "A1" if any(u.kind is Kind.DOT and u.operands[0] is op.result for u in users) else "B1"
        if rows % FRACTAL or (cols % FRACTAL and side == "A1"):
            raise not_lowered(op, f"a block of {rows}x{cols}: the Cube path needs multiples of 16 "
                                  "(only B's columns, the N side, are padded)")
        if op.attrs.get("padding", "zero") != "zero":
            raise not_lowered(op, "block loads that pad with anything but zero")
        # a B tile whose rows are strided and whose columns are contiguous (B read
        # transposed, strides (1, K)): its columns are the ND rows copied into L1
        unit = [st.expr in ("1", "1LL") for st in strides]
        transposed = side == "B1" and unit[0] and not unit[1]
        if cols % FRACTAL and transposed:
            raise not_lowered(op, f"a B block of {rows}x{cols} read transposed: its N side is "
                                  "padded only for row-major B")
        if side == "B1" and not any(unit) and self.stride_args(op, op.operands[3:5]):
            # both strides are run-time arguments (B = w.T passed as a view): the launch
            # checks one of them is 1 and the kernel copies the layout that one gives
            transposed = self.fresh("b_transposed")
            self.line(f"const bool {transposed} = {strides[1].expr} != 1;   // B's columns are contiguous in GM")
        elif not transposed:
            self.unit_stride(op, op.operands[4])
        else:
            self.unit_stride(op, op.operands[3])
        buf = sv.buffers(op)[0]
        hint = self.user_name(op, "a" if side == "A1" else "b")
        m = self.cube_member(buf, side, hint + "L1", rows * _pad(cols) * dt.itemsize)
        self.emit_flags(op, "wait_flags")
        tile = self.slot_view(m, dt, hint)
        n_rows = self.gm_extent(op, shape_vals, offsets, (rows, cols), 0)
        n_cols = self.gm_extent(op, shape_vals, offsets, (rows, cols), 1)
        t = cpp_type(dt)
        if cols % FRACTAL:
            self.line(f"// {cols} columns padded with zeros to {_pad(cols)} (the Cube works on whole fractals)")
            self.line(f"AscendC::InitConstValue({tile}, {{1, {rows * _pad(cols) * dt.itemsize // 32}, 0, {t}(0.0f)}});")
        elif (n_rows, n_cols) != (str(rows), str(cols)):
            self.line(f"if ({n_rows} < {rows} || {n_cols} < {cols}) {{   // zero the padding of an edge tile")
            self.line(f"    AscendC::InitConstValue({tile}, {{1, {rows * cols * dt.itemsize // 32}, 0, {t}(0.0f)}});")
            self.line("}")
        gm = self.gm_members[id(ptr)]

        def copy(transposed: bool) -> None:
            if in_k_blocks(dt, side, transposed):
                return self.copy_k_blocks(
                    tile, lambda row: f"{gm}[({offsets[0].expr} + {row}) * {strides[0].expr} + {offsets[1].expr}]",
                    n_rows, n_cols, _pad(cols), strides[0].expr, hint)
            params = self.fresh(hint + "_nd2nz")
            if transposed:
                self.line(f"AscendC::Nd2NzParams {params};   // the tile's columns (ND rows in GM) -> NZ of its transpose")
                self.line(f"{params}.nValue = {n_cols};")
                self.line(f"{params}.dValue = {n_rows};")
                self.line(f"{params}.srcDValue = {strides[1].expr};")
                self.line(f"{params}.dstNzC0Stride = {_pad(cols)};")
                at = f"{offsets[0].expr} + static_cast<int64_t>({offsets[1].expr}) * {strides[1].expr}"
            else:
                self.line(f"AscendC::Nd2NzParams {params};   // ND rows in GM -> NZ fractals in L1")
                self.line(f"{params}.nValue = {n_rows};")
                self.line(f"{params}.dValue = {n_cols};")
                self.line(f"{params}.srcDValue = {strides[0].expr};")
                self.line(f"{params}.dstNzC0Stride = {_pad(rows)};")
                at = f"{offsets[0].expr} * {strides[0].expr} + {offsets[1].expr}"
            self.line(f"if ({n_rows} > 0 && {n_cols} > 0) {{")
            self.line(f"    AscendC::DataCopy({tile}, {gm}[{at}], {params});")
            self.line("}")
        self.either_layout(transposed, copy)
        self.emit_flags(op, "set_flags")
        self.syms[id(op.result)] = CubeTile(tile, dt, (rows, cols), "L1", transposed=transposed)

    def workspace_to_l1(self, op, at: str, dt, M: int, N: int) -> CubeTile:
        """A tile the AIV handed over through the workspace (ND rows of ``N``) copied into
        L1 as NZ fractals, a Cube operand."""
        if M % FRACTAL or N % FRACTAL:
            raise not_lowered(op, f"a hand-off of {M}x{N} into L1: the Cube path needs multiples of 16")
        side = "A1" if any(u.kind is Kind.DOT and u.operands[0] is op.result
                           for u in op.result.users) else "B1"
        hint = self.user_name(op, "handed")
        m = self.cube_member(sv.buffers(op)[0], side, hint + "L1")
        tile = self.slot_view(m, dt, hint)
        params = self.fresh(hint + "_nd2nz")
        self.line(f"AscendC::Nd2NzParams {params};   // ND rows in the workspace -> NZ fractals in L1")
        self.line(f"{params}.nValue = {M};")
        self.line(f"{params}.dValue = {N};")
        self.line(f"{params}.srcDValue = {N};")
        self.line(f"{params}.dstNzC0Stride = {M};")
        self.line(f"AscendC::DataCopy({tile}, {at}, {params});")
        return CubeTile(tile, dt, (M, N), "L1")

    def mmad(self, op) -> None:
        a, b = self.sym(op.operands[0]), self.sym(op.operands[1])
        if len(op.operands) < 3:
            acc = self.fresh_accumulator(op, sv.buffers(op)[0], "acc")    # nl.dot(a, b): from zero
        else:
            acc = self.sym(op.operands[2])
        if not (isinstance(a, CubeTile) and isinstance(b, CubeTile) and a.scope == b.scope == "L1"
                and isinstance(acc, CubeTile) and acc.scope == "L0C"):
            raise not_lowered(op, "a dot whose operands are not block loads into L1")
        if b.wrapped is not None:
            if acc.wrapped not in (None, b.wrapped):
                raise not_lowered(op, "a dot of B tiles whose columns wrap differently")
            acc.wrapped = b.wrapped
        (M, K), N = a.shape, _pad(b.shape[1])
        # k1: fractal columns of K, C0 elements each (16 for 2-byte types, 8 for f32)
        m1, k1, n1 = M // FRACTAL, K // c0(a.dtype), N // FRACTAL
        l0a, l0b = sv.operand_buffers(op)
        if sv.k_chunk(op) is not None:
            return self.chunked_mmad(op, a, b, acc)
        self.emit_flags(op, "wait_flags", pipes={"MTE1"})
        a0 = self.slot_view(self.cube_member(l0a, "A2", "aL0"), a.dtype, a.var + "L0")
        b0 = self.slot_view(self.cube_member(l0b, "B2", "bL0", K * N * b.dtype.itemsize), b.dtype, b.var + "L0")
        self.line(f"// L1 -> L0A: one row of {k1} fractals per {FRACTAL} rows of the A tile")
        self.load_fractals(a0, a.var, m1, "i", k1, m1, False, a.dtype)

        def load_b(transposed: bool) -> None:
            if transposed:
                self.line(f"// L1 -> L0B: B^T's NZ fractals are B's ZN, {n1} per {c0(b.dtype)} rows of K")
                self.load_fractals(b0, b.var, k1, f"i * {n1}", n1, 1, False, b.dtype)
            elif in_k_blocks(b.dtype, "B1", transposed):
                self.line(f"// L1 -> L0B: B's 16 x 16 squares transposed into ZN, {n1} per {FRACTAL} rows of K")
                self.load_squares(b0, b.var, K // FRACTAL, "i", n1)
            else:
                self.line(f"// L1 -> L0B: B's NZ fractals transposed into ZN, {n1} per {FRACTAL} rows of K")
                self.load_fractals(b0, b.var, k1, "i", n1, k1, True, b.dtype)
        self.either_layout(b.transposed, load_b)
        self.emit_flags(op, "set_flags", pipes={"MTE1"})
        self.emit_flags(op, "wait_flags", pipes={"CUBE"})
        params = self.fresh("mmad")
        self.line(f"AscendC::MmadParams {params};")
        self.line(f"{params}.m = {M};")
        self.line(f"{params}.n = {N};")
        self.line(f"{params}.k = {K};")
        self.line(f"{params}.cmatrixInitVal = {acc.fresh_flag};")
        self.line(f"AscendC::Mmad({acc.var}, {a0}, {b0}, {params});   // f32 accumulate in L0C")
        self.line(f"{acc.fresh_flag} = false;")
        self.emit_flags(op, "set_flags", pipes={"CUBE"})
        self.syms[id(op.result)] = acc

    def load_fractals(self, dst: str, src: str, rows: int, start: str, repeat: int,
                      stride: int, transpose: bool, dtype) -> None:
        """``rows`` LoadData calls, L1 -> L0: row ``i`` takes ``repeat`` fractals from
        source fractal ``start`` on, ``stride`` apart, into ``dst`` row ``i``."""
        self.line(f"for (uint16_t i = 0; i < {rows}; ++i) {{")
        self.line("    AscendC::LoadData2DParams load;")
        self.line(f"    load.startIndex = {start};")
        self.line(f"    load.repeatTimes = {repeat};")
        self.line(f"    load.srcStride = {stride};")
        if transpose:
            self.line("    load.ifTranspose = true;")
        self.line(f"    AscendC::LoadData({dst}[i * {repeat * fractal_elems(dtype)}], {src}, load);")
        self.line("}")

    def chunked_mmad(self, op, a, b, acc) -> None:
        """A dot split into L0 K-chunks (``L0_BLOCK_K``): the L1 tiles reach L0A/L0B one
        chunk of K at a time, each chunk's slot and ``M_MTE1`` / ``MTE1_M`` event ids
        rotating per chunk (``it * chunks + c``), so MTE1 fills one slot while the Cube
        works on the other; the other flags wait before the first chunk and are set after
        the last (the simulator's stream does the same: sim/lower.py
        ``_emit_chunked_dot``)."""
        (M, K), N = a.shape, _pad(b.shape[1])
        k0 = sv.k_chunk(op)
        m1, k1, n1, kc1 = M // FRACTAL, K // c0(a.dtype), N // FRACTAL, k0 // c0(a.dtype)
        chunks = K // k0
        l0a, l0b = sv.operand_buffers(op)
        l0_pairs = {"M_MTE1", "MTE1_M"}
        waits = [f for f in sv.flags_of(op, "wait_flags") if f.event not in l0_pairs]
        sets = [f for f in sv.flags_of(op, "set_flags") if f.event not in l0_pairs]
        for f in waits:                 # (the Cube path has no TQue events: every flag is set here)
            self.line(f"AscendC::WaitFlag<AscendC::HardEvent::{f.event}>({self.flag_id(f)});")
        ma = self.cube_member(l0a, "A2", "aL0")
        mb = self.cube_member(l0b, "B2", "bL0", k0 * N * b.dtype.itemsize)
        rotating = ma.depth > 1 or mb.depth > 1 or any(
            f.count > 1 for which in ("wait_flags", "set_flags")
            for f in sv.flags_of(op, which) if f.event in l0_pairs)
        g = self.fresh("chunk") if rotating else None
        self.line(f"// K in {chunks} chunks of {k0}: L1 -> L0 and Mmad per chunk"
                  + (", L0 slots rotating" if rotating else ""))
        self.line(f"for (int32_t c = 0; c < {chunks}; ++c) {{")
        with self.indented():
            if rotating:
                self.line(f"const int32_t {g} = {self.iteration()} * {chunks} + c;")

            def l0_flags(which: str, event: str) -> None:
                call = "WaitFlag" if which == "wait_flags" else "SetFlag"
                for f in sv.flags_of(op, which):
                    if f.event == event:
                        at = f"{g} % {f.count}" if f.count > 1 else "0"
                        self.line(f"AscendC::{call}<AscendC::HardEvent::{event}>"
                                  f"({f.first} + {at});")

            l0_flags("wait_flags", "M_MTE1")
            views = []
            for m, dt, hint in ((ma, a.dtype, a.var + "L0"), (mb, b.dtype, b.var + "L0")):
                name = self.fresh(hint)
                at = (f"[({g} % {m.depth}) * {m.bytes // dt.itemsize}]" if m.depth > 1 else "")
                self.line(f"AscendC::LocalTensor<{cpp_type(dt)}> {name} = "
                          f"{m.name}.Get<{cpp_type(dt)}>(){at};")
                views.append(name)
            a0, b0 = views
            self.line("// A: this chunk's fractal columns")
            self.load_fractals(a0, a.var, m1, f"i + c * {kc1 * m1}", kc1, m1, False, a.dtype)
            def load_b(transposed: bool, b0=b0) -> None:
                if transposed:
                    self.line("// B: this chunk's fractal rows (B^T's fractals, as they are)")
                    self.load_fractals(b0, b.var, kc1, f"(c * {kc1} + i) * {n1}", n1, 1, False, b.dtype)
                elif in_k_blocks(b.dtype, "B1", transposed):
                    self.line("// B: this chunk's blocks of 16 rows, their squares transposed")
                    blocks = k0 // FRACTAL
                    self.load_squares(b0, b.var, blocks, f"c * {blocks} + i", n1)
                else:
                    self.line("// B: this chunk's fractal rows, transposed")
                    self.load_fractals(b0, b.var, kc1, f"c * {kc1} + i", n1, k1, True, b.dtype)
            self.either_layout(b.transposed, load_b)
            l0_flags("set_flags", "MTE1_M")
            l0_flags("wait_flags", "MTE1_M")
            params = self.fresh("mmad")
            self.line(f"AscendC::MmadParams {params};")
            self.line(f"{params}.m = {M};")
            self.line(f"{params}.n = {N};")
            self.line(f"{params}.k = {k0};")
            self.line(f"{params}.cmatrixInitVal = {acc.fresh_flag};")
            self.line(f"AscendC::Mmad({acc.var}, {a0}, {b0}, {params});   // f32 accumulate in L0C")
            self.line(f"{acc.fresh_flag} = false;")
            l0_flags("set_flags", "M_MTE1")
        self.line("}")
        for f in sets:
            self.line(f"AscendC::SetFlag<AscendC::HardEvent::{f.event}>({self.flag_id(f)});")
        self.syms[id(op.result)] = acc

    def zero_unwritten_accumulators(self, loop) -> None:
        """After a loop that carries a Cube accumulator.  Its zero init is the first
        Mmad's ``cmatrixInitVal``, so when the loop ran no trips (a K of 0) nothing wrote
        L0C: then the Cube writes the zero itself, one Mmad over L0A/L0B tiles filled with
        zeros, fenced by full barriers (the path only a zero-trip loop takes).  The
        simulator's stream does the same (sim/lower.py ``_zero_unwritten``)."""
        for res in loop.results:
            acc = self.syms.get(id(res))
            if not (isinstance(acc, CubeTile) and acc.scope == "L0C" and acc.fresh_flag):
                continue
            dot = next((d for d in loop.walk() if d.kind is Kind.DOT and len(d.operands) > 2
                        and getattr(self.syms.get(id(d.operands[2])), "var", None) == acc.var),
                       None)
            if dot is None:
                continue
            l0a, l0b = sv.operand_buffers(dot)
            dt = dot.operands[0].type.dtype
            t, M, N = cpp_type(dt), acc.shape[0], _pad(acc.shape[1])
            self.line(f"if ({acc.fresh_flag}) {{   // no trips: no Mmad wrote {acc.var} yet")
            with self.indented():
                self.line("AscendC::PipeBarrier<PIPE_ALL>();")
                zeros = []
                for buf, pos, rows in ((l0a, "A2", M), (l0b, "B2", N)):
                    z = self.fresh(f"zero{pos}")
                    m = self.cube_member(buf, pos, "aL0" if pos == "A2" else "bL0")
                    self.line(f"AscendC::LocalTensor<{t}> {z} = {m.name}.Get<{t}>();")
                    blocks = rows * FRACTAL * dt.itemsize // 32
                    self.line(f"AscendC::InitConstValue({z}, {{1, {blocks}, 0, {t}(0.0f)}});")
                    zeros.append(z)
                self.line("AscendC::PipeBarrier<PIPE_ALL>();")
                params = self.fresh("mmad")
                self.line(f"AscendC::MmadParams {params};")
                self.line(f"{params}.m = {M};")
                self.line(f"{params}.n = {N};")
                self.line(f"{params}.k = {FRACTAL};")
                self.line(f"{params}.cmatrixInitVal = true;")
                self.line(f"AscendC::Mmad({acc.var}, {zeros[0]}, {zeros[1]}, {params});")
                self.line("AscendC::PipeBarrier<PIPE_ALL>();")
                self.line(f"{acc.fresh_flag} = false;")
            self.line("}")

    def fixpipe_store(self, op) -> None:
        ptr = op.operands[0]
        shape_vals = [self.sym(v) for v in op.operands[1:3]]
        strides = [self.sym(v) for v in op.operands[3:5]]
        offsets = [self.sym(v) for v in op.operands[5:7]]
        acc = self.sym(op.operands[-1])
        out_dt = ptr.type.dtype
        if acc.wrapped is not None:
            raise not_lowered(op, "a block store of a dot whose B columns wrap (`% n`): store it "
                                  "through pointers masked by `cols < n`")
        if (acc.out_dtype or acc.dtype) != out_dt:
            raise not_lowered(op, f"storing a {acc.out_dtype or acc.dtype} tile to a {out_dt} array")
        if out_dt.name not in ("f32",) + tuple(_QUANT):
            raise not_lowered(op, f"a {out_dt} matmul result (Fixpipe writes f32, f16 or bf16)")
        self.unit_stride(op, op.operands[4])
        rows, cols = op.attrs["block_shape"]
        self.emit_flags(op, "wait_flags")
        n_rows = self.gm_extent(op, shape_vals, offsets, (rows, cols), 0)
        n_cols = self.gm_extent(op, shape_vals, offsets, (rows, cols), 1)
        gm = self.gm_members[id(ptr)]
        fix = self.fresh("fixpipe")
        self.line(f"if ({n_rows} > 0 && {n_cols} > 0) {{")
        with self.indented():
            self.line(f"AscendC::FixpipeParamsV220 {fix};   // L0C (NZ, f32) -> GM (ND)")
            self.line(f"{fix}.mSize = {n_rows};")
            self.line(f"{fix}.nSize = {n_cols};")
            self.line(f"{fix}.srcStride = {_pad(rows)};")
            self.line(f"{fix}.dstStride = {strides[0].expr};")
            if out_dt.name in _QUANT:
                self.line(f"{fix}.quantPre = AscendC::QuantMode_t::{_QUANT[out_dt.name]};")
            self.line(f"AscendC::Fixpipe<{cpp_type(out_dt)}, float, AscendC::CFG_ROW_MAJOR>("
                      f"{gm}[{offsets[0].expr} * {strides[0].expr} + {offsets[1].expr}], {acc.var}, {fix});")
        self.line("}")
        self.emit_flags(op, "set_flags")
        self.line("// the next program's Mmad reuses L0C: wait for the Fixpipe to drain it")
        self.line("AscendC::SetFlag<AscendC::HardEvent::FIX_M>(0);")
        self.line("AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(0);")
