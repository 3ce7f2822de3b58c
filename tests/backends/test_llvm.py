"""The llvm backend (backends/llvm/): the op table of test_numba.py, the bundled kernels,
control flow, its safety checks, what it refuses, and a cached kernel in a fresh process.

Oracles: the op table's numpy expectations and the reference backend (test_numba.py),
numpy for the kernels; the conformance table runs on it too
(tests/conformance/test_conformance.py ``test_conformance[llvm-...]``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.backends.llvm import LlvmBackend
from npujit.backends.llvm.lower import Unsupported
from npujit.errors import IndexOverflowError, LaunchError, OutOfBoundsError
from npujit.kernels import elementwise, layernorm, softmax
from npujit.kernels import numpy_reference as ref

from numba_support import ReferenceBackend, same
from test_numba import CHUNK, DTYPES, OPS, _run_cases, _tol, inputs

# Op-table cases the llvm backend refuses today (backends/llvm/backend.py says which ops).
NOT_YET = ()
LLVM_DTYPES = DTYPES


def run_llvm(fn, grid, args, **options):
    run = LlvmBackend().compile(fn, options)
    run(grid, args)
    return run


def _refused(case) -> bool:
    return case.name.startswith(NOT_YET)


_tables: dict = {}


def _table(dt):
    if dt not in _tables:
        x, y = inputs(dt)
        cases = [c for c in OPS if c.applies(dt) and not _refused(c)]
        table = {}
        for i in range(0, len(cases), CHUNK):
            table.update(_run_cases(dt, cases[i:i + CHUNK], x, y, i // CHUNK, run=run_llvm))
        _tables[dt] = table
    return _tables[dt]


PARAMS = [(c.name, dt) for dt in LLVM_DTYPES for c in OPS if c.applies(dt)]


@pytest.mark.parametrize("name,dt", PARAMS, ids=[f"{n}-{np.dtype(d).name}" for n, d in PARAMS])
def test_op_table(name, dt):
    """Each op of test_numba.py's table on its edge inputs (INT_MIN // -1, shift counts
    out of range, NaN, infinities, -0.0), against numpy and the reference backend; the
    ops it does not lower are refused when compiled."""
    case = next(c for c in OPS if c.name == name)
    if _refused(case):
        x, y = inputs(dt)
        with pytest.raises(Unsupported, match="the llvm backend does not"):
            _run_cases(dt, [case], x, y, 99, run=run_llvm)
        return
    got, reference, want, case = _table(dt)[name]
    tol = _tol(case, dt)
    for g, r, w in zip(got, reference, want):
        if w is None:
            continue
        same(g, w, tol)
        if ReferenceBackend is not None:
            same(g, r, tol)


def test_bundled_kernels_match_numpy():
    """Vector add with a masked tail, softmax, layernorm and rmsnorm over rows that are
    not a power of two."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(5000).astype(np.float32)
    y = rng.standard_normal(5000).astype(np.float32)
    np.testing.assert_array_equal(elementwise.add(x, y, backend="llvm"), x + y)
    s = (rng.standard_normal((37, 300)) * 4).astype(np.float32)
    np.testing.assert_allclose(softmax.softmax(s, backend="llvm"), ref.softmax(s),
                               rtol=1e-5, atol=1e-7)
    h = rng.standard_normal((9, 77)).astype(np.float32)
    w = rng.standard_normal(77).astype(np.float32)
    b = rng.standard_normal(77).astype(np.float32)
    np.testing.assert_allclose(layernorm.layernorm(h, w, b, backend="llvm"),
                               ref.layernorm(h, w, b), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layernorm.rmsnorm(h, w, backend="llvm"), ref.rmsnorm(h, w),
                               rtol=1e-4, atol=1e-5)


@npu_kernel
def _row_sums(x_ptr, out_ptr, n_cols, BLOCK: nl.constexpr):
    """Per row: the column blocks summed as a carried tile and as a carried scalar, and
    the odd rows' sums negated in an ``if``."""
    row = nl.program_id(0)
    acc = nl.zeros((BLOCK,), nl.float32)
    total = 0.0
    for start in nl.range(0, n_cols, BLOCK):
        cols = start + nl.arange(0, BLOCK)
        v = nl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        acc += v
        total += nl.sum(v, axis=0)
    s = nl.sum(acc, axis=0)
    if row % 2 == 1:
        s = -s
    nl.store(out_ptr + row * 2, s)
    nl.store(out_ptr + row * 2 + 1, total)


def test_loops_if_and_carried_tiles():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 45)).astype(np.float32)
    out = np.zeros(12, np.float32)
    _row_sums.with_options(backend="llvm")[(6,)](x.reshape(-1), out, 45, BLOCK=16)
    sums = x.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out[0::2], np.where(np.arange(6) % 2 == 1, -sums, sums),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1::2], sums, rtol=1e-5, atol=1e-5)


@npu_kernel
def _copy(src_ptr, dst_ptr, BLOCK: nl.constexpr):
    i = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(dst_ptr + i, nl.load(src_ptr + i))


def test_out_of_bounds_is_an_error_that_names_the_argument():
    """Unmasked lanes past the end: the load is refused before any store, naming the
    kernel, the op, its line and the argument; nothing is written."""
    src = np.arange(100, dtype=np.float32)
    dst = np.full(128, -1.0, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"kernel '_copy', npu.load at .*test_llvm.py"
                                               r":\d+, program \(0, 0, 0\).*argument 'src_ptr'"):
        _copy.with_options(backend="llvm")[(1,)](src, dst, BLOCK=128)
    assert (dst == -1.0).all()


