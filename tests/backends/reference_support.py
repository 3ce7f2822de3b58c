"""Building and running small IR kernels on the reference interpreter, for
test_reference.py and test_reference_memory.py."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from npujit.backends.reference import ReferenceBackend
from npujit.ir import Builder, Function, Kind, Loc, infer_types
from npujit.ir import types as T

F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16
FLOATS = [F32, F16, BF16]
LOC = Loc("kern.py", 42)

def ir_dtype(dt) -> T.DType:
    return T.dtype_of_numpy(dt)


def offsets_of(b: Builder, shape) -> object:
    """Row-major element offsets 0..numel-1 shaped like ``shape`` (a constant for ())."""
    if shape == ():
        return b.constant(0, T.int32)
    n = math.prod(shape)
    offs = b.op(Kind.ARANGE, [], {"start": 0, "end": n})
    return offs if len(shape) == 1 else b.op(Kind.RESHAPE, [offs], {"shape": tuple(shape)})


def new_kernel(name, ptr_dtypes, scalar_types=()):
    types = [T.PtrType(ir_dtype(d)) for d in ptr_dtypes] + list(scalar_types)
    names = [f"p{i}" for i in range(len(ptr_dtypes))] + [f"s{i}" for i in range(len(scalar_types))]
    fn = Function(name, types, names)
    return fn, Builder(fn.body, loc=LOC)


def run(fn, grid, args):
    ReferenceBackend().compile(fn, {})(grid, args)


def apply_op(kind, inputs, attrs=None):
    """Load each input tile from GM, apply one ``kind`` op, store every result; return the
    results as arrays of their IR shape."""
    inputs = [np.asarray(x) for x in inputs]
    tile_types = [T.tensor(x.shape, ir_dtype(x.dtype)) for x in inputs]
    out_types = infer_types(kind, tile_types, attrs or {})
    fn, b = new_kernel(f"apply_{kind.name.lower()}", [x.dtype for x in inputs]
                       + [t.dtype.np for t in out_types])
    tiles = [b.op(Kind.LOAD, [p, offsets_of(b, x.shape)]) for p, x in zip(fn.args, inputs)]
    op = b.create(kind, tiles, attrs)
    for r, p in zip(op.results, fn.args[len(inputs):]):
        b.create(Kind.STORE, [p, offsets_of(b, r.type.shape), r])
    b.create(Kind.RETURN, [])
    outs = [np.zeros(max(t.numel, 1), t.dtype.np) for t in out_types]
    run(fn, (1, 1, 1), [x.reshape(-1).copy() for x in inputs] + outs)
    results = [o.reshape(t.shape) for o, t in zip(outs, out_types)]
    return results[0] if len(results) == 1 else results


def bits_equal(got, want):
    """Same dtype and same values, NaN matching NaN."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype == BF16 else got,
                                  want.astype(np.float64) if want.dtype == BF16 else want)


def wrap(values, dt):
    """Python ints wrapped to the two's-complement width of ``dt``."""
    bits = np.dtype(dt).itemsize * 8
    return np.array([(v + (1 << bits - 1)) % (1 << bits) - (1 << bits - 1) for v in values],
                    dtype=dt)


