"""Small IR kernels for the numba backend tests: build with ``npujit.ir.Builder``, run
on the numba backend and (when it is there) the reference backend, compare.

Shared by ``test_numba.py`` (the op table), ``test_numba_ops.py`` (memory, loops, fused
regions, the Cube, numerics) and ``test_numba_runtime.py`` (launch, threads, caches).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from npujit.backends.numba import NumbaBackend
from npujit.ir import Builder, Function, Kind, Loc
from npujit.ir import types as T

F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16
LOC = Loc("test_numba.py", 1)    # every op's source location, as error messages show it
EPS = {F32: 2.0 ** -23, F16: 2.0 ** -10, BF16: 2.0 ** -7}

try:
    from npujit.backends.reference import ReferenceBackend
except ImportError:  # the oracle is optional for these tests
    ReferenceBackend = None


def irt(dt) -> T.DType:
    return T.dtype_of_numpy(dt)


def kernel(name, ptr_dtypes, scalars=()):
    types = [T.PtrType(irt(d)) for d in ptr_dtypes] + [T.scalar(s) for s in scalars]
    names = [f"p{i}" for i in range(len(ptr_dtypes))] + [f"s{i}" for i in range(len(scalars))]
    fn = Function(name, types, names)
    return fn, Builder(fn.body, loc=LOC)


def offsets(b, shape):
    """Row-major offsets 0..numel-1 shaped ``shape`` (a constant 0 for a scalar)."""
    if shape == ():
        return b.constant(0, T.int32)
    offs = b.op(Kind.ARANGE, [], {"start": 0, "end": math.prod(shape)})
    return offs if len(shape) == 1 else b.op(Kind.RESHAPE, [offs], {"shape": tuple(shape)})


def splat(b, v, shape):
    return b.op(Kind.SPLAT, [v], {"shape": tuple(shape)})


def run_numba(fn, grid, args, **options):
    run = NumbaBackend().compile(fn, options)
    run(grid, args)
    return run


def run_reference(fn, grid, args):
    if ReferenceBackend is not None:
        ReferenceBackend().compile(fn, {})(grid, args)


def same(got, want, tol=0.0):
    """Equal dtype; ints/bools equal; floats: NaN where NaN, and equal bits (tol 0) or
    within ``tol`` relative (infinities equal)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg="NaN positions differ")
    ok = ~np.isnan(g)
    if tol == 0:
        np.testing.assert_array_equal(g[ok], w[ok])
        np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(w[ok]),
                                      err_msg="signs of zero differ")
    else:
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        fin = ok & ~np.isinf(g)
        np.testing.assert_allclose(g[fin], w[fin], rtol=tol, atol=tol)


def wrap(v, dt):
    """Python ints (object array) wrapped to ``dt``'s width."""
    bits = np.dtype(dt).itemsize * 8
    half = 0 if np.dtype(dt).kind == "u" else 1 << bits - 1     # unsigned: modulo 2**bits
    f = np.vectorize(lambda x: (int(x) + half) % (1 << bits) - half, otypes=[object])
    return f(v).astype(dt)


def f32(x):
    return np.asarray(x).astype(F32)


def rnd(v, dt):
    """An f32 result rounded to ``dt`` (the half rule)."""
    with np.errstate(all="ignore"):
        return np.asarray(v, F32).astype(dt)


def _isfloat(dt):
    return dt in (F32, F16, BF16)


def _vadd(n_block=128, name="vadd"):
    """out = x + y on f16, masked against n."""
    fn, b = kernel(name, [F16, F16, F16], [T.int32])
    x, y, out, n = fn.args
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    start = splat(b, b.op(Kind.MUL, [pid, b.constant(n_block, T.int32)]), (n_block,))
    offs = b.op(Kind.ADD, [start, offsets(b, (n_block,))])
    mask = b.op(Kind.CMP, [offs, splat(b, n, (n_block,))], {"predicate": "lt"})
    s = b.op(Kind.ADD, [b.op(Kind.LOAD, [x, offs, mask]), b.op(Kind.LOAD, [y, offs, mask])])
    b.create(Kind.STORE, [out, offs, s, mask])
    b.create(Kind.RETURN, [])
    return fn
