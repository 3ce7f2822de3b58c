"""The walker: an IR function in, the Python source of a numba module out.

The module defines one function, named after the kernel::

    def <kernel>(nprog0, nprog1, nprog2, first, last, *args):
        <scalar arguments converted to their compute type>
        <every tile the kernel needs, allocated once>
        for p in range(first, last):        # programs, linear id, axis 0 fastest
            pid0, pid1, pid2 = ...
            <the ops, in order, each after a comment with its source line>

It is compiled ``nogil``, so the launcher can run chunks of the grid on threads; each
chunk has its own tiles.  Tiles are allocated once per call, not per program: a
program's tiles are dead when the next program starts, and inside an ``scf.for`` an op
rewrites the same tile every iteration (carried tiles are copied into their own tile at
the yield, see ``lower_control``).

Per-op lowering lives in ``lower_*.py``, one op family each, registered in ``LOWER``.

Example::

    >>> src = generate(fn, {})                                # doctest: +SKIP
    >>> print(src.text)                                       # doctest: +SKIP
"""
from __future__ import annotations

import linecache
import os
from contextlib import contextmanager

from npujit.ir.core import Function, Op, Value
from npujit.ir.ops import CONTROL, OWN_REGION, Kind
from npujit.ir.slice import stream_slice
from npujit.ir.types import PtrType, numel

from . import (disk_cache, helper_args, lower_combine, lower_control, lower_elementwise,
               lower_memory, lower_shape, lower_tile, outline, prefix_mask, range_check,
               record)
from .lower_scalar import result
from .values import Nest, Val, Writer, np_type
from .runtime import KernelSource   # (defined there: a cache hit loads no code generator)

LOWER = {}
for _mod in (lower_combine, lower_control, lower_elementwise, lower_memory, lower_shape,
             lower_tile):
    LOWER.update(_mod.LOWERINGS)

_IMPORTS = """import math

import numpy as np
from numba import njit

{helpers}from npujit.errors import (DeviceAssertionError, IndexOverflowError, LaunchError,
                           OutOfBoundsError)

# short names for the compute types (generated code casts a lot)
f32, i8, i16, i32, i64, u64, b1 = (np.float32, np.int8, np.int16, np.int32, np.int64,
                                   np.uint64, np.bool_)
f64, u8, u16, u32 = np.float64, np.uint8, np.uint16, np.uint32
"""


