"""random_inputs / random_array: seeded, the requested shapes and dtypes, and the edge
values (NaN, ±inf, -0.0, subnormals, integer extremes) really present."""
import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit.testing import SPECIAL_VALUES, random_array, random_inputs


def test_same_seed_same_arrays_other_seed_other_arrays():
    a = random_inputs(((8, 16), np.float32), (64, "int32"), seed=5)
    b = random_inputs(((8, 16), np.float32), (64, "int32"), seed=5)
    c = random_inputs(((8, 16), np.float32), (64, "int32"), seed=6)
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()
    assert a[0].tobytes() != c[0].tobytes()
    assert a[0].shape == (8, 16) and a[1].shape == (64,)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_float_edge_values_present(dtype):
    x = random_array(4000, dtype, seed=0).astype(np.float64)
    assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any()
    assert (np.signbit(x) & (x == 0)).any(), "no -0.0"
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    tiny = float(ml_dtypes.finfo(dt).smallest_normal)
    sub = (x != 0) & (np.abs(x) < tiny)
    assert sub.any(), "no subnormal"
    specials = np.isin(x, np.asarray(SPECIAL_VALUES[dt.name], np.float64).astype(dt)
                       .astype(np.float64)) | np.isnan(x)
    assert 0.15 < specials.mean() < 0.40       # about a quarter special by default


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_extremes_present(dtype):
    x = random_array(2000, dtype, seed=1)
    info = np.iinfo(dtype)
    assert x.dtype == dtype
    assert (x == info.min).any() and (x == info.max).any() and (x == 0).any()


def test_special_zero_gives_only_ordinary_values_and_nl_dtypes_work():
    x = random_array(1000, nl.float16, seed=2, special=0)
    assert x.dtype == np.float16 and np.isfinite(x).all()
    b = random_array((3, 5), np.bool_, seed=0)
    assert b.dtype == np.bool_ and b.shape == (3, 5)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(TypeError, match=r"\(shape, dtype\) pairs"):
        random_inputs(np.float32, seed=0)
    with pytest.raises(TypeError, match="dtype must be"):
        random_array(4, "no-such-dtype")
