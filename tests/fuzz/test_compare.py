"""The fuzzer's comparison is as strict as the brief: exact outputs differ on one bit (a
1-ulp change, -0.0 against 0.0, a NaN against a number, an unwritten sentinel),
transcendental outputs on more than a few ulp, sums beyond their bound."""
import numpy as np
import pytest

from npujit.ir import types as T

from .gen import Output
from .tiers import EPS, NP, disagreement


def _out(dtype, status="exact"):
    return Output(dtype, 4, status)


@pytest.mark.parametrize("dtype", [T.float32, T.float16, T.bfloat16])
def test_exact_floats_differ_on_one_ulp_and_on_the_sign_of_zero(dtype):
    want = np.array([1.0, -0.0, np.nan, np.inf], NP[dtype])
    assert disagreement(want.copy(), want, _out(dtype)) is None
    ulp = want.copy()
    ulp[0] = np.float32(1.0 + EPS[dtype]).astype(NP[dtype])      # the next value up
    assert "[0]" in disagreement(ulp, want, _out(dtype))
    zero = want.copy()
    zero[1] = 0.0
    assert "[1]" in disagreement(zero, want, _out(dtype))
    nan = want.copy()
    nan[2] = 0.0
    assert "[2]" in disagreement(nan, want, _out(dtype))


def test_approx_floats_allow_a_few_ulp_not_more():
    want = np.array([1.0, 100.0, np.nan, -np.inf], np.float32)
    near = want.copy()
    near[1] = np.nextafter(near[1], np.float32(200), dtype=np.float32)
    assert disagreement(near, want, _out(T.float32, "approx")) is None
    far = want.copy()
    far[1] = 100.01
    assert "[1]" in disagreement(far, want, _out(T.float32, "approx"))
    tiny = np.array([1e-7, -0.0150843], np.float32)     # gelu's cancellation: absolute slack
    assert disagreement(tiny + np.float32(5e-7), tiny, _out(T.float32, "approx")) is None
    assert disagreement(tiny + np.float32(5e-6), tiny, _out(T.float32, "approx")) is not None
    inf = want.copy()
    inf[3] = np.inf
    assert "[3]" in disagreement(inf, want, _out(T.float32, "approx"))


def test_summed_floats_use_the_bound_given():
    want = np.array([1.0, 0.0, 3.0, 4.0], np.float32)
    got = want + np.float32(1e-3)
    assert disagreement(got, want, _out(T.float32, "summed"), atol=1e-2) is None
    assert disagreement(got, want, _out(T.float32, "summed"), atol=1e-5) is not None


@pytest.mark.parametrize("dtype", [T.int8, T.int32, T.int64, T.bool_])
def test_ints_and_bools_are_bit_exact(dtype):
    want = np.array([1, 0, 1, 1], NP[dtype])
    got = want.copy()
    got[2] = 0
    assert "[2]" in disagreement(got, want, _out(dtype))
    assert disagreement(want.copy(), want, _out(dtype)) is None
