"""A numpy-backed stand-in for the few ``torch`` calls Triton's language tests make, so the
measurement in ``benchmarks/triton_test_core.py`` can run them on a machine without
torch.  Tensors are numpy arrays of a subclass with torch's method names (``.cpu()``,
``.numpy()``, ``.stride(d)`` in elements, ``.to(dtype)``...); the device argument is
ignored.  Anything it does not cover raises ``AttributeError`` naming "fake torch", which
the harness counts as a harness limit, not as an npujit failure.

Example::

    torch = make_module()
    x = torch.zeros((4,), dtype=torch.float32, device="cpu")
    x.cpu().numpy()
"""
from __future__ import annotations

import collections
import math
import types

import ml_dtypes
import numpy as np

_DTYPES = {
    "float16": np.float16, "half": np.float16, "float32": np.float32, "float": np.float32,
    "float64": np.float64, "double": np.float64, "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8, "int16": np.int16, "short": np.int16, "int32": np.int32, "int": np.int32,
    "int64": np.int64, "long": np.int64, "uint8": np.uint8, "uint16": np.uint16,
    "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
}


def _dtype(d):
    if d is None:
        return None
    if isinstance(d, str):
        return np.dtype(_DTYPES[d])
    return np.dtype(d)


class Tensor(np.ndarray):
    """A numpy array answering to torch's method names."""

    device = "cpu"
    requires_grad = False

    def cpu(self):
        return self

    def cuda(self):
        return self

    def numpy(self):
        return np.asarray(self)

    def detach(self):
        return self

    def clone(self):
        return self.copy()

    def contiguous(self):
        return np.ascontiguousarray(self).view(Tensor)

    def is_contiguous(self):
        return bool(self.flags.c_contiguous)

    def stride(self, dim=None):
        st = tuple(s // self.itemsize for s in self.strides)
        return st if dim is None else st[dim]

    def numel(self):
        return int(np.prod(self.shape, dtype=np.int64))     # .size is torch's method here

    def dim(self):
        return self.ndim

    def size(self, dim=None):  # noqa: D401 - torch's name
        return tuple(self.shape) if dim is None else self.shape[dim]

    def element_size(self):
        return self.itemsize

    def data_ptr(self):
        return self.ctypes.data

    def to(self, *args, **kwargs):
        d = kwargs.get("dtype")
        for a in args:
            if not isinstance(a, str):
                d = a
        return self if d is None else self.astype(_dtype(d)).view(Tensor)

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], type) and issubclass(shape[0], np.ndarray):
            return np.ndarray.view(self, shape[0])
        if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
            return np.ndarray.view(self, _dtype(shape[0]))
        return self.reshape(*shape)

    def float(self):
        return self.astype(np.float32).view(Tensor)

    def half(self):
        return self.astype(np.float16).view(Tensor)

    def int(self):
        return self.astype(np.int32).view(Tensor)

    def long(self):
        return self.astype(np.int64).view(Tensor)

    def bool(self):
        return self.astype(np.bool_).view(Tensor)

    def byte(self):
        return self.astype(np.uint8).view(Tensor)

    def permute(self, *dims):
        return self.transpose(*dims)

    def t(self):
        return self.T

    def new_empty(self, size, dtype=None, device=None, **_):
        return np.empty(tuple(size), _dtype(dtype) if dtype is not None else self.dtype).view(Tensor)

    def reshape_as(self, other):
        return self.reshape(np.shape(other))

    def unsqueeze(self, d):
        return np.expand_dims(self, d).view(Tensor)

    def flip(self, dims):
        return np.ascontiguousarray(np.flip(self, tuple(dims) if isinstance(dims, (tuple, list)) else dims)).view(Tensor)  # torch copies

    def abs(self):
        return np.abs(self)

    def isnan(self):
        return np.isnan(self)

    def isinf(self):
        return np.isinf(self)

    # torch converts a Python int compared with an int tensor to the tensor's dtype, wrapping
    # (int8 == 255 is int8 == -1; pytorch/pytorch#114679); numpy compares the values
    def _scalar(self, other):
        if type(other) is int and self.dtype.kind in "iu":
            return np.array(other).astype(self.dtype)
        return other

    def __eq__(self, other):
        return np.ndarray.__eq__(self, self._scalar(other))

    def __ne__(self, other):
        return np.ndarray.__ne__(self, self._scalar(other))

    def __lt__(self, other):
        return np.ndarray.__lt__(self, self._scalar(other))

    def __le__(self, other):
        return np.ndarray.__le__(self, self._scalar(other))

    def __gt__(self, other):
        return np.ndarray.__gt__(self, self._scalar(other))

    def __ge__(self, other):
        return np.ndarray.__ge__(self, self._scalar(other))

    def isfinite(self):
        return np.isfinite(self)

    @property
    def mT(self):                                 # torch's batched transpose: a view
        return np.swapaxes(self, -1, -2)

    def expand(self, *sizes):
        # a view as in torch, writeable like torch's (numpy's broadcast_to is read-only)
        v = np.broadcast_to(self, _shape(sizes))
        return np.lib.stride_tricks.as_strided(self, v.shape, v.strides).view(Tensor)

    def broadcast_to(self, size):
        return self.expand(tuple(size))

    def as_strided(self, size, stride, storage_offset=None):
        return _as_strided(self, size, stride, storage_offset)

    def unique(self):
        return np.unique(self).view(Tensor)

    def repeat_interleave(self, n, dim=None):
        return np.repeat(self, n, axis=dim).view(Tensor)

    def clamp_(self, min=None, max=None):
        np.clip(self, min, max, out=self)
        return self

    def fill_(self, v):
        self.fill(v)
        return self

    def zero_(self):
        self.fill(0)
        return self

    def copy_(self, other):
        self[...] = np.asarray(other)
        return self


