"""The range check's and the recorder's constant arguments are int64 values, not numba
literals (backends/numba/helper_args.py): their helpers compile once, not once per site,
and every site still reports its own message."""
from __future__ import annotations

import numpy as np
import pytest
from numba import types as nt

import npujit.language as nl
from npujit import npu_kernel
from npujit.backends.numba import check_lib
from npujit.backends.numba.helper_args import unliteral_helper_args
from npujit.errors import OutOfBoundsError


@pytest.mark.parametrize("line,want", [
    ("    ck.out_of_bounds(7, pid0, pid1, pid2, i64(lo), i64(hi), i64(n))",
     "    ck.out_of_bounds(i64(7), pid0, pid1, pid2, i64(lo), i64(hi), i64(n))"),
    ("    ck.block_span(3, p, q, r, e, (a, b), (4, 8), (s, 1), (m, n), 2)",
     "    ck.block_span(i64(3), p, q, r, e, (a, b), (i64(4), i64(8)), (s, i64(1)), (m, n), "
     "i64(2))"),
    ("        rec, rec_n = rc.put(rec, rec_n, -1, p, 0, 0)",
     "        rec, rec_n = rc.put(rec, rec_n, i64(-1), p, i64(0), i64(0))"),
    ("    rc.put(rec, n, 5, x[3], f(2), True)", "    rc.put(rec, n, i64(5), x[3], f(2), b1(True))"),
    ("    y = rl.line_sum_f(x, 0, 1024)", "    y = rl.line_sum_f(x, 0, 1024)"),  # a loop bound
    ("    # ck.out_of_bounds(7, ...)", "    # ck.out_of_bounds(7, ...)"),
    ("    z = a - 1 + ck2.f(3)", "    z = a - 1 + ck2.f(3)"),
], ids=["site", "tuples", "negative", "nested", "reduction", "comment", "other-name"])
def test_constant_arguments_of_the_check_and_recorder_calls_become_int64(line, want):
    assert unliteral_helper_args(line) == want


@npu_kernel
def _three_sites(x_ptr, y_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs) + nl.load(y_ptr + offs))


def test_checks_compile_once_for_every_site_and_name_their_own_argument(monkeypatch):
    monkeypatch.setenv("NPUJIT_DISABLE_CACHE", "1")      # compiled here, not loaded
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    k = _three_sites.with_options(backend="numba")
    k[(2,)](x, y, out, BLOCK=4)
    np.testing.assert_array_equal(out, x + 1)
    with pytest.raises(OutOfBoundsError, match="'y_ptr'"):
        k[(2,)](x, y[:6], out, BLOCK=4)
    with pytest.raises(OutOfBoundsError, match="'out_ptr'"):
        k[(2,)](x, y, out[:6], BLOCK=4)
    sites = {sig[0] for sig in check_lib.out_of_bounds.signatures}
    assert sites and all(not isinstance(t, nt.Literal) for t in sites), sites
