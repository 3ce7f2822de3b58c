"""assert_close: per-dtype tolerances, NaN/inf rules, exact integers, and the report's
numbers (count, worst index, both values, ulps) checked against values computed here."""
import ml_dtypes
import numpy as np
import pytest

from npujit.testing import assert_close, default_tolerance, mismatch_report, ulp_distance

BF16 = ml_dtypes.bfloat16


def _next(x, dtype, k=1):
    """x moved up by k ulps of dtype (np.nextafter, an independent oracle)."""
    v = np.asarray(x, dtype)
    for _ in range(k):
        v = np.nextafter(v, np.asarray(np.inf, dtype))
    return v


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3, 17])
def test_ulp_distance_matches_nextafter(dtype, k):
    for x in (1.0, -2.5, 0.0, 1e-3):
        assert int(ulp_distance(np.asarray(x, dtype), _next(x, dtype, k))) == k


def test_ulp_distance_counts_across_zero_and_minus_zero_is_zero():
    tiny = np.float32(np.finfo(np.float32).smallest_subnormal)
    assert int(ulp_distance(np.float32(-0.0), np.float32(0.0))) == 0
    assert int(ulp_distance(-tiny, tiny)) == 2


def test_ulp_distance_bfloat16():
    one = np.asarray(1.0, BF16)
    up = np.asarray(1.0 + 2.0 ** -7, BF16)          # bf16 has 7 fraction bits
    assert int(ulp_distance(one, up)) == 1


def test_default_tolerances_follow_the_less_precise_dtype():
    assert default_tolerance(np.float32) == (1.3e-6, 1e-5)
    assert default_tolerance(np.float32, np.float16) == (1e-3, 1e-5)
    assert default_tolerance(BF16, np.float32) == (1.6e-2, 1e-5)
    assert default_tolerance(np.float64) == (1e-7, 1e-7)
    assert default_tolerance(np.int32, np.bool_) == (0.0, 0.0)


def test_fp16_rounding_passes_a_real_error_fails():
    want = np.linspace(-3, 3, 101).astype(np.float32)
    assert_close(want.astype(np.float16), want)          # one f16 rounding: within 1e-3
    bad = want.astype(np.float16)
    bad[40] += np.float16(0.01)
    with pytest.raises(AssertionError, match=r"1 of 101 elements differ"):
        assert_close(bad, want)


def test_report_names_count_worst_index_values_and_ulps():
    want = np.zeros((3, 4), np.float32)
    got = want.copy()
    got[0, 1] = 1e-3
    got[2, 3] = 0.5                  # the worst
    msg = mismatch_report(got, want)
    assert msg.startswith("2 of 12 elements differ (16.7%) [float32: rtol=1.3e-06, atol=1e-05]")
    assert "worst at index (2, 3): actual 0.5, expected 0.0" in msg
    # 0.5 is this many f32 ulps above +0: its bit pattern as an integer
    assert f"{int(np.float32(0.5).view(np.int32))} ulp" in msg


def test_nan_positions_must_match():
    a = np.float32([1.0, np.nan, 3.0])
    assert_close(a, a.copy())
    with pytest.raises(AssertionError, match=r"NaN positions differ at 1 elements, first at "
                                             r"index \(1,\): actual nan, expected 2.0"):
        assert_close(a, np.float32([1.0, 2.0, 3.0]))
    with pytest.raises(AssertionError, match="NaN positions differ"):
        assert_close(np.float32([1.0, 2.0]), np.float32([1.0, np.nan]))


def test_infinities_must_be_equal():
    assert_close(np.float32([np.inf, -np.inf]), np.float32([np.inf, -np.inf]))
    with pytest.raises(AssertionError, match="actual inf, expected -inf"):
        assert_close(np.float32([np.inf]), np.float32([-np.inf]), atol=1e30)
    with pytest.raises(AssertionError):
        assert_close(np.float32([3e38]), np.float32([np.inf]), rtol=1.0)


def test_integers_and_bools_are_exact():
    assert_close(np.int32([1, 2, 3]), np.int64([1, 2, 3]))
    with pytest.raises(AssertionError, match=r"worst at index \(1,\): actual 7, expected 2, "
                                             r"\|diff\| 5"):
        assert_close(np.int32([1, 7, 4]), np.int32([1, 2, 3]))
    with pytest.raises(AssertionError, match="1 of 2 elements differ"):
        assert_close(np.array([True, False]), np.array([True, True]))


def test_explicit_tolerances_override_the_defaults():
    assert_close(np.float32([1.0]), np.float32([1.05]), rtol=0.1)
    assert_close(np.float32([1.0]), np.float32([1.05]), atol=0.06)
    with pytest.raises(AssertionError, match="rtol=0, atol=0.01"):
        assert_close(np.float32([1.0]), np.float32([1.05]), rtol=0, atol=0.01)


def test_shapes_must_match_and_msg_prefixes():
    with pytest.raises(AssertionError, match=r"out: shapes differ: actual \(3,\), expected "
                                             r"\(4,\)"):
        assert_close(np.zeros(3), np.zeros(4), msg="out")


def test_bfloat16_arrays_and_torch_tensors():
    x = np.linspace(-2, 2, 33).astype(np.float32)
    assert_close(x.astype(BF16), x)
    torch = pytest.importorskip("torch")
    assert_close(torch.tensor(x).to(torch.bfloat16), x)
    with pytest.raises(AssertionError):
        assert_close(torch.tensor(x) + 1, x)
