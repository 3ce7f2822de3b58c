"""The kernel cache on disk: compiled specialisations reused across processes.

A specialisation's whole compile (trace, passes, schedule: a pickled ``CompiledKernel``,
jit/compiled.py) is kept at ``<cache>/kernels/<key>.ck``; its numba machine code sits
beside the generated module (backends/numba/disk_cache.py).  A process that launches a
kernel it has seen before unpickles the entry and numba loads its machine code: no
trace, no passes, no schedule, no LLVM.

``key`` = sha256 over the compiler's own sources and versions (``compiler_hash``), the
kernel's code with its helpers' code and the globals they read (``kernel_hash``), the
specialisation (argument signatures, constexpr values), the options and the NPU spec's
fields (``spec_hash``): see jit/cache_key.py.  Editing the compiler, the kernel, a helper
or a global it reads is a miss, never a stale hit.  A specialisation whose key parts have
no stable text (a constexpr that prints as ``<object at 0x...>``) stays in memory.

Files are written whole under an inter-process lock and checksummed; a truncated, damaged
or untrusted entry is rebuilt with one warning (npujit/cache_dir.py has the rules on who
may have written the directory).  Past ``NPUJIT_CACHE_MAX_MB`` the least recently used
entries and numba modules are evicted (a hit refreshes an entry's modification time).

Example::

    >>> key = entry_key(add_kernel, sigs, constexprs, options)   # doctest: +SKIP
    >>> load(key) or store(key, compile_specialization(...))     # doctest: +SKIP
"""
from __future__ import annotations

import collections
import contextlib
import enum
import gc
import json
import os
import pickle
import time

import numpy as np

from npujit import cache_dir, knobs
from npujit.cache_dir import CacheDir, CorruptEntry, pack, unpack, warn_once

from .cache_key import compiler_hash, digest, kernel_hash, source_lines, spec_hash

ENTRY_SUFFIX = ".ck"
# Evict down to this share of the cap, so a full cache does not evict at every store.
EVICT_TO = 0.9
# Measuring the cache means stat-ing every file in it, so a process measures it at its
# first store and then once its stores may have added 1 % of the cap, counting this much
# per store (a specialisation's entry and numba files: 100-500 KB on the bundled kernels).
STORE_BYTES_GUESS = 512 << 10
_stores_unmeasured: int | None = None

# What this process did with the disk cache (tests and ``npujit cache info`` read it).
stats: collections.Counter = collections.Counter()


def entry_key(kernel, sigs: tuple, constexprs: dict, options: dict,
              scan: tuple | None = None) -> str | None:
    """The disk key of one specialisation, or None: no usable cache directory, or no
    stable key (``scan``: the kernel's ``scan_kernel`` result, if the caller has it)."""
    if cache_dir.current() is None:
        return None
    opts = {k: v for k, v in options.items() if k != "spec"}
    parts = (sigs, sorted(constexprs.items()), sorted(opts.items()))
    if scan is None:
        from .kernel_globals import scan_kernel
        scan = scan_kernel(getattr(kernel, "fn", kernel))
    reads = scan[0]
    data = [r.value for r in reads if not r.is_helper and r.array is None]
    if not _stable(parts) or not _stable(data):   # a global or closure value's repr must
        stats["unkeyable"] += 1                     # say all there is to it
        return None
    return digest(compiler_hash(), kernel_hash(kernel, scan), source_lines(kernel, scan), parts,
                  spec_hash(options.get("spec")))


_PLAIN = (int, float, bool, str, bytes, complex, type(None), np.dtype, np.generic, enum.Enum)


def _stable(v) -> bool:
    """Does ``repr(v)`` say all there is to ``v``?  Plain values, containers of them,
    npujit's own value types (their reprs are complete)."""
    if isinstance(v, _PLAIN):
        return True
    if isinstance(v, (tuple, list, frozenset, set)):
        return all(_stable(x) for x in v)
    if isinstance(v, dict):
        return all(_stable(k) and _stable(x) for k, x in v.items())
    return type(v).__module__.startswith("npujit") and " at 0x" not in repr(v)


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector for a disk hit (key, unpickle, parse, generate,
    numba load): it makes many short-lived objects but no garbage cycles, and one full
    collection over numba's heap in a fresh process costs ~70 ms of CPU, more than the
    rest of the hit (measured on fused_experts_kernel: 108 ms -> 39 ms)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _entry_path(d: CacheDir, key: str) -> str:
    return d.path("kernels", key + ENTRY_SUFFIX)


def load(key: str):
    """The ``CompiledKernel`` stored under ``key``, or None (absent, no usable cache,
    ``NPUJIT_ALWAYS_COMPILE`` or ``NPUJIT_DUMP_IR``; a damaged or untrusted entry is
    removed with a warning)."""
    d = cache_dir.current()
    if d is None or knobs.always_compile() or knobs.dump_ir():
        return None                 # (an IR dump asks for the stages to run)
    path = _entry_path(d, key)
    try:
        payload = d.read(path)
        if payload is None:
            stats["misses"] += 1
            return None
        meta, _, body = payload.partition(b"\n")
        if json.loads(meta).get("key") != key:
            raise CorruptEntry("belongs to another key")
        c = pickle.loads(body)
    except Exception as e:          # CorruptEntry, or a payload that does not unpickle
        reason = str(e) if isinstance(e, CorruptEntry) else \
            f"does not load ({type(e).__name__}: {e})"
        warn_once("corrupt", f"{path}: {reason}", f"npujit: kernel cache entry {path} {reason}; "
                                   "compiled again instead")
        stats["corrupt"] += 1
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)              # its last use, for eviction
    stats["hits"] += 1
    return c


