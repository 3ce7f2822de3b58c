"""Reductions and scans over one axis of a flat tile, as numba helpers.

A tile of shape ``S`` reduced along ``axis`` is seen as ``(outer, n, inner)`` with
``outer = prod(S[:axis])``, ``n = S[axis]``, ``inner = prod(S[axis+1:])``; results go to a
preallocated flat ``out`` of ``outer * inner`` elements.  ``line_*`` functions reduce one
contiguous run (the ``inner == 1`` case and rank-1 tiles) and return a scalar.

Float sums/products run with ``fastmath={'reassoc'}`` so LLVM vectorises them: the
summation order differs from a sequential loop (allowed by docs/semantics.md; results
agree with a float64 sum to about n·2^-24 relative).  No other fast-math flag is set,
so NaN and inf behave as IEEE says.  Float max/min compare the IEEE bits as ordered
integers (integer max/min reductions vectorise; float ones do not without assuming no
NaNs) and check for NaN separately.  ``rnd`` is 0 (f32), 1 (round results to f16),
2 (bf16), 3 (float8e4nv) or 4 (float8e5).  Integer accumulation is in int64; storing into a narrower ``out`` wraps.

Example::

    >>> a = np.arange(6, dtype=np.float32)           # a 2x3 tile
    >>> out = np.empty(2, np.float32)
    >>> sum_f(a, 2, 3, 1, out, 0); out
    array([ 3., 12.], dtype=float32)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import halfprec as hp

_JIT = dict(cache=True, nogil=True, error_model="numpy")
_REASSOC = dict(_JIT, fastmath={"reassoc"})

_ABS_MASK = np.int32(0x7FFFFFFF)
_INF_BITS = np.int32(0x7F800000)


@njit(**_JIT)
def round_to(x, rnd):
    """Round a float32 to the tile's dtype: 0 f32 or f64 (no-op), 1 f16, 2 bf16,
    3 float8e4nv, 4 float8e5."""
    if rnd == 1:
        return hp.round_f16(x)
    if rnd == 2:
        return hp.round_bf16(x)
    if rnd == 3:
        return hp.round_e4m3(x)
    if rnd == 4:
        return hp.round_e5m2(x)
    return x


@njit(**_JIT)
def wrap_int(v, bits):
    """int64 ``v`` wrapped to a ``bits``-wide two's-complement value (explicitly, so that
    storing it into a narrower array also works without numba, where numpy would refuse
    an out-of-range integer)."""
    if bits >= 64:
        return np.int64(v)
    half = np.int64(1) << (bits - 1)
    return ((np.int64(v) + half) & ((half << 1) - 1)) - half


@njit(**_REASSOC)
def line_sum_f(a, start, n):
    """Sum of ``a[start:start+n]`` (float32, or float64) in the tile's own precision."""
    s = a.dtype.type(0)
    s0 = np.uint64(start)     # unsigned offsets: with signed ones LLVM gathers
    for i in range(np.uint64(n)):
        s += a[s0 + i]
    return s


@njit(**_JIT)
def line_sum_i(a, start, n):
    """Sum of ``a[start:start+n]`` (ints or bools) in int64 (wrapping)."""
    s = np.int64(0)
    for i in range(n):
        s += np.int64(a[start + i])
    return s


@njit(**_REASSOC)
def line_prod_f(a, start, n):
    p = a.dtype.type(1)
    for i in range(n):
        p *= a[start + i]
    return p


@njit(**_JIT)
def line_prod_i(a, start, n):
    p = np.int64(1)
    for i in range(n):
        p *= np.int64(a[start + i])
    return p


@njit(**_JIT)
def _key(b):
    # IEEE bits -> an int32 that orders like the float (for non-NaN values)
    return np.int32(b ^ ((b >> np.int32(31)) & _ABS_MASK))


