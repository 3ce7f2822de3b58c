"""Global memory: ``load``, ``store`` through pointers (and the builder of the atomics),
and block pointers (``make_block_ptr``, ``advance``) for strided n-D tiles.

Masked-off lanes never touch memory; they read ``other`` (0 when omitted).
"""
from __future__ import annotations

from npujit.ir import Kind
from npujit.ir import types as T

from . import semantic as sem
from .core import block_ptr, builtin, pointer, tensor, unwrap_constexpr
from .tracing import current


def _check_pointer(p, what: str) -> pointer:
    if isinstance(p, pointer):
        return p
    if isinstance(p, tensor):
        raise sem.error(f"{what}: expected a pointer (an array argument plus offsets), got a "
                        f"{p.dtype} tensor; write x_ptr + offsets")
    if sem._is_host_array(p):
        raise sem.error(f"{what}: expected a pointer, got an {sem.describe_value(p)}; a host "
                        "array (a global, a closure value) is not device memory: pass it as "
                        "a kernel argument, which makes it a pointer")
    raise sem.error(f"{what}: expected a pointer, got {sem.describe_value(p)}; was the array "
                    "argument passed as None or as a number?")


def _not_wider(shape: tuple, value: tensor, mask) -> None:
    """A store's value and mask broadcast to the pointer tile's ``shape``, never beyond it:
    a wider one would have several lanes write each address (the last winning)."""
    for name, t in (("value", value), ("mask", mask)):
        if t is not None and sem.broadcast_shapes(t.shape, shape) != tuple(shape):
            raise sem.error(f"store: the {name}'s shape {list(t.shape)} is wider than the "
                            f"pointer tile's {list(shape)}, so several lanes would write "
                            "each address and the last would win; store a value of the "
                            "pointer's shape, or broadcast the pointer tile first (Triton "
                            "refuses this too)")


def _check_writable(p: pointer, what: str) -> None:
    """A store or an atomic through a ``nl.const`` pointer argument is an error."""
    if id(p.base) in current(what).const_args:
        raise sem.error(f"{what}: Cannot store to a constant pointer: argument "
                        f"'{p.base.name}' is annotated nl.const (tl.const); drop the "
                        "annotation to write to it")


def _offsets(p: pointer) -> tensor:
    return p.offset if p.offset is not None else sem.to_tensor(0, T.int32)


def _mask(mask, shape: tuple, what: str) -> tensor:
    m = sem.to_tensor(mask)
    if not m.dtype.is_bool:
        raise sem.error(f"{what}: mask must be a bool tile (e.g. offs < n), got {m.dtype}")
    try:
        sem.broadcast_shapes(m.shape, shape)
    except Exception:
        raise sem.error(f"{what}: mask of shape {list(m.shape)} does not broadcast to the "
                        f"pointer shape {list(shape)}") from None
    return m


def _align(p: pointer, mask, extra):
    """Broadcast pointer offsets, mask and an extra tile (value/other) to one shape."""
    off = _offsets(p)
    shape = off.shape
    if mask is not None:
        shape = sem.broadcast_shapes(shape, mask.shape)
    if extra is not None:
        shape = sem.broadcast_shapes(shape, extra.shape)
    off = sem.broadcast_to(off, shape)
    mask = sem.broadcast_to(mask, shape) if mask is not None else None
    extra = sem.broadcast_to(extra, shape) if extra is not None else None
    return off, mask, extra


@builtin
def load(ptr, mask=None, other=None, boundary_check=(), padding_option: str = "",
         cache_modifier: str = "", eviction_policy: str = "", volatile: bool = False):
    """Load a tile from GM.  Triton's ``cache_modifier``, ``eviction_policy`` and
    ``volatile`` are accepted and change nothing (GM is read through MTE2, uncached).

    With a pointer (``x_ptr + offsets``): lane i reads element ``offsets[i]``; where ``mask``
    is false it reads nothing and gives ``other`` (0 if omitted).  With a block pointer:
    the block at its offsets; axes in ``boundary_check`` give the padding ("zero" or "nan")
    outside the array's shape.

    Example::

        x = nl.load(x_ptr + offs, mask=offs < n, other=0.0)
        a = nl.load(a_block, boundary_check=(0, 1))
    """
    if isinstance(ptr, block_ptr):
        if mask is not None or other is not None:
            raise sem.error("load from a block pointer takes boundary_check=, not mask=/other=")
        return _block_load(ptr, boundary_check, padding_option)
    p = _check_pointer(ptr, "load")
    if mask is None and other is not None:
        raise sem.error("load: other= needs a mask=; without a mask every lane is read")
    m = _mask(mask, _offsets(p).shape, "load") if mask is not None else None
    o = None
    if other is not None:
        o = sem.cast(sem.to_tensor(other, p.element_ty), p.element_ty)
    off, m, o = _align(p, m, o)
    operands = [tensor(p.base), off]
    if m is not None:
        operands.append(m)
        if o is not None:
            operands.append(o)
    return sem.emit(Kind.LOAD, operands)