class Codegen:
    """State while lowering one function: the writer, IR value -> ``Val``, and the
    materialised copies of views (scoped to the region that made them)."""

    def __init__(self, fn: Function, options: dict):
        self.fn = fn
        self.options = options
        self.w = Writer(depth=2)
        self.tiles: list[str] = []   # allocations hoisted out of the program loop
        self.disjoint: dict[tuple, str] = {}  # (stored, loaded) arguments -> their test
        # dot operands read in place from an argument (lower_memory.read_in_place):
        # id(value) -> (argument, in-bounds flag, offset, row stride) names
        self.in_place: dict[int, tuple] = {}
        self.env: dict[int, Val] = {}
        self._copies: list[dict] = [{}]
        self._last_line = None
        self._op_ids: dict | None = None    # op numbers for recorded events, on demand
        self.oob_sites: list[str] = []      # range-check message templates (range_check.py)
        self.wrap_checks = range_check.wrapping_ops(self)   # scalar index ops checked
        # Timing-only recording (options["numerics"] False): only the ops that decide the
        # stream run (ir/slice.py stream_slice); other memory ops just record their event.
        self.needed = stream_slice(fn) if options.get("numerics") is False else None

    # --- values -----------------------------------------------------------------------
    def val(self, v: Value) -> Val:
        """The ``Val`` an IR value is bound to."""
        try:
            return self.env[id(v)]
        except KeyError:
            raise RuntimeError(f"numba backend: {v} used before it is defined") from None

    def bind(self, v: Value, val: Val) -> None:
        self.env[id(v)] = val

    def new_array(self, hint: str, shape, dtype) -> Val:
        """A tile of its own for an op result, allocated once before the program loop."""
        name = self.w.fresh(hint)
        self.tiles.append(f"{name} = np.empty({numel(shape)}, {np_type(dtype)})")
        return Val.array(name, shape, dtype)

    def materialise(self, val: Val, hint: str = "tile") -> Val:
        """``val`` as a row-major contiguous array (copying a view once per region)."""
        if val.is_contiguous_array or val.shape == ():
            return val
        for scope in reversed(self._copies):
            if val in scope:
                return scope[val]
        out = self.new_array(hint, val.shape, val.dtype)
        self.copy(val, out)
        self._copies[-1][val] = out
        return out

    def inline_ok(self, v: Value, cheap: bool) -> bool:
        """May ``v`` be recomputed where it is read instead of stored in a tile?  Yes if
        it is cheap, or if it is read once and not from inside a nested loop (where the
        recomputation would repeat every iteration)."""
        if cheap:
            return True
        uses = v.uses
        home = v.op.parent if v.op is not None else v.owner
        return len(uses) == 1 and uses[0][0].parent is home

    def op_id(self, op: Op) -> int:
        """The op's number in recorded events (its position in ``fn.walk()``)."""
        if self._op_ids is None:
            self._op_ids = record.op_ids(self.fn)
        return self._op_ids[id(op)]

    def num_uses(self, v: Value) -> int:
        """How many operands (terminators included) read ``v``."""
        return len(v.uses)

    def hint(self, v: Value, default: str = "v") -> str:
        """A readable variable name for an op result."""
        if v.name:
            return v.name
        op = v.op
        if op is None:
            return default
        return op.kind.value.split(".")[-1]

    def copy(self, src: Val, dst: Val) -> None:
        """Emit a loop writing every element of ``src`` into the tile ``dst``."""
        with Nest(self.w, dst.shape, [src]) as nest:
            self.w.line(f"{dst.name}[{nest.out}] = {nest.at(src)}")

    @contextmanager
    def region(self):
        """Lowering inside a nested region: copies made here stay here."""
        self._copies.append({})
        try:
            yield
        finally:
            self._copies.pop()

    # --- walking ------------------------------------------------------------------------
    def _comment(self, op: Op) -> list[str]:
        """``# file:line  source text`` once per source line, then the op's signature."""
        lines = []
        loc = op.loc
        if loc.line and (loc.file, loc.line) != self._last_line:
            self._last_line = (loc.file, loc.line)
            text = linecache.getline(loc.file, loc.line).strip()
            where = f"{os.path.basename(loc.file)}:{loc.line}"
            lines.append(f"# {where}  {text}" if text else f"# {where}")
        types = ", ".join(str(r.type) for r in op.results)
        lines.append(f"# {op.kind.value}" + (f" -> {types}" if types else ""))
        return lines

    def lower_block(self, block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Op) -> None:
        if op.kind in (Kind.RETURN, Kind.YIELD):
            return
        fn = LOWER.get(op.kind)
        if fn is None:
            raise NotImplementedError(f"numba backend: no lowering for {op.kind.value} "
                                      f"(at {op.loc})")
        mark, depth = len(self.w.lines), self.w.depth
        parent = op.parent.parent_op if op.parent is not None else None
        if (self.needed is None or op.kind in CONTROL or id(op) in self.needed.ops
                or (parent is not None and parent.kind in OWN_REGION)):
            fn(self, op)
        elif op.kind not in record.RECORDED:
            return
        if op.kind in record.RECORDED and self.options.get("record"):
            record.emit_memory(self, op)
        if len(self.w.lines) > mark:  # ops that only make views get no comment
            pad = "    " * depth
            self.w.lines[mark:mark] = [pad + c for c in self._comment(op)]


