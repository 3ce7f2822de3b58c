"""check_kernel over the tiers: agreement, a wrong kernel caught on every tier with the
report, a raising tier recorded, the twin skipped when absent, the reference conventions."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.testing import check_kernel, launch_on, random_inputs, resolve_tiers, \
    tier_unavailable


@npu_kernel
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    nl.store(out_ptr + offs, a * nl.load(x_ptr + offs, mask=mask) +
             nl.load(y_ptr + offs, mask=mask), mask=mask)


@npu_kernel
def minmax_kernel(x_ptr, lo_ptr, hi_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs, mask=offs < n, other=0.0)
    nl.store(lo_ptr + offs, nl.minimum(x, 0.0), mask=offs < n)
    nl.store(hi_ptr + offs, nl.maximum(x, 0.0), mask=offs < n)


def _axpy_args(n=200):
    x, y = random_inputs((n, np.float32), (n, np.float32), seed=4, special=0)
    return [x, y, np.zeros(n, np.float32), 2.0, n]


CHEAP = ["reference", "scheduled"]


def test_every_tier_agrees_with_numpy_and_inputs_are_untouched():
    args = _axpy_args()
    before = [a.copy() for a in args[:3]]
    res = check_kernel(axpy_kernel, (2,), args, lambda x, y, out, a, n: a * x + y,
                       backends="all", kwargs={"BLOCK": 128})
    assert res.ok
    assert {"reference", "llvm", "numba", "scheduled"} <= set(res)
    for tier in ("reference", "llvm", "numba", "scheduled"):
        np.testing.assert_allclose(res[tier].outputs["out_ptr"], 2 * before[0] + before[1],
                                   rtol=1e-6)
    for a, b in zip(args[:3], before):              # ran on copies
        assert a.tobytes() == b.tobytes()
    assert res["scheduled"].report.cycles > 0       # the simulator's report comes along


def test_a_wrong_result_fails_each_tier_with_the_mismatch_report():
    args = _axpy_args()
    with pytest.raises(AssertionError) as e:
        check_kernel(axpy_kernel, (2,), args, lambda x, y, out, a, n: a * x - y, CHEAP,
                     kwargs={"BLOCK": 128})
    text = str(e.value)
    assert "2 tier(s) failed" in text
    assert text.count("output 'out_ptr':") == 2 and "elements differ" in text
    assert "worst at index" in text and "ulp" in text
    res = check_kernel(axpy_kernel, (2,), args, lambda x, y, out, a, n: a * x - y, CHEAP,
                       kwargs={"BLOCK": 128}, strict=False)
    assert not res.ok and [r.status for r in res.values()] == ["mismatch", "mismatch"]


def test_an_error_in_a_tier_is_a_failed_tier():
    res = check_kernel(axpy_kernel, "bad grid", _axpy_args(), lambda x, y, out, a, n: a * x + y,
                       CHEAP, kwargs={"BLOCK": 128}, strict=False)
    for tier in CHEAP:
        assert res[tier].status == "error"
        assert res[tier].message.startswith("LaunchError: ") and "grid" in res[tier].message


def test_reference_conventions_tuple_dict_and_in_place():
    n = 64
    (x,) = random_inputs((n, np.float32), seed=1)
    args = [x, np.zeros(n, np.float32), np.zeros(n, np.float32), n]
    lo, hi = np.minimum(x, 0), np.maximum(x, 0)
    check_kernel(minmax_kernel, (1,), args, lambda x, l, h, n: (lo, hi), "reference",
                 kwargs={"BLOCK": 64})
    check_kernel(minmax_kernel, (1,), args, lambda x, l, h, n: {"hi_ptr": hi, "lo_ptr": lo},
                 "reference", kwargs={"BLOCK": 64})

    def in_place(x, l, h, n):
        l[:] = np.minimum(x, 0)
        h[:] = np.maximum(x, 0)
    check_kernel(minmax_kernel, (1,), args, in_place, "reference", kwargs={"BLOCK": 64})
    with pytest.raises(ValueError, match=r"returned 1 value\(s\) but kernel 'minmax_kernel' "
                                         r"writes 2 argument\(s\)"):
        check_kernel(minmax_kernel, (1,), args, lambda x, l, h, n: lo, "reference",
                     kwargs={"BLOCK": 64})


def test_the_ascendc_twin_is_skipped_when_absent_and_names_are_checked():
    reason = tier_unavailable("ascendc-twin")
    res = check_kernel(axpy_kernel, (2,), _axpy_args(), lambda x, y, out, a, n: a * x + y,
                       ["reference", "ascendc-twin"], kwargs={"BLOCK": 128})
    if reason is None:
        assert res["ascendc-twin"].status == "ok"
    else:
        assert res["ascendc-twin"].status == "skipped" and "ascendc-twin" in reason
        assert "ascendc-twin" not in resolve_tiers("all")
    assert resolve_tiers("numba,reference") == ["reference", "numba"]
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        resolve_tiers(["cuda"])


def test_the_scheduled_tier_poisons_buffers():
    # launch_on("scheduled") runs with NaN-poisoned buffers and copies landing at their
    # wait; the outputs still equal a plain launch's for a correct schedule.
    args = _axpy_args(300)
    report = launch_on("scheduled", axpy_kernel, (3,), args, {"BLOCK": 128})
    assert report is not None and not np.isnan(args[2]).any()
    np.testing.assert_allclose(args[2], 2 * args[0] + args[1], rtol=1e-6)
