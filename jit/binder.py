"""Launch-time argument handling: classify each argument for the specialisation key,
validate it with a message that names it, and turn it into what a backend runs on.

Arrays (numpy, anything with ``__array__`` or DLPack such as torch CPU tensors) become
flat 1-D views (``!npu.ptr<T>`` in the IR); ints become i32 scalars when they fit in
32 bits, i64 when they fit in 64, ui64 in [2^63, 2^64) (Triton's rule: offsets computed from them are then 4 B per
lane in UB, not 8), floats f32, bools i1; the width is part of the specialisation key, so
a launch with ``n = 2**31`` compiles an i64 variant.  ``None`` is passed through to the
traced function (part of the key); constexprs are values.

Example::

    >>> arg_signature("x", np.zeros((4, 8), np.float16))
    ('A', 'f16', 2, True)
    >>> arg_signature("x", np.zeros((4, 8), np.float16).T)    # column-major: its storage
    ('A', 'f16', 2, 'F')
    >>> arg_signature("n", 4096), arg_signature("n", 2**31)
    (('S', 'i32'), ('S', 'i64'))
"""
from __future__ import annotations

import numbers

import numpy as np

from npujit.ir import types as T

from npujit.errors import ArgumentOverflowError, LaunchError

_SUPPORTED = ", ".join(T.PUBLIC_NAMES[d.name] for d in T.ALL_DTYPES)
# torch dtypes numpy lacks -> the ml_dtypes type their arrays are viewed as
_TORCH_ML_DTYPES = {"torch.bfloat16": "bfloat16", "torch.float8_e4m3fn": "float8_e4m3fn",
                    "torch.float8_e5m2": "float8_e5m2"}


def to_numpy(value, name: str) -> np.ndarray:
    """A numpy view of an array-like argument (no copy for numpy and torch CPU tensors)."""
    if isinstance(value, np.ndarray):
        return value
    mod = type(value).__module__
    if mod.startswith("torch"):
        dev = getattr(value, "device", None)
        if dev is not None and getattr(dev, "type", "cpu") != "cpu":
            raise LaunchError(f"argument '{name}': a tensor on device '{dev}' cannot be used; "
                              "npujit runs on host memory — pass tensor.cpu()")
        if getattr(value, "requires_grad", False):
            value = value.detach()
        ml_name = _TORCH_ML_DTYPES.get(str(getattr(value, "dtype", "")))
        if ml_name is not None:         # numpy has no such dtype: view the bits
            import torch
            bits = torch.int16 if ml_name == "bfloat16" else torch.uint8
            return value.view(bits).numpy().view(T.ml_dtypes_numpy(ml_name))
        return value.numpy()
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except Exception as e:  # pragma: no cover - depends on the producer
            raise LaunchError(f"argument '{name}': could not read it through DLPack: {e}") from None
    if hasattr(value, "__array__"):
        return np.asarray(value)
    raise LaunchError(f"argument '{name}': expected an array, a number or None, got "
                      f"{type(value).__name__}")


def _is_array(value) -> bool:
    return isinstance(value, np.ndarray) or hasattr(value, "__array__") \
        or hasattr(value, "__dlpack__")


def arg_signature(name: str, value):
    """The part of the specialisation key for one runtime argument (validated)."""
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return ("S", "i1")
    if isinstance(value, numbers.Integral):
        v = int(value)
        if not -2**63 <= v < 2**64:
            raise ArgumentOverflowError(f"argument '{name}': integer {v} does not fit in 64 "
                                        "bits (i64 or ui64); pass it as two halves or a float")
        if v >= 2**63:
            return ("S", "ui64")
        return ("S", "i32") if -2**31 <= v < 2**31 else ("S", "i64")
    if isinstance(value, numbers.Real):
        return ("S", "f32")
    if isinstance(value, numbers.Complex):
        raise LaunchError(f"argument '{name}': complex numbers are not supported")
    if _is_array(value):
        a = to_numpy(value, name)
        d = T.dtype_of_numpy(a.dtype)
        if d is None:
            raise LaunchError(f"argument '{name}': arrays of dtype {a.dtype} are not "
                              f"supported; supported dtypes: {_SUPPORTED}")
        if not a.flags.aligned:
            raise LaunchError(f"argument '{name}': its data is not aligned to its "
                              f"{a.itemsize}-byte element size (a view at an odd byte offset "
                              "of a buffer?); the NPU's copies need aligned addresses, so "
                              "pass an aligned copy, e.g. np.array(x)")
        contiguous = bool(a.flags.c_contiguous)
        if not contiguous and any(st < 0 or st % a.itemsize for st in a.strides):
            raise LaunchError(f"argument '{name}': strides {a.strides} are negative or not a "
                              "multiple of the element size; pass np.ascontiguousarray(...)")
        # column-major: no gaps, so the pointer addresses its storage as Triton's does
        # (a kernel may write it linearly); "F" keeps it a view (flat_view), never a copy
        return ("A", d.name, a.ndim, True if contiguous else "F" if a.flags.f_contiguous
                else False)
    raise LaunchError(f"argument '{name}': expected an array, a number or None, got "
                      f"{type(value).__name__} {value!r}")


