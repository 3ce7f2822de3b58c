"""The Ascend C CPU twin as the third tier of the conformance table.

The emitter lowers 1-D vector tiles, so this tier runs each case of table.py on 1-D
inputs (the table's (4, 32) inputs flattened to 128 lanes) in a 1-D apply kernel, emitted
as Ascend C, built with g++ against the twin and checked against the same numpy oracle
and tolerances as the other tiers.  A case is in this tier when the emitter lowers it on
1-D tiles (lowering is checked by emission alone, no build); the lowerable cases of one
(dtype, domain) then share one build.  What does not lower is listed in
backends/ascendc/lowering.py; ``MUST_LOWER`` guards against losing what does.
"""
from __future__ import annotations

import tempfile

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel

from .table import ALL, isfloat, make_input
from .test_conformance import _as_tuple, _tolerance, assert_conforms

N = 128
DTYPES = ("f32", "f16", "bf16", "i32")
# Cases the twin tier must keep covering (f32 inputs).
MUST_LOWER = {"exp", "log", "sqrt", "rsqrt", "neg", "abs", "add", "sub", "mul", "div",
              "maximum", "minimum", "where", "where_scalar", "cast_to_f16", "cast_to_bf16",
              "cast_to_i32", "sum_axis0", "max_axis0", "min_axis0"}


@npu_kernel
def apply_1d_kernel(x_ptr, y_ptr, outf_ptr, outi_ptr, FNS: nl.constexpr, N: nl.constexpr):
    offs = nl.arange(0, N)
    x = nl.load(x_ptr + offs)
    y = nl.load(y_ptr + offs)
    fo = 0
    io = 0
    for i in nl.static_range(len(FNS)):
        res = FNS[i](x, y)
        if not isinstance(res, tuple):
            res = (res,)
        for r in res:
            idx = nl.arange(0, r.numel) if r.ndim else 0
            if r.dtype.is_float:
                nl.store(outf_ptr + fo + idx, r.to(nl.float32))
                fo += r.numel
            else:
                nl.store(outi_ptr + io + idx, r.to(nl.int32))
                io += r.numel


def _inputs(dtype, domain):
    x, y = make_input(domain, dtype)
    return x.ravel(), y.ravel()


def _outputs(wants):
    nf = sum(np.asarray(w).size for ws in wants for w in ws if isfloat(np.asarray(w)))
    ni = sum(np.asarray(w).size for ws in wants for w in ws if not isfloat(np.asarray(w)))
    return np.full(max(nf, 1), -12345.0, np.float32), np.full(max(ni, 1), -12345, np.int32)


def _lowers(case, dtype) -> bool:
    """Whether the emitter lowers ``case`` on 1-D ``dtype`` tiles (and its oracle applies)."""
    x, y = _inputs(dtype, case.domain)
    try:
        with np.errstate(all="ignore"):
            wants = [_as_tuple(case.oracle(x, y))]
        outf, outi = _outputs(wants)
        with tempfile.TemporaryDirectory() as d:
            apply_1d_kernel.emit("ascendc", d, x, y, outf, outi, FNS=(case.fn,), N=N)
    except Exception:          # not lowered, or a 2-D-only case
        return False
    return True


def _run_group(cases, dtype, domain):
    x, y = _inputs(dtype, domain)
    with np.errstate(all="ignore"):
        wants = [_as_tuple(c.oracle(x, y)) for c in cases]
    outf, outi = _outputs(wants)
    apply_1d_kernel.with_options(backend="ascendc-twin")[(1,)](
        x, y, outf, outi, FNS=tuple(c.fn for c in cases), N=N)
    fo = io = 0
    for c, ws in zip(cases, wants):
        for i, w in enumerate(ws):
            w = np.asarray(w)
            if isfloat(w):
                got, fo = outf[fo:fo + w.size].reshape(w.shape), fo + w.size
            else:
                got, io = outi[io:io + w.size].reshape(w.shape), io + w.size
            assert_conforms(got, w, _tolerance(c.tol, dtype), f"{c.name}[{i}] on {dtype} (ascendc-twin)")


@pytest.mark.parametrize("dtype", DTYPES)
def test_twin_tier_conforms(dtype):
    lowered = [c for c in ALL if dtype in c.dtypes and _lowers(c, dtype)]
    if dtype == "f32":
        missing = MUST_LOWER - {c.name for c in lowered}
        assert not missing, f"the twin tier no longer lowers {sorted(missing)}"
    assert lowered, f"no case lowers on {dtype}"
    for domain in sorted({c.domain for c in lowered}):
        _run_group([c for c in lowered if c.domain == domain], dtype, domain)
