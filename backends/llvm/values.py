"""What an IR value is bound to while a kernel is lowered to LLVM IR, and how the
elements of a tile are reached.

* ``Scalar``: a rank-0 value, an SSA name (or constant) of its dtype's compute type.
* ``Tile``: elements in memory at ``ptr`` (a scratch slot of the launch, or a view of
  one) with a shape and element strides.  A view is a ``Tile`` with other strides over
  the same memory: ``broadcast`` gives a stretched axis stride 0, ``trans`` permutes the
  strides, ``splat`` is one stored element with every stride 0.
* ``Arg``: a GM pointer argument: its data pointer and its length in elements.

Example::

    >>> from npujit.ir.types import float32
    >>> t = Tile("%s", (4, 8), (8, 1), float32)
    >>> t.contiguous, t.broadcast_to((2, 4, 8)).strides
    (True, (0, 8, 1))
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from npujit.ir.types import DType, numel, row_major

from . import affine
from .ir_text import Writer, compute_type, memory_type


@dataclass(frozen=True)
class Scalar:
    ref: str
    dtype: DType


@dataclass(frozen=True)
class Arg:
    data: str       # ptr to element 0
    length: str     # i64 element count
    dtype: DType
    name: str


@dataclass(frozen=True)
class Tile:
    ptr: str
    shape: tuple
    strides: tuple
    dtype: DType

    @property
    def contiguous(self) -> bool:
        return all(st == rm for st, rm, n in zip(self.strides, row_major(self.shape),
                                                 self.shape) if n != 1)

    @property
    def uniform(self) -> bool:
        """Every element is the one stored at ``ptr`` (a splat)."""
        return all(st == 0 or n == 1 for st, n in zip(self.strides, self.shape))

    def broadcast_to(self, shape) -> "Tile":
        """The view stretched to ``shape`` (trailing axes aligned, as the IR's broadcast:
        same rank; a size-1 axis becomes stride 0)."""
        lead = len(shape) - len(self.shape)
        strides = [0] * lead + [0 if n == 1 and m != 1 else st for st, n, m in
                                zip(self.strides, self.shape, shape[lead:])]
        return Tile(self.ptr, tuple(shape), tuple(strides), self.dtype)

    def reshaped(self, shape) -> "Tile":
        """The contiguous tile read in another row-major shape (the caller copies a
        non-contiguous tile first)."""
        return Tile(self.ptr, tuple(shape), row_major(shape), self.dtype)

    def permuted(self, perm) -> "Tile":
        return Tile(self.ptr, tuple(self.shape[p] for p in perm),
                    tuple(self.strides[p] for p in perm), self.dtype)


class Factor(NamedTuple):
    """One ``&`` factor of a bool tile known all-on when ``on`` (an i1) holds;
    ``varies``: per axis of the tile, whether the factor may differ along it (a
    ``rows < m`` factor of a ``[rows, cols]`` mask does not along the columns)."""

    on: str
    varies: tuple


@dataclass(frozen=True, eq=False)
class Lazy:
    """A tile that is never stored: ``gen(w, index)`` writes the instructions of its
    element at ``index`` wherever a consumer needs it (lower_tile.py makes them for
    ``arange`` and for cheap or once-used elementwise results).  So the consumer's loop
    sees the arithmetic itself -- ``pid * B + i`` as a load's offset is a contiguous
    access LLVM vectorises -- and no tile goes through memory.  ``flat`` says whether
    ``gen`` takes a flat row-major index (its tiles are all contiguous or uniform);
    else it needs one index per axis."""

    shape: tuple
    dtype: DType
    gen: object
    flat: bool = True
    affine: tuple | None = None       # (base, strides) when integer and affine: affine.py
    # a bool tile: an i1 operand that is true only when every lane is true (None: not
    # known); in a loop written under ``Writer.assumed`` holding it, the lanes read true
    all_on: str | None = None
    # ``Factor``s: i1 operands each true only when one ``&`` factor of this bool tile is
    # on in every lane; under ``Writer.assumed`` holding them, those factors read true
    # and the rest of the mask stays per lane (lower_tile._all_on)
    factors: tuple = ()
    # an integer or bool tile whose every row (last axis) is an arithmetic progression:
    # the step (an i64 operand; "0" for a tile constant along its rows), else None
    step: str | None = None
    # ops one element's ``gen`` writes, its lazy inputs' included (lower_tile._cost):
    # what each extra reader of the value costs again
    cost: int = 1

    @property
    def contiguous(self) -> bool:    # for ``nest``: a flat loop may run it
        return self.flat

    @property
    def uniform(self) -> bool:
        return False

    def broadcast_to(self, shape) -> "Lazy":
        """Stretched to ``shape`` (same rank or more leading axes; size-1 axes read
        index 0)."""
        shape = tuple(shape)
        if shape == self.shape:
            return self
        lead = len(shape) - len(self.shape)
        stretched = [n == 1 and m != 1 for n, m in zip(self.shape, shape[lead:])]

        def gen(w, index):
            axes = index.axes[lead:]
            return self.gen(w, Index(axes=["0" if s else a for s, a in zip(stretched, axes)]))
        return Lazy(shape, self.dtype, gen, False,
                    affine.broadcast(self.affine, self.shape, shape), self.all_on,
                    tuple(Factor(f.on, (False,) * lead + tuple(
                        v and n != 1 for v, n in zip(f.varies, self.shape)))
                          for f in self.factors),
                    "0" if self.shape[-1:] in ((), (1,)) else self.step, self.cost)

    def reshaped(self, shape, w: Writer) -> "Lazy":
        """The same elements in another row-major shape (needs ``flat``)."""
        strides = row_major(shape)

        def gen(w, index):
            if index.flat is not None:
                return self.gen(w, index)
            flat = None
            for a, st in zip(index.axes, strides):
                term = a if st == 1 else w.op("mul nsw i64", a, str(st))
                flat = term if flat is None else w.op("add nsw i64", flat, term)
            return self.gen(w, Index(flat=flat or "0"))
        return Lazy(tuple(shape), self.dtype, gen, True,
                    affine.reshape(w, self.affine, self.shape, tuple(shape)), self.all_on,
                    tuple(Factor(f.on, tuple(n != 1 for n in shape)) for f in self.factors),
                    "0" if shape[-1:] in ((), (1,)) else
                    self.step if shape[-1:] == self.shape[-1:] else None, self.cost)

    def permuted(self, perm) -> "Lazy":
        inverse = [perm.index(k) for k in range(len(perm))]

        def gen(w, index):
            return self.gen(w, Index(axes=[index.axes[inverse[k]] for k in range(len(perm))]))
        return Lazy(tuple(self.shape[p] for p in perm), self.dtype, gen, False,
                    affine.permute(self.affine, perm), self.all_on,
                    tuple(Factor(f.on, tuple(f.varies[p] for p in perm))
                          for f in self.factors),
                    self.step if perm[-1] == len(perm) - 1 else None, self.cost)


class Index:
    """Where the current element of a loop nest is: ``flat`` (an i64 over a row-major
    nest whose tiles are all contiguous or uniform) or one i64 per axis."""

    def __init__(self, flat: str | None = None, axes: list | None = None):
        self.flat, self.axes = flat, axes

    def offset(self, w: Writer, tile: Tile) -> str:
        """The element offset of the current element in ``tile`` (an i64 operand)."""
        if tile.uniform:
            return "0"
        if self.flat is not None:
            return self.flat
        off = None
        lead = len(self.axes) - len(tile.shape)
        for i, st in zip(self.axes[lead:], tile.strides):
            if st == 0:
                continue
            term = i if st == 1 else w.op("mul nsw i64", i, str(st))
            off = term if off is None else w.op("add nsw i64", off, term)
        return off or "0"


def load_element(w: Writer, tile: Tile, index: Index) -> str:
    """The current element of ``tile`` in its compute type."""
    mt = memory_type(tile.dtype)
    p = w.gep(mt, tile.ptr, index.offset(w, tile))
    v = w.load(mt, p)
    return w.assign(f"trunc i8 {v} to i1") if tile.dtype.is_bool else v


def element(w: Writer, val, index: Index) -> str:
    """The current element of a ``Tile`` or a ``Lazy``, or the value of a ``Scalar``
    (every lane's)."""
    if isinstance(val, Scalar):
        return val.ref
    if isinstance(val, Lazy):
        if val.all_on is not None and val.all_on in w.assumed:
            return "true"
        return val.gen(w, index)
    return load_element(w, val, index)


def on_factors(val) -> tuple:
    """The ``Factor``s of the bool ``val`` (``Lazy.factors``; its ``all_on`` when only
    that is known; none for a stored tile or a scalar)."""
    if not isinstance(val, Lazy):
        return ()
    if val.factors or val.all_on is None:
        return val.factors
    return (Factor(val.all_on, (True,) * len(val.shape)),)


def row_step(val) -> str | None:
    """The step along the last axis of an integer or bool value whose every row is an
    arithmetic progression (an i64 operand; "0" when constant along its rows), else
    None: a scalar's is "0", a lazy tile's its affine form's last stride or its
    ``step``, a stored tile's "0" when it is broadcast along its rows."""
    if isinstance(val, Scalar):
        return "0"
    if isinstance(val, Lazy):
        if val.affine is not None and len(val.affine[1]) == len(val.shape):
            return val.affine[1][-1]
        return val.step
    if isinstance(val, Tile) and (val.shape[-1:] in ((), (1,)) or val.strides[-1] == 0):
        return "0"
    return None


def store_element(w: Writer, tile: Tile, index: Index, value: str) -> None:
    mt = memory_type(tile.dtype)
    if tile.dtype.is_bool:
        value = w.assign(f"zext i1 {value} to i8")
    w.store(mt, value, w.gep(mt, tile.ptr, index.offset(w, tile)))


@contextmanager
def nest(w: Writer, shape, tiles=(), axes: bool = False):
    """The loop nest over ``shape`` (row-major), yielding an ``Index``: one flat loop
    when every tile in ``tiles`` is contiguous or uniform (and ``axes`` is not asked
    for), else one loop per axis."""
    if not axes and all(t.contiguous or t.uniform for t in tiles):
        with w.loop(f"i64 {numel(shape)}", "e") as i:
            yield Index(flat=i)
        return
    with ExitStack() as stack:
        yield Index(axes=[stack.enter_context(w.loop(f"i64 {n}", f"a{d}"))
                          for d, n in enumerate(shape)])


def to_i64(w: Writer, ref: str, dt: DType) -> str:
    """An integer (or bool) value widened to i64 (sign-extended unless unsigned)."""
    t = compute_type(dt)
    if t == "i64":
        return ref
    return w.assign(f"{'zext' if dt.is_unsigned or dt.is_bool else 'sext'} {t} {ref} to i64")
