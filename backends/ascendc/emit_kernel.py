"""The kernel .cpp of a scheduled function: a class with Init / Process, one method per
program, queues and buffers from the schedule, a comment per Python source line.

``KernelWriter(fn).write()`` returns the source text plus the facts the host side needs
(``KernelInfo``: argument order, tiling fields, block kind).  Vector lowering lives in
emit_vector.py, memory moves in emit_memory.py, the Cube path in emit_cube.py; the op
tables and the list of ops that cannot be lowered are in lowering.py.

Example::

    >>> src, info = KernelWriter(scheduled_fn).write()      # doctest: +SKIP
    >>> info.class_name
    'AddKernel'
"""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field

from npujit.ir.ops import Kind
from npujit.ir.schedule.model import SIDES_ATTR
from npujit.ir.types import PtrType, TensorType, int64

from . import schedule_view as sv
from .emit_control import ControlLowering
from .emit_cells import CellLowering
from .emit_cube import CubeLowering, CubeTile
from .emit_cube_pointers import PointerCubeLowering
from .emit_lanes import LaneLowering
from .emit_memory import MemoryLowering
from .emit_mixed import AIC_POSITIONS, MixedLowering
from .emit_broadcast import BroadcastLowering
from .emit_rows import RowLowering
from .emit_topk import RANKS_ABOVE, TopkLowering
from .emit_vector import VectorLowering
from .tidy import drop_unused_scalars
from .lowering import CMP_CPP, SCALAR_BINARY, cpp_type, not_lowered, raw_name, source_line
from .values import Cell, Grid, Index, Scalar, Splat, Tile

_CPP_KEYWORDS = {"int", "float", "double", "char", "auto", "new", "delete", "class", "struct",
                 "template", "this", "default", "register", "union", "operator", "private",
                 "public", "const", "static", "return", "half", "signed", "unsigned", "bool",
                 "long", "short", "void", "case", "switch", "do", "goto", "namespace"}


@dataclass
class Member:
    """A queue or buffer member of the kernel class, carved out by ``pipe_.InitBuffer``."""

    name: str
    kind: str            # "TQue" or "TBuf"
    position: str        # VECIN, VECOUT, VECCALC, A1, B1, A2, B2, CO1
    depth: int
    bytes: int           # one slot


@dataclass
class KernelInfo:
    """What the host side needs to know about an emitted kernel."""

    entry: str                                       # the extern "C" kernel name
    class_name: str
    gm_args: list = field(default_factory=list)      # (name, index in fn.args): inputs, then outputs
    tiling: list = field(default_factory=list)       # (field, C type, index in fn.args)
    core: str = "AIV"
    unit_stride_args: list = field(default_factory=list)   # scalars that must be 1 at launch
    unit_stride_choices: list = field(default_factory=list)   # pairs of which one must be 1
    mixed: bool = False              # AIC + AIV halves (emit_mixed.py)
    workspace_bytes: int = 0         # GM workspace per program (the hand-offs)


