"""Random kernel inputs with the values that break kernels: NaN, ±inf, -0.0, subnormals,
the largest finite values, and the integer extremes.

This is the differential fuzzer's input generator (tests/fuzz/ imports it from here): most
values are ordinary (a normal distribution times 3 for floats, -50..49 for wide ints, the
whole range for 8-bit ints), and a fraction ``special`` of them is drawn from
``SPECIAL_VALUES``.  A seed gives the same arrays on every machine.

Example::

    >>> import numpy as np
    >>> x, y = random_inputs(((4, 8), np.float32), (16, "int8"), seed=1)
    >>> x.shape, x.dtype, y.dtype
    ((4, 8), dtype('float32'), dtype('int8'))
    >>> a = random_array(1000, np.float16, seed=0)
    >>> bool(np.isnan(a).any() and np.isinf(a).any())
    True
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

# Per float dtype: NaN, ±inf, ±0, a positive and a negative subnormal, ordinary values, and
# values near the largest finite magnitude.
SPECIAL_VALUES = {
    "float64": [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e-310, 1.0, -2.5, 1e300, -1e300],
    "float32": [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, 1.0, -2.5, 1e30, -1e30],
    "float16": [np.nan, np.inf, -np.inf, 0.0, -0.0, 6e-8, -3e-5, 1.0, -2.5, 65504.0, -65504.0],
    "bfloat16": [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, 1.0, -2.5, 1e30],
}
# Share of special values when ``special`` is not given: floats, then integers.
FLOAT_SPECIAL = 0.25
INT_SPECIAL = 0.15


def as_dtype(dtype) -> np.dtype:
    """A numpy dtype from a numpy/ml_dtypes dtype, its name, or an ``nl`` dtype."""
    if hasattr(dtype, "np") and not isinstance(dtype, np.dtype):      # nl.float16 & co.
        return np.dtype(dtype.np)
    if dtype in ("bfloat16", "bf16"):
        return BFLOAT16
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a numpy dtype, its name or an nl dtype, got "
                        f"{dtype!r}") from None


def random_array(shape, dtype, rng: np.random.Generator | None = None, *, seed=None,
                 special: float | None = None) -> np.ndarray:
    """An array of ``shape`` (an int or a tuple) and ``dtype`` (numpy dtype, name such as
    ``"bfloat16"``, or ``nl`` dtype), a share ``special`` of its values special (default
    0.25 for floats, 0.15 for integers; 0 gives only ordinary values).  Draws from ``rng``,
    else from ``np.random.default_rng(seed)``.

    Example::

        >>> random_array(3, "int32", seed=0, special=0).tolist()
        [35, 13, 1]
    """
    dt = as_dtype(dtype)
    if rng is None:
        rng = np.random.default_rng(seed)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    size = int(np.prod(shape, dtype=np.int64))
    if dt == np.bool_:
        return rng.random(size).reshape(shape) < 0.5
    if dt.kind == "f" or dt == BFLOAT16:
        vals = rng.standard_normal(size) * 3
        share = FLOAT_SPECIAL if special is None else special
        chosen = rng.random(size) < share
        vals[chosen] = rng.choice(SPECIAL_VALUES[dt.name], int(chosen.sum()))
        with np.errstate(over="ignore"):
            wide = vals if dt == np.float64 else vals.astype(np.float32)
            return wide.astype(dt).reshape(shape)
    if dt.kind not in "iu":
        raise TypeError(f"random_array: unsupported dtype {dt}")
    info = np.iinfo(dt)
    if dt.itemsize == 1:
        vals = rng.integers(int(info.min), int(info.max) + 1, size)
    else:
        vals = rng.integers(max(-50, int(info.min)), 50 if info.min < 0 else 100, size)
    share = INT_SPECIAL if special is None else special
    chosen = rng.random(size) < share
    extremes = [info.min, info.max, 0] + ([-1] if info.min < 0 else [1])
    vals[chosen] = rng.choice(extremes, int(chosen.sum()))
    return vals.astype(dt).reshape(shape)


def random_inputs(*specs, seed=0, special: float | None = None) -> list[np.ndarray]:
    """One array per ``(shape, dtype)`` in ``specs``, all drawn from one generator seeded
    with ``seed`` (an int or a sequence of ints), so the same call gives the same arrays.

    Example::

        >>> x, w = random_inputs((128, np.float32), ((8, 128), "bfloat16"), seed=3)
        >>> w.dtype.name
        'bfloat16'
    """
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise TypeError(f"random_inputs takes (shape, dtype) pairs, got {spec!r}")
        out.append(random_array(spec[0], spec[1], rng, special=special))
    return out
