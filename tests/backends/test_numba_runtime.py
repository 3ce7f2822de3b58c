"""The numba backend's runtime: launching on threads, argument checks, the generated
source, device print, the on-disk cache across processes, NUMBA_DISABLE_JIT.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from npujit.backends.numba import NumbaBackend
from npujit.ir import Kind

from numba_support import F16, F32, _vadd, kernel, offsets, run_numba, same


def test_parallel_launch_matches_serial_and_handles_strided_arrays():
    n = 5000
    rng = np.random.default_rng(1)
    x = rng.uniform(-8, 8, n).astype(F16)
    y = rng.uniform(-8, 8, n).astype(F16)
    grid = ((n + 127) // 128, 1, 1)
    want = (x.astype(F32) + y.astype(F32)).astype(F16)
    serial = NumbaBackend().compile(_vadd(), {"parallel": False})
    threaded = NumbaBackend().compile(_vadd(), {"parallel": True, "num_threads": 3})
    for run in (serial, threaded):
        out = np.zeros(n, F16)
        run(grid, [x, y, out, n])
        same(out, want)
    big = np.zeros(2 * n, F16)
    threaded(grid, [x, y, big[::2], n])             # a strided view: its own variant
    same(big[::2], want)
    assert not big[1::2].any()


def test_the_default_launch_probes_both_ways_keeps_the_faster_and_probes_again(monkeypatch):
    from npujit.backends import threads as policy
    monkeypatch.setattr(policy, "PARALLEL_AFTER_S", 0.0)      # every launch is "slow"
    monkeypatch.setattr(policy, "PROBE_ROUNDS", 2)
    monkeypatch.setattr(policy, "REPROBE_FIRST", 3)
    monkeypatch.setattr(policy, "REPROBE_AFTER", 3)
    n = 5000
    x = np.arange(n, dtype=F16) % 64
    grid = ((n + 127) // 128, 1, 1)
    run = NumbaBackend().compile(_vadd(), {"num_threads": 2})     # a Launcher
    ways = []                                   # True: this launch ran on threads
    threads = run._launch_threads

    def on_threads(*a):
        ways[-1] = True
        threads(*a)
    run._launch_threads = on_threads
    chosen = []
    for _ in range(13):
        ways.append(False)
        out = np.zeros(n, F16)
        run(grid, [x, x, out, n])
        same(out, (2 * x.astype(F32)).astype(F16))
        choice = run._choice
        chosen.append((choice.way is not None, choice.way, dict(choice.best)))
    # two serial launches, then a probe alternating threaded and serial (2 rounds), then
    # the faster way by its best probe time for 3 launches, then a new probe
    assert ways[:6] == [False, False, True, False, True, False]
    first = chosen[5]
    assert first[0] and first[1] == (first[2][True] < first[2][False])
    assert ways[6:9] == [first[1]] * 3 and all(c[0] for c in chosen[5:9])
    assert ways[9:13] == [True, False, True, False] and not chosen[9][0]
    again = chosen[12]
    assert again[0] and again[1] == (again[2][True] < again[2][False])


def test_wrong_argument_dtype_is_named():
    run = NumbaBackend().compile(_vadd(), {})
    with pytest.raises(TypeError, match="vadd: argument 'p1' must be a 1-D float16 array"):
        run((1, 1, 1), [np.zeros(4, F16), np.zeros(4, F32), np.zeros(4, F16), 4])
    with pytest.raises(TypeError, match="vadd takes 4 arguments"):
        run((1, 1, 1), [np.zeros(4, F16), np.zeros(4, F16), np.zeros(4, F16)])


def test_source_is_plain_python_with_source_lines():
    run = NumbaBackend().compile(_vadd(), {})
    assert "def vadd(nprog0, nprog1, nprog2, first, last" in run.source
    assert "# test_numba.py:1" in run.source
    compile(run.source, "<check>", "exec")
    assert run.path and os.path.exists(run.path)


def test_device_print_format(capfd):
    fn, b = kernel("printer", [F32])
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 1})
    b.create(Kind.PRINT, [pid, b.op(Kind.LOAD, [fn.args[0], offsets(b, (2, 2))])], {"prefix": "v:"})
    b.create(Kind.RETURN, [])
    run_numba(fn, (1, 2, 1), [np.arange(4, dtype=F32)], parallel=False)
    out = capfd.readouterr().out
    assert "[pid (0, 1, 0)] v: 1" in out
    assert "[pid (0, 0, 0)] v: [[0. 1.]" in out


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {testdir!r})
    import numba_support as t
    from npujit.backends.numba import NumbaBackend
    run = NumbaBackend().compile(t._vadd(name={name!r}), {{}})
    x = np.arange(300).astype(np.float16); out = np.zeros(300, np.float16)
    run((3, 1, 1), [x, x, out, 300])
    hits = sum(run._entry.stats.cache_hits.values()) if run.jit else -1
    print(json.dumps({{"sum": float(out.astype(np.float64).sum()), "hits": hits}}))
""")


def _child(env_extra, name):
    env = dict(os.environ, **env_extra)
    code = _CHILD.format(testdir=os.path.dirname(__file__), name=name)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    import json
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_second_process_reuses_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NPUJIT_DISABLE_CACHE", raising=False)
    run = NumbaBackend().compile(_vadd(name="vadd_cached"), {})   # writes the cache
    assert run.path.startswith(str(tmp_path))
    child = _child({"NPUJIT_CACHE_DIR": str(tmp_path)}, "vadd_cached")
    if child["hits"] < 1:
        # Seen once in a cold, heavily loaded run: the first child missed. A process that
        # follows one which surely wrote the cache must hit it.
        child = _child({"NPUJIT_CACHE_DIR": str(tmp_path)}, "vadd_cached")
    numba_dir = os.environ.get("NUMBA_CACHE_DIR") or str(tmp_path / "numba" / "__pycache__")
    listing = sorted(str(p) for p in __import__("pathlib").Path(numba_dir).rglob("*vadd_cached*"))
    assert child["hits"] >= 1, f"no cache hit in the second process; cache files: {listing}"
    assert child["sum"] == float((np.arange(300).astype(F16).astype(np.float64) * 2).sum())


def test_disable_jit_runs_the_same_code_in_the_interpreter(tmp_path):
    child = _child({"NPUJIT_CACHE_DIR": str(tmp_path), "NUMBA_DISABLE_JIT": "1"}, "vadd")
    assert child["hits"] == -1
    assert child["sum"] == float((np.arange(300).astype(F16).astype(np.float64) * 2).sum())


def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NPUJIT_DISABLE_CACHE", "1")
    run = NumbaBackend().compile(_vadd(64), {})
    out = np.zeros(64, F16)
    run((1, 1, 1), [np.ones(64, F16), np.ones(64, F16), out, 64])
    assert (out == 2).all()
    assert not any(tmp_path.iterdir())


def test_a_damaged_cache_file_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NPUJIT_DISABLE_CACHE", raising=False)   # else run.path is not a file
    run = NumbaBackend().compile(_vadd(64, name="vadd_damaged"), {})
    with open(run.path, "w") as f:
        f.write("garbage")
    sys.modules.pop(next(m for m in sys.modules if m.startswith("npujit_numba_")
                         and getattr(sys.modules[m], "__file__", None) == run.path))
    again = NumbaBackend().compile(_vadd(64, name="vadd_damaged"), {})
    with open(again.path) as f:
        assert f.read() == again.source
    out = np.zeros(64, F16)
    again((1, 1, 1), [np.ones(64, F16), np.ones(64, F16), out, 64])
    assert (out == 2).all()