@builtin
def store(ptr, value, mask=None, boundary_check=(), cache_modifier: str = "",
          eviction_policy: str = ""):
    """Store ``value`` (cast to the array's dtype, broadcast to the pointer's shape) to GM.
    Triton's ``cache_modifier`` and ``eviction_policy`` are accepted and change nothing.

    Where ``mask`` is false nothing is written.  With a block pointer, elements outside
    the checked bounds are not written.

    Example::

        nl.store(out_ptr + offs, y, mask=offs < n)
    """
    if isinstance(ptr, block_ptr):
        if mask is not None:
            raise sem.error("store to a block pointer takes boundary_check=, not mask=")
        return _block_store(ptr, value, boundary_check)
    p = _check_pointer(ptr, "store")
    _check_writable(p, "store")
    v = sem.cast(sem.to_tensor(value, p.element_ty), p.element_ty)
    m = _mask(mask, _offsets(p).shape, "store") if mask is not None else None
    _not_wider(_offsets(p).shape, v, m)
    off, m, v = _align(p, m, v)
    operands = [tensor(p.base), off, v] + ([m] if m is not None else [])
    sem.emit(Kind.STORE, operands, nresults=0)


def atomic_rmw(combine: str, ptr, value, mask, what: str, cmp=None) -> tensor:
    """The one place an atomic read-modify-write is built (``npujit/language/atomics.py``);
    compare-and-swap passes ``cmp`` (and then always a mask)."""
    p = _check_pointer(ptr, what)
    _check_writable(p, what)
    d = p.element_ty
    if d.is_bool or (d.is_int and d.bits < 32) or d.is_fp8:
        raise sem.error(f"{what} on {d} arrays is not supported (as in Triton, atomics take "
                        "32- and 64-bit ints and f16, bf16, f32, f64); keep the "
                        + ("sums in an f32 array" if d.is_fp8 else "counters in an int32 array"))
    v = sem.cast(sem.to_tensor(value, p.element_ty), p.element_ty)
    if cmp is not None:
        c = sem.cast(sem.to_tensor(cmp, p.element_ty), p.element_ty)
        v = sem.broadcast_to(v, sem.broadcast_shapes(v.shape, c.shape))
        mask = True if mask is None else mask
    m = _mask(mask, _offsets(p).shape, what) if mask is not None else None
    off, m, v = _align(p, m, v)
    operands = [tensor(p.base), off, v] + ([m] if m is not None else [])
    if cmp is not None:
        operands.append(sem.broadcast_to(c, v.shape))
    attrs = {} if combine == "add" else {"combine": combine}
    return sem.emit(Kind.ATOMIC_RMW, operands, attrs)


def _index_scalar(x, what: str) -> tensor:
    x = unwrap_constexpr(x)
    t = sem.to_tensor(x, T.int64)
    if t.shape != () or not (t.dtype.is_int or t.dtype.is_bool):
        raise sem.error(f"make_block_ptr: {what} entries must be integer scalars, got {t!r}")
    return sem.cast(t, T.int64)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order=None) -> block_ptr:
    """A pointer to a ``block_shape`` tile of the array ``base`` (of logical ``shape`` and
    element ``strides``) starting at ``offsets``.  ``base`` may be an array argument moved
    by a scalar (``base=q_ptr + z * stride_qz``, as Triton's attention tutorial writes):
    the block is then read as the pointer access it is, with the same bounds.

    Example::

        a_blk = nl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, 1),
                                  offsets=(pid_m * BM, 0), block_shape=(BM, BK), order=(1, 0))
    """
    if not isinstance(base, pointer):
        raise sem.error(f"make_block_ptr: base must be an array argument, got {base!r}")
    shift = None
    if base.offset is not None:     # base=Q + off_z * stride_qz + off_h * stride_qh
        if base.offset.shape != ():
            raise sem.error("make_block_ptr: base must be an array argument moved by a scalar "
                            f"offset, got a pointer tile of shape {list(base.offset.shape)}")
        shift = _index_scalar(base.offset, "base offset")
    r = len(block_shape)
    for name, seq in (("shape", shape), ("strides", strides), ("offsets", offsets)):
        if len(seq) != r:
            raise sem.error(f"make_block_ptr: {name} has {len(seq)} entries but block_shape "
                            f"has {r}; give one per axis")
    bs = []
    for b in block_shape:
        b = unwrap_constexpr(b)
        if isinstance(b, bool) or not isinstance(b, int) or b <= 0:
            raise sem.error(f"make_block_ptr: block_shape entries must be positive constant "
                            f"ints, got {b!r}")
        bs.append(b)
    order = tuple(order) if order is not None else tuple(range(r - 1, -1, -1))
    return block_ptr(base.base, [_index_scalar(s, "shape") for s in shape],
                     [_index_scalar(s, "strides") for s in strides],
                     [_index_scalar(o, "offsets") for o in offsets], bs, order, shift)


