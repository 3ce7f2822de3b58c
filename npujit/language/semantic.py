"""Where the language builds IR: dtype promotion, broadcasting, casts and op emission.

User-facing functions (``npujit.language``) check and normalise their arguments, then call
here (Triton's core.py / semantic.py split).  Every op gets the user's source location, and
type-rule failures become a ``CompilationError`` at that line.

Example (inside a kernel)::

    c = binary(Kind.ADD, a, 1.0)   # literal takes a's dtype, result is a tensor
"""
from __future__ import annotations

from npujit.errors import CompilationError
from npujit.ir import Kind, TypeRuleError
from npujit.ir.ops import FLOAT, INFO, INT, INT_OR_BOOL, NUMBER
from npujit.ir import types as T

from .core import block_ptr, pointer, tensor, unwrap_constexpr
from .tracing import current

_INT_RANGE = {T.int8: (-2**7, 2**7 - 1), T.int16: (-2**15, 2**15 - 1),
              T.int32: (-2**31, 2**31 - 1), T.int64: (-2**63, 2**63 - 1),
              T.uint8: (0, 2**8 - 1), T.uint16: (0, 2**16 - 1), T.uint32: (0, 2**32 - 1),
              T.uint64: (0, 2**64 - 1)}


def error(message: str) -> CompilationError:
    """A compile error at the current user line."""
    ctx = current()
    return CompilationError(message, ctx.loc(), ctx.fn.name)


def emit(kind: Kind, operands, attrs=None, nresults: int = 1):
    """Create an op on the active trace; returns tensor(s) wrapping its results."""
    ctx = current()
    loc = ctx.loc()
    try:
        op = ctx.builder.create(kind, [o.handle for o in operands], attrs, loc=loc)
    except TypeRuleError as e:
        raise CompilationError(str(e), loc, ctx.fn.name) from None
    if nresults == 0:
        return op
    outs = [tensor(v) for v in op.results]
    return outs[0] if nresults == 1 else tuple(outs)


def constant(value, dtype: T.DType) -> tensor:
    ctx = current()
    return tensor(ctx.builder.constant(value, dtype, loc=ctx.loc()))


def literal_dtype(value, like: T.DType | None = None) -> T.DType:
    """The dtype a Python literal takes next to a tensor of dtype ``like`` (weak typing)."""
    if isinstance(value, bool):
        return like if like is not None else T.bool_
    if isinstance(value, int):
        if like is not None and (like.is_float or like.is_int):
            lo, hi = _INT_RANGE.get(like, (None, None))
            if like.is_float or lo <= value <= hi:
                return like
            raise error(f"integer literal {value} is out of range for {like} (as in Triton, a "
                        f"Python int next to a tensor takes the tensor's dtype); cast the "
                        f"tensor first, e.g. x.to(nl.int64)")
        if -2**31 <= value < 2**31:
            return T.int32
        if -2**63 <= value < 2**63:
            return T.int64
        if 2**63 <= value < 2**64:
            return T.uint64
        raise error(f"integer literal {value} does not fit in 64 bits")
    if isinstance(value, float):
        return like if like is not None and like.is_float else T.float32
    if value is None:
        raise error("None cannot be used in a kernel expression; was an array argument "
                    "passed as None? (check it with `if x_ptr is not None:`)")
    if isinstance(value, (pointer, block_ptr)):
        raise error(f"a {type(value).__name__} (an address, {value.dtype}) cannot be used as "
                    "a value here; read the memory it points to with nl.load")
    if _is_host_array(value):
        raise error(f"cannot use {describe_value(value)} in a kernel expression: a host "
                    "array (a global, a closure value) is not device memory; pass it as a "
                    "kernel argument, which makes it a pointer")
    raise error(f"cannot use {describe_value(value)} in a kernel expression; "
                "use a tensor, a number or a constexpr")