def _numpy_kwargs(kwargs: dict) -> dict:
    """torch's ``dim=``/``keepdim=`` under numpy's names."""
    names = {"dim": "axis", "keepdim": "keepdims"}
    return {names.get(k, k): v for k, v in kwargs.items()}


def _t(a, dtype=None):
    a = np.asarray(a)
    if dtype is not None:
        a = a.astype(_dtype(dtype))
    return np.asarray(a, order="C").view(Tensor)     # ascontiguousarray would make 0-d 1-d


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _floating(d) -> bool:
    return d.kind == "f" or d.name.startswith(("bfloat16", "float8"))


def _storage(x):
    """The allocation under ``x`` as a 1-D array of x's dtype (torch's storage), and x's
    offset into it in elements."""
    root = x
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        raise RuntimeError("fake torch: as_strided needs a contiguous base allocation")
    raw = root.reshape(-1, order="A").view(np.uint8)
    start = x.ctypes.data - raw.ctypes.data
    storage = raw[start % x.itemsize:][:(raw.size - start % x.itemsize) // x.itemsize * x.itemsize]
    return storage.view(x.dtype), start // x.itemsize


def _as_strided(x, size, stride, storage_offset=None):
    """torch.as_strided: a view of x's storage; size, stride and offset count elements."""
    storage, offset = _storage(np.asarray(x))
    offset = offset if storage_offset is None else storage_offset
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} vs {len(size)}")
    if any(n < 0 for n in size) or any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError("as_strided: negative size, stride or storage offset")
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > storage.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{offset}, and itemsize {x.itemsize} requiring a storage size of "
                           f"{needed * x.itemsize} are out of bounds for storage of size "
                           f"{storage.size * x.itemsize}")
    return np.lib.stride_tricks.as_strided(storage[offset:], size,
                                           tuple(s * x.itemsize for s in stride)).view(Tensor)


_RETURN_TYPES = {name: collections.namedtuple(name, ("values", "indices"))
                 for name in ("min", "max", "cummax")}


def _min_max(name):
    """torch.min / torch.max: over all elements; (values, indices) along ``dim``; or the
    elementwise torch.minimum / torch.maximum of two tensors."""
    reduce, arg, pair = {"min": (np.min, np.argmin, np.minimum),
                         "max": (np.max, np.argmax, np.maximum)}[name]

    def fn(input, dim=None, keepdim=False, *, other=None):
        a = np.asarray(input)
        if isinstance(dim, np.ndarray):         # torch.min(input, other)
            dim, other = None, dim
        if other is not None:
            return _t(pair(a, np.asarray(other)))
        if dim is None:
            return _t(reduce(a))
        values = reduce(a, axis=dim, keepdims=keepdim)
        indices = np.expand_dims(arg(a, axis=dim), dim) if keepdim else arg(a, axis=dim)
        return _RETURN_TYPES[name](_t(values), _t(indices, np.int64))
    return fn


def _gather(input, dim, index, *, sparse_grad=False):
    """torch.gather: out[i][j] = input[index[i][j]][j] for dim 0 (and so on)."""
    a, idx = np.asarray(input), np.asarray(index)
    if idx.dtype != np.int64:
        raise RuntimeError("gather(): Expected dtype int64 for index")
    if idx.ndim != a.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    dim = dim % max(a.ndim, 1)
    for d in range(a.ndim):
        if d != dim and idx.shape[d] > a.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(idx.shape)}"
                               f" to be smaller than self {list(a.shape)} apart from dimension {dim}")
    if idx.size and (idx.min() < 0 or idx.max() >= a.shape[dim]):
        bad = idx[(idx < 0) | (idx >= a.shape[dim])].flat[0]
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {a.shape[dim]}")
    where = list(np.indices(idx.shape, sparse=True))
    where[dim] = idx
    return _t(a[tuple(where)])


