"""GM <-> UB moves for the Ascend C emitter, and the TQue protocol around them.

A load of ``base + arange`` lanes under a ``lane < bound`` mask becomes one
``DataCopyPad`` of the in-bounds lanes into a VECIN queue slot (after a ``Duplicate`` of
``other`` when lanes may be masked off); a store becomes one ``DataCopyPad`` out of a
VECOUT slot.  Tiles in queues follow AllocTensor -> EnQue -> DeQue -> FreeTensor, which is
how the schedule's MTE2_V / V_MTE3 flags and their slot-release flags reach the device
(docs/npu-facts.md §A7; docs/ascendc.md).
"""
from __future__ import annotations

from npujit.ir.ops import Kind
from npujit.ir.types import int32

from . import schedule_view as sv
from .lowering import cpp_type, not_lowered, raw_name
from .values import Bits, Grid, Index, Mask, Mask2, RowVal, Scalar, Splat, Tile, scalar_arg


class MemoryLowering:
    """Mixin of ``KernelWriter``: loads, stores, queue and scratch bookkeeping."""

    # --- members -----------------------------------------------------------------------
    def member(self, buf, kind: str, position: str, hint: str):
        from .emit_kernel import Member
        m = self.members.get(buf.name)
        if m is None:
            suffix = "Que_" if kind == "TQue" else "Buf_"
            m = Member(self.fresh(hint + suffix), kind, position,
                       buf.stages if kind == "TQue" else 1, buf.bytes)
            self.members[buf.name] = m
        return m

    def scratch(self, dtype, length: int, hint: str) -> Tile:
        """A scratch tile from the pool of TBufs ``tmpN_`` (freed with ``release``)."""
        nbytes = max(32, (length * dtype.itemsize + 31) // 32 * 32)
        slot = self.scratch_free.pop() if self.scratch_free else len(self.scratch_sizes)
        if slot == len(self.scratch_sizes):
            self.scratch_sizes.append(0)
        self.scratch_sizes[slot] = max(self.scratch_sizes[slot], nbytes)
        name = self.fresh(hint)
        t = cpp_type(dtype)
        self.line(f"AscendC::LocalTensor<{t}> {name} = tmp{slot}_.Get<{t}>();")
        return Tile(name, dtype, length, home=("scratch", slot))

    def release(self, tile) -> None:
        if isinstance(tile, Bits):          # a compare's bit mask lives in a scratch tile
            tile = getattr(tile, "home", None)
        if isinstance(tile, Tile) and isinstance(tile.home, tuple) and tile.home[0] == "scratch":
            if tile.home[1] not in self.scratch_free:
                self.scratch_free.append(tile.home[1])

    def result_tile(self, value, buf, hint: str) -> Tile:
        """Where a vector op writes ``value``: a VECOUT queue slot when only stores read it,
        else the schedule's buffer as a TBuf."""
        dt, n = value.type.dtype, value.type.numel
        t = cpp_type(dt)
        users = value.users
        if users and all(u.kind is Kind.STORE and u.operands[2] is value for u in users):
            name = self.fresh(hint)
            m = self.member(buf, "TQue", "VECOUT", name)
            self.line(f"AscendC::LocalTensor<{t}> {name} = {m.name}.AllocTensor<{t}>();")
            return Tile(name, dt, n, home=m)
        name = self.fresh(hint)
        m = self.member(buf, "TBuf", "VECCALC", name)
        self.line(f"AscendC::LocalTensor<{t}> {name} = {m.name}.Get<{t}>();")
        return Tile(name, dt, n, home=m)

    def carried_tile(self, loop, init, s) -> Tile:
        """The buffer a loop-carried tile lives in, holding its initial value (a splat is
        duplicated into it; a tile already there is used as is)."""
        buf = sv.buffers(init.op)[init.op.results.index(init)]
        dt = init.type.dtype
        home = self.members.get(buf.name)
        if getattr(home, "kind", None) == "TQue":
            raise not_lowered(loop, "a loop-carried vector tile that starts as a loaded tile "
                                    "(its queue slot is not a buffer the loop can update)")
        if isinstance(s, Tile) and s.home is home:
            return s
        name = self.fresh(raw_name(init.op, "carried"))
        m = self.member(buf, "TBuf", "VECCALC", name)
        t = cpp_type(dt)
        self.line(f"AscendC::LocalTensor<{t}> {name} = {m.name}.Get<{t}>();")
        if isinstance(s, Splat):
            self.line(f"AscendC::Duplicate({name}, {scalar_arg(s.value, dt)}, {init.type.numel});")
        else:
            self.line(f"AscendC::Muls({name}, {self.use_tile(s).var}, static_cast<{t}>(1), {init.type.numel});")
        return Tile(name, dt, init.type.numel, home=m)

    def finish_tile(self, tile: Tile) -> None:
        """After a tile's producer: a VECOUT slot goes into its queue."""
        m = tile.home
        if getattr(m, "kind", None) == "TQue" and m.position == "VECOUT":
            self.line(f"{m.name}.EnQue({tile.var});")
            self.queue_state[tile.var] = "enqueued"

    def use_tile(self, s):
        """Make a queued tile usable (DeQue it on first use); returns ``s``."""
        if isinstance(s, Tile) and self.queue_state.get(s.var) == "enqueued":
            t = cpp_type(s.dtype)
            self.line(f"{s.var} = {s.home.name}.DeQue<{t}>();")
            self.queue_state[s.var] = "held"
        return s

    def dequeue_used_inside(self, loop) -> None:
        """Tiles queued before a loop and read inside it are dequeued once, before it."""
        for inner in loop.body.walk():
            for v in inner.operands:
                s = self.syms.get(id(v))
                if isinstance(s, Tile):
                    self.use_tile(s)

    def release_after(self, op, values) -> None:
        """Free the VECIN slots of loads whose last reader was ``op``."""
        for v in values:
            s = self.syms.get(id(v))
            if (isinstance(s, Tile) and getattr(s.home, "position", None) == "VECIN"
                    and self.queue_state.get(s.var) == "held"):   # not "pinned" (emit_rows.py)
                self.line(f"{s.home.name}.FreeTensor({s.var});")
                self.queue_state[s.var] = "freed"

    def free_pinned(self, since: int) -> None:
        """Free the VECIN slots of tiles the scalar unit read per row (``row_of_tile``),
        pinned since ``since``, at the end of the block that loaded them."""
        for s in self.pinned[since:]:
            self.line(f"{s.home.name}.FreeTensor({s.var});")
            self.queue_state[s.var] = "freed"
        del self.pinned[since:]

    # --- loads and stores --------------------------------------------------------------
    def emit_ub_transfer(self, op) -> None:
        self.emit_flags(op, "wait_flags")
        self.ub_transfer(op)
        self.emit_flags(op, "set_flags")

    def ub_transfer(self, op) -> None:
        load = op.kind is Kind.LOAD
        ptr = op.operands[0]
        gm = self.gm_members[id(ptr)]
        dt = ptr.type.dtype
        t = cpp_type(dt)
        if load:
            mask = self.sym(op.operands[2]) if len(op.operands) > 2 else None
            other = self.sym(op.operands[3]) if len(op.operands) > 3 else None
        else:
            mask = self.sym(op.operands[3]) if len(op.operands) > 3 else None
            self.check_wrap_masked(op, mask)
        offs = self.sym(op.operands[1])
        if isinstance(offs, Scalar):
            return self.scalar_transfer(op, gm, t, offs, mask, other if load else None)
        grid = isinstance(offs, Grid)
        if grid and offs.wrap is not None:
            raise not_lowered(op, "a vector tile at column offsets that wrap (`% n`) is not "
                                  "emitted (only Cube operands read them)")
        if load and isinstance(offs, Tile) and offs.home is not None and not offs.dtype.is_float:
            offs = self.row_of_tile(op, offs)       # a gather by loaded indices
        if load and isinstance(offs, RowVal) and offs.cols == 1:
            return self.lanes_transfer(op, gm, t, offs, mask, other)
        if not load and op.operands[1].type.rank == 1 and (
                isinstance(offs, RowVal) or (isinstance(offs, Tile) and not offs.dtype.is_float)):
            offs = offs if isinstance(offs, RowVal) else self.row_of_tile(op, offs)
            return self.lanes_store(op, gm, offs, self.sym(op.operands[2]), mask)
        if not load and isinstance(mask, RowVal) and isinstance(offs, Index):
            rows = RowVal(f"({offs.base} + {{r}})", int32, offs.length)
            return self.lanes_store(op, gm, rows, self.sym(op.operands[2]), mask)
        if not isinstance(offs, (Index, Grid)):
            raise not_lowered(op, "a gather or scatter (offsets that are not a scalar plus "
                                  "nl.arange, or rows of such) is not emitted yet")
        if mask is not None and not isinstance(mask, Mask2 if grid else Mask):
            raise not_lowered(op, "a mask that is not `lanes < bound` is not emitted yet")
        n = offs.rows * offs.cols if grid else offs.length
        count = mask.count if mask is not None and not grid else str(n)
        whole = mask is None and n * dt.itemsize % 32 == 0
        if load and not op.result.uses:
            return None                  # a load nobody reads moves nothing
        if load:
            if other is not None and not isinstance(other, Splat):
                raise not_lowered(op, "`other=` must be a scalar for the emitter")
            fill = scalar_arg(other.value, dt) if other is not None else _zero(dt)
            buf = sv.buffers(op)[0]
            hint = self.user_name(op, "x")
            m = self.member(buf, "TQue", "VECIN", hint)
            var = hint
            self.line(f"AscendC::LocalTensor<{t}> {var} = {m.name}.AllocTensor<{t}>();")
            if mask is not None:
                why = "`other`" if other is not None else "0"
                self.line(f"AscendC::Duplicate({var}, {fill}, {n});   // masked-off lanes read {why}")
                self.line("AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(0);")
                self.line("AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(0);")
            if grid:
                self.grid_copy(op, True, gm, t, var, offs, mask, fill)
            elif whole:
                self.line(f"AscendC::DataCopy({var}, {gm}[{offs.offset()}], {n});")
            else:
                self.helpers.add("tail_pad")
                pad = (f"{{true, 0, TailPad<{t}>({count}), {fill}}}" if mask is not None
                       else f"{{false, 0, 0, {_zero(dt)}}}")
                copy = (f"AscendC::DataCopyPad({var}, {gm}[{offs.offset()}], "
                        f"{{1, static_cast<uint32_t>({count} * sizeof({t})), 0, 0, 0}}, {pad});")
                self.line(copy if mask is None else f"if ({count} > 0) {{")
                if mask is not None:
                    self.line("    " + copy)
                    self.line("}")
            self.line(f"{m.name}.EnQue({var});")
            self.queue_state[var] = "enqueued"
            self.syms[id(op.result)] = Tile(var, dt, n, home=m)
            return None
        value = self.sym(op.operands[2])
        if isinstance(value, Splat):
            value = self.materialize_splat(value, dt, "stored")
        elif isinstance(value, RowVal) and value.cols == 1:
            value = self.rows_as_tile(value, dt)
        if not isinstance(value, Tile):
            raise not_lowered(op, "storing an index or mask tile is not emitted yet")
        self.store_prologue(value)
        if grid:
            self.grid_copy(op, False, gm, t, value.var, offs, mask, "")
        elif whole:
            self.line(f"AscendC::DataCopy({gm}[{offs.offset()}], {value.var}, {n});")
        else:
            copy = (f"AscendC::DataCopyPad({gm}[{offs.offset()}], {value.var}, "
                    f"{{1, static_cast<uint32_t>({count} * sizeof({t})), 0, 0, 0}});")
            if mask is None:
                self.line(copy)
            else:
                self.line(f"if ({count} > 0) {{")
                self.line("    " + copy)
                self.line("}")
        self.store_epilogue(op, value)
        return None

    def store_prologue(self, value: Tile) -> None:
        """Before a UB -> GM copy of ``value``: DeQue it, or order the copy after the
        vector unit (or the load) that wrote a buffer no queue guards."""
        self.use_tile(value)
        position = getattr(value.home, "position", None)
        if position != "VECOUT":
            event = "MTE2_MTE3" if position == "VECIN" else "V_MTE3"
            self.line(f"AscendC::SetFlag<AscendC::HardEvent::{event}>(0);")
            self.line(f"AscendC::WaitFlag<AscendC::HardEvent::{event}>(0);")

    def store_epilogue(self, op, value: Tile) -> None:
        """After a UB -> GM copy: free a VECOUT slot after its last store, or keep the
        vector unit from writing the buffer before the copy read it."""
        home = value.home
        position = getattr(home, "position", None)
        if position == "VECOUT":
            stored = op.operands[-1] if op.kind is Kind.BLOCK_STORE else op.operands[2]
            done = self.stores_emitted.setdefault(id(stored), set())
            done.add(id(op))
            if all(id(u) in done for u in stored.users):
                self.line(f"{home.name}.FreeTensor({value.var});")
                self.queue_state[value.var] = "freed"
        elif position != "VECIN":
            self.line("AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(0);")
            self.line("AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(0);")
        self.release(value)

    def emit_atomic_add(self, op) -> None:
        """``nl.atomic_add`` of a tile: the store's UB -> GM copy between
        ``SetAtomicAdd<T>()`` and ``SetAtomicNone()``, which adds into GM."""
        combine = op.attrs.get("combine", "add")
        if combine != "add":
            raise not_lowered(op, f"atomic_{combine} is not emitted (SetAtomicAdd adds only)")
        if op.operand("cmp") is not None:
            raise not_lowered(op, "atomic_cas is not emitted")
        if op.results and op.result.uses:
            raise not_lowered(op, "the old values an atomic returns are not emitted (the "
                                  "atomic copy returns nothing): do not read its result")
        dt = op.operands[0].type.dtype
        if dt.name not in ("f32", "f16", "bf16", "i32"):
            raise not_lowered(op, f"an atomic add of {dt} (the device adds f32, f16, bf16, i32)")
        if not isinstance(self.sym(op.operand("offsets")), (Index, Grid)):
            raise not_lowered(op, "an atomic add that is not a tile at `scalar + nl.arange` "
                                  "(a scalar or a scatter) is not emitted yet")
        self.emit_flags(op, "wait_flags")
        self.line(f"AscendC::SetAtomicAdd<{cpp_type(dt)}>();   // the copy below adds into GM")
        self.ub_transfer(op)
        self.line("AscendC::SetAtomicNone();")
        self.emit_flags(op, "set_flags")

    def lanes_transfer(self, op, gm, t, offs, mask, other) -> None:
        """A 1-D load at per-lane offsets into a VECIN slot (emit_rows.py ``lanes_load``)."""
        if not op.result.uses:
            return None
        dt = op.result.type.dtype
        if other is not None and not isinstance(other, Splat):
            raise not_lowered(op, "`other=` must be a scalar for the emitter")
        fill = scalar_arg(other.value, dt) if other is not None else _zero(dt)
        var = self.user_name(op, "x")
        m = self.member(sv.buffers(op)[0], "TQue", "VECIN", var)
        self.line(f"AscendC::LocalTensor<{t}> {var} = {m.name}.AllocTensor<{t}>();")
        self.lanes_load(op, gm, t, var, offs, mask, fill)
        self.line(f"{m.name}.EnQue({var});")
        self.queue_state[var] = "enqueued"
        self.syms[id(op.result)] = Tile(var, dt, offs.rows, home=m)
        return None

    def scalar_transfer(self, op, gm, t, offs, mask, other):
        """One element: GlobalTensor::GetValue / SetValue on the scalar unit."""
        if mask is not None and not isinstance(mask, Scalar):
            raise not_lowered(op, "a scalar access with a tile mask")
        if op.kind is Kind.LOAD:
            name = self.user_name(op, "x")
            fill = other.expr if isinstance(other, Scalar) else _zero(op.result.type.dtype)
            read = f"{gm}.GetValue({offs.expr})"
            expr = read if mask is None else f"{mask.expr} ? {read} : {fill}"
            self.line(f"const {t} {name} = {expr};")
            self.syms[id(op.result)] = Scalar(name, op.result.type.dtype)
            return None
        value = self.sym(op.operands[2])
        if not isinstance(value, Scalar):
            raise not_lowered(op, "a tile stored at a scalar offset")
        write = f"{gm}.SetValue({offs.expr}, {value.expr});"
        self.line(write if mask is None else f"if ({mask.expr}) {write}")
        return None


def _zero(dtype) -> str:
    if dtype.is_float:
        return "0.0f" if dtype.name == "f32" else f"{cpp_type(dtype)}(0.0f)"
    return "0" if dtype.name in ("i32", "i64") else f"static_cast<{cpp_type(dtype)}>(0)"
