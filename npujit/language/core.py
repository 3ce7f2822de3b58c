"""The values a kernel computes with while it is traced: tensors, GM pointers, block pointers.

A ``tensor`` wraps one SSA value (a tile or a scalar); Python operators on it build IR.
A ``pointer`` is a kernel array argument plus an integer offset tensor (Triton's pointer
arithmetic).  A ``block_ptr`` describes a strided 2-D (or n-D) tile of an array.

Example (inside a kernel)::

    offs = pid * BLOCK + nl.arange(0, BLOCK)   # tensor<BLOCKxi32>
    x = nl.load(x_ptr + offs, mask=offs < n)    # pointer + tensor -> pointer
"""
from __future__ import annotations

import functools
import sys

from npujit.ir import Kind
from npujit.ir import types as T

from .tracing import current

# dtypes, as Triton spells them
float32 = T.float32
float16 = T.float16
bfloat16 = T.bfloat16
int8 = T.int8
int16 = T.int16
int32 = T.int32
int64 = T.int64
bool_ = T.bool_
int1 = T.bool_
float64 = T.float64
uint8 = T.uint8
uint16 = T.uint16
uint32 = T.uint32
uint64 = T.uint64
float8e4nv = T.float8e4nv   # OCP FP8 E4M3FN (torch.float8_e4m3fn): finite, max 448
float8e5 = T.float8e5       # OCP FP8 E5M2 (torch.float8_e5m2): IEEE-style, max 57344
dtype = T.DType


class const:
    """Marks a pointer parameter as read-only (``x_ptr: nl.const``, Triton's ``tl.const``):
    a store or an atomic through it is a compile error.

    Example::

        @npu_kernel
        def k(x_ptr: nl.const, out_ptr, BLOCK: nl.constexpr): ...
    """


class constexpr:
    """Marks a kernel parameter as a compile-time constant (``BLOCK: nl.constexpr``).

    Each distinct value compiles its own kernel; inside the kernel it is a plain Python value.

    Example::

        @npu_kernel
        def k(x_ptr, BLOCK: nl.constexpr): ...
    """

    def __init__(self, value):
        self.value = unwrap_constexpr(value)

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"

    def __eq__(self, other):  # Triton's: constexprs compare (and hash) by value
        return self.value == unwrap_constexpr(other)

    def __hash__(self):
        return hash(self.value)


def unwrap_constexpr(value):
    """``value``'s value if it is a :class:`constexpr`, else ``value`` itself (Triton's
    ``_unwrap_if_constexpr``): what a builtin does first with an argument that may come
    from a ``constexpr`` parameter.

    Example::

        >>> unwrap_constexpr(constexpr(4)), unwrap_constexpr(4)
        (4, 4)
    """
    return value.value if isinstance(value, constexpr) else value


class Shape(tuple):
    """A tile's shape: a tuple of ints that also equals the same list, as Triton's
    ``x.shape`` (a list) does, so ``nl.static_assert(x.shape == [BLOCK])`` holds."""

    __slots__ = ()

    def __eq__(self, other):
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__


