"""``assert_close``: compare a kernel's output with the expected one, dtype-aware.

Default tolerances per dtype (the less precise of the two arrays' dtypes decides; these are
the defaults ``torch.testing.assert_close`` uses, so a test ported from torch keeps them):

=========  ==========  ==========
dtype      rtol        atol
=========  ==========  ==========
float16    1e-3        1e-5
bfloat16   1.6e-2      1e-5
float32    1.3e-6      1e-5
float64    1e-7        1e-7
ints/bool  exact       exact
=========  ==========  ==========

An element passes when ``|actual - expected| <= atol + rtol * |expected|``; NaN must be NaN
at the same positions, infinities must be equal (same sign).  A failure raises
``AssertionError`` whose message says how many elements differ, the worst one (its index,
both values, the difference, what was allowed) and its distance in ulps of the compared
dtype, so "off by one rounding" and "wrong" read differently.

Example::

    >>> import numpy as np
    >>> assert_close(np.float32([1.0, 2.0]), np.float32([1.0, 2.0000001]))
    >>> assert_close(np.float16([1.0, 2.0]), np.float16([1.0, 2.5]))
    Traceback (most recent call last):
    ...
    AssertionError: 1 of 2 elements differ (50.0%) [float16: rtol=0.001, atol=1e-05]
      worst at index (1,): actual 2.0, expected 2.5, |diff| 0.5 (allowed 0.00251), 256 ulp
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

# dtype name -> (rtol, atol)
DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
# Precision order, least precise first: the comparison uses the first one either side has.
_PRECISION = ("bfloat16", "float16", "float32", "float64")


def as_numpy(x) -> np.ndarray:
    """``x`` as a numpy array: arrays pass through, torch tensors are detached and moved to
    the CPU (bf16 tensors become ``ml_dtypes.bfloat16`` arrays), scalars become 0-d arrays.

    Example::

        >>> as_numpy(3.0).shape
        ()
    """
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach") and hasattr(x, "cpu"):        # a torch tensor
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.view(torch.int16).numpy().view(BFLOAT16)
        return t.numpy()
    return np.asarray(x)


def is_float(dtype) -> bool:
    """Whether ``dtype`` (numpy, ml_dtypes) is a floating-point dtype, bfloat16 included."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype == BFLOAT16


