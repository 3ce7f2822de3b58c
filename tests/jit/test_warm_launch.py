"""The warm launch (jit/fastpath.py) and start-up (npujit/lazy.py, docs/startup.md).

A warm launch goes from the key of its arguments straight to the compiled entry; these
tests check that it is never a way around the slow path's checks: an argument the key
does not match goes to the slow path (same error, or a new specialisation), an argument
the key cannot vouch for is checked again, and a changed knob is not served an entry
compiled for the old one.  ``import npujit`` is checked in a fresh process, through
``sys.modules``: what it must not import is listed below, and a reference-tier launch
(the disk cache's key included) imports neither numba nor ml_dtypes nor scipy.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import npujit.language as nl
from npujit import LaunchError, npu_kernel


@npu_kernel(backend="reference")
def scaled_copy(x_ptr, out_ptr, n, factor, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@npu_kernel(backend="reference")
def row_copy(x_ptr, out_ptr, row_stride, ROWS: nl.constexpr, COLS: nl.constexpr):
    r = nl.arange(0, ROWS)[:, None]
    c = nl.arange(0, COLS)[None, :]
    nl.store(out_ptr + r * COLS + c, nl.load(x_ptr + r * row_stride + c))


def _fresh(kernel):
    return npu_kernel(kernel.fn, **kernel.options)


def _error(launch) -> str:
    with pytest.raises(LaunchError) as e:
        launch()
    return str(e.value)


def test_the_warm_path_refuses_what_the_slow_path_refuses_with_the_same_message():
    x = np.arange(8, dtype=np.float32)
    warm = _fresh(scaled_copy)
    out = np.zeros(8, np.float32)
    warm[(1,)](x, out, 8, 2.0, BLOCK=8)
    warm[(1,)](x, out, 8, 2.0, BLOCK=8)
    assert len(warm._fast) == 1 and (out == 2 * x).all()
    read_only = np.zeros(8, np.float32)
    read_only.flags.writeable = False
    odd = np.zeros(9 * 4 + 1, np.uint8)[1:].view(np.float32)      # misaligned
    for bad in [(x.astype(np.complex64), out, 8, 2.0),  # a dtype npujit has no type for
                (x, read_only, 8, 2.0),                  # stored to, read-only
                (x, odd, 8, 2.0),                        # not aligned to its element size
                (x, out, 2**70, 2.0),                    # an int beyond 64 bits
                (x, out, 8, "2")]:                       # not a number
        cold = _fresh(scaled_copy)
        assert _error(lambda: warm[(1,)](*bad, BLOCK=8)) == \
            _error(lambda: cold[(1,)](*bad, BLOCK=8))
    assert warm.compile_count == 1 and len(warm._fast) == 1


def test_a_key_never_runs_another_specialisations_entry():
    k = _fresh(scaled_copy)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    k[(1,)](x, out, 8, 2.0, BLOCK=8)
    k[(1,)](x, out, 8, 2.0, BLOCK=8)            # warm: a fast entry for f32, rank 1
    # each differs from the warm arguments in one part of the key: a new specialisation
    # (traced for those arguments), and the right result, not the f32 kernel's
    x16, out16 = x.astype(np.float16), np.zeros(8, np.float16)
    k[(1,)](x16, out16, 8, 2.0, BLOCK=8)
    assert out16.dtype == np.float16 and (out16 == 2 * x16).all()
    x2, out2 = x.reshape(2, 4), np.zeros((2, 4), np.float32)
    k[(1,)](x2, out2, 8, 3.0, BLOCK=8)
    assert (out2 == 3 * x2).all()
    out_wide = np.zeros(8, np.float32)
    k[(1,)](x, out_wide, 2**40, 4.0, BLOCK=8)    # n as i64; offs < n holds everywhere
    assert (out_wide == 4 * x).all()
    k[(1,)](x, out, 8, 5, BLOCK=8)               # factor an int: another key
    assert (out == 5 * x).all()
    k[(2,)](x, out, 8, 6.0, BLOCK=4)             # another constexpr
    assert (out == 6 * x).all()
    assert k.compile_count == 6
    for bound in [(x, out, 8, 2.0), (x16, out16, 8, 2.0)]:   # warm again: no compile
        k[(1,)](*bound, BLOCK=8)
    assert k.compile_count == 6


def test_a_strided_array_is_checked_again_on_the_warm_path():
    k = _fresh(row_copy)
    base = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = np.zeros((4, 4), np.float32)
    for _ in range(2):                           # slow, then warm
        k[(1,)](base[:, :4], out, 8, ROWS=4, COLS=4)
        assert (out == base[:, :4]).all()
    assert len(k._fast) == 1
    # same key (f32, rank 2, strided): the fast entry re-checks the strides it cannot key
    backwards = base[::-1, :4]
    assert _error(lambda: k[(1,)](backwards, out, 8, ROWS=4, COLS=4)) == \
        _error(lambda: _fresh(row_copy)[(1,)](backwards, out, 8, ROWS=4, COLS=4))
    assert "negative" in _error(lambda: k[(1,)](backwards, out, 8, ROWS=4, COLS=4))


def test_a_changed_knob_is_not_served_the_old_entry(monkeypatch):
    k = npu_kernel(scaled_copy.fn)               # backend and debug from the knobs
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    monkeypatch.setenv("NPUJIT_BACKEND", "reference")
    for _ in range(2):
        k[(1,)](x, out, 8, 2.0, BLOCK=8)
    monkeypatch.setenv("NPUJIT_DEBUG", "1")
    k[(1,)](x, out, 8, 2.0, BLOCK=8)
    assert k.compile_count == 2
    assert [c.options["debug"] for c in k.cache.values()] == [False, True]
    monkeypatch.delenv("NPUJIT_DEBUG")
    k[(1,)](x, out, 8, 3.0, BLOCK=8)
    assert k.compile_count == 2 and (out == 3 * x).all()


def test_grids_are_checked_on_the_warm_path():
    k = _fresh(scaled_copy)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    k[(1,)](x, out, 8, 2.0, BLOCK=8)
    for bad, match in [((-1,), "cannot be negative"), ((1, 1, 1, 1), "grid must be"),
                       (lambda meta: (meta["n"] // -8,), "cannot be negative")]:
        with pytest.raises(LaunchError, match=match):
            k[bad](x, out, 8, 2.0, BLOCK=8)
    k[(0,)](x, np.zeros(8, np.float32), 8, 2.0, BLOCK=8)    # no programs: nothing runs
    k[lambda meta: (meta["n"] // meta["BLOCK"],)](x, out, 8, 7.0, BLOCK=8)
    assert (out == 7 * x).all() and k.compile_count == 1


# --- start-up --------------------------------------------------------------------------
NOT_AT_IMPORT = ["numba", "llvmlite", "ml_dtypes", "scipy", "npujit.language", "npujit.sim",
                 "npujit.jit.compiler", "npujit.jit.autotune", "npujit.ir.parser",
                 "npujit.ir.schedule", "npujit.backends.numba", "npujit.moe", "npujit.cli"]


def test_import_npujit_imports_only_what_a_launch_needs(tmp_path):
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import npujit
        loaded = [m for m in {NOT_AT_IMPORT!r} if m in sys.modules]
        import npujit.language as nl

        @npujit.npu_kernel(backend="reference")
        def double(x_ptr, BLOCK: nl.constexpr):
            offs = nl.arange(0, BLOCK)
            nl.store(x_ptr + offs, nl.load(x_ptr + offs) * 2.0)

        x = np.arange(4, dtype=np.float32)
        double[(1,)](x, BLOCK=4)        # traced, compiled and run on the reference tier
        assert x.tolist() == [0.0, 2.0, 4.0, 6.0]
        after_launch = [m for m in ("numba", "llvmlite", "ml_dtypes", "scipy")
                      if m in sys.modules]
        import npujit.jit.autotune
        names = {{"autotune": npujit.autotune is npujit.jit.autotune.autotune,
                 "Config": npujit.Config is npujit.jit.autotune.Config,
                 "language": npujit.language.arange is not None,
                 "ir": npujit.ir.Builder.__module__,
                 "dir": sorted({{"moe", "sim", "autotune"}} - set(dir(npujit)))}}
        try:
            npujit.no_such_name
        except AttributeError as e:
            names["missing"] = str(e)
        print(json.dumps([loaded, after_launch, names]))
    """)
    (tmp_path / "startup_case.py").write_text(script)      # a file: tracing reads source
    res = subprocess.run([sys.executable, "startup_case.py"], capture_output=True,
                         text=True, cwd=tmp_path, env={**os.environ,
                                                       "NPUJIT_CACHE_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    loaded, after_launch, names = json.loads(res.stdout)
    assert loaded == [] and after_launch == []
    assert names == {"autotune": True, "Config": True, "language": True,
                     "ir": "npujit.ir.builder", "dir": [],
                     "missing": "module 'npujit' has no attribute 'no_such_name'"}


def test_versions_in_the_compiler_hash_are_the_installed_ones():
    import llvmlite
    import numba

    from npujit.jit.cache_key import installed_version
    assert installed_version("numba") == numba.__version__
    assert installed_version("llvmlite") == llvmlite.__version__
    assert installed_version("numpy") == np.__version__
    assert installed_version("no_such_package_npujit") == "absent"