def builtin(fn):
    """Marks a language function: calling it outside a traced kernel raises a clear error."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        current(f"nl.{fn.__name__}")
        return fn(*args, **kwargs)

    wrapper.__npujit_builtin__ = True
    return wrapper


def _sem():
    from . import semantic
    return semantic


# numpy ufuncs a kernel might call on a tile by habit -> the nl function to use instead
_NUMPY_MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt",
               "sin": "sin", "cos": "cos", "tanh": "tanh", "floor": "floor", "ceil": "ceil",
               "absolute": "abs", "maximum": "maximum", "minimum": "minimum", "rint": "floor",
               "log1p": "log", "expm1": "exp", "reciprocal": "rsqrt"}
# numpy ufuncs that are Python operators (np.float32(2) * x): (operator, reflected operator)
_UFUNC_OPERATORS = {
    "add": ("add", "radd"), "subtract": ("sub", "rsub"), "multiply": ("mul", "rmul"),
    "true_divide": ("truediv", "rtruediv"), "floor_divide": ("floordiv", "rfloordiv"),
    "remainder": ("mod", "rmod"), "power": ("pow", "rpow"), "bitwise_and": ("and", "rand"),
    "bitwise_or": ("or", "ror"), "bitwise_xor": ("xor", "rxor"),
    "left_shift": ("lshift", "rlshift"), "right_shift": ("rshift", "rrshift"),
    "less": ("lt", "gt"), "less_equal": ("le", "ge"), "greater": ("gt", "lt"),
    "greater_equal": ("ge", "le"), "equal": ("eq", "eq"), "not_equal": ("ne", "ne")}

# Language functions a tile also has as methods, as Triton's tl.tensor does:
# ``x.exp()`` is ``nl.exp(x)``, ``x.sum(1)`` is ``nl.sum(x, 1)``.
MEMBER_FUNCTIONS = frozenset({
    "abs", "argmax", "argmin", "associative_scan", "broadcast_to", "cdiv", "ceil", "cos",
    "cumprod", "cumsum", "erf", "exp", "exp2", "expand_dims", "floor", "log", "log2", "max",
    "min", "permute", "ravel", "reduce", "reduce_or", "reshape", "rsqrt", "sigmoid", "sin",
    "softmax", "sort", "split", "sqrt", "sum", "trans", "view", "xor_sum"})


class tensor:
    """A traced tile or scalar.  Supports arithmetic, comparisons, ``[:, None]`` indexing,
    ``.to(dtype)``, ``.T``, and Triton's tensor methods: ``x.f(...)`` is ``nl.f(x, ...)``
    for ``f`` in abs, argmax, argmin, associative_scan, broadcast_to, cdiv, ceil, cos,
    cumprod, cumsum, erf, exp, exp2, expand_dims, floor, log, log2, max, min, permute,
    ravel, reduce, reduce_or, reshape, rsqrt, sigmoid, sin, softmax, sort, split, sqrt,
    sum, trans, view, xor_sum.

    Example (inside a kernel)::

        y = (x * 2.0 + 1.0).to(nl.float16)
    """

    __slots__ = ("handle",)
    __array_priority__ = 1000  # so numpy scalars defer to our operators

    def __init__(self, handle):
        self.handle = handle

    # --- what it is ----------------------------------------------------------------------
    @property
    def type(self) -> T.TensorType:
        return self.handle.type

    @property
    def shape(self) -> tuple:
        return Shape(self.handle.type.shape)

    @property
    def dtype(self) -> T.DType:
        return self.handle.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return self.handle.type.numel

    def __repr__(self) -> str:
        return f"nl.tensor<{self.handle.type}>"

    __hash__ = object.__hash__

    # --- Python protocols a traced value cannot honour -----------------------------------
    def __bool__(self):
        raise _sem().error(
            "a traced tensor cannot be used as a Python bool here (`assert`, `bool(x)`, a "
            "chained comparison `a < b < c`, sorted()): its value is only known when "
            "the kernel runs. `if`, `while`, `and`, `or`, `not` and `a if c else b` work on "
            "run-time scalars; use nl.where(cond, a, b) to choose values per element, "
            "nl.device_assert to check them, or make the condition a constexpr parameter.")

    def __getattr__(self, name):
        if name in MEMBER_FUNCTIONS:      # x.exp() -> nl.exp(x)
            return functools.partial(getattr(sys.modules["npujit.language"], name), self)
        raise AttributeError(f"'tensor' object has no attribute '{name}'")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # numpy next to a traced tensor: its operators are ours, its math is an error
        ops = _UFUNC_OPERATORS.get(ufunc.__name__)
        if ops and method == "__call__" and not kwargs and len(inputs) == 2:
            a, b = inputs
            return getattr(a, f"__{ops[0]}__")(b) if a is self else getattr(b, f"__{ops[1]}__")(a)
        name = ufunc.__name__
        raise _sem().error(f"numpy's np.{name} cannot run on a traced tensor inside a kernel; "
                           f"use nl.{_NUMPY_MATH.get(name, name)}")

    def __index__(self):
        raise _sem().error(
            "a traced tensor cannot be used where Python needs an int (a shape, a range bound "
            "of nl.static_range, an index): use a constexpr parameter, or nl.range for loops.")

    __int__ = __index__

    def __float__(self):
        raise _sem().error("a traced tensor cannot be converted to a Python float")

    def __iter__(self):
        raise _sem().error(
            f"cannot iterate over or unpack a traced tensor ({self.handle.type}); use "
            "nl.range or index math to walk it.  Unpacking 'a, b = f(...)' needs f to return "
            "a tuple: nl.topk returns (values, indices), but Triton's tl.topk "
            "(npujit.triton.language) returns the values alone")

    def __len__(self):
        raise _sem().error("len() of a traced tensor is not defined; use .shape")

    # --- arithmetic ----------------------------------------------------------------------
    def __add__(self, o):
        if isinstance(o, pointer):
            return o + self
        return _sem().binary(Kind.ADD, self, o)

    def __radd__(self, o):
        return _sem().binary(Kind.ADD, o, self)

    def __sub__(self, o):
        return _sem().binary(Kind.SUB, self, o)

    def __rsub__(self, o):
        return _sem().binary(Kind.SUB, o, self)

    def __mul__(self, o):
        return _sem().binary(Kind.MUL, self, o)

    def __rmul__(self, o):
        return _sem().binary(Kind.MUL, o, self)

    def __truediv__(self, o):
        return _sem().binary(Kind.DIV, self, o)

    def __rtruediv__(self, o):
        return _sem().binary(Kind.DIV, o, self)

    def __floordiv__(self, o):
        return _sem().binary(Kind.IDIV, self, o)

    def __rfloordiv__(self, o):
        return _sem().binary(Kind.IDIV, o, self)

    def __mod__(self, o):
        return _sem().binary(Kind.REM, self, o)

    def __rmod__(self, o):
        return _sem().binary(Kind.REM, o, self)

    def __pow__(self, o):
        return _sem().binary(Kind.POW, self, o)

    def __rpow__(self, o):
        return _sem().binary(Kind.POW, o, self)

    def __and__(self, o):
        return _sem().binary(Kind.AND, self, o)

    def __rand__(self, o):
        return _sem().binary(Kind.AND, o, self)

    def __or__(self, o):
        return _sem().binary(Kind.OR, self, o)

    def __ror__(self, o):
        return _sem().binary(Kind.OR, o, self)

    def __xor__(self, o):
        return _sem().binary(Kind.XOR, self, o)

    def __rxor__(self, o):
        return _sem().binary(Kind.XOR, o, self)

    def __lshift__(self, o):
        return _sem().binary(Kind.SHL, self, o)

    def __rlshift__(self, o):
        return _sem().binary(Kind.SHL, o, self)

    def __rshift__(self, o):
        return _sem().binary(Kind.SHR, self, o)

    def __rrshift__(self, o):
        return _sem().binary(Kind.SHR, o, self)

    def __neg__(self):
        return _sem().unary(Kind.NEG, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _sem().unary(Kind.ABS, self)

    def __invert__(self):
        return _sem().unary(Kind.NOT, self)

    # --- comparisons (return bool tensors) ------------------------------------------------
    def __lt__(self, o):
        return _sem().compare("lt", self, o)

    def __le__(self, o):
        return _sem().compare("le", self, o)

    def __gt__(self, o):
        return _sem().compare("gt", self, o)

    def __ge__(self, o):
        return _sem().compare("ge", self, o)

    def __eq__(self, o):
        return _sem().compare("eq", self, o)

    def __ne__(self, o):
        return _sem().compare("ne", self, o)

    # --- shape ---------------------------------------------------------------------------
    def __getitem__(self, idx):
        """Only ``None`` (new axis) and ``:`` (keep axis) are allowed: ``x[:, None]``."""
        if not isinstance(idx, tuple):
            idx = (idx,)
        shape, k = [], 0
        for i in idx:
            if i is None:
                shape.append(1)
            elif isinstance(i, slice) and i == slice(None):
                if k >= len(self.shape):
                    raise _sem().error(f"too many indices for a tile of shape {list(self.shape)}")
                shape.append(self.shape[k])
                k += 1
            elif i is Ellipsis:
                n_rest = sum(1 for j in idx if j is not None and j is not Ellipsis)
                take = len(self.shape) - k - (n_rest - sum(1 for j in idx[:idx.index(i)]
                                                             if j is not None))
                shape.extend(self.shape[k:k + take])
                k += take
            else:
                raise _sem().error(
                    f"unsupported tensor index {i!r}: tile indexing supports only None and "
                    "':' (e.g. x[:, None]); use nl.load with offsets to pick elements")
        shape.extend(self.shape[k:])
        return _sem().reshape(self, tuple(shape))

    def item(self) -> "tensor":
        """The one element of a 1-element tile, as a scalar (Triton's ``tensor.item()``)."""
        if self.numel != 1:
            raise _sem().error(f".item() needs a tile of one element, got shape {list(self.shape)}")
        return _sem().reshape(self, ())

    def to(self, dtype: T.DType, fp_downcast_rounding=None, bitcast: bool = False) -> "tensor":
        """Cast to ``dtype`` (round to nearest even for floats, truncation float->int);
        with ``bitcast=True`` the same bits read as ``dtype`` (of the same bit width);
        ``fp_downcast_rounding="rtz"`` rounds an f32/f64 -> f16/bf16 cast toward zero."""
        dtype = unwrap_constexpr(dtype)
        if not isinstance(dtype, T.DType):
            raise _sem().error(f".to() needs an nl dtype such as nl.float16, got {dtype!r}")
        fp_downcast_rounding = unwrap_constexpr(fp_downcast_rounding)
        if fp_downcast_rounding not in (None, "rtne", "rtz"):
            raise _sem().error(f".to(): fp_downcast_rounding={fp_downcast_rounding!r} is not "
                               "supported; float casts round to nearest even (None or 'rtne') "
                               "or toward zero ('rtz')")
        if fp_downcast_rounding == "rtz" and not bitcast and dtype != self.dtype:
            from .math import toward_zero
            return toward_zero(self, dtype)
        return _sem().bitcast(self, dtype) if bitcast else _sem().cast(self, dtype)

    def cast(self, dtype: T.DType, fp_downcast_rounding=None, bitcast: bool = False) -> "tensor":
        """``x.to(dtype)`` under Triton's other spelling."""
        return self.to(dtype, fp_downcast_rounding, bitcast)

    @property
    def T(self) -> "tensor":
        from .shape import trans
        return trans(self)



class pointer_type:
    """The type of a pointer value: ``x_ptr.dtype.element_ty`` is its element dtype.

    Example (inside a kernel)::

        acc = nl.zeros((BLOCK,), x_ptr.dtype.element_ty)
    """

    def __init__(self, element_ty: T.DType):
        self.element_ty = element_ty

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty!r}>"