def default_tolerance(*dtypes) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing arrays of ``dtypes``: the least precise float dtype's
    defaults, ``(0, 0)`` when none is a float.

    Example::

        >>> default_tolerance(np.float32, np.float16)
        (0.001, 1e-05)
    """
    names = {np.dtype(d).name for d in dtypes if is_float(d)}
    for name in _PRECISION:
        if name in names:
            return DEFAULT_TOLERANCES[name]
    return (0.0, 0.0)


def _compare_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    """The float dtype whose ulps measure the distance: the less precise one."""
    names = {d.name for d in (a, b) if is_float(d)}
    for name in _PRECISION:
        if name in names:
            return BFLOAT16 if name == "bfloat16" else np.dtype(name)
    return np.dtype(np.float64)


def _ordered_bits(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float bit patterns mapped to integers that grow with the value (-0.0 and +0.0 both
    map to 0), so the difference of two is their distance in ulps."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = x.astype(dtype)
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    bits = v.view(uint).astype(np.int64) if dtype.itemsize < 8 else \
        v.view(np.int64).astype(np.int64)
    sign = np.int64(1) << np.int64(8 * dtype.itemsize - 1)
    if dtype.itemsize < 8:
        mag = bits & (sign - 1)
        return np.where(bits & sign, -mag, mag)
    return np.where(bits < 0, -(bits & np.int64(0x7FFFFFFFFFFFFFFF)), bits)


def ulp_distance(actual, expected, dtype=None) -> np.ndarray:
    """Elementwise distance in ulps of ``dtype`` (default: the less precise float dtype of
    the two) between two float arrays; NaNs give -1.

    Example::

        >>> int(ulp_distance(np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(2))))
        1
    """
    a, e = as_numpy(actual), as_numpy(expected)
    dt = np.dtype(dtype) if dtype is not None else _compare_dtype(a.dtype, e.dtype)
    d = np.abs(_ordered_bits(a, dt) - _ordered_bits(e, dt))
    nan = np.isnan(a.astype(np.float64)) | np.isnan(e.astype(np.float64))
    return np.where(nan, -1, d)


def _index(flat: int, shape: tuple) -> tuple:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _value(x: np.ndarray, idx: tuple):
    v = x[idx] if x.ndim else x[()]
    return v.item() if hasattr(v, "item") and not isinstance(v, ml_dtypes.bfloat16) else float(v)


def mismatch_report(actual, expected, rtol: float | None = None,
                    atol: float | None = None) -> str | None:
    """Why ``actual`` is not close to ``expected`` (see the module doc), or None when it is.

    Example::

        >>> mismatch_report(np.int32([1, 2, 3]), np.int32([1, 2, 4]))
        '1 of 3 elements differ (33.3%) [int32: exact]\\n  worst at index (2,): actual 3, expected 4, |diff| 1'
    """
    a, e = as_numpy(actual), as_numpy(expected)
    if a.shape != e.shape:
        return f"shapes differ: actual {a.shape}, expected {e.shape}"
    floats = is_float(a.dtype) or is_float(e.dtype)
    d_rtol, d_atol = default_tolerance(a.dtype, e.dtype)
    rtol = d_rtol if rtol is None else float(rtol)
    atol = d_atol if atol is None else float(atol)
    if not floats:
        return _integer_report(a, e, rtol, atol)
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a64 - e64)
        allowed = atol + rtol * np.abs(e64)
        finite = np.isfinite(a64) & np.isfinite(e64)
        ok = (nan_a & nan_e) | (a64 == e64) | (finite & (diff <= allowed))
    bad = ~ok
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None
    cmp_dtype = _compare_dtype(a.dtype, e.dtype)
    head = (f"{n_bad} of {a.size} elements differ ({100.0 * n_bad / a.size:.1f}%) "
            f"[{cmp_dtype.name}: rtol={rtol:g}, atol={atol:g}]")
    nan_bad = bad & (nan_a != nan_e)
    lines = [head]
    if nan_bad.any():
        first = _index(int(np.flatnonzero(nan_bad)[0]), a.shape)
        lines.append(f"  NaN positions differ at {int(nan_bad.sum())} elements, first at "
                     f"index {first}: actual {_value(a, first)}, expected {_value(e, first)}")
    # The worst element: the largest excess over what was allowed (inf for NaN/inf ones).
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        excess = np.where(finite, diff / np.maximum(allowed, np.finfo(np.float64).tiny), np.inf)
    excess = np.where(bad, excess, -1.0)
    worst = _index(int(np.argmax(excess)), a.shape)
    av, ev = _value(a, worst), _value(e, worst)
    line = f"  worst at index {worst}: actual {av}, expected {ev}"
    wa, we = a64[worst] if a.ndim else a64[()], e64[worst] if e.ndim else e64[()]
    if np.isfinite(wa) and np.isfinite(we):
        line += f", |diff| {abs(wa - we):.6g} (allowed {atol + rtol * abs(we):.6g})"
    if not (np.isnan(wa) or np.isnan(we)):
        ulps = int(ulp_distance(np.asarray(wa), np.asarray(we), cmp_dtype))
        line += f", {ulps} ulp"
    lines.append(line)
    return "\n".join(lines)


def _integer_report(a: np.ndarray, e: np.ndarray, rtol: float, atol: float) -> str | None:
    a64, e64 = a.astype(np.int64), e.astype(np.int64)
    diff = np.abs(a64 - e64)
    bad = diff > atol + rtol * np.abs(e64)
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None
    tol = "exact" if rtol == 0 and atol == 0 else f"rtol={rtol:g}, atol={atol:g}"
    worst = _index(int(np.argmax(np.where(bad, diff, -1))), a.shape)
    return (f"{n_bad} of {a.size} elements differ ({100.0 * n_bad / a.size:.1f}%) "
            f"[{e.dtype.name}: {tol}]\n  worst at index {worst}: actual {_value(a, worst)}, "
            f"expected {_value(e, worst)}, |diff| {int(diff[worst] if a.ndim else diff[()])}")


def assert_close(actual, expected, rtol: float | None = None, atol: float | None = None,
                 msg: str = "") -> None:
    """Raise ``AssertionError`` unless ``actual`` is close to ``expected`` elementwise.

    ``rtol``/``atol`` default per dtype (module doc); integers and bools compare exactly;
    NaN positions must match.  ``msg`` prefixes the report.  Accepts numpy arrays, torch
    tensors and scalars.

    Example::

        >>> assert_close(np.float32([np.nan, 1.0]), np.float32([np.nan, 1.0]))
        >>> assert_close(np.float32([1.0]), np.float32([1.1]), rtol=0.2)
    """
    __tracebackhide__ = True        # pytest shows the caller's line, not this one
    report = mismatch_report(actual, expected, rtol, atol)
    if report is not None:
        raise AssertionError(f"{msg}: {report}" if msg else report)
