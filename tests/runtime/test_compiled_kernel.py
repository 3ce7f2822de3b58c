"""``kernel.compile(...)`` and ``CompiledKernel``: a specialisation as data that launches,
pickles (into another process too), shows every stage, and is the one compile that
launches, ``inspect`` and ``simulate`` share."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import npujit.language as nl
from npujit import LaunchError, npu_kernel
from npujit.jit.compiled import CompiledKernel
from npujit.jit.hooks import on_compile


def _axpy(x_ptr, y_ptr, out_ptr, n, a, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    mask = offs < n
    nl.store(out_ptr + offs, a * nl.load(x_ptr + offs, mask=mask) +
             nl.load(y_ptr + offs, mask=mask), mask=mask)


def _data(n=300):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return x, y, np.zeros(n, np.float32)


def _want(x, y, a):
    return np.float32(a) * x + y


def test_compile_then_launch_the_compiled_kernel(backend):
    k = npu_kernel(_axpy, backend=backend)
    x, y, out = _data()
    c = k.compile(x, y, out, x.size, 2.0, BLOCK=128)
    assert isinstance(c, CompiledKernel) and c.constexprs == {"BLOCK": 128}
    c[(3,)](x, y, out, x.size, 2.0)                       # constexprs may be left out
    np.testing.assert_allclose(out, _want(x, y, 2.0), rtol=1e-6)
    c.run(lambda meta: (-(-meta["n"] // meta["BLOCK"]),), x, y, out, x.size, -1.0, BLOCK=128)
    np.testing.assert_allclose(out, _want(x, y, -1.0), rtol=1e-6)
    k[(3,)](x, y, out, x.size, 3.0, BLOCK=128)           # the kernel reuses the same compile
    np.testing.assert_allclose(out, _want(x, y, 3.0), rtol=1e-6)
    assert k.compile_count == 1


def test_compiled_kernel_checks_its_arguments():
    k = npu_kernel(_axpy, backend="reference")
    x, y, out = _data(64)
    c = k.compile(x, y, out, 64, 1.0, BLOCK=64)
    with pytest.raises(LaunchError, match="compiled with BLOCK=64, got 32"):
        c[(1,)](x, y, out, 64, 1.0, BLOCK=32)
    with pytest.raises(LaunchError, match=r"argument 'x_ptr' of compiled kernel '_axpy': "
                                          r"compiled for a contiguous f32 array of rank 1, "
                                          r"got a contiguous f16 array"):
        c[(1,)](x.astype(np.float16), y, out, 64, 1.0)
    with pytest.raises(LaunchError, match=r"grid\[0\] = -2"):
        c[(-2,)](x, y, out, 64, 1.0)
    before = out.copy()
    c[(0,)](x, y, out, 64, 1.0)                      # no programs: nothing runs
    np.testing.assert_array_equal(out, before)
    with pytest.raises(LaunchError, match="missing the argument 'a'"):
        c[(1,)](x, y, out, 64)


def test_pickled_compiled_kernel_rebuilds_and_runs(backend):
    k = npu_kernel(_axpy, backend=backend)
    x, y, out = _data()
    c = k.compile(x, y, out, x.size, 2.0, BLOCK=128)
    fresh = pickle.loads(pickle.dumps(c))          # pickled before any run: no runnable
    c[(3,)](x, y, out, x.size, 0.5)
    ran = pickle.loads(pickle.dumps(c))            # pickled after: the runnable is dropped
    for c2 in (fresh, ran):
        out[:] = 0
        c2[(3,)](x, y, out, x.size, 1.5)
        np.testing.assert_allclose(out, _want(x, y, 1.5), rtol=1e-6)
        for stage in ("trace", "ir", "schedule", "buffers", "backend"):
            assert c2.artifacts[stage] == c.artifacts[stage]
    assert fresh.artifact_key == c.artifact_key
    if backend == "numba":
        assert c.artifact_key and os.path.isfile(c.artifact_key)
        assert "def " in c.asm["backend"]


def test_the_numba_stages_are_its_llvm_ir_and_host_assembly():
    k = npu_kernel(_axpy, backend="numba")
    x, y, out = _data()
    c = k.compile(x, y, out, x.size, 2.0, BLOCK=128)
    assert {"llir", "native"} <= set(c.asm)
    llir = c.asm["llir"]
    entry = c.runnable().artifact.entry
    defines = [line for line in llir.splitlines() if line.startswith("define")]
    assert any(entry in line for line in defines)        # the kernel's entry function
    assert "fmul" in llir and "fadd" in llir             # a * x + y
    native = c.asm["native"]
    assert entry in native and "ret" in native
    assert c.asm["llir"] is llir                         # made once
    c[(3,)](x, y, out, x.size, 2.0)                      # and the kernel still runs
    np.testing.assert_allclose(out, _want(x, y, 2.0), rtol=1e-6)
    ref = npu_kernel(_axpy, backend="reference").compile(x, y, out, x.size, 2.0, BLOCK=128)
    assert "llir" not in set(ref.asm)
    with pytest.raises(KeyError, match="'llir' .* on the reference backend: it is a stage "
                                       "of the numba backend"):
        ref.asm["llir"]


_CHILD = r"""
import pickle, sys
import numpy as np
c = pickle.loads(sys.stdin.buffer.read())
x = np.arange(300, dtype=np.float32)
y = np.ones(300, np.float32)
out = np.zeros(300, np.float32)
c[(3,)](x, y, out, 300, 2.0)
print(float(out.sum()))
"""


def test_compiled_kernel_runs_in_another_process():
    # What a process pool does: the specialisation travels as bytes and runs there.
    k = npu_kernel(_axpy, backend="reference")
    x, y, out = _data()
    data = pickle.dumps(k.compile(x, y, out, x.size, 2.0, BLOCK=128))
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, "-c", _CHILD], input=data, capture_output=True,
                         env=env, timeout=120)
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    xs = np.arange(300, dtype=np.float32)
    assert float(got.stdout.decode().strip()) == pytest.approx(float((2 * xs + 1).sum()))


def test_simulate_inspect_and_launch_share_one_compile():
    k = npu_kernel(_axpy, backend="reference")
    x, y, out = _data(4096)
    events = []
    with on_compile(events.append):
        report = k.simulate(x, y, out, x.size, 2.0, grid=(4,), BLOCK=1024)
        np.testing.assert_allclose(out, _want(x, y, 2.0), rtol=1e-6)
        assert report.cycles > 0
        out[:] = 0
        k[(4,)](x, y, out, x.size, 2.0, BLOCK=1024)
        np.testing.assert_allclose(out, _want(x, y, 2.0), rtol=1e-6)
        art = k.inspect(x, y, out, x.size, 2.0, BLOCK=1024)
        assert "npu.load" in art["ir"] and k.ir(x, y, out, x.size, 2.0, BLOCK=1024) == art["ir"]
    assert len(events) == 1 and k.compile_count == 1
    assert events[0].kernel == "_axpy" and events[0].constexprs == {"BLOCK": 1024}


def test_ir_does_not_build_the_backend():
    k = npu_kernel(_axpy, backend="numba")
    x, y, out = _data()
    text = k.ir(x, y, out, x.size, 1.0, BLOCK=128)
    c = k.compile(x, y, out, x.size, 1.0, BLOCK=128)
    assert text == c.artifact("ir") and c.artifact_key is None     # not built yet
    c[(3,)](x, y, out, x.size, 1.0)
    np.testing.assert_allclose(out, _want(x, y, 1.0), rtol=1e-6)
    assert c.artifact_key is not None
