"""Every language op × dtype on the reference interpreter and both CPU backends (llvm,
numba) against the numpy oracle in table.py.

Cases sharing a (backend, input domain, dtype) run in a few compiled kernels (chunks of at
most ``CHUNK`` cases) that store each result into a flat float or int output, so the table
costs a few compiles, not hundreds.
A batch that fails to compile falls back to compiling the case alone, so the failure
names its op.
"""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel

from .table import ALL, BF16, SHAPE, isfloat, make_input


@npu_kernel
def apply_kernel(x_ptr, y_ptr, outf_ptr, outi_ptr, FNS: nl.constexpr, R: nl.constexpr,
                 C: nl.constexpr):
    offs = nl.arange(0, R)[:, None] * C + nl.arange(0, C)[None, :]
    x = nl.load(x_ptr + offs)
    y = nl.load(y_ptr + offs)
    fo = 0
    io = 0
    for i in nl.static_range(len(FNS)):
        res = FNS[i](x, y)
        if not isinstance(res, tuple):
            res = (res,)
        for r in res:
            flat = nl.reshape(r, (r.numel,)) if r.ndim else r
            idx = nl.arange(0, r.numel) if r.ndim else 0
            if r.dtype.is_float:
                nl.store(outf_ptr + fo + idx, flat.to(nl.float64))   # exact for every float
                fo += r.numel
            else:
                nl.store(outi_ptr + io + idx, flat.to(nl.int64))
                io += r.numel


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def _run(backend, cases, dtype, domain):
    x, y = make_input(domain, dtype)
    wants = [_as_tuple(c.oracle(x, y)) for c in cases]
    nf = sum(np.asarray(w).size for ws in wants for w in ws if isfloat(np.asarray(w)))
    ni = sum(np.asarray(w).size for ws in wants for w in ws if not isfloat(np.asarray(w)))
    outf = np.full(max(nf, 1), -12345.0, np.float64)
    outi = np.full(max(ni, 1), -12345, np.int64)
    k = apply_kernel.with_options(backend=backend)
    k[(1,)](x, y, outf, outi, FNS=tuple(c.fn for c in cases), R=SHAPE[0], C=SHAPE[1])
    got, fo, io = {}, 0, 0
    for c, ws in zip(cases, wants):
        parts = []
        for w in ws:
            w = np.asarray(w)
            if isfloat(w):
                parts.append(outf[fo:fo + w.size].reshape(w.shape))
                fo += w.size
            else:
                parts.append(outi[io:io + w.size].reshape(w.shape))
                io += w.size
        got[c.name] = (parts, ws)
    return got


_batches: dict = {}

# At most this many cases per compiled kernel: numba's compile time grows faster than the
# function (its liveness analysis is quadratic in a long straight-line body), so the
# 56 "any"-domain f32 cases took 26 s as one kernel and 15-18 s as chunks of 10-19.
CHUNK = 16


def _batch(backend, dtype, case):
    """The results of the chunk of ``case``'s (backend, dtype, domain) batch."""
    cases = [c for c in ALL if c.domain == case.domain and dtype in c.dtypes]
    i = next(i for i, c in enumerate(cases) if c.name == case.name)
    chunks = -(-len(cases) // CHUNK)
    size = -(-len(cases) // chunks)              # equal chunks, none of them tiny
    lo = i // size * size
    key = (backend, dtype, case.domain, lo)
    if key not in _batches:
        try:
            _batches[key] = _run(backend, cases[lo:lo + size], dtype, case.domain)
        except Exception as e:  # isolate the failing op below
            _batches[key] = e
    return _batches[key]


def _tolerance(tol: float, dtype: str) -> float:
    if tol == 0:
        return 0.0
    if dtype == "f64":
        return 1e-12    # f64 math is f64 math: an f32 step anywhere would miss this
    return max(tol, {"f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f8e4": 2.0 ** -3,
                     "f8e5": 2.0 ** -2}.get(dtype, 0.0))


def assert_conforms(got, want, tol: float, what: str):
    want = np.asarray(want)
    if isfloat(want):
        g = np.asarray(got, np.float64)
        w = want.astype(np.float64) if want.dtype == np.float64 else \
            want.astype(np.float32).astype(np.float64)
        assert np.array_equal(np.isnan(g), np.isnan(w)), f"{what}: NaN positions differ"
        if tol == 0:
            ok = (g == w) | (np.isnan(g) & np.isnan(w))
            assert ok.all(), f"{what}: not bit-exact at {np.argwhere(~ok)[:5].tolist()}: " \
                             f"got {g[~ok][:5]} want {w[~ok][:5]}"
        else:
            scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isinf(w), 0, w)), initial=0)))
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, equal_nan=True,
                                       err_msg=what)
    else:
        assert np.array_equal(np.asarray(got).astype(np.int64), want.astype(np.int64)), \
            f"{what}: got {np.asarray(got).ravel()[:8]} want {want.ravel()[:8]}"


PARAMS = [pytest.param(c, d, id=f"{c.name}-{d}") for c in ALL for d in c.dtypes]


@pytest.mark.parametrize("backend", ["reference", "llvm", "numba"])
@pytest.mark.parametrize("case,dtype", PARAMS)
def test_conformance(backend, case, dtype):
    res = _batch(backend, dtype, case)
    if isinstance(res, Exception):
        res = _run(backend, [case], dtype, case.domain)   # raises this op's own error
    parts, wants = res[case.name]
    for i, (g, w) in enumerate(zip(parts, wants)):
        assert_conforms(g, w, _tolerance(case.tol, dtype),
                        f"{case.name}[{i}] on {dtype} ({backend})")


def test_table_covers_the_language():
    """Each public math / reduction / shape op of nl appears in the table."""
    names = " ".join(c.name for c in ALL)
    for op in ("exp", "log", "sqrt", "rsqrt", "abs", "maximum", "minimum", "sigmoid", "tanh",
               "erf", "gelu", "silu", "where", "cast", "sum", "max", "min", "argmax", "dot",
               "topk", "sort", "cumsum", "reshape", "trans", "softmax"):
        assert op in names, op
    assert BF16 is not None
