"""``nl.dot_scaled`` (Triton's ``tl.dot_scaled``): microscaled operands against a numpy
dequantisation written from the OCP MX definitions (npujit/language/scaled.py)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit import CompilationError, npu_kernel

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
BF16, F16 = ml_dtypes.bfloat16, np.float16


def dequant(x, scale, fmt, k_axis, compute):
    """numpy: the operand as ``compute`` values with K along ``k_axis``."""
    if fmt in ("bf16", "fp16"):
        return x.astype(np.float64)
    if fmt == "e2m1":
        lo, hi = E2M1[x & 15], E2M1[x >> 4]
        v = np.stack([lo, hi], axis=k_axis + 1).reshape(
            (x.shape[0], -1) if k_axis == 1 else (-1, x.shape[1]))
    else:
        v = x.view(ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2)
        v = v.astype(np.float64)
    if scale is not None:
        f = np.where(scale == 255, np.nan, 2.0 ** (scale.astype(np.float64) - 127))
        f = np.repeat(f, 32, axis=1)                    # [rows, K]
        v = v * (f if k_axis == 1 else f.T)
    return v.astype(np.float32).astype(compute).astype(np.float64)


@npu_kernel
def scaled_mm(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: nl.constexpr, N: nl.constexpr,
              K: nl.constexpr, FA: nl.constexpr, FB: nl.constexpr):
    ka = K // 2 if FA == "e2m1" else K
    kb = K // 2 if FB == "e2m1" else K
    a = nl.load(a_ptr + nl.arange(0, M)[:, None] * ka + nl.arange(0, ka)[None, :])
    b = nl.load(b_ptr + nl.arange(0, kb)[:, None] * N + nl.arange(0, N)[None, :])
    sa = None
    sb = None
    if sa_ptr is not None:
        sa = nl.load(sa_ptr + nl.arange(0, M)[:, None] * (K // 32) + nl.arange(0, K // 32)[None, :])
    if sb_ptr is not None:
        sb = nl.load(sb_ptr + nl.arange(0, N)[:, None] * (K // 32) + nl.arange(0, K // 32)[None, :])
    c = nl.dot_scaled(a, sa, FA, b, sb, FB)
    nl.store(c_ptr + nl.arange(0, M)[:, None] * N + nl.arange(0, N)[None, :], c)


def _operand(rng, fmt, rows, k, k_axis):
    if fmt in ("bf16", "fp16"):
        shape = (rows, k) if k_axis == 1 else (k, rows)
        return rng.standard_normal(shape).astype(np.float32).astype(BF16 if fmt == "bf16" else F16)
    kk = k // 2 if fmt == "e2m1" else k
    shape = (rows, kk) if k_axis == 1 else (kk, rows)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    if fmt != "e2m1":                                   # no NaN/inf codes in the operands
        x = np.where((x & 0x7F) >= (0x7C if fmt == "e5m2" else 0x7F), x & 0x83, x).astype(np.uint8)
    return x


# every format on the reference tier; the numba tier on one case (each is a compile)
@pytest.mark.parametrize("backend,fa,fb,scale_a,scale_b", [
    ("reference", "e2m1", "bf16", True, False), ("reference", "fp16", "e4m3", False, True),
    ("reference", "e5m2", "e2m1", True, True), ("numba", "e5m2", "e2m1", True, True)])
def test_dot_scaled_matches_numpy_dequantisation(backend, fa, fb, scale_a, scale_b):
    M, N, K = 16, 16, 64
    rng = np.random.default_rng(7)
    a, b = _operand(rng, fa, M, K, 1), _operand(rng, fb, N, K, 0)
    sa = rng.integers(120, 134, (M, K // 32), dtype=np.uint8) if scale_a else None
    sb = rng.integers(120, 134, (N, K // 32), dtype=np.uint8) if scale_b else None
    if scale_a:
        sa[0, 0], sa[1, 1] = 0, 255                      # 2**-127 and NaN
    c = np.zeros((M, N), np.float32)
    scaled_mm.with_options(backend=backend)[(1,)](a, sa, b, sb, c, M=M, N=N, K=K, FA=fa, FB=fb)
    compute = F16 if "fp16" in (fa, fb) else BF16
    want = dequant(a, sa, fa, 1, compute) @ dequant(b, sb, fb, 0, compute)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    if scale_a:
        assert np.isnan(c[1]).all() and not np.isnan(c[2:]).any()


def test_dot_scaled_says_what_the_scale_must_look_like():
    a = np.zeros((16, 32), np.uint8)
    b = np.zeros((64, 16), BF16)
    bad = np.zeros((16, 4), np.uint8)                    # K // 32 is 2
    with pytest.raises(CompilationError, match=r"left scale must be a uint8 tile of shape "
                                               r"\[16, 2\].*got nl.uint8 \[16, 4\]"):
        _scaled_bad[(1,)](a, bad, b, np.zeros((16, 16), np.float32))
    with pytest.raises(CompilationError, match=r"format must be one of \['e2m1', 'e4m3', "
                                               r"'e5m2', 'bf16', 'fp16'\], got 'mxfp4'"):
        _scaled_bad_format[(1,)](a, b, np.zeros((16, 16), np.float32))


@npu_kernel(backend="reference")
def _scaled_bad(a_ptr, s_ptr, b_ptr, c_ptr):
    a = nl.load(a_ptr + nl.arange(0, 16)[:, None] * 32 + nl.arange(0, 32)[None, :])
    s = nl.load(s_ptr + nl.arange(0, 16)[:, None] * 4 + nl.arange(0, 4)[None, :])
    b = nl.load(b_ptr + nl.arange(0, 64)[:, None] * 16 + nl.arange(0, 16)[None, :])
    c = nl.dot_scaled(a, s, "e2m1", b, None, "bf16")
    nl.store(c_ptr + nl.arange(0, 16)[:, None] * 16 + nl.arange(0, 16)[None, :], c)


@npu_kernel(backend="reference")
def _scaled_bad_format(a_ptr, b_ptr, c_ptr):
    a = nl.load(a_ptr + nl.arange(0, 16)[:, None] * 32 + nl.arange(0, 32)[None, :])
    b = nl.load(b_ptr + nl.arange(0, 64)[:, None] * 16 + nl.arange(0, 16)[None, :])
    c = nl.dot_scaled(a, None, "mxfp4", b, None, "bf16")
    nl.store(c_ptr + nl.arange(0, 16)[:, None] * 16 + nl.arange(0, 16)[None, :], c)
