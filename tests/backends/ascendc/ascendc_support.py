"""Helpers for the Ascend C twin tests: run a kernel on the reference backend and on the
twin, compare with the dtype's tolerance (ints bit-exact)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

TWIN = "ascendc-twin"

# Relative tolerance per storage dtype: a few units in the last place of the result.
RTOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float16): 2.0 ** -9,
        np.dtype(ml_dtypes.bfloat16): 2.0 ** -6}


def assert_matches(got: np.ndarray, want: np.ndarray, what: str, rounded=None) -> None:
    """Floats within the dtype's tolerance (scaled by the largest magnitude), everything
    else bit-exact.  ``rounded``: the dtype of an intermediate the kernel rounds to (its
    tolerance then, when coarser: a value that lands on the other side of a rounding
    boundary on one tier moves the result by that much)."""
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if got.dtype in RTOL:
        g, w = got.astype(np.float64), want.astype(np.float64)
        tol = max(RTOL[got.dtype], RTOL.get(np.dtype(rounded), 0.0) if rounded else 0.0)
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def compiled(kernel, **constexprs):
    """The compiled specialisation of a kernel variant with these constexpr values (its
    scheduled IR and its runner); other tests may have compiled other ones."""
    found = [c for c in kernel.cache.values()
             if all(c.sigs[kernel.params.index(k)] == ("C", v) for k, v in constexprs.items())]
    assert len(found) == 1, f"{len(found)} specialisations of {kernel.name} match {constexprs}"
    return found[0]
