"""Tensor descriptors (``nl.make_tensor_descriptor``), Triton's name for a block access
described once and used at several offsets.

A descriptor is an array argument with its logical ``shape``, element ``strides`` (the
last one 1) and a constant ``block_shape``; ``desc.load(offsets)`` reads the block at
``offsets`` (elements outside ``shape`` read as zero, or NaN with
``padding_option="nan"``) and ``desc.store(offsets, value)`` writes it (elements outside
are not written).  Both lower to the block pointer accesses of ``memory.py`` with every
axis boundary-checked, so the schedule moves them as one ``DataCopy`` each, as a TMA
descriptor is one copy on a GPU.

Example (inside a kernel)::

    desc = nl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                      block_shape=[32, 64])
    tile = desc.load([pid_m * 32, 0])
    desc.store([pid_m * 32, 0], tile * 2)
"""
from __future__ import annotations

from . import memory
from . import semantic as sem
from .core import builtin, constexpr, pointer, unwrap_constexpr


class tensor_descriptor:
    """What ``nl.make_tensor_descriptor`` returns: ``load``, ``store``, and the
    ``shape`` / ``strides`` / ``block_shape`` / ``dtype`` it was made with.

    Example::

        tile = desc.load([pid * 32, 0])          # a [32, 64] tile of desc.dtype
    """

    __slots__ = ("base", "shape", "strides", "block_shape", "padding")

    def __init__(self, base: pointer, shape, strides, block_shape, padding: str):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.block_shape = [constexpr(b) for b in block_shape]
        self.padding = padding

    @property
    def dtype(self):
        """The element type of the array."""
        return self.base.element_ty

    def _block(self, offsets, what: str):
        if not isinstance(offsets, (list, tuple)) or len(offsets) != len(self.block_shape):
            raise sem.error(f"tensor descriptor {what}: give one offset per axis as a list, "
                            f"e.g. desc.{what}([0] * {len(self.block_shape)}), got {offsets!r}")
        return memory.make_block_ptr(self.base, self.shape, self.strides, list(offsets),
                                     [b.value for b in self.block_shape])

    def load(self, offsets):
        """The ``block_shape`` tile at ``offsets`` (outside ``shape``: the padding)."""
        return memory.load(self._block(offsets, "load"),
                           boundary_check=tuple(range(len(self.block_shape))),
                           padding_option=self.padding)

    def store(self, offsets, value) -> None:
        """Write ``value`` (of ``block_shape``) at ``offsets``; elements outside ``shape``
        are not written."""
        memory.store(self._block(offsets, "store"), value,
                     boundary_check=tuple(range(len(self.block_shape))))

    def __getattr__(self, name: str):
        if name.startswith("atomic_") or name in ("gather", "scatter"):
            raise sem.error(f"tensor descriptor .{name} is not supported; use nl.{name} "
                            "with a pointer tile" if name.startswith("atomic_") else
                            f"tensor descriptor .{name} is not supported; load rows with "
                            "nl.load on a pointer tile")
        raise AttributeError(name)

    def __repr__(self) -> str:
        return (f"nl.tensor_descriptor<{self.dtype}, "
                f"block={[b.value for b in self.block_shape]}>")


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape,
                           padding_option: str = "zero") -> tensor_descriptor:
    """A descriptor of the array ``base`` (see the module doc).  ``strides[-1]`` must be 1
    and ``block_shape`` constant positive ints, as in Triton.

    Example::

        desc = nl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [32, 64])
    """
    if not isinstance(base, pointer):
        raise sem.error(f"make_tensor_descriptor: base must be an array argument, got {base!r}")
    r = len(block_shape)
    for name, seq in (("shape", shape), ("strides", strides)):
        if len(seq) != r:
            raise sem.error(f"make_tensor_descriptor: {name} has {len(seq)} entries but "
                            f"block_shape has {r}; give one per axis")
    last = unwrap_constexpr(strides[-1])
    if not (isinstance(last, int) and last == 1):
        raise sem.error(f"make_tensor_descriptor: the last stride must be the constant 1 "
                        f"(a row-contiguous array), got {strides[-1]!r}; use "
                        "nl.make_block_ptr for other layouts")
    if padding_option not in ("zero", "nan"):
        raise sem.error(f"make_tensor_descriptor: padding_option must be 'zero' or 'nan', "
                        f"got {padding_option!r}")
    for b in block_shape:
        b = unwrap_constexpr(b)
        if isinstance(b, bool) or not isinstance(b, int) or b <= 0:
            raise sem.error(f"make_tensor_descriptor: block_shape entries must be positive "
                            f"constant ints, got {b!r}")
    block_shape = [unwrap_constexpr(b) for b in block_shape]
    row = block_shape[-1] * base.element_ty.itemsize
    if row < 16:        # Triton's rule (a ValueError, the compile error's cause, as there)
        raise ValueError(f"Descriptor block shape must have at least 16 bytes in the last "
                         f"dimension: block_shape {block_shape} of {base.element_ty!r} has "
                         f"{row} B rows; widen the last block dimension")
    return tensor_descriptor(base, shape, strides, block_shape, padding_option)


@builtin
def load_tensor_descriptor(desc: tensor_descriptor, offsets):
    """``desc.load(offsets)``.

    Example::

        tile = nl.load_tensor_descriptor(desc, [pid * 32, 0])
    """
    return desc.load(offsets)


@builtin
def store_tensor_descriptor(desc: tensor_descriptor, offsets, value) -> None:
    """``desc.store(offsets, value)``.

    Example::

        nl.store_tensor_descriptor(desc, [pid * 32, 0], tile)
    """
    desc.store(offsets, value)