class pointer:
    """A GM array argument plus an integer element-offset tensor (None = offset 0).

    Every array argument of a kernel is a pointer; adding an integer tile gives a tile of
    addresses for ``nl.load`` / ``nl.store``.

    Example (inside a kernel)::

        ptrs = x_ptr + row * stride + nl.arange(0, BLOCK)   # a pointer tile
        x = nl.load(ptrs, mask=nl.arange(0, BLOCK) < n)
    """

    __slots__ = ("base", "offset")

    def __init__(self, base, offset: tensor | None = None):
        self.base = base          # the IR Value of the kernel argument (!npu.ptr<T>)
        self.offset = offset

    @property
    def element_ty(self) -> T.DType:
        return self.base.type.dtype

    @property
    def dtype(self) -> pointer_type:
        return pointer_type(self.element_ty)

    type = dtype        # Triton's ``ptr.type.element_ty`` (its tutorials' spelling)

    @property
    def shape(self) -> tuple:
        return () if self.offset is None else self.offset.shape

    def __repr__(self) -> str:
        return f"nl.pointer<{self.element_ty}, shape={list(self.shape)}>"

    def __add__(self, o):
        sem = _sem()
        if isinstance(o, pointer):
            raise sem.error("cannot add two pointers; add an integer offset to one pointer")
        o = sem.to_tensor(o)
        if not (o.dtype.is_int or o.dtype.is_bool):
            raise sem.error(f"pointer offsets must be integers, got a {o.dtype} tensor")
        if self.offset is None:
            return pointer(self.base, o)
        return pointer(self.base, sem.binary(Kind.ADD, self.offset, o))

    __radd__ = __add__

    def __sub__(self, o):
        return self + (-_sem().to_tensor(o))

    def __bool__(self):
        raise _sem().error("a pointer cannot be used as a Python bool")

    def _no_arithmetic(self, *_):
        raise _sem().error("a pointer takes only + and - of an integer offset (ptr + offs); "
                           "compute on the offsets instead, e.g. ptr + offs * 2, or load the "
                           "values first with nl.load")

    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = \
        __mod__ = __rmod__ = __neg__ = __rsub__ = __pow__ = __and__ = __or__ = \
        __lshift__ = __rshift__ = _no_arithmetic

    def to(self, dtype, bitcast: bool = False) -> "pointer":
        """``ptr.to(nl.pointer_type(T))`` (Triton's pointer cast): only to the pointer's
        own type here, since an argument's element type is its array's dtype."""
        target = dtype.element_ty if isinstance(dtype, pointer_type) else None
        if target != self.element_ty:
            raise _sem().error(f"cannot cast a pointer to {self.element_ty} arrays to "
                               f"{dtype!r}: the element type of a pointer is the dtype of the "
                               "array passed; pass an array of the dtype you want to read or "
                               "write")
        return self

    def __getitem__(self, idx):
        if self.offset is None:     # a scalar pointer: each None adds an axis (as Triton)
            idx = idx if isinstance(idx, tuple) else (idx,)
            bad = [i for i in idx if i is not None and i != slice(None)]
            if bad:
                raise _sem().error(f"unsupported tensor index {bad[0]!r}: a scalar pointer "
                                   "takes only None and ':' indices, e.g. ptr[None, :]; add "
                                   "an offset tile to address elements, e.g. ptr + 10 + "
                                   "nl.arange(0, BLOCK)")
            return pointer(self.base, _sem().to_tensor(0)[tuple(i for i in idx if i is None)])
        return pointer(self.base, self.offset[idx])

    def broadcast_to(self, shape):
        off = self.offset if self.offset is not None else _sem().to_tensor(0)
        return pointer(self.base, _sem().broadcast_to(off, tuple(shape)))