def _arguments(cg: Codegen) -> tuple[list[str], list[str]]:
    """Parameter names, and the lines converting scalar arguments (Python int/float/bool)
    to their compute type."""
    params, lines = [], []
    for a in cg.fn.args:
        if isinstance(a.type, PtrType):
            name = cg.w.fresh(a.name or "ptr")
            params.append(name)
            cg.bind(a, Val("array", name, (), a.type.dtype, ()))
            continue
        d = a.type.dtype
        local = cg.w.fresh(a.name or "arg")
        raw = cg.w.fresh(f"{local}_raw")
        params.append(raw)
        if d.is_bool:
            lines.append(f"{local} = bool({raw})")
        elif d.is_narrow_float:
            lines.append(f"{local} = {result(d, f'f32({raw})')}")
        else:
            lines.append(f"{local} = {np_type(d)}({raw})")
        cg.bind(a, Val.scalar(local, d))
    return params, lines


def generate(fn: Function, options: dict, header: str = "") -> KernelSource:
    """Lower ``fn`` to the text of a Python module; ``header`` goes into its docstring
    (the launcher puts the backend version and options there)."""
    cg = Codegen(fn, options)
    entry = cg.w.fresh(fn.name or "kernel")
    loop_names = ("pid0", "pid1", "pid2", "nprog0", "nprog1", "nprog2", "first", "last", "p")
    for n in loop_names:
        cg.w.fresh(n)
    params, conversions = _arguments(cg)
    conversions += range_check.launch_checks(cg)
    wraps_before, stop, wraps_after = range_check.hoisted_wraps(cg)
    conversions += wraps_before
    recording = bool(options.get("record"))
    if recording:       # events for the simulator (record.py): rec grows, rec_n counts
        for n in ("rec", "rec_n"):
            cg.w.fresh(n)
        params.append("rec")
        conversions.append("rec_n = 0")
    cg.lower_block(fn.body)
    has_atomics = any(op.kind is Kind.ATOMIC_RMW for op in fn.walk())
    setup_lines = conversions + cg.tiles
    decorator = f'@njit(cache={bool(options.get("cache", True))}, nogil=True, error_model="numpy")'
    setup = "".join(f"    {line}\n" for line in setup_lines)
    body = prefix_mask.version_prefix_masks(cg.w.text().split("\n") if cg.w.text() else [])
    defined = {*loop_names, *params, *outline.bound_names(setup_lines)}
    body, segments = outline.outline(entry, body, defined, {"rec", "rec_n"} if recording
                                     else set(), decorator)
    body_text = "\n".join(body) or "        pass"
    if recording:
        body_text = "        rec, rec_n = rc.put(rec, rec_n, -1, p, 0, 0)\n" + body_text
    body_text += "".join(f"\n    {line}" for line in wraps_after)
    if recording:
        body_text += "\n    return rec, rec_n"
    sep = ", " if params else ""
    sites = "".join(f"    {t!r},\n" for t in cg.oob_sites)
    # The program ids advance with the loop (a compare per program) instead of a modulo
    # and two 64-bit divisions per program (tens of cycles each; a 1024-element fp32
    # add's program is ~110 ns with its data in cache).
    text = f'''"""npujit numba kernel `{fn.name}` (generated from IR; do not edit).
{header}"""
{_IMPORTS}
# the range check's messages, by site (check_lib.out_of_bounds)
OOB_SITES = (
{sites})

{segments}{decorator}
def {entry}(nprog0, nprog1, nprog2, first, last{sep}{", ".join(params)}):
    """Programs first..last-1 of the grid (linear ids, axis 0 fastest)."""
{setup}    pid0 = first % nprog0 - 1
    pid1 = (first // nprog0) % nprog1
    pid2 = first // (nprog0 * nprog1)
    for p in range(first, {stop}):
        pid0 += 1
        if pid0 == nprog0:
            pid0 = 0
            pid1 += 1
            if pid1 == nprog1:
                pid1 = 0
                pid2 += 1
{body_text}
'''
    text = helper_args.unliteral_helper_args(text)
    helpers = "".join(f"from npujit.backends.numba import {disk_cache.HELPERS[h]} as {h}\n"
                      for h in disk_cache.helpers_used(text))
    text = text.replace("{helpers}", helpers, 1)
    return KernelSource(text, entry, has_atomics, fn.name,
                        tuple(a.type for a in fn.args),
                        tuple(a.name or f"arg{i}" for i, a in enumerate(fn.args)))
