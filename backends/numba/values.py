"""How IR values live in generated code, and the loop nests that walk tiles.

Every IR value becomes a ``Val``:

* ``scalar``: a numba scalar (a variable or a literal such as ``f32(0.5)``), for
  shape ``()`` values and for splats, which are never materialised;
* ``array``: a flat, C-contiguous 1-D numpy array plus a static shape and per-dimension
  strides (in elements).  A freshly computed tile has row-major strides; ``trans`` and
  ``broadcast`` only change strides (stride 0 on stretched dims) and ``reshape`` of a
  row-major tile reuses the array, so none of them copies;
* ``iota``: ``arange`` as ``start + Σ i_d·stride_d``, computed where it is used.

Half floats (f16/bf16) are float32 values exactly representable in the half type;
i1 is ``np.bool_``.  Within one program an array is written only by the op that
creates it (a loop body's op rewrites it each iteration, after its previous value is
dead), so views and inlined expressions may read it freely.

``Nest`` emits the loops that visit a tile's elements: it drops size-1 dims, merges dims
that every operand walks contiguously (a plain elementwise op becomes one flat loop),
and counts with ``np.uint64`` so that computed indices need no negative-index fix-up
(measured on numba 0.68: with signed computed indices LLVM does not vectorise the loop,
and a tiled matmul ran about 5x slower).

Example::

    >>> from npujit.ir.types import float32
    >>> w = Writer()
    >>> x = Val.array("x", (4, 8), float32)
    >>> with Nest(w, (4, 8), [x]) as nest:
    ...     w.line(f"out[{nest.out}] = {nest.at(x)}")
    >>> print(w.text())
        for i in range(u64(32)):
            out[i] = x[i]
"""
from __future__ import annotations

import builtins
import keyword
import re
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

from npujit.ir.types import DType, row_major

# Names the generated module defines or imports, and Python's builtins (generated code
# calls abs, bool, range, print...): value names never take them.
RESERVED = frozenset({"np", "math", "njit", "hp", "sl", "rl", "tl", "cl",
                      "f32", "i8", "i16", "i32", "i64", "u64", "b1",
                      "f64", "u8", "u16", "u32"}) | frozenset(dir(builtins))

_NP_COMPUTE = {"f32": "f32", "f16": "f32", "bf16": "f32", "f8E4M3FN": "f32", "f8E5M2": "f32",
               "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64",
               "i1": "b1", "f64": "f64", "ui8": "u8", "ui16": "u16", "ui32": "u32",
               "ui64": "u64"}


# halfprec's name for each narrow float: hp.round_<name>, hp.<name>_bits_to_f32 and
# hp.f32_to_<name>_bits
_HP_NAMES = {"f16": "f16", "bf16": "bf16", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}


def hp_name(d: DType) -> str:
    """The name halfprec's functions for narrow float ``d`` carry (``e4m3`` for fp8 E4M3)."""
    return _HP_NAMES[d.name]


def np_type(d: DType) -> str:
    """The generated module's name for the numpy type a tile of ``d`` is computed in
    (``f32`` for np.float32 ...; halves compute in float32)."""
    return _NP_COMPUTE[d.name]


class Writer:
    """Lines of Python source with indentation, plus a registry of unique names."""

    def __init__(self, depth: int = 1):
        self.lines: list[str] = []
        self.depth = depth
        self._names: set[str] = set(RESERVED)

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextmanager
    def block(self, header: str):
        """``header`` (ending in ':') then an indented body."""
        self.line(header)
        self.depth += 1
        mark = len(self.lines)
        yield
        if len(self.lines) == mark:
            self.line("pass")
        self.depth -= 1

    def fresh(self, hint: str) -> str:
        """A new identifier based on ``hint`` (sanitised, made unique)."""
        base = re.sub(r"\W", "_", hint or "v")
        if not base or base[0].isdigit():
            base = "v_" + base
        if keyword.iskeyword(base):
            base += "_"
        name, n = base, 1
        while name in self._names:
            name = f"{base}_{n}"
            n += 1
        self._names.add(name)
        return name

    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(frozen=True)
