"""Start-up and launch overhead: ``import npujit``, the warm launch, the first launch of
a disk-cached kernel in a fresh process (issue 16's rows; docs/startup.md).

Every measurement runs in a fresh Python process, rounds interleaved (numpy, npujit,
first launch, warm launch, numpy, ...); the table gives medians with min-max and the
machine's load average.

* ``import numpy`` / ``import npujit``: in-process time of the import statement.
* ``first launch``: a process that finds the kernels in a disk cache filled by an earlier
  process: numpy, ``npujit``, the kernels' modules (``npujit.language``), then the first
  launch of a 16-element copy (benchmarks/bench_launch.py's), then of the row softmax
  (kernels/softmax.py); ``all-in`` is the process's wall
  time from its start to the end of the first launch (``python -c pass`` is printed
  for scale).  The child checks its results and that it traced nothing.
* ``warm launch``: ``copy16[(1,)](x, out, 16, BLOCK=16)`` against a direct call of the
  compiled entry (numba: its dispatcher; llvm: the ctypes call of the machine code, its
  launch context already filled) with the same arrays; ``overhead`` = the difference,
  per launch.

``--backend`` (numba, the default, or llvm) is the CPU backend every child launches
on (``NPUJIT_BACKEND``): a process on the llvm backend never imports numba.

Bars (issue 16): import <= 0.3 s, warm overhead <= 5 us, and the first launch of a cached
kernel <= 100 ms in all: the launch's own time, numba's or llvmlite's start-up and the
kernel's loading included (the issue's "today" was +0.63-0.77 s of numba start-up, then
17-60 ms per kernel); ``all-in`` adds Python's and numpy's start and the imports.

With ``PYTHONDONTWRITEBYTECODE=1`` in the environment (as on the CI machine) every child
compiles npujit's modules from source; ``--bytecode`` lets the children write and use
``__pycache__`` as an installed package does (the header says which).

    python benchmarks/bench_startup.py [--rounds 5] [--bytecode] [--backend llvm] [--json out.json]
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Nothing of numpy or npujit is imported here: the children time those imports.
HERE = os.path.abspath(__file__)


# --- what each child process measures ------------------------------------------------
def _child_import(module: str) -> dict:
    t0 = time.perf_counter()
    __import__(module)
    return {"s": time.perf_counter() - t0}


def _child_first(start: float) -> dict:
    """Import, then the first launch of two disk-cached kernels (see the module doc)."""
    t0 = time.perf_counter()
    import numpy as np
    from bench_launch import copy16        # (its kernel: @npu_kernel, npujit.language)
    from npujit.kernels.softmax import softmax_kernel
    t1 = time.perf_counter()
    from npujit.jit import cache as disk_cache
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    copy16[(1,)](x, out, 16, BLOCK=16)
    t2 = time.perf_counter()
    rows = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    got = np.empty_like(rows)
    softmax_kernel[(4,)](rows, got, 64, 64, 64, BLOCK=64)
    t3 = time.perf_counter()
    want = np.exp(rows - rows.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    assert (out == x).all() and np.allclose(got, want, rtol=1e-5, atol=1e-6)
    return {"import": t1 - t0, "copy": t2 - t1, "softmax": t3 - t2,
            "all_in": time.time() - start - (t3 - t2),
            "misses": disk_cache.stats["misses"], "hits": disk_cache.stats["hits"],
            "numba_imported": "numba" in sys.modules, "scipy_imported": "scipy" in sys.modules}


def _child_warm(n_iter: int = 20000) -> dict:
    import numpy as np
    from bench_launch import copy16
    x = np.ones(16, np.float32)
    out = np.zeros(16, np.float32)
    backend = os.environ.get("NPUJIT_BACKEND") or "numba"
    k = copy16.with_options(backend=backend)
    launch = k[(1,)]
    launch(x, out, 16, BLOCK=16)
    run = k.compile(x, out, 16, BLOCK=16).runnable()
    if backend == "llvm":       # the machine code through ctypes, its context as launched
        run((1, 1, 1), [x, out, 16])
        ctx = run._buffers().ctx_address
        entry = functools.partial(run._entry, ctx)
    else:                       # the numba dispatcher
        entry = functools.partial(run._entry, 1, 1, 1, 0, 1, x, out, 16)

    def per_call(f) -> float:
        # CPU time of this process, best of 5: on a shared machine the wall clock also
        # counts the time other processes hold the core
        best = float("inf")
        for _ in range(5):
            t0 = time.process_time()
            for _ in range(n_iter):
                f()
            best = min(best, (time.process_time() - t0) / n_iter)
        return best * 1e6
    e = per_call(entry)
    w = per_call(lambda: launch(x, out, 16, BLOCK=16))
    i = per_call(lambda: k[(1,)](x, out, 16, BLOCK=16))
    assert (out == 1).all()
    return {"entry_us": e, "launch_us": w, "indexed_launch_us": i, "overhead_us": w - e}


def _run_child(what: str, env: dict, *extra) -> dict:
    start = time.time()
    res = subprocess.run([sys.executable, HERE, "--child", what, repr(start), *extra],
                         capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"child {what} failed:\n{res.stderr}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["wall"] = time.time() - start
    return out


# --- the parent: interleaved rounds, medians ----------------------------------------
def _summary(values) -> str:
    return f"{statistics.median(values):8.3f}  ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bytecode", action="store_true",
                    help="let the children write and use .pyc files (unset "
                         "PYTHONDONTWRITEBYTECODE)")
    ap.add_argument("--backend", choices=("numba", "llvm"), default="numba",
                    help="the CPU backend the children launch on")
    ap.add_argument("--json", help="also write the measurements here")
    args = ap.parse_args()
    results: dict = {k: [] for k in ("python", "numpy", "npujit", "first", "warm")}
    with tempfile.TemporaryDirectory(prefix="npujit-bench-startup-") as cache:
        env = {**os.environ, "NPUJIT_CACHE_DIR": cache, "NPUJIT_BACKEND": args.backend}
        if args.bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        _run_child("first", env)             # fills the disk cache (and __pycache__)
        loads = []
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            results["python"].append(_run_child("import", env, "sys")["wall"])
            results["numpy"].append(_run_child("import", env, "numpy")["s"])
            results["npujit"].append(_run_child("import", env, "npujit")["s"])
            results["first"].append(_run_child("first", env))
            results["warm"].append(_run_child("warm", env))
    first, warm = results["first"], results["warm"]
    assert all(r["misses"] == 0 for r in first), "a fresh process traced: the cache missed"
    print(f"npujit start-up and launch on the {args.backend} backend, {args.rounds} "
          f"interleaved rounds, medians (min-max); "
          f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    print("  .pyc files written and used" if "PYTHONDONTWRITEBYTECODE" not in env else
          "  .pyc files not written: every child compiles npujit from source (--bytecode)")
    print(f"  python -c pass (process wall, s)      {_summary(results['python'])}")
    print(f"  import numpy (s)                      {_summary(results['numpy'])}")
    print(f"  import npujit (s)                     {_summary(results['npujit'])}   bar <= 0.3")
    print("  first launch, fresh process, disk-cached kernels:")
    print(f"    import npujit + kernels (s)         {_summary([r['import'] for r in first])}")
    print(f"    first launch, copy16 (s)            {_summary([r['copy'] for r in first])}"
          "   bar <= 0.1")
    print(f"    then softmax's first launch (s)     {_summary([r['softmax'] for r in first])}")
    print(f"    all-in: process start -> copy16 done (s) "
          f"{_summary([r['all_in'] for r in first])}")
    print(f"    numba imported: {first[0]['numba_imported']}, scipy imported: "
          f"{first[0]['scipy_imported']}")
    print("  warm launch, 16-element copy (us):")
    print(f"    compiled entry                      {_summary([r['entry_us'] for r in warm])}")
    print(f"    launcher(x, out, 16, BLOCK=16)      {_summary([r['launch_us'] for r in warm])}")
    print(f"    copy16[(1,)](...)                   "
          f"{_summary([r['indexed_launch_us'] for r in warm])}")
    print(f"    overhead above the entry            "
          f"{_summary([r['overhead_us'] for r in warm])}   bar <= 5")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"loadavg": loads, **results}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        what, start = sys.argv[2], float(sys.argv[3])
        if what == "import":
            print(json.dumps(_child_import(sys.argv[4])))
        elif what == "first":
            print(json.dumps(_child_first(start)))
        else:
            print(json.dumps(_child_warm()))
    else:
        main()
