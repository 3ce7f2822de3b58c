"""The numba backend's files in the kernel cache, kept whole and trusted.

A generated module lives at ``<cache>/numba/<sha>.py`` (sha256 of its text) and numba
keeps its machine code beside it, in ``numba/__pycache__/<sha>.*.nbi`` (an index) and
``.nbc`` (the code).  numba reads those with ``pickle`` and no checksum: one truncated or
damaged file would raise numba's raw ``EOFError``/``UnpicklingError`` in every later
process, or load damaged machine code.  So, under the module's inter-process lock:

* before numba loads, its files are checked against ``numba/<sha>.sums`` (their sha256,
  written by us after every numba compile, itself checksummed): a file that differs, is
  missing, or is not trusted (npujit/cache_dir.py) makes the module's numba files be
  removed, with one ``CacheWarning``, and numba compiles afresh;
* a load that raises anyway is treated the same way (removed, warned, compiled again);
* numba files without a ``.sums`` (a process killed between numba's write and ours)
  are removed silently: nothing vouches for them.

The module is run from its text (``exec`` with the file's name, so numba's cache finds
the file), never through Python's ``.pyc`` cache.  The ``.sums`` file's modification time
is the module's last use, for the cache's LRU eviction (jit/cache.py).

Example::

    >>> mod = load_module(cache_dir.current(), text, sha, "npujit_numba_x")  # doctest: +SKIP
    >>> compile_signature(mod, mod.kernel, sig)                              # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import types as pytypes

from npujit.cache_dir import CacheDir, CorruptEntry, pack, warn_once

_DISK_ATTR = "__npujit_disk__"     # (CacheDir, sha) on a module loaded from the cache


def source_path(d: CacheDir, sha: str) -> str:
    return d.path("numba", f"{sha}.py")


def sums_path(d: CacheDir, sha: str) -> str:
    return d.path("numba", f"{sha}.sums")


def numba_files(d: CacheDir, sha: str) -> list:
    """Paths of numba's index and code files of module ``sha``."""
    folder = d.path("numba", "__pycache__")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    prefix = sha + "."
    return sorted(os.path.join(folder, n) for n in names
                  if n.startswith(prefix) and n.endswith((".nbi", ".nbc")))


def load_module(d: CacheDir, text: str, sha: str, modname: str) -> pytypes.ModuleType:
    """Write ``text`` to the cache (if it is not there whole) and run it as module
    ``modname`` whose functions' file is that path (so ``njit(cache=True)`` works)."""
    path = source_path(d, sha)
    data = text.encode()
    try:
        with open(path, "rb") as f:
            same = f.read() == data
    except OSError:
        same = False
    if not same:             # absent or damaged
        d.write(path, data)
    mod = pytypes.ModuleType(modname)
    mod.__file__ = path
    setattr(mod, _DISK_ATTR, (d, sha))
    sys.modules[modname] = mod       # numba's cache finds a function's module here
    try:
        exec(compile(text, path, "exec"), mod.__dict__)
    except BaseException:
        del sys.modules[modname]
        raise
    return mod


def compile_signature(module, dispatcher, sig) -> None:
    """``dispatcher.compile(sig)``: from numba's cache when its files are whole and
    trusted, else compiled (and cached) afresh; see the module docstring."""
    disk = getattr(module, _DISK_ATTR, None)
    if disk is None:
        dispatcher.compile(sig)
        return
    d, sha = disk
    with d.locked(f"numba {sha}"):
        trouble = _check(d, sha)
        if trouble:
            _discard(d, sha, trouble)
        try:
            dispatcher.compile(sig)
        except Exception as e:
            if not numba_files(d, sha):
                raise                  # a real compile error, not a cache problem
            _discard(d, sha, f"could not be loaded ({type(e).__name__}: {e})")
            dispatcher.compile(sig)
        _record(d, sha)


_library_caches: dict = {}       # the library's dispatchers -> their numba caches

# The backend's library helpers by the short name generated modules call them by.  A
# module imports only those it calls (``helpers_used``): importing all seven made ~60
# numba dispatchers, 0.07-0.18 s of a fresh process's first launch of a kernel that
# calls one of them or none.
HELPERS = {"ck": "check_lib", "cl": "cube_lib", "hp": "halfprec", "rc": "record",
           "rl": "reduce_lib", "sl": "scalar_lib", "tl": "select_lib"}
_CALLS = re.compile(r"(?<![\w.])(" + "|".join(HELPERS) + r")\.")


def helpers_used(text: str) -> list:
    """The short names of the helpers that the module text ``text`` calls, sorted."""
    return sorted(set(_CALLS.findall(text)))


def library_caching(on: bool, text: str) -> None:
    """Import the library helpers the generated module ``text`` calls (check_lib,
    cube_lib, ...: compiled per signature a kernel calls them with), and let numba cache
    every helper imported so far beside its source, or not: without a usable kernel
    cache nothing may be written, not even to numba's own default place."""
    import importlib

    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    for short in helpers_used(text):
        importlib.import_module(f"{__package__}.{HELPERS[short]}")
    for name in HELPERS.values():
        mod = sys.modules.get(f"{__package__}.{name}")
        if mod is None or getattr(mod, "_npujit_registered", False):
            continue
        for v in vars(mod).values():
            if isinstance(v, Dispatcher):
                _library_caches[v] = v._cache
        mod._npujit_registered = True
    for disp, own in _library_caches.items():
        disp._cache = own if on else NullCache()


def _digests(paths) -> dict:
    out = {}
    for p in paths:
        with open(p, "rb") as f:
            out[os.path.basename(p)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _check(d: CacheDir, sha: str) -> str | None:
    """Why module ``sha``'s numba files must not be loaded ("" = silently; None: fine)."""
    files = numba_files(d, sha)
    if not files:
        return None
    try:
        raw = d.read(sums_path(d, sha))
    except CorruptEntry as e:
        return f"their checksum file {e}"
    if raw is None:
        return ""
    want = json.loads(raw)
    for p in files:
        try:
            trouble = d.file_trouble(os.lstat(p))
        except OSError:
            trouble = "vanished"
        if trouble:
            return f"{os.path.basename(p)} {trouble}"
    try:
        got = _digests(files)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if set(got) != set(want):
        return "" if set(got) > set(want) else "a file is missing"
    bad = [n for n in got if got[n] != want[n]]
    return f"{bad[0]} fails its checksum (truncated or damaged)" if bad else None


def _discard(d: CacheDir, sha: str, trouble: str) -> None:
    for p in numba_files(d, sha) + [sums_path(d, sha)]:
        with contextlib.suppress(OSError):
            os.unlink(p)
    if trouble:
        warn_once("corrupt", f"{sha}: {trouble}",
                  f"npujit: numba's cached machine code for {source_path(d, sha)} {trouble}; "
                  "removed and compiled again")


def _record(d: CacheDir, sha: str) -> None:
    """Write the checksums of module ``sha``'s numba files (or touch them if unchanged:
    the module's last use)."""
    files = numba_files(d, sha)
    if not files:
        return                     # numba could not cache (it warned)
    for p in files:
        d.fix_mode(p)
    path = sums_path(d, sha)
    data = json.dumps(_digests(files), sort_keys=True).encode()
    try:
        same = d.read(path) == data
    except CorruptEntry:
        same = False
    if same:
        with contextlib.suppress(OSError):
            os.utime(path)
    else:
        d.write(path, pack(data))