class Val:
    """An IR value in generated code; see the module docstring for the kinds."""

    kind: str          # "scalar" | "array" | "iota" | "expr" | "index"
    name: str          # variable/literal; iota: its start; expr: a format string
    shape: tuple
    dtype: DType
    strides: tuple     # per dim, elements; all 0 for scalars; unused for expr
    args: tuple = ()   # expr: operand Vals, all of the expr's shape
    op: object = None  # expr: the op kind (lets memory ops spot affine offsets)

    @staticmethod
    def scalar(expr: str, dtype: DType, shape=()) -> "Val":
        return Val("scalar", expr, tuple(shape), dtype, (0,) * len(shape))

    @staticmethod
    def array(name: str, shape, dtype: DType) -> "Val":
        return Val("array", name, tuple(shape), dtype, row_major(shape))

    @staticmethod
    def iota(start: int, n: int, dtype: DType) -> "Val":
        return Val("iota", str(start), (n,), dtype, (1,))

    @staticmethod
    def expr(fmt: str, args, dtype: DType, shape, op=None) -> "Val":
        """Elementwise ``fmt.format(*elements of args)``, computed where it is read."""
        shape = tuple(shape)
        return Val("expr", fmt, shape, dtype, (0,) * len(shape),
                   tuple(a.broadcast_to(shape) for a in args), op)

    @property
    def is_scalar(self) -> bool:
        """True for rank-0 values (a plain numba scalar)."""
        return self.shape == () and self.kind == "scalar"

    @property
    def is_contiguous_array(self) -> bool:
        """An array walked row-major from element 0: usable as-is by helpers."""
        return self.kind == "array" and self.strides == row_major(self.shape)

    def with_layout(self, shape, strides) -> "Val":
        return Val(self.kind, self.name, tuple(shape), self.dtype, tuple(strides), self.args,
                   self.op)

    def broadcast_to(self, shape) -> "Val":
        """Index this value at points of ``shape`` (numpy broadcasting of size-1 dims;
        a rank-0 value is broadcast everywhere)."""
        shape = tuple(shape)
        if self.shape == shape:
            return self
        if self.kind == "expr":
            return self._map_exprs(lambda a: a.broadcast_to(shape), shape, {})
        if self.shape == ():
            if self.kind == "scalar":
                return Val.scalar(self.name, self.dtype, shape)
            return self.with_layout(shape, (0,) * len(shape))
        assert len(self.shape) == len(shape), (self.shape, shape)
        strides = tuple(0 if s == 1 and t != 1 else st
                        for s, t, st in zip(self.shape, shape, self.strides))
        return self.with_layout(shape, strides)

    def unit_reshaped(self, shape) -> "Val | None":
        """This value at ``shape`` when the reshape only adds or drops size-1 dims
        (``v[:, None]``, ``v[None, :]``): the same elements, no copy; else None."""
        shape = tuple(shape)
        src = [d for d, n in enumerate(self.shape) if n != 1]
        dst = [d for d, n in enumerate(shape) if n != 1]
        if [self.shape[d] for d in src] != [shape[d] for d in dst]:
            return None
        if self.kind == "expr":
            return self._map_exprs(lambda a: a.unit_reshaped(shape), shape, {})
        strides = [0] * len(shape)
        for s, t in zip(src, dst):
            strides[t] = self.strides[s]
        return self.with_layout(shape, strides)

    def permuted(self, perm) -> "Val":
        """The transpose: output dim d walks this value's dim ``perm[d]``."""
        shape = tuple(self.shape[p] for p in perm)
        if self.kind == "expr":
            return self._map_exprs(lambda a: a.permuted(perm), shape, {})
        return self.with_layout(shape, [self.strides[p] for p in perm])

    def _map_exprs(self, leaf_fn, shape, memo: dict) -> "Val":
        """This expr with every leaf replaced by ``leaf_fn(leaf)``, at ``shape``.  An expr
        is a DAG (``x`` read three times by ``where(x > 0, exp(x), x)``), so each node is
        rebuilt once (``memo``, by identity): walking it as a tree is exponential in the
        depth of a chain of such ops."""
        if self.kind != "expr":
            return leaf_fn(self)
        out = memo.get(id(self))
        if out is None:
            out = Val("expr", self.name, shape, self.dtype, (0,) * len(shape),
                      tuple(a._map_exprs(leaf_fn, shape, memo) for a in self.args), self.op)
            memo[id(self)] = out
        return out

    def leaves(self) -> tuple:
        """The distinct non-expr Vals this value reads (itself unless it is an expr)."""
        return self._leaves

    @cached_property
    def _leaves(self) -> tuple:
        if self.kind != "expr":
            return (self,)
        return tuple(dict.fromkeys(leaf for a in self.args for leaf in a._leaves))

    @cached_property
    def size(self) -> int:
        """Number of expr nodes counted as a tree (how much text, and roughly how much
        work, one element costs when it is inlined); each node's count is kept, so a DAG
        is walked once."""
        return 1 + sum(a.size for a in self.args) if self.kind == "expr" else 0

    def element(self, index) -> str:
        """This value's element; ``index`` is the linear index (str) of a leaf, or a
        function from leaf Val to its linear index (needed for exprs)."""
        if self.kind == "expr":
            return self.name.format(*(a.element(index) for a in self.args))
        idx = index(self) if callable(index) else index
        if self.kind == "scalar":
            return self.name
        if self.kind == "array":
            return f"{self.name}[{idx}]"
        if self.kind == "index":
            return idx
        start = int(self.name)
        i = f"i64({idx})"
        return f"i32({i} + {start})" if start else f"i32({i})"