@pytest.mark.parametrize("n,limit", [(1000, 1000), (1000, 1003), (1000, 0)])
def test_a_tail_block_checks_its_active_lanes_only(n, limit):
    """The last program's lanes reach past the arrays: only its active ones are checked
    (the one-pass fallback of lower_memory._span).  A mask inside the arrays runs; one
    letting a lane past them (``limit`` 1003) is the error, with the active lanes'
    range; nothing is written."""
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, -1.0, np.float32)
    run = _masked_add.with_options(backend="llvm")
    if limit > n:
        with pytest.raises(OutOfBoundsError, match=r"active lanes have offsets \[768, 1002\]"):
            run[(-(-n // 256),)](x, y, out, limit, BLOCK=256)
        assert (out[768:] == -1.0).all()        # the failing program wrote nothing
        return
    run[(-(-n // 256),)](x, y, out, limit, BLOCK=256)
    np.testing.assert_array_equal(out, np.where(np.arange(n) < limit, x + y, -1.0))


@pytest.mark.parametrize("limit", [100, 101])
def test_accesses_sharing_lanes_check_each_argument(limit):
    """The two loads and the store share one lane pass (lower_memory._span,
    ``_same_lanes``); it must run when any of their arguments needs it: here x is long
    enough for every lane and y is not, so the pass runs for y's sake; an active lane
    past y (``limit`` 101) is y's error, not x's."""
    x = np.arange(1024, dtype=np.float32)
    y = np.arange(100, dtype=np.float32) * 2
    out = np.full(1024, -1.0, np.float32)
    run = _masked_add.with_options(backend="llvm")
    if limit > y.size:
        with pytest.raises(OutOfBoundsError, match=r"argument 'y_ptr'"):
            run[(1,)](x, y, out, limit, BLOCK=128)
        return
    run[(1,)](x, y, out, limit, BLOCK=128)
    np.testing.assert_array_equal(out[:100], x[:100] + y)
    assert (out[100:] == -1.0).all()


@npu_kernel
def _masked_add(x_ptr, y_ptr, out_ptr, limit, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    keep = offs < limit
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=keep) + nl.load(y_ptr + offs, mask=keep),
             mask=keep)


@npu_kernel
def _far(x_ptr, out_ptr, STEP: nl.constexpr):
    pid = nl.program_id(0)
    nl.store(out_ptr + pid, nl.load(x_ptr + (pid + 2) * STEP))


def test_int32_index_arithmetic_that_wraps_is_an_error():
    x = np.zeros(8, np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(IndexOverflowError, match=r"program \(0, 0, 0\): int32 index "
                                                 r"arithmetic 2 \* 1073741824 = 2147483648 "
                                                 "overflowed"):
        _far.with_options(backend="llvm")[(8,)](x, out, STEP=1 << 30)


@npu_kernel
def _prints(x_ptr, out_ptr, n):
    r = nl.arange(0, 4)
    x = nl.load(x_ptr + nl.program_id(0) * 4 + r)
    nl.device_print("x", x)
    nl.device_print("rows", x.reshape(2, 2) > 1.5, n)
    nl.device_print("")
    nl.store(out_ptr + nl.program_id(0) * 4 + r, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_device_print_writes_what_the_reference_writes(capfd, dtype):
    """One line per printed value, ``[pid (x, y, z)] <prefix> <value>`` in the value's
    own dtype (a 16-bit float prints as one), for tiles, bools and scalars, and a print
    of nothing (backends/llvm/lower_print.py); the reference interpreter is the oracle."""
    x = (np.arange(8) * 0.75).astype(dtype)
    lines = {}
    for backend in ("reference", "llvm"):
        capfd.readouterr()
        _prints.with_options(backend=backend, parallel=False)[(2,)](
            x, np.zeros(8, dtype), 7)
        lines[backend] = capfd.readouterr().out.splitlines()
    assert lines["llvm"] == lines["reference"]
    heads = [line for line in lines["llvm"] if line.startswith("[pid")]
    assert len(heads) == 8 and "[pid (0, 0, 0)]" in heads and "[pid (1, 0, 0)] rows 7" in heads


def test_a_wrong_argument_dtype_is_refused():
    f32 = np.zeros(128, np.float32)
    run = _copy.with_options(backend="llvm").compile(f32, f32, BLOCK=128).runnable()
    with pytest.raises(LaunchError, match="argument 'src_ptr' must be a 1-D contiguous "
                                          "float32 array, got float64"):
        run((1, 1, 1), [np.zeros(128, np.float64), f32])


def test_threads_run_every_program_and_raise_the_first_failure_in_grid_order():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(128 * 64).astype(np.float32)
    out = np.zeros_like(x)
    run = _copy.with_options(backend="llvm", parallel=True)
    run[(64,)](x, out, BLOCK=128)
    np.testing.assert_array_equal(out, x)
    short = np.zeros(128 * 40, np.float32)        # programs 40.. read past the end
    with pytest.raises(OutOfBoundsError, match=r"program \(40, 0, 0\)"):
        run[(64,)](short, out, BLOCK=128)


@pytest.mark.parametrize("module", ["ir_text", "values", "elementwise", "lower_tile",
                                    "lower_memory"])
def test_module_examples(module):
    import doctest
    import importlib
    mod = importlib.import_module(f"npujit.backends.llvm.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed


def test_a_cached_kernel_runs_in_a_fresh_process_without_numba(tmp_path):
    """The kernel cache keeps the object code: a second process launches the kernel
    from it, correct, and never imports numba."""
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from npujit.kernels import softmax
        s = np.random.default_rng(0).standard_normal((5, 70)).astype(np.float32)
        got = softmax.softmax(s, backend="llvm")
        e = np.exp(s - s.max(axis=1, keepdims=True))
        assert np.allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
        print("numba" in sys.modules)
    """)
    env = {**os.environ, "NPUJIT_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[1].stdout.strip() == "False", runs[1].stdout + runs[1].stderr