# Keys no number has (those of two NaN bit patterns): a NaN lane's key in a max / min run,
# so NaN never wins, and the result when every lane is NaN.
_NO_MAX = np.int32(-2147483648)
_NO_MIN = np.int32(2147483647)


@njit(**_JIT)
def _number_key(b, none):
    # _key(b), or ``none`` for a NaN's bits; without a branch, so the loops vectorise
    nan = np.int32(_INF_BITS - np.int32(b & _ABS_MASK)) >> np.int32(31)   # -1 for NaN, else 0
    return np.int32((_key(b) & ~nan) | (none & nan))


@njit(**_JIT)
def _max_key_f(a, start, n):
    # (largest key of the run's numbers, or _NO_MAX; whether the run has a NaN)
    v = a.view(np.int32)
    k = _NO_MAX
    ab = np.int32(0)
    for i in range(n):
        b = v[start + i]
        c = np.int32(b & _ABS_MASK)
        key = _number_key(b, _NO_MAX)
        k = key if key > k else k
        ab = c if c > ab else ab
    return k, ab > _INF_BITS


@njit(**_JIT)
def _min_key_f(a, start, n):
    # (smallest key of the run's numbers, or _NO_MIN; whether the run has a NaN)
    v = a.view(np.int32)
    k = _NO_MIN
    ab = np.int32(0)
    for i in range(n):
        b = v[start + i]
        c = np.int32(b & _ABS_MASK)
        key = _number_key(b, _NO_MIN)
        k = key if key < k else k
        ab = c if c > ab else ab
    return k, ab > _INF_BITS


@njit(**_JIT)
def _from_key(k, none):
    # the float a key stands for; NaN when the run had no number (``none``)
    if k == none:
        return np.float32(np.nan)
    return np.int32(_key(k)).view(np.float32)


# The keys of +inf and -inf.  A NaN with the sign bit clear keys above +inf, one with it
# set below -inf, so a run's largest raw key is its largest number's unless the run has a
# NaN of the first kind (or no number): only then do line_max_f and line_min_f take the
# NaN-aware pass.  The raw-key pass is four vector instructions per 16 elements, the
# NaN-aware one eleven (softmax 4096x1024, one thread: 0.3 ms of 2.7 went to the row max).
_POS_INF_KEY = np.int32(0x7F800000)
_NEG_INF_KEY = np.int32(-2139095041)      # _key of -inf's bits 0xFF800000


@njit(**_JIT)
def _raw_max_key(a, start, n):
    v = a.view(np.int32)
    s = np.uint64(start)      # unsigned offsets: no negative-index fix-up, no gather
    k = _NO_MAX
    for i in range(np.uint64(n)):
        key = _key(v[s + i])
        k = key if key > k else k
    return k


@njit(**_JIT)
def _raw_min_key(a, start, n):
    v = a.view(np.int32)
    s = np.uint64(start)
    k = _NO_MIN
    for i in range(np.uint64(n)):
        key = _key(v[s + i])
        k = key if key < k else k
    return k


@njit(**_JIT)
def line_max_f(a, start, n):
    """Max of a float32 run, NaN skipped (np.fmax, Triton's max); NaN only if all are."""
    k = _raw_max_key(a, start, n)
    if _NEG_INF_KEY <= k <= _POS_INF_KEY:
        return np.int32(_key(k)).view(np.float32)
    return _from_key(_max_key_f(a, start, n)[0], _NO_MAX)


@njit(**_JIT)
def line_min_f(a, start, n):
    """Min of a float32 run, NaN skipped (np.fmin); NaN only if all are."""
    k = _raw_min_key(a, start, n)
    if _NEG_INF_KEY <= k <= _POS_INF_KEY:
        return np.int32(_key(k)).view(np.float32)
    return _from_key(_min_key_f(a, start, n)[0], _NO_MIN)


@njit(**_JIT)
def line_max_i(a, start, n):
    m = a[start]
    for i in range(1, n):
        x = a[start + i]
        m = x if x > m else m
    return m