def _is_host_array(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and \
        not isinstance(value, (int, float, bool))


def describe_value(value) -> str:
    """How an error names a Python value: an array by type, dtype and shape (never its
    contents, which can be megabytes), anything else by its short repr.

    Example::

        >>> describe_value(np.zeros((2, 3), np.float32))
        'ndarray of float32 with shape (2, 3)'
    """
    if _is_host_array(value):
        return (f"{type(value).__name__} of {value.dtype} with shape "
                f"{tuple(value.shape)}")
    text = repr(value)
    return f"{type(value).__name__} value {text if len(text) <= 80 else text[:77] + '...'}"


def to_tensor(x, like: T.DType | None = None) -> tensor:
    """A tensor for ``x`` (a tensor already, or a Python number as a scalar constant)."""
    if isinstance(x, tensor):
        return x
    x = unwrap_constexpr(x)
    if hasattr(x, "dtype") and hasattr(x, "item") and getattr(x, "shape", None) == ():
        x = x.item()  # numpy scalar
    return constant(x, literal_dtype(x, like))


def cast(x: tensor, dtype: T.DType) -> tensor:
    if x.dtype == dtype:
        return x
    return emit(Kind.CAST, [x], {"dtype": dtype})


def bitcast(x: tensor, dtype: T.DType) -> tensor:
    """``x``'s bits read as ``dtype``, which must have its bit width (not bool)."""
    if x.dtype == dtype:
        return x
    if x.dtype.is_bool or dtype.is_bool or x.dtype.bits != dtype.bits:
        raise error(f"bitcast from {x.dtype} to {dtype} needs two dtypes of one bit width "
                    f"(not bool), got {x.dtype.bits} and {dtype.bits} bits; use .to({dtype!r}) "
                    "for a value conversion")
    return emit(Kind.BITCAST, [x], {"dtype": dtype})


def broadcast_shapes(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise error(f"tile shapes {list(a)} and {list(b)} do not broadcast; reshape one "
                        "or index with [:, None] / [None, :]")
        out.append(max(x, y))
    return tuple(out)


def broadcast_to(x: tensor, shape: tuple) -> tensor:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if x.shape == ():
        return emit(Kind.SPLAT, [x], {"shape": shape})
    if len(x.shape) > len(shape):
        raise error(f"cannot broadcast a tile of shape {list(x.shape)} to {list(shape)}")
    if len(x.shape) < len(shape):
        x = reshape(x, (1,) * (len(shape) - len(x.shape)) + x.shape)
    for s, d in zip(x.shape, shape):
        if s != d and s != 1:
            raise error(f"cannot broadcast a tile of shape {list(x.shape)} to {list(shape)}")
    if x.shape == shape:
        return x
    return emit(Kind.BROADCAST, [x], {"shape": shape})


def reshape(x: tensor, shape) -> tensor:
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    n = 1
    for s in shape:
        n *= s
    if n != x.numel:
        raise error(f"cannot reshape a tile of shape {list(x.shape)} ({x.numel} elements) to "
                    f"{list(shape)} ({n} elements)")
    return emit(Kind.RESHAPE, [x], {"shape": shape})


def promote_pair(a, b):
    """Tensors for ``a`` and ``b`` of one dtype and one shape."""
    if not isinstance(a, tensor) and not isinstance(b, tensor):
        a = to_tensor(a)
    if isinstance(a, tensor) and not isinstance(b, tensor):
        b = to_tensor(b, a.dtype)
    elif isinstance(b, tensor) and not isinstance(a, tensor):
        a = to_tensor(a, b.dtype)
    d = T.promote(a.dtype, b.dtype)
    a, b = cast(a, d), cast(b, d)
    shape = broadcast_shapes(a.shape, b.shape)
    return broadcast_to(a, shape), broadcast_to(b, shape)


def binary(kind: Kind, a, b) -> tensor:
    """An elementwise binary op with Triton's promotion and numpy broadcasting; operands
    are cast into the kind's domain (``ir/ops.py``): int math on bools, float math on ints.

    As in Triton, ``/``, ``//`` and ``%`` refuse two int tiles of different signedness,
    and ``>>`` is arithmetic when its left operand is signed, logical when unsigned
    (whatever the promoted dtype: int16 >> uint16 shifts the uint16 bits arithmetically).
    """
    if kind in (Kind.DIV, Kind.IDIV, Kind.REM):
        _same_signedness(kind, a, b)
    left_signed = isinstance(a, tensor) and a.dtype.is_int_signed()
    a, b = promote_pair(a, b)
    domain = INFO[kind].domain
    if kind is Kind.IDIV and a.dtype.is_float:
        return trunc(emit(Kind.DIV, [a, b]))  # the quotient toward zero, as ints divide
    if domain == FLOAT and not a.dtype.is_float:
        a, b = cast(a, T.float32), cast(b, T.float32)
    if domain in (INT, INT_OR_BOOL) and a.dtype.is_float:
        raise error(f"invalid operands of type {a.dtype} for bitwise {kind.value.split('.')[1]}: "
                    "it needs integer or bool tiles")
    if domain in (INT, NUMBER) and a.dtype.is_bool:
        a, b = cast(a, T.int32), cast(b, T.int32)
    if kind is Kind.SHR and left_signed and a.dtype.is_unsigned:
        signed = T.BY_NAME[a.dtype.name[1:]]          # ui16 -> i16: the same bits
        return cast(emit(kind, [cast(a, signed), cast(b, signed)]), a.dtype)
    return emit(kind, [a, b])


def _same_signedness(kind: Kind, a, b) -> None:
    if isinstance(a, tensor) and isinstance(b, tensor) and a.dtype.is_int and b.dtype.is_int \
            and a.dtype.is_unsigned != b.dtype.is_unsigned:
        raise error(f"Cannot use /, //, or % with {a.dtype!r} and {b.dtype!r} because they have "
                    "different signedness; cast them to the same signedness, e.g. "
                    f"y.to({a.dtype!r})")


def compare(predicate: str, a, b) -> tensor:
    a, b = promote_pair(a, b)
    return emit(Kind.CMP, [a, b], {"predicate": predicate})


def unary(kind: Kind, x, attrs=None) -> tensor:
    """An elementwise unary op, its operand cast into the kind's domain (``ir/ops.py``)."""
    x = to_tensor(x)
    domain = INFO[kind].domain
    if kind in (Kind.FLOOR, Kind.CEIL) and not x.dtype.is_float:
        return x                # already whole numbers
    if domain == FLOAT and not x.dtype.is_float:
        x = cast(x, T.float32)  # as numpy does: math on ints is float math
    if domain == NUMBER and x.dtype.is_bool:
        x = cast(x, T.int32)
    if domain == INT_OR_BOOL and x.dtype.is_float:
        raise error(f"~ needs an integer or bool tile, got {x.dtype}")
    return emit(kind, [x], attrs)


def trunc(x: tensor) -> tensor:
    """A float tile rounded toward zero: ceil below zero, floor elsewhere (NaN stays)."""
    negative = compare("lt", x, to_tensor(0, x.dtype))
    return where(negative, unary(Kind.CEIL, x), unary(Kind.FLOOR, x))


def where(cond, a, b) -> tensor:
    cond = to_tensor(cond)
    if not cond.dtype.is_bool:
        cond = emit(Kind.CMP, [cond, to_tensor(0, cond.dtype)] if cond.shape == () else
                    [cond, broadcast_to(to_tensor(0, cond.dtype), cond.shape)], {"predicate": "ne"})
    a, b = promote_pair(a, b)
    shape = broadcast_shapes(cond.shape, a.shape)
    return emit(Kind.SELECT, [broadcast_to(cond, shape), broadcast_to(a, shape),
                              broadcast_to(b, shape)])


def normalize_axis(x: tensor, axis: int, what: str) -> int:
    if not isinstance(axis, int):
        raise error(f"{what}: axis must be a constant int, got {axis!r}")
    r = len(x.shape)
    if not -r <= axis < r:
        raise error(f"{what}: axis {axis} is out of range for a tile of shape {list(x.shape)} "
                    f"(rank {r}); use an axis in [{-r}, {r - 1}]")
    return axis % r
