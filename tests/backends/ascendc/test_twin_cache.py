"""The CPU twin's builds under the kernel cache's rules (backends/ascendc/build.py): built
once per content, checksummed before every load (a damaged or foreign build is rebuilt
with one warning, never loaded), counted and evicted with the cache, and kept out of a
directory the cache may not use."""
import ctypes
import os
import shutil

import pytest

from npujit import cache_dir
from npujit.backends.ascendc import build
from npujit.cache_dir import CacheWarning
from npujit.jit import cache

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX") or "g++") is None,
                                reason="the twin needs a C++ compiler (g++)")

SOURCES = {"probe.h": "#pragma once\ninline int probe_value(int x) { return 6 * x + 1; }\n"}


def _entry(tag: int) -> str:
    return (f'#include "probe.h"\n// build {tag}\n'
            'extern "C" int npujit_probe(int x) { return probe_value(x); }\n')


def _probe(lib: str) -> int:
    return ctypes.CDLL(lib).npujit_probe(7)


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    # The probe does not include the twin's headers: skip precompiling them (seconds each)
    monkeypatch.setattr(build, "precompiled_headers", lambda root: None)
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(d))
    for knob in ("NPUJIT_DISABLE_CACHE", "NPUJIT_CACHE_SHARED", "NPUJIT_CACHE_MAX_MB"):
        monkeypatch.delenv(knob, raising=False)
    cache_dir.forget()
    yield d
    cache_dir.forget()


def test_a_build_is_reused_checksummed_and_rebuilt_when_damaged(cdir):
    lib = build.build_twin(SOURCES, _entry(1))
    assert lib.startswith(str(cdir / "ascendc-twin")) and os.path.exists(lib + build.SUM_SUFFIX)
    assert _probe(lib) == 43
    ino = os.stat(lib).st_ino
    assert build.build_twin(SOURCES, _entry(1)) == lib and os.stat(lib).st_ino == ino
    with open(lib, "r+b") as f:          # flip bytes in the middle of the library
        f.seek(os.path.getsize(lib) // 2)
        f.write(b"\xff" * 64)
    with pytest.warns(CacheWarning, match="fails its checksum"):
        again = build.build_twin(SOURCES, _entry(1))
    assert again == lib and os.stat(lib).st_ino != ino
    # a fresh name: ctypes would hand back the library it loaded above
    fresh = str(cdir / "copy.so")
    shutil.copy(lib, fresh)
    assert _probe(fresh) == 43


def test_a_build_another_user_owns_is_not_loaded(cdir):
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    lib = build.build_twin(SOURCES, _entry(2))
    os.chown(lib, 4242, 4242)
    with pytest.warns(CacheWarning, match="owned by another user"):
        again = build.build_twin(SOURCES, _entry(2))
    assert os.stat(again).st_uid == os.geteuid()


def test_builds_are_listed_evicted_and_cleared_with_the_cache(cdir):
    libs = [build.build_twin(SOURCES, _entry(t)) for t in (3, 4)]
    d = cache_dir.current()
    twin = [g for g in cache.groups(d) if g.kind == "ascendc"]
    names = {os.path.basename(os.path.dirname(lib)) for lib in libs}
    assert names <= {g.name for g in twin}
    assert all(g.size >= os.path.getsize(lib) for g in twin for lib in libs
               if g.name == os.path.basename(os.path.dirname(lib)))
    os.utime(libs[1], (1, 1))                # the least recently used build
    total = sum(g.size for g in cache.groups(d))
    assert cache.evict(d, cap=total - 1) >= 1
    assert not os.path.exists(libs[1]) and os.path.exists(libs[0])
    assert build.build_twin(SOURCES, _entry(4)) == libs[1]     # evicted: built again
    assert cache.clear(d) >= 2 and not [g for g in cache.groups(d) if g.kind == "ascendc"]


def test_without_a_usable_cache_builds_go_to_a_private_directory(cdir, monkeypatch):
    monkeypatch.setenv("NPUJIT_DISABLE_CACHE", "1")
    cache_dir.forget()
    lib = build.build_twin(SOURCES, _entry(5))
    assert not lib.startswith(str(cdir)) and _probe(lib) == 43
    assert not (cdir / "ascendc-twin").exists() or not os.listdir(cdir / "ascendc-twin")
