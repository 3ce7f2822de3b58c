"""The Cube's ``dot`` on flat tiles, as numba helpers.

``out`` (M×N, flat) holds the accumulator on entry (the ``acc`` operand or zeros) and the
result on return.  Float tiles (f32, and f16/bf16 held as float32) multiply and
accumulate in float32 in an unspecified order (docs/semantics.md), under
``fastmath={'reassoc', 'contract'}``: rows of ``out`` are updated four at a time with
four k-steps per pass, so each loaded element of ``b`` feeds 16 multiply-adds, and the
j-loop vectorises; the indices are flat offsets computed once per pass (a slice per row
and k-step cost as much as the work on a 64-wide row).  On a 64^3 tile, one core, this
machine: 26 GFLOP/s for the two-row form this replaced, 38 for this one (numbers of the
same run; both vary by 30 % from run to run here), against about 87 for OpenBLAS sgemm
through numpy -- which, called from numba (``np.dot``), serialises when two threads
call it and costs seconds to compile, so it is not used.  Relative to a float64
dot the error is about K·2^-24·Σ|a·b|.  i8 tiles accumulate exactly in int32 (wrapping).

Example::

    >>> a = np.ones(6, np.float32); b = np.ones(6, np.float32)   # 2x3 @ 3x2
    >>> out = np.zeros(4, np.float32)
    >>> dot_f(a, b, out, 2, 3, 2); out
    array([3., 3., 3., 3.], dtype=float32)
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from .halfprec import bf16_bits_to_f32

_JIT = dict(cache=True, nogil=True, error_model="numpy")
_FMA = dict(_JIT, fastmath={"reassoc", "contract"})


@njit(**_FMA)
def _row(a, b, out, k, n):
    # out (n) += a (k) @ b (k x n), four k-steps per pass
    k4 = k - k % 4
    for kk in range(0, k4, 4):
        a0, a1, a2, a3 = a[kk], a[kk + 1], a[kk + 2], a[kk + 3]
        b0 = b[kk * n:(kk + 1) * n]
        b1 = b[(kk + 1) * n:(kk + 2) * n]
        b2 = b[(kk + 2) * n:(kk + 3) * n]
        b3 = b[(kk + 3) * n:(kk + 4) * n]
        for j in range(n):
            out[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]
    for kk in range(k4, k):
        aik = a[kk]
        bk = b[kk * n:(kk + 1) * n]
        for j in range(n):
            out[j] += aik * bk[j]


@njit(**_FMA)
def dot_f(a, b, out, m, k, n):
    """``out += a @ b`` for float32 flat tiles a (m×k), b (k×n), out (m×n)."""
    k4 = k - k % 4
    m4 = m - m % 4
    for i in range(0, m4, 4):
        o0 = i * n
        o1, o2, o3 = o0 + n, o0 + 2 * n, o0 + 3 * n
        a0 = i * k
        a1, a2, a3 = a0 + k, a0 + 2 * k, a0 + 3 * k
        for kk in range(0, k4, 4):
            p0, p1, p2, p3 = a[a0 + kk], a[a0 + kk + 1], a[a0 + kk + 2], a[a0 + kk + 3]
            q0, q1, q2, q3 = a[a1 + kk], a[a1 + kk + 1], a[a1 + kk + 2], a[a1 + kk + 3]
            r0, r1, r2, r3 = a[a2 + kk], a[a2 + kk + 1], a[a2 + kk + 2], a[a2 + kk + 3]
            s0, s1, s2, s3 = a[a3 + kk], a[a3 + kk + 1], a[a3 + kk + 2], a[a3 + kk + 3]
            b0 = kk * n
            b1, b2, b3 = b0 + n, b0 + 2 * n, b0 + 3 * n
            for j in range(n):
                x0, x1, x2, x3 = b[b0 + j], b[b1 + j], b[b2 + j], b[b3 + j]
                out[o0 + j] += p0 * x0 + p1 * x1 + p2 * x2 + p3 * x3
                out[o1 + j] += q0 * x0 + q1 * x1 + q2 * x2 + q3 * x3
                out[o2 + j] += r0 * x0 + r1 * x1 + r2 * x2 + r3 * x3
                out[o3 + j] += s0 * x0 + s1 * x1 + s2 * x2 + s3 * x3
        for kk in range(k4, k):
            p0, q0, r0, s0 = a[a0 + kk], a[a1 + kk], a[a2 + kk], a[a3 + kk]
            b0 = kk * n
            for j in range(n):
                x0 = b[b0 + j]
                out[o0 + j] += p0 * x0
                out[o1 + j] += q0 * x0
                out[o2 + j] += r0 * x0
                out[o3 + j] += s0 * x0
    for i in range(m4, m):
        _row(a[i * k:(i + 1) * k], b, out[i * n:(i + 1) * n], k, n)


def _weight(v):
    """An element of ``dot_nt``'s B as float32 (compiled per type: see the overload)."""


@overload(_weight, jit_options=dict(cache=True))
def _weight_for(v):
    if isinstance(v, types.Float):
        return lambda v: v
    if v == types.uint16:           # the one 16-bit type read in place: bf16 bits
        return lambda v: bf16_bits_to_f32(v)
    return None