@njit(**_JIT)
def line_min_i(a, start, n):
    m = a[start]
    for i in range(1, n):
        x = a[start + i]
        m = x if x < m else m
    return m


@njit(**_JIT)
def _line_arg(a, start, n, m):
    # index of the first element equal to m, or of the first NaN when m is NaN
    if m != m:
        for i in range(n):
            if a[start + i] != a[start + i]:
                return np.int32(i)
    for i in range(n):
        if a[start + i] == m:
            return np.int32(i)
    return np.int32(0)


@njit(**_JIT)
def line_argmax_f(a, start, n):
    """Index of the first maximum of a float32 run; of the first NaN if there is one."""
    k, nan = _max_key_f(a, start, n)
    return _line_arg(a, start, n, np.float32(np.nan) if nan else _from_key(k, _NO_MAX))


@njit(**_JIT)
def line_argmin_f(a, start, n):
    k, nan = _min_key_f(a, start, n)
    return _line_arg(a, start, n, np.float32(np.nan) if nan else _from_key(k, _NO_MIN))


@njit(**_JIT)
def line_argmax_i(a, start, n):
    return _line_arg(a, start, n, line_max_i(a, start, n))


@njit(**_JIT)
def line_argmin_i(a, start, n):
    return _line_arg(a, start, n, line_min_i(a, start, n))


@njit(**_REASSOC)
def sum_f(a, outer, n, inner, out, rnd):
    """``out[o, j] = Σ_k a[o, k, j]`` for float32 tiles, rounded per ``rnd``."""
    for o in range(outer):
        base = o * n * inner
        if inner == 1:
            out[o] = round_to(line_sum_f(a, base, n), rnd)
            continue
        acc = out[o * inner:(o + 1) * inner]
        acc[:] = 0
        for k in range(n):
            row = base + k * inner
            for j in range(inner):
                acc[j] += a[row + j]
        if rnd:
            for j in range(inner):
                acc[j] = round_to(acc[j], rnd)


@njit(**_JIT)
def sum_i(a, outer, n, inner, out):
    """Integer/bool sum along the axis, int64 accumulation, wrapping into ``out``."""
    acc = np.zeros(inner, np.int64)
    for o in range(outer):
        base = o * n * inner
        acc[:] = 0
        for k in range(n):
            row = base + k * inner
            for j in range(inner):
                acc[j] += np.int64(a[row + j])
        for j in range(inner):
            out[o * inner + j] = wrap_int(acc[j], out.itemsize * 8)


@njit(**_REASSOC)
def prod_f(a, outer, n, inner, out, rnd):
    for o in range(outer):
        base = o * n * inner
        for j in range(inner):
            p = a.dtype.type(1)
            for k in range(n):
                p *= a[base + k * inner + j]
            out[o * inner + j] = round_to(p, rnd)


@njit(**_JIT)
def prod_i(a, outer, n, inner, out):
    for o in range(outer):
        base = o * n * inner
        for j in range(inner):
            p = np.int64(1)
            for k in range(n):
                p *= np.int64(a[base + k * inner + j])
            out[o * inner + j] = wrap_int(p, out.itemsize * 8)


@njit(**_JIT)
def _extreme_cols(a, base, n, inner, acc, is_max):
    # max/min over k of a[base + k*inner + j] for every j, vectorised over j
    for j in range(inner):
        acc[j] = a[base + j]
    for k in range(1, n):
        row = base + k * inner
        for j in range(inner):
            x = a[row + j]
            m = acc[j]
            # NaN is skipped (np.fmax): a NaN x never wins, any x replaces a NaN m
            better = (x > m) if is_max else (x < m)
            acc[j] = x if (better or m != m) else m


@njit(**_JIT)
def _arg_cols(a, base, n, inner, out, is_max):
    for j in range(inner):
        m = a[base + j]
        best = 0
        for k in range(1, n):
            if m != m:
                break  # the first NaN wins
            x = a[base + k * inner + j]
            better = (x > m) if is_max else (x < m)
            if better or x != x:
                m = x
                best = k
        out[j] = best