@builtin
def advance(ptr: block_ptr, offsets) -> block_ptr:
    """The block pointer moved by ``offsets`` (one per axis).

    Example::

        a_blk = nl.advance(a_blk, (0, BK))
    """
    if not isinstance(ptr, block_ptr):
        raise sem.error(f"advance needs a block pointer from make_block_ptr, got {ptr!r}")
    if len(offsets) != len(ptr.block_shape):
        raise sem.error(f"advance: {len(offsets)} offsets for a rank-{len(ptr.block_shape)} "
                        "block pointer")
    new = []
    for o, d in zip(ptr.offsets, offsets):
        d = unwrap_constexpr(d)
        new.append(o if isinstance(d, int) and not isinstance(d, bool) and d == 0
                   else sem.binary(Kind.ADD, o, _index_scalar(d, "advance offsets")))
    return block_ptr(ptr.base, ptr.shape, ptr.strides, new, ptr.block_shape, ptr.order,
                     ptr.shift)


def _block_operands(p: block_ptr):
    return [tensor(p.base), *p.shape, *p.strides, *p.offsets]


def _boundary(p: block_ptr, boundary_check) -> tuple:
    r = len(p.block_shape)
    out = []
    for a in boundary_check:
        if not isinstance(a, int) or not 0 <= a < r:
            raise sem.error(f"boundary_check axis {a!r} out of range for a rank-{r} block")
        out.append(a)
    return tuple(sorted(set(out)))


def _shifted(p: block_ptr, boundary_check) -> tuple:
    """A block pointer on a moved base (``base=Q + qvk_offset``) as the pointer access it
    is: ``(pointer tile, mask)``, element ``i`` at ``shift + sum_d (offsets[d] + i_d) *
    strides[d]``, the mask ``0 <= offsets[d] + i_d < shape[d]`` on the checked axes (None
    without any).  A block access's operands name the array itself; the pointer access
    takes the shift in its offsets, and affine-access makes it a strided copy again where
    it can (ir/passes/affine_access.py)."""
    r = len(p.block_shape)
    offs, mask = p.shift, None
    for d, (n, off, stride, size) in enumerate(zip(p.block_shape, p.offsets, p.strides,
                                                    p.shape)):
        lanes = sem.cast(sem.emit(Kind.ARANGE, [], {"start": 0, "end": n}), T.int64)
        coord = sem.binary(Kind.ADD, sem.reshape(lanes, tuple(n if a == d else 1
                                                              for a in range(r))), off)
        offs = sem.binary(Kind.ADD, offs, sem.binary(Kind.MUL, coord, stride))
        if d in boundary_check:
            inside = sem.binary(Kind.AND, sem.compare("ge", coord, sem.to_tensor(0, T.int64)),
                                sem.compare("lt", coord, size))
            mask = inside if mask is None else sem.binary(Kind.AND, mask, inside)
    offs = sem.broadcast_to(offs, p.block_shape)
    if mask is not None:
        mask = sem.broadcast_to(mask, p.block_shape)
    return pointer(p.base, offs), mask


def _block_load(p: block_ptr, boundary_check, padding_option: str) -> tensor:
    padding = {"": "zero", "zero": "zero", "nan": "nan"}.get(padding_option)
    if padding is None:
        raise sem.error(f"padding_option must be 'zero' or 'nan', got {padding_option!r}")
    if padding == "nan" and not p.element_ty.is_float:
        raise sem.error("padding_option='nan' needs a float array")
    checked = _boundary(p, boundary_check)
    if p.shift is not None:
        ptrs, mask = _shifted(p, checked)
        if mask is None:
            return load(ptrs)
        return load(ptrs, mask=mask, other=0.0 if padding == "zero" else float("nan"))
    attrs = {"block_shape": p.block_shape, "boundary_check": checked, "padding": padding}
    return sem.emit(Kind.BLOCK_LOAD, _block_operands(p), attrs)


def _block_store(p: block_ptr, value, boundary_check):
    if p.shift is not None:
        ptrs, mask = _shifted(p, _boundary(p, boundary_check))
        return store(ptrs, value, mask=mask)
    _check_writable(p, "store")
    v = sem.cast(sem.to_tensor(value, p.element_ty), p.element_ty)
    v = sem.broadcast_to(v, p.block_shape)
    attrs = {"block_shape": p.block_shape, "boundary_check": _boundary(p, boundary_check)}
    sem.emit(Kind.BLOCK_STORE, _block_operands(p) + [v], attrs, nresults=0)
