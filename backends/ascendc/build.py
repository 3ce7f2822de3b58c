"""Compile an emitted kernel against the CPU twin with the system g++, cached by content.

The twin's headers are precompiled once per twin version (a g++ PCH, when the compiler
can), which halves the cost of each kernel build.  The shared library lives under ``<NPUJIT_CACHE_DIR>/ascendc-twin/<hash>/``, where the hash
covers the kernel sources, the twin's headers, the compiler flags and g++'s version, so
editing the twin or the emitter can never serve a stale build.  Writes are atomic
(build in a temporary directory, then rename), so concurrent processes are safe.

Example::

    >>> so = build_twin({"k.cpp": src, "k_tiling.h": hdr}, entry_source)   # doctest: +SKIP
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

from npujit import knobs

TWIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "twin")
CXXFLAGS = ["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-fwrapv", "-fPIC", "-shared"]


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


def build_twin(sources: dict, entry: str) -> str:
    """The path of the shared library built from ``sources`` (file name -> text, written
    side by side) and the twin entry ``entry`` (C++ text); built once per content."""
    cxx, version = compiler()
    h = hashlib.sha256()
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    h.update(entry.encode() + twin_digest().encode() + " ".join(CXXFLAGS).encode() + version.encode())
    key = h.hexdigest()[:24]
    root = os.path.join(knobs.cache_dir(), "ascendc-twin")
    final = os.path.join(root, key)
    lib = os.path.join(final, "kernel.so")
    if os.path.exists(lib):
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
        cmd = [cxx, *CXXFLAGS, *(["-I", pch] if pch else []), "-I", work, "-I", TWIN_DIR,
               os.path.join(work, "twin_entry.cpp"), "-o", os.path.join(work, "kernel.so")]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise TwinBuildError(f"g++ could not build the emitted kernel (sources kept in {work}):\n"
                                 + run.stderr[-6000:])
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
