"""The kernel cache (jit/cache.py, npujit/cache_dir.py, backends/numba/disk_cache.py):
hits across processes, concurrent writers, every fault a cache directory can have
(corrupt, truncated, read-only, a file in the way, writable by others, another user's
entry), what invalidates an entry, eviction on disk and in memory.

Most checks use the reference backend (no numba compile); a new kernel object for the
same function stands for a fresh process (its memory cache is empty, so a launch goes to
the disk cache).  Subprocesses only where another process is the point."""
from __future__ import annotations

import gc
import importlib.util
import linecache
import multiprocessing
import os
import stat
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import npujit.language as nl
from npujit import LaunchError, cache_dir
from npujit.backends.numba import disk_cache as numba_disk
from npujit.backends.numba import runtime as numba_runtime
from npujit.cache_dir import CacheWarning
from npujit.jit import cache, cache_key
from npujit.jit.hooks import on_compile
from npujit.jit.kernel import NPUKernel


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    """An empty private cache directory, decided afresh for the test."""
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(d))
    for knob in ("NPUJIT_DISABLE_CACHE", "NPUJIT_ALWAYS_COMPILE", "NPUJIT_CACHE_SHARED",
                 "NPUJIT_CACHE_MAX_MB", "NPUJIT_MEMORY_CACHE_SIZE", "NPUJIT_DUMP_IR"):
        monkeypatch.delenv(knob, raising=False)
    cache_dir.forget()
    cache.stats.clear()
    yield d
    cache_dir.forget()


def _scale(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    m = offs < n
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=m) * 3.0 + 1.0, mask=m)


def _launch(kernel, block=16, n=11):
    """Launch ``kernel`` (a _scale-like kernel) and return (output, compile events)."""
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    events = []
    with on_compile(events.append):
        kernel[(1,)](x, out, n, BLOCK=block)
    return out, events


def _fresh(fn=_scale, backend="reference"):
    return NPUKernel(fn, backend=backend)


def _entries(d) -> list:
    return sorted(p.name for p in (d / "kernels").iterdir() if p.name.endswith(".ck"))


def _module_from(tmp_path, source: str):
    """Import ``source`` as module ``cache_case`` (file cache_case.py in tmp_path): each
    call is a new module object of the same name and file, as in a fresh process."""
    path = tmp_path / "cache_case.py"
    path.write_text(textwrap.dedent(source))
    linecache.checkcache(str(path))       # the file was rewritten in place
    modname = "cache_case"
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod


# --- hits -------------------------------------------------------------------------------

def test_a_fresh_kernel_object_loads_the_entry_instead_of_compiling(cdir):
    want = np.arange(11, dtype=np.float32) * 3 + 1
    out, events = _launch(_fresh())
    assert (out == want).all() and [e.from_disk for e in events] == [False]
    assert _entries(cdir) and cache.stats["stores"] == 1
    k = _fresh()
    out, events = _launch(k)
    assert (out == want).all() and [e.from_disk for e in events] == [True]
    assert cache.stats["hits"] == 1 and k.compile_count == 1
    mode = stat.S_IMODE(os.stat(cdir / "kernels" / _entries(cdir)[0]).st_mode)
    assert mode == 0o644 & ~cache_dir.process_umask()          # group-readable (umask 022)


def test_always_compile_and_disable_cache(cdir, monkeypatch):
    _launch(_fresh())
    monkeypatch.setenv("NPUJIT_ALWAYS_COMPILE", "1")
    out, events = _launch(_fresh())
    assert [e.from_disk for e in events] == [False] and cache.stats["hits"] == 0
    monkeypatch.delenv("NPUJIT_ALWAYS_COMPILE")
    monkeypatch.setenv("NPUJIT_DISABLE_CACHE", "1")
    for p in (cdir / "kernels").iterdir():
        p.unlink()
    out, events = _launch(_fresh(), block=32)
    assert (out == np.arange(11) * 3 + 1).all() and not _entries(cdir)


_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, {testdir!r})
from test_cache import _scale
from npujit.jit import cache
from npujit.jit.kernel import NPUKernel
from npujit.jit.hooks import on_compile
k = NPUKernel(_scale, backend="numba")
x = np.arange(11, dtype=np.float32)
out = np.zeros(11, np.float32)
events = []
with on_compile(events.append):
    k[(1,)](x, out, 11, BLOCK=16)