def _uconst(n: int) -> str:
    return f"u64({n})"


def linear(names, strides) -> str:
    """``Σ names[d] * strides[d]`` as an unsigned index expression (0 strides dropped)."""
    terms = []
    for name, s in zip(names, strides):
        if s == 1:
            terms.append(name)
        elif s:
            terms.append(f"{name} * {_uconst(s)}")
    return " + ".join(terms) if terms else "0"


class Nest:
    """Loops over the points of ``shape``; ``at(val)`` is ``val``'s element at the current
    point (any Val broadcastable to ``shape`` whose leaves were given) and ``out`` the
    linear (row-major) index of the point, for output arrays.

    Use as a context manager: the body is written inside ``with``.
    """

    def __init__(self, w: Writer, shape, vals, index_hint: str = "i"):
        self.w = w
        self.shape = tuple(shape)
        leaves: dict = {}
        for v in vals:
            for leaf in v.broadcast_to(self.shape).leaves():
                leaves[leaf] = None
        self.leaves = list(leaves)
        self._hint = index_hint
        self._index: dict = {}
        self.out = "0"
        self._opened = 0

    def _dims(self):
        """(size, out_stride, [stride per leaf]) of each loop after dropping size-1 dims
        and merging dims walked contiguously by every leaf and the output."""
        out_strides = row_major(self.shape)
        dims = [(n, out_strides[d], [v.strides[d] for v in self.leaves])
                for d, n in enumerate(self.shape) if n != 1]
        merged: list = []
        for n, os_, vs in dims:
            if merged:
                pn, pos, pvs = merged[-1]
                if pos == os_ * n and all(p == s * n for p, s in zip(pvs, vs)):
                    merged[-1] = (pn * n, os_, vs)
                    continue
            merged.append((n, os_, vs))
        return merged

    def __enter__(self) -> "Nest":
        dims = self._dims()
        names = ([self.w.fresh(self._hint)] if len(dims) == 1
                 else [self.w.fresh(f"{self._hint}{k}") for k in range(len(dims))])
        for (n, _, _), name in zip(dims, names):
            self.w.line(f"for {name} in range({_uconst(n)}):")
            self.w.depth += 1
            self._opened += 1
        self.out = linear(names, [os_ for _, os_, _ in dims])
        for k, leaf in enumerate(self.leaves):
            self._index[leaf] = linear(names, [vs[k] for _, _, vs in dims])
        return self

    def at(self, val: Val) -> str:
        """Element expression of ``val`` at the current point."""
        v = val.broadcast_to(self.shape)
        try:
            return v.element(self._index.__getitem__)
        except KeyError:
            raise KeyError(f"{val} is not walked by this nest") from None

    def __exit__(self, *exc) -> None:
        self.w.depth -= self._opened
