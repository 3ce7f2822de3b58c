"""Where the test suite's time goes: numba compiles and kernel-cache lock waits, per test.

As a pytest plugin (from the repo root, an empty kernel cache, as CI runs it)::

    NPUJIT_CACHE_DIR=$(mktemp -d) python -m pytest -p benchmarks.suite_profile --durations=0

every pytest worker appends one JSON line per numba compile of a generated kernel module
(``backends/numba/disk_cache.compile_signature``: the kernel's own compile, with the first
compiles of the library helpers it calls) and per wait of more than 0.2 s for a kernel
cache lock (``npujit/cache_dir.CacheDir.locked``) to ``$NPUJIT_SUITE_PROFILE_DIR``
(default ``<tmp>/npujit-suite-profile``).  Then::

    python -m benchmarks.suite_profile [DIR]

prints the seconds by test file and by kernel, the compiles that ran more than once, and
the lock waits.  Subprocesses a test starts (the demo, the cache tests' processes) are
not seen.  What one fresh-cache run showed is in docs/benchmarks.md ("The test suite's
time").
"""
from __future__ import annotations

import collections
import contextlib
import glob
import json
import os
import sys
import tempfile
import time

DEFAULT_DIR = os.path.join(tempfile.gettempdir(), "npujit-suite-profile")
LOCK_WAIT_S = 0.2


def _out_dir() -> str:
    d = os.environ.get("NPUJIT_SUITE_PROFILE_DIR", DEFAULT_DIR)
    os.makedirs(d, exist_ok=True)
    return d


def pytest_configure(config):
    """Wrap the numba compile and the cache lock of this process (one file per worker)."""
    from npujit import cache_dir
    from npujit.backends.numba import disk_cache

    out = open(os.path.join(_out_dir(), f"{os.getpid()}.jsonl"), "a")

    def log(**row):
        row["test"] = os.environ.get("PYTEST_CURRENT_TEST", "").split(" (")[0]
        out.write(json.dumps(row) + "\n")
        out.flush()

    compile_signature = disk_cache.compile_signature

    def timed_compile(module, dispatcher, sig):
        t0 = time.perf_counter()
        compile_signature(module, dispatcher, sig)
        log(kind="compile", kernel=dispatcher.py_func.__name__,
            module=getattr(module, "__name__", "?"), s=time.perf_counter() - t0)

    locked = cache_dir.CacheDir.locked

    @contextlib.contextmanager
    def timed_lock(self, name):
        t0 = time.perf_counter()
        with locked(self, name):
            wait = time.perf_counter() - t0
            if wait > LOCK_WAIT_S:
                log(kind="lock", name=name[:60], s=wait)
            yield

    disk_cache.compile_signature = timed_compile
    cache_dir.CacheDir.locked = timed_lock


def summary(d: str, top: int = 15) -> str:
    """The table ``python -m benchmarks.suite_profile`` prints for the logs in ``d``."""
    rows = [json.loads(line) for f in glob.glob(os.path.join(d, "*.jsonl"))
            for line in open(f)]
    compiles = [r for r in rows if r["kind"] == "compile"]
    waits = [r for r in rows if r["kind"] == "lock"]
    lines = [f"{len(compiles)} numba compiles, {sum(r['s'] for r in compiles):.1f} s; "
             f"{len(waits)} lock waits over {LOCK_WAIT_S} s, {sum(r['s'] for r in waits):.1f} s"]
    for title, key in (("by test file", lambda r: r["test"].split("::")[0]),
                       ("by kernel", lambda r: r["kernel"])):
        total, count = collections.Counter(), collections.Counter()
        for r in compiles:
            total[key(r)] += r["s"]
            count[key(r)] += 1
        lines.append(f"\ncompile seconds {title}:")
        lines += [f"  {s:7.1f} s {count[k]:4d}x  {k}" for k, s in total.most_common(top)]
    by_module = collections.defaultdict(list)
    for r in compiles:
        by_module[r["module"]].append(r["s"])
    again = sum(sum(v[1:]) for v in by_module.values() if len(v) > 1)
    lines.append(f"\nmodules compiled (or loaded) more than once: "
                 f"{sum(len(v) > 1 for v in by_module.values())}, {again:.1f} s after the first")
    lines.append("\nlongest lock waits:")
    lines += [f"  {r['s']:6.2f} s  {r['name']}  ({r['test']})"
              for r in sorted(waits, key=lambda r: -r["s"])[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR))