def store(key: str, c) -> None:
    """Keep ``c`` (a ``CompiledKernel``) under ``key``, then evict beyond the size cap.
    Nothing happens without a usable cache; a kernel that does not pickle stays in memory."""
    d = cache_dir.current()
    if d is None:
        return
    try:
        body = pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:               # a global's value that does not pickle
        stats["unpicklable"] += 1
        return
    meta = {"key": key, "kernel": c.name, "backend": c.backend,
            "constexprs": {k: repr(v) for k, v in c.constexprs.items()},
            "sigs": repr(c.sigs), "created": time.time()}
    path = _entry_path(d, key)
    try:
        with d.locked(key):
            d.write(path, pack(json.dumps(meta).encode() + b"\n" + body))
    except OSError as e:            # e.g. another user's entry in a sticky directory
        warn_once("store", path, f"npujit: cannot write kernel cache entry {path} "
                                 f"({e.strerror or e}); the kernel stays in memory")
        return
    stats["stores"] += 1
    global _stores_unmeasured
    cap = knobs.cache_max_bytes()
    if _stores_unmeasured is not None and \
            (_stores_unmeasured + 1) * STORE_BYTES_GUESS < cap // 100:
        _stores_unmeasured += 1
        return
    _stores_unmeasured = 0
    keep = {path}
    if c.artifact_key:
        keep.add(os.path.splitext(c.artifact_key)[0])
    evict(d, cap, keep)


# --- what is in the cache: entries and numba modules, as groups of files -------------
Group = collections.namedtuple("Group", "kind name files size last_used")


def groups(d: CacheDir) -> list:
    """Every kernel entry and numba module in ``d``, with its files, bytes and last use."""
    out = []
    for entry in _scan(d.path("kernels")):
        if entry.name.endswith(ENTRY_SUFFIX):
            st = entry.stat()
            out.append(Group("kernel", entry.name[:-len(ENTRY_SUFFIX)], [entry.path],
                             st.st_size, st.st_mtime))
    numba_files = collections.defaultdict(list)
    for entry in _scan(d.path("numba", "__pycache__")):
        numba_files[entry.name.split(".", 1)[0]].append(entry.path)
    for entry in _scan(d.path("numba")):
        if entry.name.endswith(".py"):
            sha = entry.name[:-3]
            files = [entry.path] + numba_files.pop(sha, [])
            sums = d.path("numba", f"{sha}.sums")
            if os.path.exists(sums):
                files.append(sums)
            size, last = 0, 0.0
            for f in files:
                with contextlib.suppress(OSError):
                    st = os.stat(f)
                    size += st.st_size
                    last = max(last, st.st_mtime)
            out.append(Group("numba", sha, files, size, last))
    out += _twin_groups(d)
    return out


def _twin_groups(d: CacheDir) -> list:
    """The Ascend C twin's builds (backends/ascendc/build.py): one group per directory
    (a kernel's build, or the precompiled twin headers), last used when its library or
    header was."""
    out = []
    try:
        entries = [e for e in os.scandir(d.path("ascendc-twin"))
                   if e.is_dir(follow_symlinks=False) and "." not in e.name]
    except OSError:
        return out
    for entry in entries:
        size, last = 0, 0.0
        for root, _, files in os.walk(entry.path):
            for f in files:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(root, f))
                    size += st.st_size
                    last = max(last, st.st_mtime)
        with contextlib.suppress(OSError):    # a load refreshes the library's time
            last = os.lstat(os.path.join(entry.path, "kernel.so")).st_mtime
        out.append(Group("ascendc", entry.name, [entry.path], size, last))
    return out


def _remove(paths) -> None:
    for f in paths:
        if os.path.isdir(f) and not os.path.islink(f):
            import shutil
            shutil.rmtree(f, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(f)


def _scan(folder: str) -> list:
    try:
        return [e for e in os.scandir(folder) if e.is_file(follow_symlinks=False)
                and not e.name.startswith(".")]
    except OSError:
        return []


def evict(d: CacheDir, cap: int, keep=frozenset()) -> int:
    """Remove least recently used groups until ``d`` holds at most ``EVICT_TO`` of
    ``cap`` bytes (only if it holds more than ``cap``); never a group holding a path (or
    a numba module path without ``.py``) in ``keep``.  Returns how many were removed."""
    with d.locked("evict"):
        found = groups(d)
        total = sum(g.size for g in found)
        if total <= cap:
            return 0
        removed = 0
        for g in sorted(found, key=lambda g: g.last_used):
            if total <= cap * EVICT_TO:
                break
            if any(f in keep or os.path.splitext(f)[0] in keep for f in g.files):
                continue
            _remove(g.files)
            total -= g.size
            removed += 1
    stats["evicted"] += removed
    return removed


def clear(d: CacheDir) -> int:
    """Remove every kernel entry, numba module and twin build; returns how many groups."""
    with d.locked("evict"):
        found = groups(d)
        for g in found:
            _remove(g.files)
    return len(found)


def entry_meta(path: str) -> dict | None:
    """An entry's description (kernel, backend, constexprs, sigs, created), read without
    unpickling it; None if the file is damaged."""
    try:
        with open(path, "rb") as f:
            payload = unpack(f.read())
        return json.loads(payload.partition(b"\n")[0])
    except (OSError, CorruptEntry, ValueError):
        return None
