"""The AIC / AIV split of a mixed (Cube + Vector) kernel on a separated part.

``ir/schedule/split_cores.py`` gave every op a side (its pipe's; SCALAR work runs on both
cores' scalar units) and made each crossing an ``npu.handoff``.  The emitter writes the
program body twice, ``RunProgramAic`` and ``RunProgramAiv``, each with the ops of its side
and the scalar work they need; ``Process`` calls the one of the core it runs on
(``ASCEND_IS_AIC``).  A Cube -> Vector hand-off is a ``Fixpipe`` of the L0C tile into the
program's slot of the GM workspace and ``CrossCoreSetFlag<2, PIPE_FIX>`` on the AIC, and
``CrossCoreWaitFlag`` then a ``DataCopy`` of the slot into UB on the AIV.  Each side keeps
the schedule's flags whose two pipes it has (``V``/``MTE3`` on the AIV, ``MTE1``/``M``/``FIX``
on the AIC) -- also around the ops it leaves to the other side; a flag between a pipe of
each core (``M_V``: the AIV reading a zero splat the schedule merged with the Cube's) has
no meaning on a separated part, where only the hand-off's cross-core flags order the
cores, and is not emitted.
"""
from __future__ import annotations

from npujit.ir.ops import Kind
from npujit.ir.schedule.split_cores import op_side

from . import schedule_view as sv
from .lowering import cpp_type, not_lowered
from .values import Grid, Index, Mask, Mask2, OneHot, Paneled, RowVal, Scalar, Splat, Tile, Wrapped

_AIC_PIPES = {"MTE1", "M", "FIX"}
_AIV_PIPES = {"V", "MTE3"}
AIC_POSITIONS = {"A1", "B1", "A2", "B2", "CO1"}
_MOVES = {Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW, Kind.BLOCK_LOAD, Kind.BLOCK_STORE, Kind.DOT,
          Kind.HANDOFF}
_SYMBOLIC = (Scalar, Splat, Index, Mask, Mask2, Grid, RowVal, OneHot, Wrapped, Paneled)
_NEVER_SYMBOLIC = {Kind.STORE, Kind.ATOMIC_RMW, Kind.BLOCK_LOAD, Kind.BLOCK_STORE, Kind.DOT,
                   Kind.FOR, Kind.IF, Kind.WHILE, Kind.HANDOFF, Kind.REDUCE}