class KernelWriter(MixedLowering, MemoryLowering, RowLowering, BroadcastLowering, LaneLowering,
                   TopkLowering, VectorLowering, CellLowering, CubeLowering, PointerCubeLowering,
                   ControlLowering):
    """Writes one kernel; see the module doc."""

    def __init__(self, fn):
        self.fn = fn
        self.class_name = "".join(p.capitalize() for p in fn.name.split("_") if p) or "Kernel"
        self.lines: list[str] = []
        self.depth = 2
        self.syms: dict[int, object] = {}
        self.used_names: set[str] = {"program", "programs", "tiling", "pipe_", "tiling_"}
        self.members: dict[str, Member] = {}
        self.scratch_sizes: list[int] = []   # bytes of each scratch TBuf tmpN_
        self.scratch_free: list[int] = []
        self.used_pids: set[int] = set()
        self.gm_members: dict[int, str] = {}
        self.queue_state: dict[str, str] = {}    # tile var -> "enqueued" / "held"
        self.loop_slots: list = []               # per enclosing loop: its iteration counter (or None)
        self.loop_counter_used: list = []
        self.last_comment = None
        self.helpers: set[str] = set()
        self.info = KernelInfo(fn.name, self.class_name, core=sv.core(fn))
        self.stores_emitted: dict[int, set] = {}   # id(tile in a VECOUT queue) -> its stores so far
        self.pinned: list = []                     # VECIN tiles the scalar unit reads per row
        self.workspace_offsets: dict[int, int] = {}   # id(hand-off) -> byte offset in a program's slot
        self.workspace_types: dict[str, str] = {}     # GlobalTensor views of the workspace -> C++ type
        self.loop_handoffs: list = []                 # per enclosing loop: (flag back, stages) to drain
        self.wrapped_stores: dict[int, tuple] = {}    # id(store) -> (base, bound) its mask must drop
        self.info.mixed = (len(fn.attrs.get(SIDES_ATTR, ())) > 1
                           and any(op.kind is Kind.HANDOFF for op in fn.walk()))

    # --- output ------------------------------------------------------------------------
    def line(self, text: str = "") -> None:
        self.lines.append("    " * self.depth + text if text else "")

    @contextlib.contextmanager
    def indented(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    @contextlib.contextmanager
    def capture(self):
        """Collect the lines emitted inside the block into a list of their own."""
        saved = self.lines
        self.lines = []
        try:
            yield self.lines
        finally:
            self.lines = saved

    def comment_source(self, op) -> None:
        loc = op.loc
        key = (loc.file, loc.line)
        if loc.line == 0 or key == self.last_comment:
            return
        self.last_comment = key
        self.line(f"// {os.path.basename(loc.file)}:{loc.line}  {source_line(op)}")

    # --- names -------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        if base in _CPP_KEYWORDS:
            base += "_"
        name, i = base, 2
        while name in self.used_names:
            name = f"{base}_{i}"
            i += 1
        self.used_names.add(name)
        return name

    def user_name(self, op, default: str) -> str:
        """A fresh C++ name from what the user's source line assigns to."""
        return self.fresh(raw_name(op, default))

    # --- the file ----------------------------------------------------------------------
    def write(self) -> tuple[str, KernelInfo]:
        fn = self.fn
        stored = {id(op.operands[0]) for op in fn.walk()
                  if op.kind in (Kind.STORE, Kind.BLOCK_STORE, Kind.ATOMIC_RMW)}
        ptrs = [(i, a) for i, a in enumerate(fn.args) if isinstance(a.type, PtrType)]
        ordered = ([p for p in ptrs if id(p[1]) not in stored] + [p for p in ptrs if id(p[1]) in stored])
        self.info.gm_args = [(a.name, i) for i, a in ordered]
        for i, a in ptrs:
            self.gm_members[id(a)] = self.fresh(_strip_ptr(a.name) + "Gm_")
        for i, a in enumerate(fn.args):
            if isinstance(a.type, TensorType):
                if not a.type.is_scalar:
                    raise NotImplementedError(f"kernel argument '{a.name}' is a tile; the Ascend C "
                                              "emitter takes pointers and scalars only")
                self.info.tiling.append((a.name, cpp_type(a.type.dtype), i))
                self.syms[id(a)] = Scalar(f"tiling_.{a.name}", a.type.dtype)
        if not self.info.mixed:
            self.emit_block(fn.body)
            return self._assemble({"": drop_unused_scalars(self.lines)}), self.info
        bodies, syms = {}, dict(self.syms)
        for side in ("AIC", "AIV"):
            self.side, self.syms, self.lines = side, dict(syms), []
            self.queue_state, self.stores_emitted, self.pinned = {}, {}, []
            self.loop_handoffs = []
            self.scratch_free, self.last_comment = [], None
            self.emit_block(fn.body)
            bodies[side.capitalize()] = drop_unused_scalars(self.lines)
        return self._assemble(bodies), self.info

    def _assemble(self, bodies: dict) -> str:
        info, cls = self.info, self.class_name
        tiling = f"{cls}Tiling"
        gm = [n for n, _ in info.gm_args]
        out = [f"// {info.entry}: emitted by npujit from the scheduled kernel; "
               f"{'Cube (AIC)' if info.core == 'AIC' else 'Vector (AIV)'} core.",
               '#include "kernel_operator.h"', f'#include "{info.entry}_tiling.h"', ""]
        if "tail_pad" in self.helpers:
            out += ["// Elements DataCopyPad adds after n elements to end on a 32-byte boundary.",
                    "template <typename T>",
                    "__aicore__ inline uint8_t TailPad(uint32_t n)", "{",
                    "    return static_cast<uint8_t>((32 - n * sizeof(T) % 32) % 32 / sizeof(T));",
                    "}", ""]
        if "ranks_above" in self.helpers:
            out += RANKS_ABOVE
        if "clamp" in self.helpers:
            out += ["// How many of a tile's `lanes` leading lanes are in bounds (a mask's count).",
                    "__aicore__ inline uint32_t LanesInBounds(int64_t n, uint32_t lanes)", "{",
                    "    return n <= 0 ? 0u : (n >= lanes ? lanes : static_cast<uint32_t>(n));",
                    "}", ""]
        if "saturating_cast" in self.helpers:
            out += ["// Float -> int as every tier defines it (docs/semantics.md): NaN is 0, values",
                    "// past the type's range saturate, the rest truncate toward zero.",
                    "template <typename T>", "__aicore__ inline T SaturatingCast(double x)", "{",
                    "    const T hi = static_cast<T>((1ull << (sizeof(T) * 8 - 1)) - 1);",
                    "    const T lo = static_cast<T>(-hi - 1);",
                    "    if (x != x) return 0;",
                    "    if (x <= static_cast<double>(lo)) return lo;",
                    "    if (x >= static_cast<double>(hi)) return hi;",
                    "    return static_cast<T>(x);", "}", ""]
        if "idiv" in self.helpers:
            out += ["// C's division on ints (toward zero); x / 0 is 0 and INT_MIN / -1 wraps",
                    "// (docs/semantics.md), where C leaves both undefined.",
                    "template <typename T>", "__aicore__ inline T IntDiv(T a, T b)", "{",
                    "    if (b == 0) return 0;",
                    "    if (b == -1) return static_cast<T>(0ull - static_cast<unsigned long long>(a));",
                    "    return a / b;", "}", ""]
        if "irem" in self.helpers:
            out += ["// C's remainder on ints (sign of the dividend); x % 0 is 0.",
                    "template <typename T>", "__aicore__ inline T IntRem(T a, T b)", "{",
                    "    if (b == 0 || b == -1) return 0;", "    return a % b;", "}", ""]
        mixed = info.mixed
        out += [f"class {cls} {{", "public:"]
        if mixed:
            out += ["    // GM workspace floats per program: the hand-offs between the AIC and the AIV",
                    f"    static constexpr int64_t kWorkspaceFloats = {info.workspace_bytes // 4};", ""]
        out += [f"    __aicore__ inline void Init({', '.join('GM_ADDR ' + n for n in gm)}"
                f"{', ' if gm else ''}{'GM_ADDR workspace, ' if mixed else ''}const {tiling}& tiling)", "    {",
                "        tiling_ = tiling;"]
        for (name, i) in info.gm_args:
            a = self.fn.args[i]
            t = cpp_type(a.type.dtype)
            out.append(f"        {self.gm_members[id(a)]}.SetGlobalBuffer(reinterpret_cast<__gm__ {t}*>({name}));")
        for name, t in sorted(self.workspace_types.items()):
            out.append(f"        {name}.SetGlobalBuffer(reinterpret_cast<__gm__ {t}*>(workspace));")
        inits = []
        for m in self.members.values():
            side = "AIC" if m.position in AIC_POSITIONS else "AIV"
            if m.kind == "TQue":
                inits.append((side, f"pipe_.InitBuffer({m.name}, {m.depth}, {m.bytes});"))
            else:
                inits.append((side, f"pipe_.InitBuffer({m.name}, {m.bytes * m.depth});"))
        for i, size in enumerate(self.scratch_sizes):
            inits.append(("AIV", f"pipe_.InitBuffer(tmp{i}_, {size});"))
        if mixed:       # each core carves its own memories
            for side in ("AIC", "AIV"):
                out += ([f"        if ASCEND_IS_{side} {{"]
                        + [" " * 12 + x for s, x in inits if s == side] + ["        }"])
        else:
            out += [" " * 8 + x for _, x in inits]
        pids = sorted(self.used_pids)
        grid = "static_cast<int64_t>(tiling_.grid0) * tiling_.grid1 * tiling_.grid2"
        pid_exprs = {0: "static_cast<int32_t>(program % tiling_.grid0)",
                     1: "static_cast<int32_t>(program / tiling_.grid0 % tiling_.grid1)",
                     2: "static_cast<int32_t>(program / (static_cast<int64_t>(tiling_.grid0) * tiling_.grid1))"}
        every = [(f"pid{p}", f"int32_t pid{p}", pid_exprs[p]) for p in pids]
        if mixed:
            every.append(("program", "int64_t program", "program"))
        used = {suffix: [e for e in every if re.search(rf"\b{e[0]}\b", "\n".join(body))]
                for suffix, body in bodies.items()}

        def run(suffix):
            return f"RunProgram{suffix}({', '.join(e[2] for e in used[suffix])});"
        if mixed:
            call = ["            if ASCEND_IS_AIC {", f"                {run('Aic')}",
                    "            } else {", f"                {run('Aiv')}", "            }"]
        else:
            call = [f"            {run('')}"]
        out += ["    }", "",
                "    __aicore__ inline void Process()", "    {",
                "        // The grid may exceed the cores: core b runs programs b, b + GetBlockNum(), ...",
                f"        const int64_t programs = {grid};",
                "        for (int64_t program = AscendC::GetBlockIdx(); program < programs;",
                "             program += AscendC::GetBlockNum()) {",
                *call,
                "        }", "    }", "", "private:"]
        for suffix, body in bodies.items():
            if mixed:
                out.append(f"    // the {suffix.upper()}'s half of one program")
            params = ", ".join(e[1] for e in used[suffix]) if mixed else \
                ", ".join(e[1] for e in every)
            out += [f"    __aicore__ inline void RunProgram{suffix}({params})", "    {"]
            out += body
            out += ["    }", ""]
        out += ["    AscendC::TPipe pipe_;"]
        for m in self.members.values():
            if m.kind == "TQue":
                out.append(f"    AscendC::TQue<AscendC::TPosition::{m.position}, {m.depth}> {m.name};")
            else:
                out.append(f"    AscendC::TBuf<AscendC::TPosition::{m.position}> {m.name};")
        for i in range(len(self.scratch_sizes)):
            out.append(f"    AscendC::TBuf<AscendC::TPosition::VECCALC> tmp{i}_;   // scratch")
        for (name, i) in info.gm_args:
            a = self.fn.args[i]
            out.append(f"    AscendC::GlobalTensor<{cpp_type(a.type.dtype)}> {self.gm_members[id(a)]};")
        for name, t in sorted(self.workspace_types.items()):
            out.append(f"    AscendC::GlobalTensor<{t}> {name};   // the hand-offs, a slot per program")
        out += [f"    {tiling} tiling_;", "};", "",
                f'extern "C" __global__ __aicore__ void {info.entry}('
                + "".join(f"GM_ADDR {n}, " for n in gm)
                + ("GM_ADDR workspace, " if mixed else "GM_ADDR /*workspace*/, ") + "GM_ADDR tiling)",
                "{",
                *(["    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);   // one AIC and one AIV per block"]
                  if mixed else []),
                f"    {cls} op;",
                f"    op.Init({''.join(n + ', ' for n in gm)}{'workspace, ' if mixed else ''}"
                f"*reinterpret_cast<__gm__ {tiling}*>(tiling));",
                "    op.Process();", "}", ""]
        return "\n".join(out)

    # --- blocks and ops ----------------------------------------------------------------
    def emit_block(self, block) -> None:
        last = {}
        for i, op in enumerate(block.ops):
            for inner in op.walk():
                for v in inner.operands:
                    last[id(v)] = i
        pinned = len(self.pinned)
        for i, op in enumerate(block.ops):
            if op.kind in (Kind.RETURN, Kind.YIELD):
                continue
            self.comment_source(op)
            self.emit_op(op)
            self.release_after(op, [v for v in _defined_in(block) if last.get(id(v)) == i])
        self.free_pinned(pinned)

    def emit_op(self, op) -> None:
        k = op.kind
        if self.left_to_other_side(op):
            return self.skip_op(op)
        if k is Kind.FOR:
            return self.emit_for(op)
        if k is Kind.IF:
            return self.emit_if(op)
        if k is Kind.WHILE:
            return self.emit_while(op)
        if k is Kind.CONSTANT:
            self.syms[id(op.result)] = Scalar(_literal(op.attrs["value"], op.result.type.dtype),
                                              op.result.type.dtype)
            return None
        if k in (Kind.PROGRAM_ID, Kind.NUM_PROGRAMS):
            axis = int(op.attrs["axis"])
            if k is Kind.PROGRAM_ID:
                self.used_pids.add(axis)
                expr = f"pid{axis}"
                name = raw_name(op, expr)
                if name != expr:
                    name = self.fresh(name)
                    self.line(f"const int32_t {name} = {expr};")
                    expr = name
            else:
                expr = f"static_cast<int32_t>(tiling_.grid{axis})"
            self.syms[id(op.result)] = Scalar(expr, op.result.type.dtype)
            return None
        if k is Kind.HANDOFF:
            return self.emit_handoff(op)
        if k is Kind.TOPK:
            return self.emit_topk(op)
        if k is Kind.STORE and isinstance(self.sym(op.operands[2]), CubeTile):
            return self.fixpipe_rows_store(op)
        if k in (Kind.LOAD, Kind.STORE) and sv.scope(op) != "L1":
            return self.emit_ub_transfer(op)
        if k is Kind.ATOMIC_RMW:
            return self.emit_atomic_add(op)
        if (k is Kind.BLOCK_LOAD and sv.scope(op) == "UB") or (
                k is Kind.BLOCK_STORE and isinstance(self.sym(op.operands[-1]), (Tile, Splat, Cell))):
            return self.ub_block_transfer(op)
        if k in (Kind.BLOCK_LOAD, Kind.BLOCK_STORE, Kind.DOT) or sv.scope(op) in ("L0C", "L1"):
            return self.emit_cube_op(op)
        self.emit_flags(op, "wait_flags")
        if k is Kind.FUSED:
            self.emit_fused(op)
        else:
            self.emit_elementwise(op, op.operands, op.results[0], top=True)
        self.emit_flags(op, "set_flags")
        return None

    def sym(self, v):
        try:
            return self.syms[id(v)]
        except KeyError:
            raise not_lowered(v.op) if v.op is not None else KeyError(v) from None

    # --- scalars -----------------------------------------------------------------------
    def scalar_op(self, op, args: list, result) -> Scalar | None:
        """A scalar result computed on the scalar unit, or ``None`` if ``op`` needs the
        vector unit (transcendentals)."""
        k, dt = op.kind, result.type.dtype
        t = cpp_type(dt)
        if k in SCALAR_BINARY and all(isinstance(a, Scalar) for a in args):
            if k is Kind.DIV and not dt.is_float:
                raise not_lowered(op, "integer true division")
            expr = f"{args[0].expr} {SCALAR_BINARY[k]} {args[1].expr}"
        elif k in (Kind.IDIV, Kind.REM):
            if dt.is_float:
                raise not_lowered(op, "float // and % are not emitted yet")
            self.helpers.add("idiv" if k is Kind.IDIV else "irem")
            expr = f"{'IntDiv' if k is Kind.IDIV else 'IntRem'}<{t}>({args[0].expr}, {args[1].expr})"
        elif k in (Kind.MAXIMUM, Kind.MINIMUM) and args[0].expr == args[1].expr:
            expr = args[0].expr
        elif k is Kind.CMP and args[0].expr == args[1].expr and not args[0].dtype.is_float:
            # g++ rejects an int compared with itself (-Werror=tautological-compare)
            expr = "true" if op.attrs["predicate"] in ("eq", "le", "ge") else "false"
        elif k in (Kind.MAXIMUM, Kind.MINIMUM):
            a, b = args[0].expr, args[1].expr
            cmp = ">" if k is Kind.MAXIMUM else "<"
            # floats: a NaN operand gives the other one (np.fmax, docs/semantics.md)
            keep_a = f"{a} {cmp} {b} || {b} != {b}" if dt.is_float else f"{a} {cmp} {b}"
            expr = f"({keep_a} ? {a} : {b})"
        elif k is Kind.NEG:
            expr = f"-({args[0].expr})"
        elif k is Kind.CAST:
            src = args[0].dtype
            if src.is_float and dt.is_bool:
                expr = f"{args[0].expr} != 0"
            elif src.is_float and dt.is_int:
                self.helpers.add("saturating_cast")
                expr = f"SaturatingCast<{t}>(static_cast<double>({args[0].expr}))"
            elif dt.is_int and args[0].expr.replace("tiling_.", "").isidentifier():
                # widening an int argument (i32 -> i64 for 64-bit address math): an
                # expression, not a variable nobody else may read
                return Scalar(f"static_cast<{t}>({args[0].expr})", dt)
            else:
                expr = f"static_cast<{t}>({args[0].expr})"
        elif k is Kind.CMP:
            expr = f"{args[0].expr} {CMP_CPP[op.attrs['predicate']]} {args[1].expr}"
        elif k is Kind.SELECT:
            expr = f"{args[0].expr} ? {args[1].expr} : {args[2].expr}"
        else:
            return None
        default = "s"
        src = args[0].expr.removeprefix("tiling_.") if args else ""
        if k is Kind.CAST and src.isidentifier():
            default = f"{src}_{dt.name}"          # row -> row_i64
        name = self.user_name(op, default)
        self.line(f"const {t} {name} = {expr};")
        return Scalar(name, dt)

    # --- loops -------------------------------------------------------------------------
    def emit_for(self, op) -> None:
        lo, hi, step = (self.sym(v) for v in op.operands[:3])
        body = op.body
        iv = body.args[0]
        iv_name = self.user_name(op, "i")
        t = cpp_type(iv.type.dtype)
        self.syms[id(iv)] = Scalar(iv_name, iv.type.dtype)
        self.dequeue_used_inside(op)
        carried = []
        term = body.terminator
        for i, (init, arg) in enumerate(zip(op.operands[3:], body.args[1:])):
            s = self.sym(init)
            if term.operands[i] is arg or self.carries_in_place(s):
                self.syms[id(arg)] = s          # loop-invariant, or updated in place (L0C)
                carried.append(None)
            elif isinstance(s, Scalar):
                hint = _carried_name(body, i) or (s.expr if s.expr.isidentifier() else f"carried{i}")
                name = self.fresh(hint)
                self.line(f"{cpp_type(arg.type.dtype)} {name} = {s.expr};")
                self.syms[id(arg)] = Scalar(name, arg.type.dtype)
                carried.append(name)
            elif isinstance(s, Grid) and s.panel is not None:
                raise not_lowered(op, "a loop-carried tile of panel-major addresses (compute "
                                      "it from the loop variable in the loop)")
            elif isinstance(s, Grid):
                # a tile of pointers advanced each trip (`a_ptrs += BLOCK_K * stride_ak`):
                # the rows stay, the column offset is a carried scalar
                name = self.fresh(raw_name(init.op, "ptrs") + "_col" if init.op is not None else "ptrs_col")
                self.line(f"int64_t {name} = {s.col.base};   // where the pointer tile's columns start")
                self.syms[id(arg)] = Grid(s.row, Index(name, s.col.length), s.rows, s.cols, s.wrap)
                carried.append(name)
            elif self.side is not None and _side_of_buffer(init) not in (None, self.side):
                self.syms[id(arg)] = s          # the other core's tile (an L0C accumulator)
                carried.append(None)
            elif isinstance(s, (Tile, Splat)) and _same_buffer(init, term.operands[i]):
                # a vector tile the loop updates in its one UB buffer (earlier += ...)
                self.syms[id(arg)] = self.carried_tile(op, init, s)
                carried.append(None)
            else:
                raise not_lowered(op, "a loop-carried vector tile not updated in one buffer "
                                      "(keep it in a carried scalar, or store it each iteration)")
        self.emit_flags(op, "pre_set_flags")
        self.emit_flags(op, "wait_flags")
        counter = self.fresh(iv_name + "_iter")
        self.loop_slots.append(counter)
        self.loop_counter_used.append(False)
        self.loop_handoffs.append([])
        with self.indented(), self.capture() as body_lines:
            self.emit_block(body)
            updates = [(name, self.carried_update(op, arg, v)) for name, v, arg
                       in zip(carried, term.operands, body.args[1:]) if name is not None]
            updates = [(name, s) for name, s in updates if s.expr != name]
            if any(s.expr in carried for _, s in updates):   # e.g. a swap: update together
                temps = []
                for name, s in updates:
                    tmp = self.fresh(name + "_next")
                    self.line(f"const auto {tmp} = {s.expr};")
                    temps.append(tmp)
                updates = [(name, Scalar(tmp, s.dtype)) for (name, s), tmp in zip(updates, temps)]
            for name, s in updates:
                self.line(f"{name} = {s.expr};")
        cond = f"{iv_name} < {hi.expr}"
        if not _is_positive_literal(step.expr):
            cond = f"({step.expr} > 0 ? {iv_name} < {hi.expr} : {iv_name} > {hi.expr})"
        self.close_loop(counter, f"for ({t} {iv_name} = {lo.expr}; {cond}; "
                                 f"{iv_name} += {step.expr}) {{", body_lines)
        self.drain_handoffs(counter, self.loop_handoffs.pop())
        for res, name, arg in zip(op.results, carried, body.args[1:]):
            carried_grid = isinstance(self.syms[id(arg)], Grid)
            self.syms[id(res)] = (self.syms[id(arg)] if name is None or carried_grid
                                  else Scalar(name, res.type.dtype))
        self.zero_unwritten_accumulators(op)
        self.emit_flags(op, "set_flags")
        self.emit_flags(op, "post_wait_flags")

    def carried_update(self, loop, arg, v) -> Scalar:
        """The next value of a carried scalar, or of a carried pointer tile's column
        offset (its rows must come back unchanged)."""
        s, old = self.sym(v), self.sym(arg)
        if not isinstance(old, Grid):
            return s
        if not (isinstance(s, Grid) and s.row.expr == old.row.expr and s.wrap == old.wrap):
            raise not_lowered(loop, "a loop-carried pointer tile whose rows change in the loop "
                                    "(only `ptrs += scalar` is emitted)")
        return Scalar(s.col.base, int64)

    def close_loop(self, counter: str, header: str, body_lines: list) -> None:
        """Write a loop whose body was captured with ``counter`` as the innermost
        iteration counter (declared and advanced only if the body used it)."""
        used_counter = self.loop_counter_used.pop()
        self.loop_slots.pop()
        if used_counter:
            self.line(f"int64_t {counter} = 0;   // selects the buffer slot and the event id")
        self.line(header)
        self.lines.extend(body_lines)
        if used_counter:
            self.line(f"    ++{counter};")
        self.line("}")

    def slot(self, count: int) -> str:
        """The slot (or rotating event id offset) of the innermost loop's iteration."""
        if count == 1 or not self.loop_slots:
            return "0"
        self.loop_counter_used[-1] = True
        return f"static_cast<int32_t>({self.loop_slots[-1]} % {count})"

    def iteration(self) -> str:
        """The innermost loop's iteration number (``0`` outside loops)."""
        if not self.loop_slots:
            return "0"
        self.loop_counter_used[-1] = True
        return f"static_cast<int32_t>({self.loop_slots[-1]})"

    def flag_id(self, flag) -> str:
        s = self.slot(flag.count)
        if s == "0":
            return str(flag.first)
        return s if flag.first == 0 else f"{flag.first} + {s}"

    def emit_flags(self, op, which: str, pipes=None) -> None:
        """SetFlag/WaitFlag for the Cube side's schedule flags (the vector side's flags are
        realised by TQue EnQue/DeQue/AllocTensor/FreeTensor; see docs/ascendc.md)."""
        call = "WaitFlag" if "wait" in which else "SetFlag"
        for f in sv.flags_of(op, which):
            if f.event in _QUEUE_EVENTS or f.event in _SCALAR_ONLY_EVENTS or not self.flag_on_side(f, op):
                continue
            if pipes is not None and (f.dst if call == "WaitFlag" else f.src) not in pipes:
                continue
            if f.count > 1 and which in ("pre_set_flags", "post_wait_flags"):
                for i in range(f.count):
                    self.line(f"AscendC::{call}<AscendC::HardEvent::{f.event}>({f.first + i});")
            else:
                self.line(f"AscendC::{call}<AscendC::HardEvent::{f.event}>({self.flag_id(f)});")


# UB-side events the TQue protocol sets and waits (EnQue/DeQue, Free/Alloc;
# docs/npu-facts.md §A7).
_QUEUE_EVENTS = {"MTE2_V", "V_MTE2", "V_MTE3", "MTE3_V"}

# Vector -> FixPipe: the schedule's order from the vector op that makes a Fixpipe store's
# mask; the emitter keeps such masks as scalar expressions (fixpipe_rows_store in
# emit_cube.py), so no vector instruction is there to wait for.
_SCALAR_ONLY_EVENTS = {"V_FIX"}


def _buffer_of(v):
    """The schedule's buffer name of a value (``None`` if it has none)."""
    if v.op is None or v not in v.op.results:
        return None
    bufs = sv.buffers(v.op)
    i = v.op.results.index(v)
    return bufs[i].name if i < len(bufs) else None


def _side_of_buffer(v) -> str | None:
    """The core whose memory holds a value's buffer on a separated part (UB: the AIV)."""
    name = _buffer_of(v)
    if name is None:
        return None
    return "AIV" if name.startswith("UB") else "AIC"


def _same_buffer(init, yielded) -> bool:
    """Whether a loop's carried value starts and ends each iteration in one UB buffer."""
    name = _buffer_of(init)
    return name is not None and name.startswith("UB") and name == _buffer_of(yielded)


def _defined_in(block) -> list:
    return [r for op in block.ops for r in op.results]


def _strip_ptr(name: str) -> str:
    base = re.sub(r"_ptr$", "", name)
    parts = base.split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def _carried_name(body, i: int) -> str | None:
    term = body.terminator
    v = term.operands[i] if term is not None else None
    if v is None or v.op is None:
        return None
    m = re.match(r"\s*([A-Za-z_]\w*)\s*=", source_line(v.op))
    return m.group(1) if m else None


def _is_positive_literal(expr: str) -> bool:
    return re.fullmatch(r"\d+(LL)?", expr) is not None and int(expr.rstrip("L")) > 0


def _literal(value, dtype) -> str:
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.is_int:
        v = int(value)
        return f"{v}LL" if dtype.itemsize == 8 and not -2**31 <= v < 2**31 else str(v)
    v = float(value)
    if v != v:
        text = '__builtin_nanf("")'
    elif v in (float("inf"), float("-inf")):
        text = ("-" if v < 0 else "") + "__builtin_huge_valf()"
    else:
        text = repr(v) + "f"
        if "e" not in text and "." not in text:
            text = text[:-1] + ".0f"
    return text if dtype.name == "f32" else f"{cpp_type(dtype)}({text})"