class block_ptr:
    """A strided n-D tile of an array: made by ``nl.make_block_ptr``, moved by ``nl.advance``.

    Example (inside a kernel)::

        blk = nl.make_block_ptr(a_ptr, shape=(M, K), strides=(K, 1), offsets=(0, 0),
                                block_shape=(64, 32))
        a = nl.load(blk, boundary_check=(0, 1))
    """

    __slots__ = ("base", "shape", "strides", "offsets", "block_shape", "order", "shift")

    def __init__(self, base, shape, strides, offsets, block_shape, order, shift=None):
        self.base = base                  # IR Value of the kernel argument
        self.shape = tuple(shape)         # scalar i64 tensors
        self.strides = tuple(strides)     # scalar i64 tensors
        self.offsets = tuple(offsets)     # scalar i64 tensors
        self.block_shape = tuple(block_shape)  # Python ints
        self.order = tuple(order)
        self.shift = shift                # elements the base is moved by (a scalar i64), or None

    @property
    def element_ty(self) -> T.DType:
        return self.base.type.dtype

    @property
    def dtype(self) -> pointer_type:
        """``blk.dtype.element_ty`` (and Triton's ``blk.type.element_ty``): the element
        dtype."""
        return pointer_type(self.element_ty)

    type = dtype

    def __repr__(self) -> str:
        return f"nl.block_ptr<{self.element_ty}, block={list(self.block_shape)}>"

    def __bool__(self):
        raise _sem().error("a block pointer cannot be used as a Python bool")