class MixedLowering:
    """Mixin of ``KernelWriter``: which ops and flags a side emits, and hand-offs."""

    side: str | None = None           # the side being written, None for a one-core kernel

    def flag_on_side(self, flag, op) -> bool:
        """Whether the current side sets / waits ``flag`` (always, for one-core kernels)."""
        if self.side is None:
            return True
        pipes = set(flag.event.split("_"))
        if pipes & _AIC_PIPES and pipes & _AIV_PIPES:
            return False        # between the cores (M_V, ...): only a hand-off crosses them
        if pipes & _AIC_PIPES:
            return self.side == "AIC"
        if pipes & _AIV_PIPES:
            return self.side == "AIV"
        return self.side == (op_side(op) or "AIV")      # S <-> MTE2: the op's core

    def left_to_other_side(self, op) -> bool:
        """Whether the current side leaves ``op`` to the other core: an op of the other
        side, a region holding only the other side's ops, or scalar work on values the
        other side made."""
        if self.side is None or op.kind is Kind.HANDOFF:
            return False
        side = op_side(op)
        scalar = (not op.regions and op.results and op.kind not in (Kind.STORE, Kind.ATOMIC_RMW)
                  and all(getattr(r.type, "is_scalar", False) for r in op.results))
        if side is not None and not scalar:      # scalars: either core's scalar unit
            return side != self.side
        # a region belongs to the core whose memory traffic and Cube work it holds (its
        # address arithmetic either core can do)
        inner = {op_side(i) for i in op.walk() if i is not op and i.kind in _MOVES} - {None}
        if inner and self.side not in inner:
            return True
        return any(id(v) not in self.syms and id(v) not in self.gm_members for v in op.operands)

    def skip_op(self, op) -> None:
        """The other side's op: this side's flags around it, and the values it needs of
        it that its own scalar unit can make: a splat of a scalar, per-row values and
        masks (no vector code), and the lanes of a 1-D load read from GM per row (the
        AIC's scalar unit reads ``sorted_ids`` itself where the AIV loaded them to UB)."""
        self.emit_flags(op, "pre_set_flags")
        self.emit_flags(op, "wait_flags")
        if op.kind is Kind.SPLAT and isinstance(self.syms.get(id(op.operands[0])), Scalar):
            self.syms[id(op.result)] = Splat(self.syms[id(op.operands[0])], op.result.type.numel)
        elif op.kind is Kind.LOAD:
            self.lanes_from_gm(op)
        elif op.kind not in _NEVER_SYMBOLIC and all(
                isinstance(self.syms.get(id(v)), _SYMBOLIC) for v in op.operands):
            with self.capture() as lines:
                try:
                    if op.kind is Kind.FUSED:
                        self.emit_fused(op)
                    else:
                        self.emit_elementwise(op, op.operands, op.results[0], top=False)
                    ok = all(isinstance(self.syms.get(id(r)), _SYMBOLIC) for r in op.results)
                except (NotImplementedError, KeyError):
                    ok = False
            if ok:
                self.lines.extend(lines)
            else:
                for r in op.results:
                    self.syms.pop(id(r), None)
        self.emit_flags(op, "set_flags")
        self.emit_flags(op, "post_wait_flags")

    def lanes_from_gm(self, op) -> None:
        """A 1-D load at ``base + lanes`` the other core made: per-row GM reads."""
        offs = self.syms.get(id(op.operands[1]))
        mask = self.syms.get(id(op.operands[2])) if len(op.operands) > 2 else None
        other = self.syms.get(id(op.operands[3])) if len(op.operands) > 3 else None
        if op.result.type.rank != 1 or not isinstance(offs, Index):
            return
        if mask is not None and not isinstance(mask, Mask):
            return
        gm = self.gm_members[id(op.operands[0])]
        read = f"{gm}.GetValue({offs.base} + {{r}})"
        if mask is not None:
            fill = other.value.expr if isinstance(other, Splat) else "0"
            read = f"(static_cast<uint32_t>({{r}}) < {mask.count} ? {read} : {fill})"
        self.syms[id(op.result)] = RowVal(read, op.result.type.dtype, offs.length)

    def emit_handoff(self, op) -> None:
        """A tile crossing between the block's cores through its program's GM workspace
        slot: ``Fixpipe`` (Cube -> Vector) or a UB -> GM ``DataCopy`` (Vector -> Cube),
        then ``CrossCoreSetFlag``; the receiver waits and copies it into UB or L1.  Inside
        a loop each buffer stage has its own slot and a second flag runs back once the
        receiver's copy read the slot, so the source does not rewrite it before (the first
        ``stages`` iterations have nothing to wait for; the source drains the last flags
        back after the loop, ``drain_handoffs``)."""
        to_vector = op.attrs.get("src_pipe") == "FIXP"
        dt = op.result.type.dtype
        M, N = (int(d) for d in op.result.type.shape)
        if to_vector and dt.name != "f32":
            raise not_lowered(op, f"a hand-off of a {dt} tile (the emitter hands f32 L0C tiles)")
        if not to_vector and dt.itemsize != 2:
            raise not_lowered(op, f"a Vector -> Cube hand-off of {dt} (the Cube takes f16 and bf16)")
        cross = [int(f) for f in op.attrs["cross_flags"]]
        stages = sv.buffers(op)[0].stages
        in_loop = bool(self.loop_slots)
        if in_loop and len(cross) < 2:
            raise not_lowered(op, "a hand-off inside a loop without a flag back")
        nbytes = (M * N * dt.itemsize + 31) // 32 * 32
        offset = self.workspace_offsets.get(id(op))
        if offset is None:
            offset = self.workspace_offsets[id(op)] = self.info.workspace_bytes
            self.info.workspace_bytes += nbytes * stages
        slot = self.slot(stages) if in_loop else "0"
        ws = self.workspace_view(dt)
        per = 4 // dt.itemsize          # elements of dt per workspace float
        at = (f"{ws}[program * kWorkspaceFloats{f' * {per}' if per > 1 else ''} + "
              f"{offset // dt.itemsize}{f' + {slot} * {nbytes // dt.itemsize}' if slot != '0' else ''}]")
        source = (self.side == "AIC") == to_vector
        self.emit_flags(op, "wait_flags")
        if source and in_loop:
            self.line(f"if ({self.iteration()} >= {stages}) {{")
            self.line(f"    AscendC::CrossCoreWaitFlag({cross[1]});   // the other core has read this slot")
            self.line("}")
            self.loop_handoffs[-1].append((cross[1], stages))
        if source and to_vector:
            acc = self.sym(op.operands[0])
            if acc.wrapped is not None:
                self.columns_to_mask(op, op.result, acc.wrapped)
            fix = self.fresh("handoff")
            self.line(f"AscendC::FixpipeParamsV220 {fix};   // L0C -> this program's workspace slot")
            self.line(f"{fix}.mSize = {M};")
            self.line(f"{fix}.nSize = {N};")
            self.line(f"{fix}.srcStride = {M};")
            self.line(f"{fix}.dstStride = {N};")
            self.line(f"AscendC::Fixpipe<float, float, AscendC::CFG_ROW_MAJOR>({at}, {acc.var}, {fix});")
            self.line(f"AscendC::CrossCoreSetFlag<2, PIPE_FIX>({cross[0]});   // to this block's AIV")
        elif source:
            value = self.sym(op.operands[0])
            if not isinstance(value, Tile):
                raise not_lowered(op, "a Vector -> Cube hand-off of a value that is not a tile in UB")
            self.store_prologue(value)
            self.line(f"AscendC::DataCopy({at}, {value.var}, {M * N});   // UB -> this program's workspace slot")
            self.store_epilogue(op, value)
            self.line(f"AscendC::CrossCoreSetFlag<2, PIPE_MTE3>({cross[0]});   // to this block's AIC")
        elif to_vector:
            t = cpp_type(dt)
            var = self.user_name(op, "handed")
            m = self.member(sv.buffers(op)[0], "TQue", "VECIN", var)
            self.line(f"AscendC::CrossCoreWaitFlag({cross[0]});   // the AIC wrote the workspace slot")
            self.line(f"AscendC::LocalTensor<{t}> {var} = {m.name}.AllocTensor<{t}>();")
            self.line(f"AscendC::DataCopy({var}, {at}, {M * N});")
            if in_loop:
                self.line(f"AscendC::CrossCoreSetFlag<2, PIPE_MTE2>({cross[1]});   // the slot is read")
            self.line(f"{m.name}.EnQue({var});")
            self.queue_state[var] = "enqueued"
            self.syms[id(op.result)] = Tile(var, dt, M * N, home=m)
        else:
            self.line(f"AscendC::CrossCoreWaitFlag({cross[0]});   // the AIV wrote the workspace slot")
            self.syms[id(op.result)] = self.workspace_to_l1(op, at, dt, M, N)
            if in_loop:
                self.line(f"AscendC::CrossCoreSetFlag<2, PIPE_MTE2>({cross[1]});   // the slot is read")
        self.emit_flags(op, "set_flags")

    def workspace_view(self, dt) -> str:
        """The GM workspace as a GlobalTensor of ``dt`` (one per element type used)."""
        name = "workspaceGm_" if dt.name == "f32" else f"workspace{cpp_type(dt).capitalize()}Gm_"
        self.workspace_types[name] = cpp_type(dt)
        return name

    def drain_handoffs(self, counter: str, handoffs: list) -> None:
        """After a loop, the source of each hand-off in it waits for the flags back of
        the last ``stages`` iterations (every set is waited before the kernel ends)."""
        for back, stages in handoffs:
            d = self.fresh("d")
            self.line(f"for (int64_t {d} = 0; {d} < ({counter} < {stages} ? {counter} : {stages}); ++{d}) {{")
            self.line(f"    AscendC::CrossCoreWaitFlag({back});   // the other core read the last slots")
            self.line("}")