def ir_type(sig):
    """The IR type of a runtime argument with signature ``sig``."""
    if sig[0] == "A":
        return T.PtrType(T.BY_NAME[sig[1]])
    return T.scalar(T.BY_NAME[sig[1]])


def flat_view(a: np.ndarray, name: str) -> np.ndarray:
    """A 1-D view whose element 0 is ``a``'s first element and that spans all of ``a``.

    Kernels address arrays with their own element strides, so a strided view works as
    long as its strides are non-negative multiples of the itemsize.
    """
    if a.flags.c_contiguous:
        return a.reshape(-1)
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        raise LaunchError(f"argument '{name}': strides {a.strides} are negative or not a "
                          "multiple of the element size; pass np.ascontiguousarray(...)")
    if a.size == 0:
        return a.reshape(-1)
    span = 1 + sum((n - 1) * (s // item) for n, s in zip(a.shape, a.strides))
    return np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,))


def runtime_value(sig, value, name: str):
    """What the backend receives for one runtime argument."""
    if sig[0] == "A":
        a = value if isinstance(value, np.ndarray) else to_numpy(value, name)
        return flat_view(a, name)
    if sig[1] == "i1":
        return bool(value)
    if sig[1] in ("i32", "i64", "ui64"):
        return int(value)
    return float(value)


def normalize_grid(grid, name: str) -> tuple:
    """A 3-tuple of ints >= 0 from a user grid (int or tuple of up to 3 ints); a 0 means
    no programs, and the launch does nothing (as in Triton)."""
    if isinstance(grid, numbers.Integral):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise LaunchError(f"kernel '{name}': grid must be an int or a tuple of 1 to 3 ints "
                          f"(or a callable returning one), got {grid!r}")
    out = []
    for i, g in enumerate(grid):
        if isinstance(g, bool) or not isinstance(g, numbers.Integral):
            raise LaunchError(f"kernel '{name}': grid[{i}] must be an int, got {g!r}")
        if g < 0:
            raise LaunchError(f"kernel '{name}': grid[{i}] = {g}; a grid dimension cannot be "
                              "negative (a grid of 0 programs launches nothing)")
        if g > 2**31 - 1:
            raise LaunchError(f"kernel '{name}': grid[{i}] = {g} exceeds 2**31-1 programs")
        out.append(int(g))
    while len(out) < 3:
        out.append(1)
    return tuple(out)


def reinterpret(x, dtype):
    """``x``'s memory viewed as elements of ``dtype`` (an ``nl`` dtype of the same element
    size), without a copy, as Triton's ``triton.reinterpret``: a kernel writing the
    result writes ``x``.  A torch tensor gives a torch view (``x.view(torch.float8_e4m3fn)``)
    when torch has the dtype, else a numpy view; a numpy array gives a numpy view (fp8
    and bf16 as ml_dtypes' types).

    Example::

        >>> import npujit.language as nl
        >>> bits = np.array([0x38, 0xb8], np.uint8)
        >>> reinterpret(bits, nl.float8e4nv).astype(np.float32)
        array([ 1., -1.], dtype=float32)
    """
    if not isinstance(dtype, T.DType):
        raise TypeError(f"reinterpret: dtype must be an nl dtype such as nl.float8e4nv, "
                        f"got {dtype!r}")
    if type(x).__module__.startswith("torch"):
        import torch
        torch_dtype = getattr(torch, dtype.np_name, None)
        if isinstance(torch_dtype, torch.dtype) and x.element_size() == dtype.itemsize:
            return x.view(torch_dtype)
    a = to_numpy(x, "x")
    if a.itemsize != dtype.itemsize:
        raise TypeError(f"reinterpret: {dtype!r} elements are {dtype.itemsize} B but the "
                        f"array's {a.dtype} elements are {a.itemsize} B; reinterpret only "
                        "changes how bits are read, so pick an array of the same element size")
    return np.ndarray.view(a, dtype.np)       # (an ndarray subclass keeps its class)