def _var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """torch.var_mean: (var, mean); ``correction`` (default 1) is subtracted from the count,
    ``unbiased`` is the older spelling (True -> 1, False -> 0)."""
    a = np.asarray(input)
    if isinstance(dim, bool):       # var_mean(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError("var_mean: cannot set both unbiased and correction")
    if not _floating(a.dtype):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    ddof = correction if correction is not None else (1 if unbiased is None else int(unbiased))
    axis = tuple(dim) if isinstance(dim, (tuple, list)) else dim
    wide = a.astype(np.float64)     # torch accumulates in double on the CPU
    return (_t(np.var(wide, axis=axis, ddof=ddof, keepdims=keepdim), a.dtype),
            _t(np.mean(wide, axis=axis, keepdims=keepdim), a.dtype))


def _histc(input, bins=100, min=0, max=0):
    """torch.histc: ``bins`` equal-width bins over [min, max] (the data's own range when
    min == max); elements outside it (and NaN) are not counted, max falls in the last bin.
    Floating input only, as torch on the CPU; the result has the input's dtype."""
    a = np.asarray(input).ravel()
    if not _floating(a.dtype):
        raise RuntimeError(f"\"histogram_histc_cpu\" not implemented for '{a.dtype}'")
    if bins <= 0:
        raise RuntimeError("torch.histc: bins must be > 0")
    lo, hi = a.dtype.type(min), a.dtype.type(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and a.size:
        lo, hi = a.min(), a.max()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    kept = a[(a >= lo) & (a <= hi)]
    # torch's linear bin search, in the input's dtype: (x - lo) * bins / (hi - lo)
    pos = ((kept - lo) * a.dtype.type(bins) / (hi - lo)).astype(np.int64)
    pos[pos == bins] = bins - 1
    return _t(np.bincount(pos, minlength=bins), a.dtype)


def _erf(input):
    a = np.asarray(input)
    out = a.dtype if _floating(a.dtype) else np.float32     # integers promote, as in torch
    return _t(np.vectorize(math.erf, otypes=[np.float64])(a.astype(np.float64)), out)


def _cummax(input, dim=None, *, axis=None):
    """torch.cummax: (running max, index of it) along ``dim``.  As torch: a value equal to
    the running max takes over its index, and a NaN becomes the max from where it is.
    torch's argument parser takes numpy's ``axis`` for ``dim``."""
    dim = axis if dim is None else dim
    a = np.moveaxis(np.asarray(input), dim, 0)
    values, indices = np.empty_like(a), np.zeros(a.shape, np.int64)
    if a.shape[0]:
        best, at = a[0].copy(), np.zeros(a.shape[1:], np.int64)
        for i in range(a.shape[0]):
            x = a[i]
            take = np.isnan(x) | (~np.isnan(best) & (x >= best)) if _floating(a.dtype) else x >= best
            best, at = np.where(take, x, best), np.where(take, i, at)
            values[i], indices[i] = best, at
    return _RETURN_TYPES["cummax"](_t(np.moveaxis(values, 0, dim)), _t(np.moveaxis(indices, 0, dim)))


def make_module() -> types.ModuleType:
    """A fresh ``torch`` module object (install it in ``sys.modules``)."""
    torch = types.ModuleType("torch")
    torch.__fake__ = True
    torch.__version__ = "0.0+fake"
    state = {"rng": np.random.RandomState(0)}
    for name, d in _DTYPES.items():
        setattr(torch, name, np.dtype(d))
    torch.Tensor = Tensor
    torch.dtype = np.dtype
    torch.nan = float("nan")
    torch.inf = float("inf")
    torch.Size = tuple

    def factory(fill):
        def make(*size, dtype=None, device=None, **_):
            return _t(fill(_shape(size), _dtype(dtype) or np.float32))
        return make

    torch.zeros = factory(np.zeros)
    torch.ones = factory(np.ones)
    torch.empty = factory(np.zeros)
    torch.full = lambda size, fill_value, dtype=None, device=None, **_: _t(
        np.full(tuple(size), fill_value, _dtype(dtype) or np.asarray(fill_value).dtype))
    torch.zeros_like = lambda x, dtype=None, **_: _t(np.zeros_like(x, dtype=_dtype(dtype)))
    torch.ones_like = lambda x, dtype=None, **_: _t(np.ones_like(x, dtype=_dtype(dtype)))
    torch.empty_like = lambda x, dtype=None, **_: _t(np.zeros_like(x, dtype=_dtype(dtype)))
    torch.full_like = lambda x, v, dtype=None, **_: _t(np.full_like(x, v, dtype=_dtype(dtype)))
    torch.tensor = lambda data, dtype=None, device=None, **_: _t(data, dtype)
    torch.as_tensor = torch.tensor
    torch.from_numpy = lambda a: np.asarray(a).view(Tensor)
    torch.arange = lambda *a, dtype=None, device=None, **_: _t(np.arange(*a), dtype)

    def manual_seed(seed):
        state["rng"] = np.random.RandomState(seed)
    torch.manual_seed = manual_seed
    torch.randn = lambda *size, dtype=None, device=None, **_: _t(
        state["rng"].standard_normal(_shape(size)), dtype or np.float32)
    torch.rand = lambda *size, dtype=None, device=None, **_: _t(
        state["rng"].random_sample(_shape(size)), dtype or np.float32)

    def randint(low, high=None, size=None, dtype=None, device=None, **_):
        if size is None:         # torch.randint(high, size): two positional arguments
            high, size = (high, None) if high is None else (None, high)
        if high is None:
            low, high = 0, low
        return _t(state["rng"].randint(low, high, tuple(size)), dtype or np.int64)
    torch.randint = randint
    torch.randperm = lambda n, dtype=None, device=None, **_: _t(
        state["rng"].permutation(n), dtype or np.int64)
    for name in ("all", "any", "sum", "where", "isnan", "isinf", "abs", "exp", "log", "sqrt",
                 "maximum", "minimum", "ravel", "matmul", "cumsum", "logical_not", "logical_or"):
        fn = getattr(np, name)
        setattr(torch, name, (lambda f: lambda *a, **k: _t(f(*[np.asarray(x) for x in a],
                                                           **_numpy_kwargs(k))))(fn))

    def matmul(a, b):
        # torch accumulates half-precision products in f32 and rounds once; numpy's f16
        # matmul accumulates in f16
        a, b = np.asarray(a), np.asarray(b)
        out = np.result_type(a, b)
        if out.itemsize == 2 and out.kind == "f" or out.name == "bfloat16":
            return _t(np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(out))
        return _t(np.matmul(a, b))
    torch.matmul = matmul
    torch.equal = lambda a, b: bool(np.array_equal(np.asarray(a), np.asarray(b)))
    torch.allclose = lambda a, b, rtol=1e-5, atol=1e-8, equal_nan=False: bool(
        np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol, atol, equal_nan))
    torch.flatten = torch.ravel
    torch.transpose = lambda x, a, b: np.swapaxes(x, a, b)
    torch.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(
        allow_tf32=False, allow_bf16_reduced_precision_reduction=False)))
    torch.stack = lambda xs, dim=0: _t(np.stack([np.asarray(x) for x in xs], dim))
    torch.cat = lambda xs, dim=0: _t(np.concatenate([np.asarray(x) for x in xs], dim))
    torch.permute = lambda x, dims: np.transpose(x, dims)
    torch.finfo = lambda d: np.finfo(_dtype(d))
    torch.iinfo = lambda d: np.iinfo(_dtype(d))
    torch.is_tensor = lambda x: isinstance(x, Tensor)
    torch.min, torch.max = _min_max("min"), _min_max("max")
    torch.as_strided = _as_strided
    torch.gather = _gather
    torch.var_mean = _var_mean
    torch.histc = _histc
    torch.erf = _erf
    torch.cummax = _cummax

    testing = types.ModuleType("torch.testing")

    def assert_close(actual, expected, rtol=None, atol=None, equal_nan=True, **_):
        a, e = np.asarray(actual), np.asarray(expected)
        if a.dtype.kind in "iub" and e.dtype.kind in "iub":
            np.testing.assert_array_equal(a, e)
            return
        tol = {np.dtype(np.float16): (1e-3, 1e-5), np.dtype(ml_dtypes.bfloat16): (1.6e-2, 1e-5)}
        r, t = tol.get(a.dtype, (1.3e-6, 1e-5))
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64),
                                   rtol=r if rtol is None else rtol,
                                   atol=t if atol is None else atol, equal_nan=equal_nan)
    testing.assert_close = assert_close
    torch.testing = testing
    cuda = types.ModuleType("torch.cuda")
    cuda.is_available = lambda: False
    cuda.synchronize = lambda *a: None

    class CudaDevice:
        """torch.cuda.device: a context manager selecting a GPU; nothing to select here."""
        def __init__(self, device):
            self.idx = device

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    cuda.device = CudaDevice
    torch.cuda = cuda
    torch.version = types.SimpleNamespace(cuda=None, hip=None)

    def missing(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"fake torch (benchmarks/triton_fake_torch.py) has no '{name}'")
    torch.__getattr__ = missing
    return torch
