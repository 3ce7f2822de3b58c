"""``npujit cache {list,clear,info}``: what the kernel cache holds (docs/cache.md).

``list``   one line per cached specialisation: key, kernel, backend, constexprs, size,
           last use (newest last);
``info``   the directory, whether this process may use it (and why not), the shared-cache
           setting, entry and numba-module counts, bytes used against the cap;
``clear``  remove every entry and numba module (not the lock files).

Listing reads each entry's description line, never its pickled body.
"""
from __future__ import annotations

import collections
import os
import time

NAME = "cache"
HELP = "list, clear or describe the kernel cache (NPUJIT_CACHE_DIR)"
EXAMPLE = "npujit cache info"
TAKES_TARGET = False


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("list", "clear", "info"),
                        help="list the cached kernels, clear the cache, or describe it")


def _directory():
    """``(CacheDir or None, root, why not usable)``."""
    import warnings

    from npujit import cache_dir, knobs
    root = os.path.abspath(knobs.cache_dir())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = cache_dir.current()
    why = "; ".join(str(w.message) for w in caught)
    if d is None and not why:
        why = "disabled (NPUJIT_DISABLE_CACHE=1)" if knobs.cache_disabled() else \
            "not usable (see the warning printed earlier in this process)"
    return d, root, why


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def run(args) -> int:
    from npujit import knobs
    from npujit.jit import cache
    d, root, why = _directory()
    if args.action == "info":
        print(f"directory: {root}")
        print(f"usable:    {'yes' if d else 'no: ' + why}")
        print(f"shared:    {'yes (NPUJIT_CACHE_SHARED=1)' if knobs.cache_shared() else 'no'}")
        if d is not None:
            found = cache.groups(d)
            count = collections.Counter(g.kind for g in found)
            used = sum(g.size for g in found)
            print(f"entries:   {count['kernel']} compiled kernels, {count['numba']} numba "
                  f"modules, {count['ascendc']} Ascend C twin builds")
            print(f"size:      {_size(used)} of {_size(knobs.cache_max_bytes())} "
                  "(NPUJIT_CACHE_MAX_MB)")
        return 0
    if d is None:
        print(f"npujit cache {args.action}: the cache at {root} is not used: {why}")
        return 1
    if args.action == "clear":
        n = cache.clear(d)
        print(f"removed {n} cached kernels, numba modules and twin builds from {root}")
        return 0
    rows = sorted((g for g in cache.groups(d) if g.kind == "kernel"),
                  key=lambda g: g.last_used)
    for g in rows:
        meta = cache.entry_meta(g.files[0]) or {}
        cx = ", ".join(f"{k}={v}" for k, v in meta.get("constexprs", {}).items())
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(g.last_used))
        print(f"{g.name}  {meta.get('kernel', '(damaged)'):<24} "
              f"{meta.get('backend', '?'):<10} {_size(g.size):>9}  {used}  {cx}")
    print(f"{len(rows)} cached kernels in {root}")
    return 0
