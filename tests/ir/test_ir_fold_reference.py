"""fold against the reference backend: every scalar op fold may touch, on every dtype and on
edge values (NaN, inf, -0.0, INT_MIN, zero divisors, big shifts), gives bit-identical
results folded and unfolded."""
import numpy as np
import pytest

from npujit.ir import Builder, Function, Kind, types as T, verify
from npujit.ir.ops import BINARY, UNARY, TypeRuleError, infer_types
from npujit.ir.passes import Fold

reference = pytest.importorskip("npujit.backends.reference")

VALUES = {
    "float": [0.0, -0.0, 1.0, -1.5, 2.5, 0.1, 3.0e38, 65504.0, 1e-40, float("inf"),
              float("-inf"), float("nan")],
    T.int8: [0, 1, -1, 7, -128, 127, 8],
    T.int16: [0, 1, -1, 5, -32768, 32767, 16],
    T.int32: [0, 1, -1, -7, 2, 31, 32, -2**31, 2**31 - 1],
    T.int64: [0, 1, -1, -7, 63, 64, -2**63, 2**63 - 1],
    T.bool_: [False, True],
}
DTYPES = [T.float32, T.float16, T.bfloat16, T.int8, T.int16, T.int32, T.int64, T.bool_]


def _values(d):
    return VALUES["float"] if d.is_float else VALUES[d]


def _allowed(kind, d) -> bool:
    try:
        infer_types(kind, [T.scalar(d)] * (2 if kind in BINARY else 1), {})
        return True
    except TypeRuleError:
        return False


def _kernel(kind, d, attrs=None):
    """One store per operand combination of ``kind`` on constants of dtype ``d``."""
    n_in = 2 if kind in BINARY or kind is Kind.CMP else 1
    vals = _values(d)
    combos = [(a, b) for a in vals for b in vals] if n_in == 2 else [(a,) for a in vals]
    out_t = infer_types(kind, [T.scalar(d)] * n_in, attrs or {})[0]
    fn = Function(f"fold_{kind.name}_{d}", [T.PtrType(out_t.dtype)], ["out"])
    b = Builder(fn.body)
    for i, combo in enumerate(combos):
        r = b.op(kind, [b.constant(v, d) for v in combo], attrs)
        offs = b.op(Kind.ARANGE, [], {"start": i, "end": i + 1})
        b.create(Kind.STORE, [fn.args[0], offs, b.op(Kind.SPLAT, [r], {"shape": (1,)})])
    b.create(Kind.RETURN, [])
    return fn, len(combos), out_t.dtype


def _run(fn, n, d):
    out = np.zeros(n, d.np)
    with np.errstate(all="ignore"):
        reference.ReferenceBackend().compile(fn, {})((1, 1, 1), [out])
    return out


def _same(a, b):
    if a.dtype.kind in "fV" or a.dtype.itemsize == 2 and a.dtype.kind != "i":
        fa, fb = a.astype(np.float32), b.astype(np.float32)
        bits = np.uint16 if a.itemsize == 2 else np.uint32
        return np.all((np.isnan(fa) & np.isnan(fb)) | (a.view(bits) == b.view(bits)))
    return np.array_equal(a, b)


CASES = [(k, d, None) for k in sorted(BINARY | UNARY, key=lambda k: k.name) for d in DTYPES
         if _allowed(k, d)]
CASES += [(Kind.CMP, d, {"predicate": p}) for d in DTYPES for p in ("eq", "ne", "lt", "le", "gt", "ge")]
CASES += [(Kind.CAST, s, {"dtype": d}) for s in DTYPES for d in DTYPES]


@pytest.mark.parametrize("kind,dtype,attrs", CASES,
                         ids=[f"{k.name.lower()}-{d}-{'-'.join(map(str, (a or {}).values()))}"
                              for k, d, a in CASES])
def test_fold_matches_reference(kind, dtype, attrs):
    fn, n, out_dtype = _kernel(kind, dtype, attrs)
    unfolded = _run(fn, n, out_dtype)
    Fold().run(fn)
    verify(fn)
    folded = _run(fn, n, out_dtype)
    assert _same(unfolded, folded), (kind, dtype, attrs, unfolded, folded)


def test_fold_folds_most_exact_ops():
    """Not vacuous: integer and exact float ops really become constants."""
    for kind, d in [(Kind.IDIV, T.int32), (Kind.ADD, T.float16), (Kind.SHR, T.int8)]:
        fn, n, _ = _kernel(kind, d)
        Fold().run(fn)
        assert not any(op.kind is kind for op in fn.walk())

