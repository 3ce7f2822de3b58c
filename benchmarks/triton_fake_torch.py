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

    def unsqueeze(self, d):
        return np.expand_dims(self, d).view(Tensor)

    def flip(self, dims):
        return np.ascontiguousarray(np.flip(self, tuple(dims) if isinstance(dims, (tuple, list)) else dims)).view(Tensor)  # torch copies

    def abs(self):
        return np.abs(self)

    def expand(self, *sizes):
        return np.broadcast_to(self, _shape(sizes)).view(Tensor)

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
    return np.ascontiguousarray(a).view(Tensor)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


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
    torch.full = lambda size, v, dtype=None, device=None, **_: _t(
        np.full(tuple(size), v, _dtype(dtype) or np.asarray(v).dtype))
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
        if high is None:
            low, high = 0, low
        return _t(state["rng"].randint(low, high, tuple(size)), dtype or np.int64)
    torch.randint = randint
    for name in ("all", "any", "sum", "where", "isnan", "abs", "exp", "log", "sqrt",
                 "maximum", "minimum", "ravel", "matmul", "cumsum"):
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
    torch.cuda = cuda
    torch.version = types.SimpleNamespace(cuda=None, hip=None)

    def missing(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"fake torch (benchmarks/triton_fake_torch.py) has no '{name}'")
    torch.__getattr__ = missing
    return torch
