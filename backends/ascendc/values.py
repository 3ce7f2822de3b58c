"""What an IR value is while the emitter writes C++: a scalar expression, an index or
mask pattern still held symbolically, a splat not yet materialised, or a tile in a
``LocalTensor`` variable.

Index and mask tiles are the addresses of a load or store: ``base + arange`` lanes and
``lane < bound`` masks become a GM offset and a count of leading valid lanes (one
``DataCopyPad``), not vectors; only a mask used as data (``nl.where``) is materialised.

Example::

    >>> Index("row * 128", 128).offset()
    'row * 128'
"""
from __future__ import annotations

from dataclasses import dataclass

from npujit.ir.types import DType

from .lowering import cpp_type


@dataclass
class Scalar:
    """A C++ expression (usually a variable name) of a scalar value."""

    expr: str
    dtype: DType


@dataclass
class Index:
    """A 1-D tile whose lane ``i`` is ``base + i`` (``base`` a C++ int64 expression)."""

    base: str
    length: int

    def offset(self) -> str:
        return self.base


@dataclass
class Mask:
    """A 1-D i1 tile whose first ``count`` lanes are true and the rest false;
    ``count`` is a C++ variable already clamped to ``[0, length]``.  ``of`` names the
    IR values of the ``base + i < bound`` it came from (``origin_key``), when it did."""

    count: str
    length: int
    of: tuple | None = None


@dataclass
class Wrapped:
    """A 1-D tile whose lane ``i`` is ``(base + i) % bound`` (Triton's ``% N`` that keeps
    a tile's loads in bounds): per-row values when used as rows; as columns, the run
    ``[base, bound)`` (see ``Grid.wrap``)."""

    base: str
    bound: str
    length: int
    key: tuple = ()        # the IR values of ``base + i`` and ``bound`` (``origin_key``)


@dataclass
class Paneled:
    """A 1-D tile whose lane ``i`` is ``(base + i) // panel * stride + (base + i) % panel``
    (the column of a panel-major workspace: ``panel`` columns per panel, each panel
    ``stride`` elements).  ``stride`` is ``None`` while only the panel number
    ``(base + i) // panel`` is known; the remainder adds in as ``Wrapped``."""

    base: str
    panel: str
    length: int
    stride: str | None = None
    with_rem: bool = False


@dataclass
class Splat:
    """A tile with every lane equal to a scalar, kept as the scalar until an API needs
    a tensor (``Adds``/``Muls`` take the scalar; ``Div`` needs a ``Duplicate``)."""

    value: Scalar
    length: int


@dataclass
class Tile:
    """A tile in a ``LocalTensor<T>`` variable ``var``; ``home`` is the queue or buffer
    member it lives in (``None`` for scratch)."""

    var: str
    dtype: DType
    length: int
    home: object = None


@dataclass
class Bits:
    """A compare result as a bit mask in UB (a ``LocalTensor<uint8_t>``)."""

    var: str
    length: int


def scalar_arg(s: Scalar, dtype: DType) -> str:
    """A scalar as the ``const T&`` argument of a vector API on ``dtype`` tiles (the
    API's template parameter comes from the tensors, so the scalar must match exactly)."""
    if s.dtype == dtype and (s.expr.isidentifier() or dtype.is_float or dtype.name == "i32"):
        return s.expr              # already a T (float literals and half(...) are typed)
    return f"static_cast<{cpp_type(dtype)}>({s.expr})"


@dataclass
class RowVal:
    """A per-row value of a ``[rows, 1]`` tile (broadcast along ``cols`` columns): a C++
    scalar expression in the row number ``{r}``, computed by the scalar unit where it is
    used (``x.GetValue({r})`` for a tile in UB, ``(base + {r})`` for ``nl.arange`` rows)."""

    expr: str
    dtype: DType
    rows: int
    cols: int = 1

    def at(self, r: str) -> str:
        return self.expr.replace("{r}", r)


@dataclass
class Grid:
    """A 2-D address tile ``row[r] + col.base + c``: ``row`` an int ``RowVal`` (a row's
    first element, affine or gathered), the columns contiguous.  With ``wrap``, a
    ``Wrapped`` column index, the address is ``row[r] + col.base + (wrap.base + c) %
    wrap.bound``: the columns ``c < wrap.bound - wrap.base`` are contiguous, the rest
    wrap to the first columns."""

    row: RowVal
    col: Index
    rows: int
    cols: int
    wrap: Wrapped | None = None
    panel: Paneled | None = None     # panel-major columns: ``row[r] + panel lane c``


@dataclass
class Mask2:
    """A 2-D mask ``row[r] & (c < col.count)``; either part may be ``None`` (all true)."""

    row: RowVal | None
    col: Mask | None
    rows: int
    cols: int


@dataclass
class OneHot:
    """The 2-D i1 tile ``row[r] == col.base + c`` (a per-row value against the columns),
    kept symbolic until a cast makes it data."""

    row: RowVal
    col: Index
    rows: int
    cols: int


@dataclass
class Cell:
    """A 2-D tile each of whose elements is a C++ scalar expression in ``{r}`` and
    ``{c}`` (a data row ``x[None, :]`` against per-row values), made by the scalar unit
    where a consumer needs the elements."""

    expr: str
    dtype: DType
    rows: int
    cols: int

    def at(self, r: str, c: str) -> str:
        return self.expr.replace("{r}", r).replace("{c}", c)


@dataclass
class DataRow:
    """A 1-D data tile ``x[None, :]`` broadcast along ``rows`` rows of ``cols`` columns:
    still the one row in UB (``tile``), read by the vector unit once per row of the
    other operand."""

    tile: Tile
    rows: int
    cols: int


@dataclass
class Cell3:
    """A 3-D tile ``[R, J, C]`` each of whose elements is a C++ scalar expression in
    ``{r}``, ``{j}`` and ``{c}`` (``ids[:, :, None] == cols[None, None, :]`` and the like),
    made by the scalar unit where a reduction along an axis folds it."""

    expr: str
    dtype: DType
    shape: tuple

    def at(self, r: str, j: str, c: str) -> str:
        return self.expr.replace("{r}", r).replace("{j}", j).replace("{c}", c)


def origin_key(*values) -> tuple:
    """Where IR values come from, the same on either core's side of a mixed kernel:
    looking through fused regions (their arguments and results), reshapes, broadcasts
    and splats.  ``(base + arange) % n`` and ``base + arange < n`` have the same key."""
    from npujit.ir.core import Op
    from npujit.ir.ops import Kind
    out = []
    for v in values:
        while True:
            owner = v.owner
            if not isinstance(owner, Op):              # a block argument
                region_op = getattr(owner, "parent_op", None)
                if region_op is None or region_op.kind is not Kind.FUSED:
                    break
                v = region_op.operands[owner.args.index(v)]
            elif owner.kind in (Kind.RESHAPE, Kind.BROADCAST, Kind.SPLAT):
                v = owner.operands[0]
            elif owner.kind is Kind.FUSED:
                v = owner.body.terminator.operands[owner.results.index(v)]
            else:
                break
        out.append(id(v))
    return tuple(out)
