"""Compile an emitted kernel against the CPU twin with the system g++, cached by content.

The twin's headers are precompiled once per twin version (a g++ PCH, when the compiler
can), which halves the cost of each kernel build.  The shared library lives under ``<NPUJIT_CACHE_DIR>/ascendc-twin/<hash>/``, where the hash
covers the kernel sources, the twin's headers, the compiler flags and g++'s version, so
editing the twin or the emitter can never serve a stale build.  Writes are atomic
(build in a temporary directory, then rename), so concurrent processes are safe.  The
kernel cache's rules hold here too (npujit/cache_dir.py): a directory that cannot be
written or trusted is not used (builds go to a directory of the process's own), each
library's sha256 is checked before it is loaded (a damaged or foreign one is rebuilt
with one warning), and builds count toward ``NPUJIT_CACHE_MAX_MB`` (least recently used
first) and ``npujit cache clear`` (jit/cache.py ``groups``).

Example::

    >>> so = build_twin({"k.cpp": src, "k_tiling.h": hdr}, entry_source)   # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

from npujit import cache_dir

TWIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "twin")
SUM_SUFFIX = ".sum"             # beside each library: its sha256, packed as cache entries are
# -Og: the twin runs test-sized launches, so the build is the cost; -Og builds faster
# than -O1 (the twin tests: 247 -> 195 s of CPU with an empty cache) and, unlike -O0,
# keeps the flow analysis -Wmaybe-uninitialized needs.  No FMA contraction without -march,
# so the arithmetic is the same at every level.
CXXFLAGS = ["-std=c++17", "-Og", "-Wall", "-Wextra", "-Werror", "-fwrapv", "-fPIC", "-pthread", "-shared"]


class TwinBuildError(RuntimeError):
    """g++ rejected an emitted kernel (the message holds its diagnostics)."""


@functools.lru_cache(maxsize=1)
def compiler() -> tuple[str, str]:
    """``(path, version line)`` of the C++ compiler (``$CXX`` or g++)."""
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        raise TwinBuildError("the ascendc-twin backend needs a C++17 compiler: install g++ "
                             "(e.g. apt-get install g++) or set CXX")
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
    return cxx, (out.stdout.splitlines() or ["?"])[0]


@functools.lru_cache(maxsize=1)
def twin_digest() -> str:
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(TWIN_DIR)):
        for f in sorted(files):
            with open(os.path.join(root, f), "rb") as fh:
                h.update(f.encode() + b"\0" + fh.read())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def precompiled_headers(root: str) -> str | None:
    """A directory holding ``npujit_twin/all.h.gch`` for this twin and these flags, built
    on first use; ``None`` if the compiler cannot precompile it (builds then parse the
    headers each time)."""
    cxx, version = compiler()
    key = hashlib.sha256((twin_digest() + " ".join(CXXFLAGS) + version).encode()).hexdigest()[:16]
    final = os.path.join(root, f"pch-{key}")
    if os.path.exists(os.path.join(final, "npujit_twin", "all.h.gch")):
        return final
    os.makedirs(root, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f"pch-{key}.", dir=root)
    os.makedirs(os.path.join(work, "npujit_twin"))
    flags = [f for f in CXXFLAGS if f != "-shared"]
    run = subprocess.run([cxx, *flags, "-x", "c++-header", os.path.join(TWIN_DIR, "npujit_twin", "all.h"),
                          "-o", os.path.join(work, "npujit_twin", "all.h.gch")],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        return None
    try:
        os.rename(work, final)
    except OSError:                # another process made it first
        shutil.rmtree(work, ignore_errors=True)
    return final


def build_dir() -> cache_dir.CacheDir:
    """Where builds go: the kernel cache directory when it is usable and trusted
    (npujit/cache_dir.py; builds under ``ascendc-twin/``), else a directory of this
    process's own, read and written by the same rules."""
    d = cache_dir.current()
    if d is not None:
        return d
    global _private
    if _private is None:
        _private = cache_dir.CacheDir(tempfile.mkdtemp(prefix="npujit-twin-"), shared=False)
    return _private


_private: cache_dir.CacheDir | None = None


def _usable(d: cache_dir.CacheDir, final: str, lib: str) -> bool:
    """Whether the build at ``final`` may be loaded: its directory and library trusted
    (``CacheDir.file_trouble``: a regular file, owner and modes), the library's sha256 the
    one recorded when it was built (``CacheDir.read`` of the packed ``.sum``).  A damaged
    or foreign build is removed (one warning), so the caller builds it again; loading it
    could crash the process."""
    if not os.path.exists(lib):
        if os.path.isdir(final):           # what an interrupted eviction left
            shutil.rmtree(final, ignore_errors=True)
        return False
    trouble = None
    try:
        trouble = cache_dir.untrusted(cache_dir.stat_path(final), d.shared)
        fd = os.open(lib, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            trouble = trouble or d.file_trouble(cache_dir.stat_fd(f.fileno()))
            digest = hashlib.sha256(f.read()).hexdigest().encode()
        if not trouble and d.read(lib + SUM_SUFFIX) != digest:
            trouble = "fails its checksum (truncated or damaged)"
    except (OSError, cache_dir.CorruptEntry) as e:
        trouble = trouble or f"cannot be checked ({e})"
    if not trouble:
        with contextlib.suppress(OSError):
            os.utime(lib)                  # its last use, for the cache's eviction
        return True
    cache_dir.warn_once("twin", final, f"npujit: the CPU twin build {lib} {trouble}; "
                        "removing it and building the kernel again")
    shutil.rmtree(final, ignore_errors=True)
    return False


def build_twin(sources: dict, entry: str) -> str:
    """The path of the shared library built from ``sources`` (file name -> text, written
    side by side) and the twin entry ``entry`` (C++ text); built once per content.  The
    library's sha256 is kept beside it and checked before every load."""
    cxx, version = compiler()
    h = hashlib.sha256()
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    h.update(entry.encode() + twin_digest().encode() + " ".join(CXXFLAGS).encode() + version.encode())
    key = h.hexdigest()[:24]
    d = build_dir()
    root = d.path("ascendc-twin")
    final = os.path.join(root, key)
    lib = os.path.join(final, "kernel.so")
    if _usable(d, final, lib):
        return lib
    os.makedirs(root, exist_ok=True)
    work = tempfile.mkdtemp(prefix=key + ".", dir=root)
    try:
        for name, text in sources.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        with open(os.path.join(work, "twin_entry.cpp"), "w") as f:
            f.write(entry)
        pch = precompiled_headers(root)
        built = os.path.join(work, "kernel.so")
        cmd = [cxx, *CXXFLAGS, *(["-I", pch] if pch else []), "-I", work, "-I", TWIN_DIR,
               os.path.join(work, "twin_entry.cpp"), "-o", built]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise TwinBuildError(f"g++ could not build the emitted kernel (sources kept in {work}):\n"
                                 + run.stderr[-6000:])
        with open(built, "rb") as f:
            d.write(built + SUM_SUFFIX, cache_dir.pack(hashlib.sha256(f.read()).hexdigest().encode()))
        os.chmod(work, cache_dir.dir_mode(d.shared))
        for name in os.listdir(work):
            d.fix_mode(os.path.join(work, name))
        try:
            os.rename(work, final)
        except OSError:            # another process built it first
            if not os.path.exists(lib):
                raise
        else:
            work = None
    finally:
        if work is not None and os.path.exists(os.path.join(work, "kernel.so")):
            shutil.rmtree(work, ignore_errors=True)
    return lib
