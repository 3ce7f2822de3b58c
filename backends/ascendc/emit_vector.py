"""Elementwise, compare/select, cast and reduction ops on the vector unit (count-form
APIs over whole tiles), and the symbolic index/mask arithmetic that feeds loads/stores.

A fused region is lowered op by op: intermediate tiles go to scratch TBufs that are
reused as soon as their last reader ran; the region's results go to the schedule's
buffers.  Half floats are stored as half and each API call rounds once, as the
reference interpreter does (docs/semantics.md).
"""
from __future__ import annotations

import math

import numpy as np

from npujit.ir.ops import Kind
from npujit.ir.types import float32, int32

from . import schedule_view as sv
from .lowering import (ACTIVATIONS, CMP_MODES, CMP_SWAPPED, LOWERED, VECTOR_BINARY, VECTOR_DTYPES,
                       VECTOR_UNARY, cpp_type, not_lowered, raw_name, round_mode)
from .values import (Bits, Cell, DataRow, Index, Mask, Mask2, OneHot, Paneled, RowVal, Scalar, Splat, Tile, Wrapped,
                     origin_key, scalar_arg)


class VectorLowering:
    """Mixin of ``KernelWriter``: everything that computes on tiles in UB."""

    def emit_fused(self, op) -> None:
        body = op.body
        for arg, v in zip(body.args, op.operands):
            self.syms[id(arg)] = self.sym(v)
        term = body.terminator
        yielded = {id(v): j for j, v in enumerate(term.operands)}
        bufs = sv.buffers(op)
        last = {}
        for i, inner in enumerate(body.ops):
            for v in inner.operands:
                last[id(v)] = i
        for i, inner in enumerate(body.ops):
            if inner is term:
                break
            res = inner.results[0]
            j = yielded.get(id(res))

            def dest(j=j, res=res):
                if j is None:
                    return self.scratch(res.type.dtype, res.type.numel, _short(inner))
                return self.result_tile(op.results[j], _buffer_for(bufs, op, j), raw_name(op, _short(inner)))
            self.emit_elementwise(inner, inner.operands, res, top=False, dest=dest)
            for v in inner.operands:
                if last.get(id(v)) == i and id(v) not in yielded:
                    self.release(self.syms.get(id(v)))
        for j, (res, v) in enumerate(zip(op.results, term.operands)):
            s = self.sym(v)
            if isinstance(s, Tile):
                buf = _buffer_for(bufs, op, j)
                if s.home is not self.members.get(buf.name):
                    # a region argument or a scratch tile yielded as is: copy it into the result
                    s = self.copy_tile(s, res, buf)
                self.finish_tile(s)
            self.syms[id(res)] = s

    def copy_tile(self, s: Tile, res, buf) -> Tile:
        out = self.result_tile(res, buf, "copy")
        # x * 1 is x exactly (-0.0 and NaN included), where x + 0 would turn -0.0 into +0.0
        self.line(f"AscendC::Muls({out.var}, {self.use_tile(s).var}, static_cast<{cpp_type(s.dtype)}>(1), {s.length});")
        return out

    # --- one op ------------------------------------------------------------------------
    def emit_elementwise(self, op, operands, result, top: bool, dest=None):
        k = op.kind
        if k not in LOWERED:
            raise not_lowered(op)
        if top and dest is None:
            bufs = sv.buffers(op)
            dest = (lambda: self.result_tile(result, bufs[0], raw_name(op, _short(op)))) if bufs else None
        args = [self.sym(v) for v in operands]
        s = self.lower(op, args, result, dest)
        self.syms[id(result)] = s
        if top and isinstance(s, Tile) and s.var not in self.queue_state:
            self.finish_tile(s)
        return s

    def lower(self, op, args, result, dest):
        k = op.kind
        rt = result.type
        rows = self.rows_symbolic(op, args, rt)
        if rows is not None:
            return rows
        if rt.rank == 1 and not rt.is_scalar:
            args = [self.rows_as_tile(a, a.dtype) if isinstance(a, RowVal) and a.cols == 1 else a
                    for a in args]
        if k is Kind.ARANGE:
            return Index(str(int(op.attrs["start"])), rt.numel)
        if k is Kind.SPLAT:
            if not isinstance(args[0], Scalar):
                raise not_lowered(op, "a splat of a tile")
            return Splat(args[0], rt.numel)
        if k is Kind.RESHAPE:
            src = op.operands[0].type
            if isinstance(args[0], Scalar) and rt.numel == 1:
                return Splat(args[0], 1)
            if src.rank == 1 and rt.rank == 1:
                return args[0]
            if isinstance(args[0], Tile) and rt.rank == 2 and src.rank == 2 and \
                    tuple(src.shape) == tuple(rt.shape):
                return args[0]
            raise not_lowered(op, "a reshape of a 2-D vector tile is not emitted yet")
        if rt.is_scalar:
            if k is Kind.REDUCE:
                return self.reduce(op, args[0], result)
            s = self.scalar_op(op, args, result)
            if s is None and k in VECTOR_UNARY:
                return self.scalar_on_vector(op, args[0], result)
            if s is None:
                raise not_lowered(op)
            return s
        symbolic = self.symbolic(op, args, rt)
        if symbolic is not None:
            return symbolic
        if dest is None:
            raise not_lowered(op, "a vector result without a buffer in the schedule")
        if any(isinstance(a, RowVal) for a in args):
            return self.row_binary(op, args, rt.dtype, dest)
        if any(isinstance(a, DataRow) for a in args) and k is not Kind.SELECT:
            return self.data_row_binary(op, args, rt.dtype, dest)
        if k is Kind.REDUCE:
            return self.reduce_axis(op, args[0], result, dest)
        if any(isinstance(a, Cell) for a in args):
            raise not_lowered(op, "this use of a per-element scalar tile is not emitted yet")
        if k is Kind.SCAN:
            return self.scan(op, args[0], result, dest)
        if k is Kind.CAST and isinstance(args[0], OneHot):
            return self.one_hot(op, args[0], rt.dtype, dest)
        if k is Kind.CAST:
            return self.cast(op, args[0], rt.dtype, dest)
        if k in VECTOR_BINARY or k in VECTOR_UNARY or k in ACTIVATIONS or k is Kind.NEG:
            if rt.dtype.name == "bf16":
                return self.on_f32_copies(op, args, rt, dest)
            if rt.dtype.name not in VECTOR_DTYPES:
                raise not_lowered(op, f"{rt.dtype} arithmetic on tiles (the vector unit computes "
                                      f"on {', '.join(VECTOR_DTYPES)})")
            if k in ACTIVATIONS and rt.dtype.is_half:
                return self.on_f32_copies(op, args, rt, dest)
            return self.arithmetic(op, args, rt.dtype, dest)
        if k is Kind.CMP:
            return self.compare(op, args)
        if k is Kind.SELECT:
            return self.select(op, args, rt.dtype, dest)
        raise not_lowered(op)

    def arithmetic(self, op, args, dt, dest) -> Tile:
        k = op.kind
        if k in VECTOR_BINARY:
            return self.binary(op, args, dest, dt)
        if k in ACTIVATIONS:
            return self.activation(op, args[0], dt, dest)
        src = self.as_tile(args[0], dt)
        out = dest()
        if k is Kind.NEG:
            self.line(f"AscendC::Muls({out.var}, {src.var}, {_scalar(-1, dt)}, {out.length});")
        else:
            self.line(f"AscendC::{VECTOR_UNARY[k]}({out.var}, {src.var}, {out.length});")
        if src is not args[0]:
            self.release(src)
        return out

    def activation(self, op, s, dt, dest) -> Tile:
        """sigmoid(x) = 1 / (1 + exp(-x)) and silu(x) = x / (1 + exp(-x)) from the basic
        API, as the reference interpreter defines them (one rounding per step on f32)."""
        src = self.as_tile(s, dt)
        n = src.length
        if op.kind is Kind.GELU:
            out = self.gelu(op, src, dt, dest)
            if src is not s:
                self.release(src)
            return out
        t = self.scratch(dt, n, "denom")
        self.line(f"AscendC::Muls({t.var}, {src.var}, {_scalar(-1, dt)}, {n});   // {ACTIVATIONS[op.kind]}")
        self.line(f"AscendC::Exp({t.var}, {t.var}, {n});")
        self.line(f"AscendC::Adds({t.var}, {t.var}, {_scalar(1, dt)}, {n});")
        out = dest()
        if op.kind is Kind.SILU:
            self.line(f"AscendC::Div({out.var}, {src.var}, {t.var}, {n});")
        else:
            self.line(f"AscendC::Duplicate({out.var}, {_scalar(1, dt)}, {n});")
            self.line(f"AscendC::Div({out.var}, {out.var}, {t.var}, {n});")
        self.release(t)
        if src is not s:
            self.release(src)
        return out

    def gelu(self, op, src: Tile, dt, dest) -> Tile:
        """GELU step by step as the reference interpreter writes it (each step one rounding
        in f32): ``0.5 * x * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"``
        ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * (x * x * x))))``."""
        n = src.length
        t = self.scratch(dt, n, "inner")
        x = src.var
        if op.attrs.get("approximate", "none") == "tanh":
            self.line(f"AscendC::Mul({t.var}, {x}, {x}, {n});   // tanh form")
            self.line(f"AscendC::Mul({t.var}, {t.var}, {x}, {n});")
            self.line(f"AscendC::Muls({t.var}, {t.var}, {_f32(0.044715)}, {n});")
            self.line(f"AscendC::Add({t.var}, {x}, {t.var}, {n});")
            self.line(f"AscendC::Muls({t.var}, {t.var}, {_f32(math.sqrt(2.0 / math.pi))}, {n});")
            self.line(f"AscendC::Tanh({t.var}, {t.var}, {n});")
        else:
            self.line(f"AscendC::Duplicate({t.var}, {_f32(math.sqrt(2.0))}, {n});   // erf form")
            self.line(f"AscendC::Div({t.var}, {x}, {t.var}, {n});")
            self.line(f"AscendC::Erf({t.var}, {t.var}, {n});")
        self.line(f"AscendC::Adds({t.var}, {t.var}, 1.0f, {n});")
        out = dest()
        self.line(f"AscendC::Muls({out.var}, {x}, 0.5f, {n});")
        self.line(f"AscendC::Mul({out.var}, {out.var}, {t.var}, {n});")
        self.release(t)
        return out

    def on_f32_copies(self, op, args, rt, dest) -> Tile:
        """bf16 arithmetic: the vector unit has none, so widen to f32 (exact), compute, and
        round once back to bf16 -- the reference's rule for half floats."""
        wide = []
        for a in args:
            if isinstance(a, Tile):
                w = self.scratch(float32, a.length, "wide")
                self.line(f"AscendC::Cast({w.var}, {self.use_tile(a).var}, AscendC::RoundMode::CAST_NONE, {a.length});")
                wide.append(w)
            elif isinstance(a, Splat):
                wide.append(Splat(Scalar(f"static_cast<float>({a.value.expr})", float32), a.length))
            else:
                raise not_lowered(op, "bf16 arithmetic on an index tile")
        result = self.arithmetic(op, wide, float32, lambda: self.scratch(float32, rt.numel, "wide"))
        out = dest()
        self.line(f"AscendC::Cast({out.var}, {result.var}, AscendC::RoundMode::CAST_RINT, {out.length});")
        for t in wide + [result]:
            self.release(t)
        return out

    # --- index and mask arithmetic -----------------------------------------------------
    def symbolic(self, op, args, rt):
        """Index/mask patterns kept as offsets and counts; ``None`` when ``op`` computes data."""
        k = op.kind
        if k is Kind.CAST and isinstance(args[0], Index) and rt.dtype.is_int:
            return args[0]
        if k is Kind.CAST and isinstance(args[0], Splat):
            return Splat(self.scalar_op(op, [args[0].value], _Scalar0(rt.dtype)), rt.numel)
        if all(isinstance(a, Splat) for a in args) and k is not Kind.SELECT:
            s = self.scalar_op(op, [a.value for a in args], _Scalar0(rt.dtype))
            return Splat(s, rt.numel) if s is not None else None
        if k in (Kind.ADD, Kind.SUB) and any(isinstance(a, Index) for a in args):
            a, b = args
            if isinstance(a, Index) and isinstance(b, Splat):
                sign = "+" if k is Kind.ADD else "-"
                return Index(_sum(a.base, sign, b.value.expr), a.length)
            if k is Kind.ADD and isinstance(a, Splat) and isinstance(b, Index):
                return Index(_sum(b.base, "+", a.value.expr), b.length)
            raise not_lowered(op, "a strided or gathered index (only scalar + nl.arange "
                                  "offsets are emitted)")
        if k is Kind.IDIV and isinstance(args[0], Index) and isinstance(args[1], Splat) \
                and rt.dtype.is_int:
            # (base + arange) // P: the panel of a panel-major column (``Paneled``)
            return Paneled(args[0].base, args[1].value.expr, args[0].length)
        if k is Kind.MUL and rt.dtype.is_int and len(args) == 2 and any(
                isinstance(a, Paneled) and a.stride is None and not a.with_rem for a in args):
            a, b = args if isinstance(args[0], Paneled) else args[::-1]
            if isinstance(b, Splat):
                return Paneled(a.base, a.panel, a.length, b.value.expr)
        if k is Kind.ADD and rt.dtype.is_int and len(args) == 2 and any(
                isinstance(a, Paneled) for a in args) and any(isinstance(a, Wrapped) for a in args):
            a, b = args if isinstance(args[0], Paneled) else args[::-1]
            if a.stride is not None and not a.with_rem and b.base == a.base and \
                    b.bound == a.panel:
                return Paneled(a.base, a.panel, a.length, a.stride, True)
            raise not_lowered(op, "a column index that is not `(c // P) * stride + c % P` "
                                  "of one column tile `c`")
        if k is Kind.REM and isinstance(args[0], Index) and isinstance(args[1], Splat) \
                and rt.dtype.is_int:
            # (base + arange) % n: Triton's way of keeping a tile's loads in bounds
            return Wrapped(args[0].base, args[1].value.expr, args[0].length,
                           origin_key(op.operands[0], op.operands[1]))
        if k is Kind.MUL and any(isinstance(a, Index) for a in args):
            raise not_lowered(op, "a strided index (only scalar + nl.arange offsets are emitted)")
        if k is Kind.CMP and any(isinstance(a, Index) for a in args):
            a, b = args
            pred = op.attrs["predicate"]
            ir_operands = list(op.operands)
            if isinstance(a, Splat) and isinstance(b, Index):
                a, b, pred = b, a, CMP_SWAPPED[pred]
                ir_operands.reverse()
            if not (isinstance(a, Index) and isinstance(b, Splat) and pred in ("lt", "le")):
                raise not_lowered(op, "a mask that is not `offsets < bound` is not emitted yet")
            n = _sum(b.value.expr, "-", a.base) if a.base != "0" else b.value.expr
            if pred == "le":
                n = f"{n} + 1"
            self.helpers.add("clamp")
            name = self.fresh(self.user_name(op, "mask").rstrip("_0123456789") + "_len")
            self.line(f"const uint32_t {name} = LanesInBounds({n}, {a.length});")
            return Mask(name, a.length, origin_key(*ir_operands) if pred == "lt" else None)
        if k is Kind.AND and all(isinstance(a, Mask) for a in args):
            name = self.fresh("both_len")
            x, y = args[0].count, args[1].count
            self.line(f"const uint32_t {name} = {x} < {y} ? {x} : {y};")
            return Mask(name, args[0].length)
        if k in (Kind.AND, Kind.OR, Kind.XOR):
            raise not_lowered(op, "bitwise/logical tiles other than two `lanes < n` masks")
        return None

    # --- data ops ----------------------------------------------------------------------
    def as_tile(self, s, dtype) -> Tile:
        if isinstance(s, Tile):
            return self.use_tile(s)
        if isinstance(s, Splat):
            return self.materialize_splat(s, dtype, "splat")
        if isinstance(s, Index) and dtype.is_int:
            t = self.scratch(int32, s.length, "lanes")
            self.line(f"AscendC::ArithProgression<int32_t>({t.var}, static_cast<int32_t>({s.base}), 1, {s.length});")
            return t
        raise NotImplementedError("the Ascend C emitter cannot use an index or mask tile as data "
                                  "here (only as load/store offsets and masks, or in nl.where)")

    def materialize_splat(self, s: Splat, dtype, hint: str) -> Tile:
        t = self.scratch(dtype, s.length, hint)
        self.line(f"AscendC::Duplicate({t.var}, {scalar_arg(s.value, dtype)}, {s.length});")
        return t

    def binary(self, op, args, dest, dt) -> Tile:
        k = op.kind
        a, b = args
        tile_api, scalar_api = VECTOR_BINARY[k]
        if isinstance(a, Splat) and k in (Kind.ADD, Kind.MUL, Kind.MAXIMUM, Kind.MINIMUM):
            a, b = b, a                       # commutative: the scalar goes second
        if isinstance(b, Splat) and isinstance(a, Tile) and (scalar_api or k is Kind.SUB):
            src = self.use_tile(a)
            out = dest()
            if k is Kind.SUB:                 # x - s == x + (-s) exactly
                self.line(f"AscendC::Adds({out.var}, {src.var}, static_cast<{cpp_type(dt)}>(-({b.value.expr})), {out.length});")
            else:
                self.line(f"AscendC::{scalar_api}({out.var}, {src.var}, {scalar_arg(b.value, dt)}, {out.length});")
            return out
        ta = self.as_tile(a, dt)
        tb = self.as_tile(b, dt)
        out = dest()
        self.line(f"AscendC::{tile_api}({out.var}, {ta.var}, {tb.var}, {out.length});")
        for t, orig in ((ta, a), (tb, b)):
            if t is not orig:
                self.release(t)
        return out

    def cast(self, op, s, dtype, dest) -> Tile:
        if isinstance(s, Index):
            s = self.as_tile(s, int32)
            src_dt = int32
        else:
            src_dt = s.dtype if isinstance(s, Tile) else None
        if not isinstance(s, Tile):
            raise not_lowered(op, "a cast of a mask tile")
        if dtype.is_bool or src_dt.is_bool or dtype.itemsize == 8 or src_dt.itemsize == 8:
            raise not_lowered(op, f"a vector cast {src_dt} -> {dtype} (no such Cast on the device)")
        src = self.use_tile(s)
        out = dest()
        self.line(f"AscendC::Cast({out.var}, {src.var}, AscendC::RoundMode::{round_mode(src_dt, dtype)}, {out.length});")
        return out

    def bits_of(self, m: Mask) -> Bits:
        """A ``lanes < count`` mask as Compare bits, for Select."""
        idx = self.scratch(int32, m.length, "lane")
        self.line(f"AscendC::ArithProgression<int32_t>({idx.var}, 0, 1, {m.length});")
        bits = self.scratch(_U8, m.length, "in_bounds")
        self.line(f"AscendC::Compares({bits.var}, {idx.var}, static_cast<int32_t>({m.count}), "
                  f"AscendC::CMPMODE::LT, {m.length});")
        self.release(idx)
        return Bits(bits.var, m.length), bits

    def compare(self, op, args) -> Bits:
        a, b = args
        pred = op.attrs["predicate"]
        if isinstance(a, Splat):
            a, b, pred = b, a, CMP_SWAPPED[pred]
        dt = a.dtype if isinstance(a, Tile) else op.operands[0].type.dtype
        ta = self.as_tile(a, dt)
        bits = self.scratch(_U8, ta.length, "cmp")
        if isinstance(b, Splat):
            self.line(f"AscendC::Compares({bits.var}, {ta.var}, {scalar_arg(b.value, dt)}, "
                      f"AscendC::CMPMODE::{CMP_MODES[pred]}, {ta.length});")
        else:
            tb = self.as_tile(b, dt)
            self.line(f"AscendC::Compare({bits.var}, {ta.var}, {tb.var}, AscendC::CMPMODE::{CMP_MODES[pred]}, {ta.length});")
        result = Bits(bits.var, ta.length)
        result.home = bits
        return result

    def select(self, op, args, dt, dest) -> Tile:
        cond, a, b = args
        scratch_bits = None
        if isinstance(cond, Mask):
            cond, scratch_bits = self.bits_of(cond)
        elif isinstance(cond, Bits):
            # a compare read by this select only is freed here; one read by more (merged by
            # cse, as maximum(..., propagate_nan=ALL) makes) at its last use (``release``)
            if len(op.operands[0].uses) == 1:
                scratch_bits = getattr(cond, "home", None)
        elif isinstance(cond, Mask2):
            return self.select_rows(op, cond, a, b, dt, dest)
        else:
            raise not_lowered(op, "nl.where on a condition the emitter cannot build")
        ta = self.as_tile(a, dt)
        out = dest()
        if isinstance(b, Splat):
            self.line(f"AscendC::Select({out.var}, {cond.var}, {ta.var}, {scalar_arg(b.value, dt)}, "
                      f"AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, {out.length});")
        else:
            tb = self.as_tile(b, dt)
            self.line(f"AscendC::Select({out.var}, {cond.var}, {ta.var}, {tb.var}, "
                      f"AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, {out.length});")
            if tb is not b:
                self.release(tb)
        if ta is not a:
            self.release(ta)
        self.release(scratch_bits)
        return out

    def reduce(self, op, s, result) -> Scalar:
        kind = op.attrs["kind"]
        if isinstance(s, RowVal) or (isinstance(s, Tile) and not s.dtype.is_float):
            return self.fold_lanes(op, s, result)
        if kind not in ("sum", "max", "min") or not isinstance(s, Tile):
            raise not_lowered(op, f"a {kind} reduction is not emitted yet")
        dt = result.type.dtype
        if not s.dtype.is_float or dt != s.dtype:
            raise not_lowered(op, f"a reduction of {s.dtype} to {dt} (ReduceSum/Max/Min take f16 and f32)")
        src = self.use_tile(s)
        if dt.name == "bf16" or (kind == "sum" and dt.is_half):
            # sums accumulate in f32 (docs/semantics.md); bf16 reduces on f32 copies (exact)
            wide = self.scratch(float32, src.length, "widened")
            self.line(f"AscendC::Cast({wide.var}, {src.var}, AscendC::RoundMode::CAST_NONE, {src.length});")
            src, work_dt = wide, float32
        else:
            work_dt = dt
        api = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}[kind]
        out = self.scratch(work_dt, 1, f"{kind}_out")
        work = self.scratch(work_dt, src.length, "work")
        self.line(f"AscendC::{api}({out.var}, {src.var}, {work.var}, {src.length});")
        name = self.user_name(op, kind)
        self.line("AscendC::SetFlag<AscendC::HardEvent::V_S>(0);   // the scalar unit reads the result")
        self.line("AscendC::WaitFlag<AscendC::HardEvent::V_S>(0);")
        self.line(f"const {cpp_type(dt)} {name} = {out.var}.GetValue(0);")
        for t in (work, out, src if src is not s else None):
            self.release(t)
        return Scalar(name, dt)

    def scalar_on_vector(self, op, s: Scalar, result) -> Scalar:
        """A transcendental of one scalar: the scalar unit has none, so 8 lanes of UB."""
        dt = result.type.dtype
        t = self.scratch(dt, 8, "lanes")
        self.line(f"AscendC::Duplicate({t.var}, {scalar_arg(s, dt)}, 8);")
        self.line(f"AscendC::{VECTOR_UNARY[op.kind]}({t.var}, {t.var}, 8);")
        self.line("AscendC::SetFlag<AscendC::HardEvent::V_S>(0);")
        self.line("AscendC::WaitFlag<AscendC::HardEvent::V_S>(0);")
        name = self.user_name(op, "s")
        self.line(f"const {cpp_type(dt)} {name} = {t.var}.GetValue(0);")
        self.release(t)
        return Scalar(name, dt)


class _Scalar0:
    """A stand-in result for scalar_op: a rank-0 value of ``dtype``."""

    def __init__(self, dtype):
        from npujit.ir.types import TensorType
        self.type = TensorType((), dtype)


class _U8Type:
    name = "u8"
    itemsize = 1
    is_half = False
    is_float = False
    is_int = True
    is_bool = False


_U8 = _U8Type()


def _buffer_for(bufs, op, j):
    if j < len(bufs):
        return bufs[j]
    raise not_lowered(op, "a fused result without a buffer in the schedule")


def _short(op) -> str:
    return op.kind.value.split(".")[-1]


def _sum(a: str, sign: str, b: str) -> str:
    if a == "0":
        return b if sign == "+" else f"-({b})"
    return f"{a} {sign} {b}"


def _f32(v: float) -> str:
    """A float literal of the f32 nearest ``v`` (the reference's f32 constants)."""
    return f"{float(np.float32(v))!r}f"


def _scalar(v, dtype) -> str:
    return f"static_cast<{cpp_type(dtype)}>({v})"