c = k.compile(x, out, 11, BLOCK=16)
entry = c.runnable()._entry
print(json.dumps({{"out": out.tolist(), "stats": dict(cache.stats),
                  "from_disk": [e.from_disk for e in events],
                  "ir_parsed": c._fn is not None or "npujit.ir.parser" in sys.modules,
                  "numba_misses": sum(entry.stats.cache_misses.values()),
                  "numba_hits": sum(entry.stats.cache_hits.values())}}))
"""


def test_a_second_process_neither_traces_nor_runs_llvm(cdir):
    k = _fresh(backend="numba")
    out, _ = _launch(k)
    code = _CHILD.format(testdir=os.path.dirname(__file__))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, NPUJIT_CACHE_DIR=str(cdir)))
    assert res.returncode == 0, res.stderr
    import json
    child = json.loads(res.stdout.strip().splitlines()[-1])
    assert child["out"] == (np.arange(11, dtype=np.float32) * 3 + 1).tolist()
    assert child["stats"].get("misses", 0) == 0 and child["stats"]["hits"] == 1
    assert child["from_disk"] == [True]
    assert child["numba_hits"] == 1 and child["numba_misses"] == 0
    assert "CacheWarning" not in res.stderr
    # nor parses the IR: the entry keeps the generated module (NumbaBackend.load), which
    # is used only for the options it was generated with
    assert child["ir_parsed"] is False
    from npujit.backends.numba import NumbaBackend
    c = next(iter(k.cache.values()))
    artifact = c.runnable().artifact
    assert NumbaBackend().load(artifact, {**c.options, "debug": True}) is None
    assert NumbaBackend().load(artifact, {**c.options, "cache": False}) is None
    again = np.zeros(11, np.float32)
    NumbaBackend().load(artifact, c.options)((1, 1, 1), [np.arange(11, dtype=np.float32),
                                                         again, 11])
    assert (again == out).all()


def _forget_numba_modules():
    """Forget the generated modules this process ran (a forked child inherits them)."""
    numba_runtime._loaded.clear()
    for name in [m for m in sys.modules if m.startswith("npujit_numba_")]:
        del sys.modules[name]


def _race_worker(barrier, queue):
    _forget_numba_modules()
    k = _fresh(backend="numba")
    barrier.wait()
    out, events = _launch(k)
    entry = k.compile(np.zeros(11, np.float32), out, 11, BLOCK=16).runnable()._entry
    queue.put((out.tolist(), sum(entry.stats.cache_misses.values()),
               [e.from_disk for e in events]))


def test_eight_processes_compile_one_kernel_into_an_empty_cache(cdir):
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_race_worker, args=(barrier, queue)) for _ in range(8)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    want = (np.arange(11, dtype=np.float32) * 3 + 1).tolist()
    assert all(out == want for out, _, _ in results)
    # numba compiled once (under the module's lock); the other seven loaded its code
    assert sum(misses for _, misses, _ in results) == 1
    assert len(_entries(cdir)) == 1
    sha = next(p.stem for p in (cdir / "numba").iterdir() if p.suffix == ".py")
    d = cache_dir.current()
    assert numba_disk._check(d, sha) is None          # whole, checksums agree
    assert not [p for p in cdir.rglob(".tmp-*")]       # no temp file left behind


# --- faults -------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_entry_is_rebuilt_with_one_warning(cdir, damage):
    _launch(_fresh())
    path = cdir / "kernels" / _entries(cdir)[0]
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2] if damage == "truncate" else
                     data[:-5] + bytes([data[-5] ^ 0x40]) + data[-4:])
    with pytest.warns(CacheWarning, match="fails its checksum") as caught:
        out, events = _launch(_fresh())
        _launch(_fresh(), block=16)         # the rebuilt entry loads without a warning
    assert len(caught) == 1 and (out == np.arange(11) * 3 + 1).all()
    assert [e.from_disk for e in events] == [False] and cache.stats["corrupt"] == 1
    assert cache.stats["hits"] == 1


def _numba_reload(kernel_fn):
    """Launch on numba in a fresh module object, as a new process would (the generated
    module is run again, its dispatcher loads from numba's cache)."""
    _forget_numba_modules()
    k = _fresh(kernel_fn, backend="numba")
    out, _ = _launch(k)
    entry = k.compile(np.zeros(11, np.float32), out, 11, BLOCK=16).runnable()._entry
    return out, sum(entry.stats.cache_misses.values())


def test_damaged_numba_files_are_rebuilt_with_one_warning(cdir):
    want = np.arange(11, dtype=np.float32) * 3 + 1
    _forget_numba_modules()
    _launch(_fresh(backend="numba"))
    d = cache_dir.current()
    sha = next(p.stem for p in (cdir / "numba").iterdir() if p.suffix == ".py")
    nbc = next(f for f in numba_disk.numba_files(d, sha) if f.endswith(".nbc"))
    out, misses = _numba_reload(_scale)
    assert (out == want).all() and misses == 0          # whole files: loaded
    with open(nbc, "r+b") as f:                       # truncated after it was recorded
        f.truncate(os.path.getsize(nbc) // 2)
    with pytest.warns(CacheWarning, match="fails its checksum") as caught:
        out, misses = _numba_reload(_scale)
    assert len(caught) == 1 and (out == want).all() and misses == 1
    assert numba_disk._check(d, sha) is None           # rebuilt and recorded again
    # A damaged index that its checksum file vouches for (damage before the record):
    # numba's own load raises (today an UnpicklingError in every later process).
    nbi = next(f for f in numba_disk.numba_files(d, sha) if f.endswith(".nbi"))
    with open(nbi, "r+b") as f:
        f.seek(40)
        f.write(b"\x00garbage\xff" * 4)
    numba_disk._record(d, sha)
    with pytest.warns(CacheWarning, match="could not be loaded") as caught:
        out, misses = _numba_reload(_scale)
    assert len(caught) == 1 and (out == want).all() and misses == 1


def _unusable_launch(cdir):
    """A numba launch with an unusable cache: it works, warns once, writes nothing."""
    before = sorted(str(p) for p in cdir.rglob("*")) if cdir.is_dir() else None
    with pytest.warns(CacheWarning) as caught:
        k = _fresh(backend="numba")
        out, _ = _launch(k)
        _launch(_fresh(backend="numba"))
    assert len(caught) == 1 and (out == np.arange(11) * 3 + 1).all()
    run = k.compile(np.zeros(11, np.float32), out, 11, BLOCK=16).runnable()
    # run from memory, with numba's cache off: nothing written here or in numba's
    # default location
    assert run.path is None and "cache=False" in run.source
    assert type(run._entry._cache).__name__ == "NullCache"
    assert all(type(c._cache).__name__ == "NullCache" for c in numba_disk._library_caches)
    after = sorted(str(p) for p in cdir.rglob("*")) if cdir.is_dir() else None
    assert after == before
    return str(caught[0].message)


def test_a_read_only_directory_falls_back_to_memory(cdir, monkeypatch):
    os.chmod(cdir, 0o555)
    if os.geteuid() == 0:        # root writes anyway: simulate the read-only filesystem
        def refuse(folder):
            raise OSError(30, "Read-only file system", folder)
        monkeypatch.setattr(cache_dir, "probe_write", refuse)
    try:
        msg = _unusable_launch(cdir)
    finally:
        os.chmod(cdir, 0o700)
    assert str(cdir) in msg and "nothing is written" in msg


def test_a_file_in_the_way_falls_back_to_memory(cdir, monkeypatch):
    blocker = cdir / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(blocker / "cache"))
    msg = _unusable_launch(cdir)
    assert "a file is in the way" in msg and blocker.read_text() == "not a directory"


@pytest.mark.parametrize("mode, fix", [(0o777, "chmod o-w"), (0o775, "chmod g-w")])
def test_a_directory_others_can_write_is_not_used(cdir, mode, fix):
    _launch(_fresh())                          # an entry, then the directory opens up
    os.chmod(cdir, mode)
    cache_dir.forget()
    with pytest.warns(CacheWarning, match=f"not using the kernel cache directory {cdir}: "
                                          f".*{fix}") as caught:
        out, events = _launch(_fresh())
        _launch(_fresh())
    assert len(caught) == 1 and [e.from_disk for e in events] == [False]
    assert (out == np.arange(11) * 3 + 1).all() and cache.stats["hits"] == 0


def test_sticky_and_shared_directories_are_trusted(cdir, monkeypatch):
    os.chmod(cdir, 0o1777)                        # like /tmp: others cannot replace files
    _launch(_fresh())
    assert _entries(cdir)
    os.chmod(cdir, 0o770)
    cache_dir.forget()
    monkeypatch.setenv("NPUJIT_CACHE_SHARED", "1")   # a team's group-writable cache
    out, events = _launch(_fresh())
    assert [e.from_disk for e in events] == [True]


def _as_other_user(monkeypatch, path):
    """Make ``path`` belong to uid 4242: chown as root, else the trust check's stat."""
    if os.geteuid() == 0:
        os.chown(path, 4242, 4242)
        return
    real_fd, real_path = cache_dir.stat_fd, cache_dir.stat_path
    ino = os.stat(path).st_ino

    def other(st):
        if st.st_ino != ino:
            return st
        fields = list(st)
        fields[stat.ST_UID] = 4242
        return os.stat_result(fields)
    monkeypatch.setattr(cache_dir, "stat_fd", lambda fd: other(real_fd(fd)))
    monkeypatch.setattr(cache_dir, "stat_path", lambda p: other(real_path(p)))


def test_another_users_entry_is_not_loaded(cdir, monkeypatch):
    _launch(_fresh())
    _as_other_user(monkeypatch, cdir / "kernels" / _entries(cdir)[0])
    with pytest.warns(CacheWarning, match="is owned by another user"):
        out, events = _launch(_fresh())
    assert [e.from_disk for e in events] == [False] and (out == np.arange(11) * 3 + 1).all()


def test_another_users_directory_is_used_only_when_shared(cdir, monkeypatch):
    _launch(_fresh())
    _as_other_user(monkeypatch, cdir)
    cache_dir.forget()
    with pytest.warns(CacheWarning, match="owned by another user.*NPUJIT_CACHE_SHARED=1"):
        out, events = _launch(_fresh())
    assert [e.from_disk for e in events] == [False]
    monkeypatch.setenv("NPUJIT_CACHE_SHARED", "1")
    out, events = _launch(_fresh())
    assert [e.from_disk for e in events] == [True]


# --- invalidation -----------------------------------------------------------------------

_SOURCE = """
import npujit.language as nl

LIMIT = {limit}

def helper(v):
    return v * {factor}

def kernel(x_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, helper(nl.load(x_ptr + offs)) + LIMIT)
"""


def _edit_case(tmp_path, limit, factor):
    mod = _module_from(tmp_path, _SOURCE.format(limit=limit, factor=factor))
    k = NPUKernel(mod.kernel, backend="reference")
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    events = []
    with on_compile(events.append):
        k[(1,)](x, out, BLOCK=8)
    assert (out == x * factor + limit).all()
    return events[0].from_disk, mod, k


def test_editing_a_helper_or_a_global_invalidates_the_entry(cdir, tmp_path):
    assert _edit_case(tmp_path, 1, 2.0)[0] is False
    assert _edit_case(tmp_path, 1, 2.0)[0] is True         # same code, new module: a hit
    assert _edit_case(tmp_path, 1, 5.25)[0] is False       # the helper's body changed
    assert _edit_case(tmp_path, 70, 5.25)[0] is False      # the global's value changed
    assert _edit_case(tmp_path, 70, 5.25)[0] is True


_OOB_SOURCE = """
import npujit.language as nl
{above}
def kernel(x_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs + 4))
"""


@pytest.mark.parametrize("backend", ["reference", "llvm", "numba"])
def test_an_error_names_the_line_the_kernel_has_now_after_its_lines_moved(
        cdir, tmp_path, backend):
    """The same code one line lower is another entry: a message compiled into an entry
    (the out-of-bounds load's site) names the line it was compiled from."""
    x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    for above, line in (("", 6), ("\n# a comment above the kernel\n", 8)):
        mod = _module_from(tmp_path, _OOB_SOURCE.format(above=above))
        k = NPUKernel(mod.kernel, backend=backend)
        with pytest.raises(Exception, match=rf"cache_case.py:{line}\b"):
            k[(1,)](x, out, BLOCK=8)


def test_a_change_of_the_compiler_invalidates_every_entry(cdir, monkeypatch):
    _launch(_fresh())
    monkeypatch.setattr(cache_key, "_compiler_hash", "0123456789abcdef")   # edited sources
    out, events = _launch(_fresh())
    assert [e.from_disk for e in events] == [False] and len(_entries(cdir)) == 2


def test_rebinding_a_helper_function_is_refused(cdir, tmp_path):
    _, mod, k = _edit_case(tmp_path, 1, 2.0)
    old = mod.helper
    mod.helper = lambda v: v * 9.0
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(LaunchError, match="helper 'helper'.*define the kernel again"):
        k[(1,)](x, out, BLOCK=8)
    mod.helper = old
    k[(1,)](x, out, BLOCK=8)
    assert (out == 3).all()


# --- eviction -------------------------------------------------------------------------------

def test_the_disk_cache_evicts_least_recently_used_entries(cdir, monkeypatch):
    for block in (16, 32, 64):
        _launch(_fresh(), block=block)
    names = _entries(cdir)
    assert len(names) == 3
    paths = [cdir / "kernels" / n for n in names]
    for age, p in enumerate(sorted(paths, key=os.path.getmtime)):
        os.utime(p, (1000 + age, 1000 + age))
    oldest, middle, newest = sorted(paths, key=os.path.getmtime)
    os.utime(oldest, (2000, 2000))                  # used last: the middle one goes first
    d = cache_dir.current()
    total = sum(os.path.getsize(p) for p in paths)
    assert cache.evict(d, cap=total) == 0             # at the cap: nothing goes
    assert cache.evict(d, cap=total - 1) == 1         # down to 90 % of the cap
    assert not middle.exists() and oldest.exists() and newest.exists()
    monkeypatch.setenv("NPUJIT_CACHE_MAX_MB", "0")    # every store evicts all but itself
    _launch(_fresh(), block=128)
    assert len(_entries(cdir)) == 1 and cache.stats["evicted"] >= 3


def test_the_memory_cache_keeps_a_bounded_number_of_specialisations(cdir, monkeypatch):
    monkeypatch.setenv("NPUJIT_MEMORY_CACHE_SIZE", "2")
    k = _fresh()
    _launch(k, block=16)
    first = weakref.ref(next(iter(k.cache.values())))
    _launch(k, block=16)                              # through the fast path
    for block in (32, 64):
        _launch(k, block=block)
    gc.collect()
    assert len(k.cache) == 2 and first() is None      # the fast path kept nothing alive
    assert all(fast.compiled in k.cache.values() for fast in k._fast.values())
    out, events = _launch(k, block=16)
    assert [e.from_disk for e in events] == [True] and (out == np.arange(11) * 3 + 1).all()


# --- the command line -----------------------------------------------------------------------

def test_the_cache_command_lists_describes_and_clears(cdir, capsys):
    from npujit.cli import main
    _launch(_fresh())
    assert main(["cache", "list"]) == 0
    assert "_scale" in capsys.readouterr().out
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"directory: {cdir}" in out and "1 compiled kernels" in out
    assert main(["cache", "clear"]) == 0 and not _entries(cdir)


# --- values from an enclosing function (closures) ----------------------------------------

def _scaled_by(scale, helper=None):
    """A kernel reading ``scale`` (and ``helper``) from this function's scope."""
    def k(x_ptr, out_ptr, BLOCK: nl.constexpr):
        offs = nl.arange(0, BLOCK)
        v = nl.load(x_ptr + offs) * scale
        if helper is not None:
            v = helper(v)
        nl.store(out_ptr + offs, v)
    return k


def test_closure_values_are_part_of_the_key_and_checked_at_launch(cdir):
    x = np.arange(8, dtype=np.float32)

    def launch(kernel):
        out = np.zeros(8, np.float32)
        kernel[(1,)](x, out, BLOCK=8)
        return out
    # two kernels from one factory differ only in a closure value: never one's entry for both
    for scale in (2.0, 3.0, 2.0):
        assert (launch(_fresh(_scaled_by(scale))) == x * scale).all()
    assert len(_entries(cdir)) == 2
    # rebinding the enclosing variable after the compile is refused, naming it
    scale = 4.0

    def k(x_ptr, out_ptr, BLOCK: nl.constexpr):
        offs = nl.arange(0, BLOCK)
        nl.store(out_ptr + offs, nl.load(x_ptr + offs) * scale)
    kernel = _fresh(k)
    assert (launch(kernel) == x * 4.0).all()
    scale = 5.0
    with pytest.raises(LaunchError, match="closure variable 'scale' of .* was 4.0, but it is now 5.0"):
        launch(kernel)
    # a helper from the enclosing scope: part of the key too, its rebinding refused
    assert (launch(_fresh(_scaled_by(1.0, lambda v: v + 1.0))) == x + 1.0).all()
    assert (launch(_fresh(_scaled_by(1.0, lambda v: v - 1.0))) == x - 1.0).all()


def test_a_closure_value_without_a_stable_repr_stays_in_memory(cdir):
    class Box:
        def __init__(self, v):
            self.v = v
    box = Box(3.0)     # its repr names an address: no disk key can describe it
    factor = box.v

    def k(x_ptr, out_ptr, BLOCK: nl.constexpr):
        offs = nl.arange(0, BLOCK)
        nl.store(out_ptr + offs, nl.load(x_ptr + offs) * factor + (0.0 if box is None else 0.0))
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    _fresh(k)[(1,)](x, out, BLOCK=8)
    assert (out == 3.0).all() and _entries(cdir) == [] and cache.stats["unkeyable"] == 1
