"""The walker: an IR function in, the Python source of a numba module out.

The module holds three functions (names from the kernel):

* ``<kernel>(pid0, pid1, pid2, nprog0, nprog1, nprog2, *args)``: one program, the ops
  in order, each preceded by a comment with its source line;
* ``<kernel>_grid(nprog0, nprog1, nprog2, first, last, *args)``: programs ``first`` to
  ``last - 1`` (linear ids, axis 0 fastest), compiled ``nogil`` so the launcher may run
  chunks on threads;
* ``<kernel>_grid_parallel``: the same loop as a numba ``prange`` (``parallel=True``).

Per-op lowering lives in ``lower_*.py``, one op family each, registered in ``LOWER``.

Example::

    >>> src = generate(fn, {})                                # doctest: +SKIP
    >>> print(src.text)                                       # doctest: +SKIP
"""
from __future__ import annotations

import linecache
import os
from contextlib import contextmanager
from dataclasses import dataclass

from npujit.ir.core import Function, Op, Value
from npujit.ir.ops import Kind
from npujit.ir.types import PtrType

from . import lower_control, lower_elementwise, lower_memory, lower_shape, lower_tile
from .values import Val, Writer, np_type, numel

LOWER = {}
for _mod in (lower_control, lower_elementwise, lower_memory, lower_shape, lower_tile):
    LOWER.update(_mod.LOWERINGS)

_IMPORTS = """import math

import numpy as np
from numba import njit, prange

from npujit.backends.numba import cube_lib as cl
from npujit.backends.numba import halfprec as hp
from npujit.backends.numba import reduce_lib as rl
from npujit.backends.numba import scalar_lib as sl
from npujit.backends.numba import select_lib as tl
"""


@dataclass
class KernelSource:
    """Generated module text and what the launcher needs to know about it."""

    text: str
    program: str         # name of the one-program function
    grid: str            # name of the serial (nogil) grid function
    grid_parallel: str   # name of the prange grid function
    has_atomics: bool


class Codegen:
    """State while lowering one function: the writer, IR value -> ``Val``, and the
    materialised copies of views (scoped to the region that made them)."""

    def __init__(self, fn: Function, options: dict):
        self.fn = fn
        self.options = options
        self.w = Writer()
        self.env: dict[int, Val] = {}
        self._copies: list[dict] = [{}]
        self._last_line = None

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
        """Emit ``name = np.empty(n, dtype)`` for a fresh tile."""
        name = self.w.fresh(hint)
        self.w.line(f"{name} = np.empty({numel(shape)}, {np_type(dtype)})")
        return Val.array(name, shape, dtype)

    def materialise(self, val: Val, hint: str = "tile") -> Val:
        """``val`` as a row-major contiguous array (copying a view once per region)."""
        if val.is_contiguous_array or val.shape == ():
            return val
        for scope in reversed(self._copies):
            if val in scope:
                return scope[val]
        from .values import Nest
        out = self.new_array(hint, val.shape, val.dtype)
        with Nest(self.w, val.shape, [val]) as nest:
            self.w.line(f"{out.name}[{nest.out}] = {nest.at(val)}")
        self._copies[-1][val] = out
        return out

    def hint(self, v: Value, default: str = "v") -> str:
        """A readable variable name for an op result."""
        if v.name:
            return v.name
        op = v.op
        if op is None:
            return default
        return op.kind.value.split(".")[-1]

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
        fn(self, op)
        if len(self.w.lines) > mark:  # ops that only make views get no comment
            pad = "    " * depth
            self.w.lines[mark:mark] = [pad + c for c in self._comment(op)]


def _arg_prologue(cg: Codegen) -> list[str]:
    """Parameter names; scalar args arrive as Python int/float/bool and are converted
    to their compute type on entry."""
    params = []
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
            cg.w.line(f"{local} = bool({raw})")
        elif d.name in ("f16", "bf16"):
            cg.w.line(f"{local} = hp.round_{'f16' if d.name == 'f16' else 'bf16'}(np.float32({raw}))")
        else:
            cg.w.line(f"{local} = {np_type(d)}({raw})")
        cg.bind(a, Val.scalar(local, d))
    return params


def generate(fn: Function, options: dict, header: str = "") -> KernelSource:
    """Lower ``fn`` to the text of a Python module; ``header`` goes into its docstring
    (the launcher puts the backend version and options there)."""
    cg = Codegen(fn, options)
    prog = cg.w.fresh(fn.name or "kernel")
    grid = cg.w.fresh(f"{prog}_grid")
    grid_par = cg.w.fresh(f"{prog}_grid_parallel")
    ids = ["pid0", "pid1", "pid2", "nprog0", "nprog1", "nprog2", "first", "last", "p"]
    for n in ids:
        cg.w.fresh(n)
    params = _arg_prologue(cg)
    cg.lower_block(fn.body)
    body = cg.w.text() or "    pass"
    has_atomics = any(op.kind is Kind.ATOMIC_ADD for op in fn.walk())

    boundscheck = bool(options.get("debug", False))
    plist = ", ".join(params)
    sep = ", " if params else ""
    text = f'''"""npujit numba kernel `{fn.name}` (generated from IR; do not edit).
{header}"""
{_IMPORTS}
KERNEL_OPTS = dict(cache={options.get("cache", True)}, nogil=True, error_model="numpy", boundscheck={boundscheck})
GRID_OPTS = dict(cache={options.get("cache", True)}, nogil=True, error_model="numpy")
PARALLEL_GRID_OPTS = dict(cache={options.get("cache", True)}, parallel=True, error_model="numpy")


@njit(**KERNEL_OPTS)
def {prog}(pid0, pid1, pid2, nprog0, nprog1, nprog2{sep}{plist}):
{body}


@njit(**GRID_OPTS)
def {grid}(nprog0, nprog1, nprog2, first, last{sep}{plist}):
    """Programs first..last-1 of the grid, one after another (axis 0 fastest)."""
    for p in range(first, last):
        {prog}(p % nprog0, (p // nprog0) % nprog1, p // (nprog0 * nprog1),
             nprog0, nprog1, nprog2{sep}{plist})


@njit(**PARALLEL_GRID_OPTS)
def {grid_par}(nprog0, nprog1, nprog2, first, last{sep}{plist}):
    """The same programs spread over numba's threads."""
    for p in prange(first, last):
        {prog}(p % nprog0, (p // nprog0) % nprog1, p // (nprog0 * nprog1),
             nprog0, nprog1, nprog2{sep}{plist})
'''
    return KernelSource(text, prog, grid, grid_par, has_atomics)