@njit(**_JIT)
def extreme_f(a, outer, n, inner, out, is_max):
    """Max (``is_max``) or min along the axis of a float32 tile, NaN skipped (NaN only
    where every element is)."""
    for o in range(outer):
        base = o * n * inner
        if inner == 1:
            out[o] = line_max_f(a, base, n) if is_max else line_min_f(a, base, n)
        else:
            _extreme_cols(a, base, n, inner, out[o * inner:(o + 1) * inner], is_max)


@njit(**_JIT)
def extreme_i(a, outer, n, inner, out, is_max):
    """Max or min along the axis of an integer or bool tile."""
    for o in range(outer):
        base = o * n * inner
        if inner == 1:
            out[o] = line_max_i(a, base, n) if is_max else line_min_i(a, base, n)
        else:
            _extreme_cols(a, base, n, inner, out[o * inner:(o + 1) * inner], is_max)


@njit(**_JIT)
def arg_extreme_f(a, outer, n, inner, out, is_max):
    """i32 index of the first max/min along the axis (of the first NaN, if any)."""
    for o in range(outer):
        base = o * n * inner
        if inner == 1:
            out[o] = line_argmax_f(a, base, n) if is_max else line_argmin_f(a, base, n)
        else:
            _arg_cols(a, base, n, inner, out[o * inner:(o + 1) * inner], is_max)


@njit(**_JIT)
def arg_extreme_i(a, outer, n, inner, out, is_max):
    for o in range(outer):
        base = o * n * inner
        if inner == 1:
            out[o] = line_argmax_i(a, base, n) if is_max else line_argmin_i(a, base, n)
        else:
            _arg_cols(a, base, n, inner, out[o * inner:(o + 1) * inner], is_max)


@njit(**_JIT)
def extreme_g(a, outer, n, inner, out, is_max):
    """NaN-skipping max/min along the axis of a float tile of any width (f64 tiles;
    the f32 helpers above compare IEEE bits as int32)."""
    for o in range(outer):
        _extreme_cols(a, o * n * inner, n, inner, out[o * inner:(o + 1) * inner], is_max)


@njit(**_JIT)
def arg_extreme_g(a, outer, n, inner, out, is_max):
    """i32 index of the first max/min along the axis of a float tile of any width."""
    for o in range(outer):
        _arg_cols(a, o * n * inner, n, inner, out[o * inner:(o + 1) * inner], is_max)


@njit(**_JIT)
def line_extreme_g(a, start, n, is_max):
    """``extreme_g`` of one contiguous run, as a scalar."""
    acc = np.empty(1, a.dtype)
    _extreme_cols(a, start, n, 1, acc, is_max)
    return acc[0]


@njit(**_JIT)
def line_arg_extreme_g(a, start, n, is_max):
    """``arg_extreme_g`` of one contiguous run, as a scalar."""
    idx = np.empty(1, np.int32)
    _arg_cols(a, start, n, 1, idx, is_max)
    return idx[0]


@njit(**_JIT)
def cumsum_f(a, outer, n, inner, out, rnd):
    """Inclusive prefix sum along the axis; the f32 running sum is not rounded, each
    output is (per ``rnd``)."""
    for o in range(outer):
        base = o * n * inner
        for j in range(inner):
            s = a.dtype.type(0)
            for k in range(n):
                idx = base + k * inner + j
                s = a.dtype.type(s + a[idx])
                out[idx] = round_to(s, rnd)


@njit(**_JIT)
def cumsum_i(a, outer, n, inner, out):
    for o in range(outer):
        base = o * n * inner
        for j in range(inner):
            s = np.int64(0)
            for k in range(n):
                idx = base + k * inner + j
                s += np.int64(a[idx])
                out[idx] = wrap_int(s, out.itemsize * 8)