@njit(**_FMA)
def dot_nt(a, b, boff, ldb, out, m, k, n, nb):
    """``out += a @ B.T`` for a float32 flat tile a (m×k) and B (n×k) read in place:
    row j of B is ``b[boff + j*ldb : boff + j*ldb + k]`` (a row-major weight, as
    ``W.T`` block pointers view it, read without copying it into a tile first); ``b``
    holds float32, or bf16 bits (uint16), decoded as they are read.  Only the first
    ``nb`` rows of B are read: the rest are a block's zero padding past the weight's last
    row (a router's 8 experts in a 16-wide tile), and their columns of ``out`` get
    ``sum(a[i, :] * 0)`` -- 0, or NaN where row i of a holds an inf or a NaN, as the
    padded product would give.  Each pass keeps a 4×4 block of ``out`` in registers and
    runs down k, which LLVM vectorises as sixteen reductions: eight loads per sixteen
    multiply-adds (a 4×2 block, six per eight, ran a 16×512×64 tile at 80 GFLOP/s here,
    4×4 at 96)."""
    nb = min(max(nb, 0), n)
    if nb < n:
        _padding_columns(a, out, m, k, n, nb)
    _dot_nt(a, b, boff, ldb, out, m, k, n, nb)


@njit(**_FMA)
def _padding_columns(a, out, m, k, n, nb):
    # out[i, nb:n] += sum_t a[i, t] * 0: NaN when the row has an inf or a NaN; +0.0
    # unless every product is -0.0 (a sum of zeros is -0.0 only then, in any order)
    kk_ = np.uint64(k)
    zero = np.float32(0.0)
    for i in range(np.uint64(m)):
        at = i * kk_
        s = np.float32(-0.0)
        for t in range(kk_):
            s += a[at + t] * zero
        for j in range(np.uint64(nb), np.uint64(n)):
            out[i * np.uint64(n) + j] += s


@njit(**_FMA)
def _dot_nt(a, b, boff, ldb, out, m, k, n, nb):
    # dot_nt over B's first nb rows (out's row stride is n)
    kk_ = np.uint64(k)
    nn_ = np.uint64(n)
    ld = np.uint64(ldb)
    b0 = np.uint64(boff)
    m4 = np.uint64(m - m % 4)
    n4 = np.uint64(nb - nb % 4)
    for i in range(np.uint64(0), m4, np.uint64(4)):
        r0 = i * kk_
        r1 = r0 + kk_
        r2 = r1 + kk_
        r3 = r2 + kk_
        for j in range(np.uint64(0), n4, np.uint64(4)):
            q0 = b0 + j * ld
            q1 = q0 + ld
            q2 = q1 + ld
            q3 = q2 + ld
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = np.float32(0.0)
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = np.float32(0.0)
            for t in range(kk_):
                y0 = _weight(b[q0 + t])
                y1 = _weight(b[q1 + t])
                y2 = _weight(b[q2 + t])
                y3 = _weight(b[q3 + t])
                x0 = a[r0 + t]
                x1 = a[r1 + t]
                x2 = a[r2 + t]
                x3 = a[r3 + t]
                s00 += x0 * y0
                s01 += x0 * y1
                s02 += x0 * y2
                s03 += x0 * y3
                s10 += x1 * y0
                s11 += x1 * y1
                s12 += x1 * y2
                s13 += x1 * y3
                s20 += x2 * y0
                s21 += x2 * y1
                s22 += x2 * y2
                s23 += x2 * y3
                s30 += x3 * y0
                s31 += x3 * y1
                s32 += x3 * y2
                s33 += x3 * y3
            o = i * nn_ + j
            _add4(out, o, s00, s01, s02, s03)
            _add4(out, o + nn_, s10, s11, s12, s13)
            _add4(out, o + 2 * nn_, s20, s21, s22, s23)
            _add4(out, o + 3 * nn_, s30, s31, s32, s33)
        for j in range(n4, np.uint64(nb)):
            _nt_column(a, b, b0 + j * ld, out, i, np.uint64(4), j, kk_, nn_)
    for j in range(np.uint64(0), np.uint64(nb)):
        _nt_column(a, b, b0 + j * ld, out, m4, np.uint64(m) - m4, j, kk_, nn_)


@njit(**_JIT)
def _add4(out, o, s0, s1, s2, s3):
    out[o] += s0
    out[o + 1] += s1
    out[o + 2] += s2
    out[o + 3] += s3


@njit(**_FMA)
def _nt_column(a, b, q, out, i0, rows, j, k, n):
    # out[i0 + r, j] += a row (i0 + r) . B row j, for r < rows
    for r in range(rows):
        at = (i0 + r) * k
        s = np.float32(0.0)
        for t in range(k):
            s += a[at + t] * _weight(b[q + t])
        out[(i0 + r) * n + j] += s


@njit(**_JIT)
def dot_i8(a, b, out, m, k, n):
    """``out += a @ b`` for int8 tiles into an int32 ``out`` (wrapping)."""
    for i in range(m):
        row = out[i * n:(i + 1) * n]
        for kk in range(k):
            aik = np.int32(a[i * k + kk])
            brow = b[kk * n:(kk + 1) * n]
            for j in range(n):
                row[j] = np.int32(row[j] + aik * np.int32(brow[j]))
