"""Cold compile and run time of the gallery's kernels: the llvm backend against numba.

The kernels and launches are the Triton gallery's (``kernels/triton_gallery/``, the
shapes of ``benchmarks/triton_rows.py --quick``).  Each backend compiles each launch with
the disk cache off (``NPUJIT_DISABLE_CACHE``): trace, passes, code generation and the
backend's compiler.  Both compile a warm-up kernel first (the vector add at another block
size), so neither pays its imports; rounds alternate the two backends.  A kernel the llvm
backend does not lower yet is listed with the op it refused.  Then each result is checked
against numba's and both are timed per launch (median of 20).

Issue 16's bar for a cold compile is <= 1.0x Triton's compile of the same kernel
(Triton's times are ``benchmarks/compile_vs_triton.py``'s, with Triton installed).

    python benchmarks/bench_llvm_compile.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time

os.environ["NPUJIT_DISABLE_CACHE"] = "1"       # before npujit reads it

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_rows  # noqa: E402

from npujit.backends.llvm.lower import Unsupported  # noqa: E402


def _tolerance(r) -> float:
    """1e-5, or two units in the last place of a 16-bit float output (the two backends
    may sum a dot's products in another order, so a rounded fp16 result can differ by
    one ulp)."""
    r = np.asarray(r)
    if r.dtype.kind == "f" and r.dtype.itemsize < 4:
        return 2 * float(np.finfo(r.dtype).eps)
    return 1e-5


class _Capture:
    """Stands in for a kernel: ``kernel[grid](*args, **kw)`` records the launch."""

    def __getitem__(self, grid):
        def call(*args, **kwargs):
            self.grid, self.args, self.kwargs = grid, args, kwargs
        return call


def _compile(mod, kname: str, backend: str, launch) -> tuple[float, object]:
    if backend == "numba":
        from npujit.backends.numba import runtime
        runtime._loaded.clear()            # else the generated module of an earlier round
    fresh = getattr(mod, kname).with_options(backend=backend)
    fresh.cache.clear()                    # and the specialisations kept in memory
    t0 = time.perf_counter()
    c = fresh.compile(*launch.args, **launch.kwargs)
    run = c.runnable()
    return time.perf_counter() - t0, (fresh, run)


def _run(mod, host: str, args, kernel) -> list:
    out = getattr(mod, host)(*args, kernel=kernel)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def _per_launch(fn, n: int = 20) -> float:
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    problems = list(triton_rows._problems(quick=True))
    launches = {}
    for row, problem, name, host, args, kname in problems:
        mod = importlib.import_module(f"npujit.kernels.triton_gallery.{name}")
        cap = _Capture()
        getattr(mod, host)(*args, kernel=cap)
        launches[name] = cap
    w = problems[0]
    wmod = importlib.import_module(f"npujit.kernels.triton_gallery.{w[2]}")
    wl = launches[w[2]]
    warm = _Capture()
    warm.args, warm.kwargs = wl.args, {**wl.kwargs, "BLOCK_SIZE": wl.kwargs["BLOCK_SIZE"] // 2}
    for backend in ("numba", "llvm"):
        _compile(wmod, w[5], backend, warm)
    print(f"cold compile (median of {a.rounds}, disk cache off) and time per launch\n")
    print(f"{'kernel':<11} {'problem':<30} {'numba':>10} {'llvm':>10} {'speed-up':>9}"
          f" {'run numba':>10} {'run llvm':>10}")
    for row, problem, name, host, args, kname in problems:
        mod = importlib.import_module(f"npujit.kernels.triton_gallery.{name}")
        times = {"numba": [], "llvm": []}
        kernels = {}
        refused = None
        for _ in range(a.rounds):
            for backend in ("numba", "llvm"):
                if backend == "llvm" and refused:
                    continue
                try:
                    t, kernels[backend] = _compile(mod, kname, backend, launches[name])
                except Unsupported as e:
                    refused = e.error_message.split(";")[0]
                    continue
                times[backend].append(t)
        med = {k: statistics.median(v) for k, v in times.items() if v}
        if refused:
            print(f"{row:<11} {problem:<30} {med['numba'] * 1e3:8.0f}ms  refused: {refused}")
            continue
        ref = _run(mod, host, args, kernels["numba"][0])
        got = _run(mod, host, args, kernels["llvm"][0])
        same = all(np.allclose(g, r, rtol=_tolerance(r), atol=_tolerance(r))
                   for g, r in zip(got, ref))
        run = {b: _per_launch(lambda b=b: _run(mod, host, args, kernels[b][0]))
               for b in ("numba", "llvm")}
        print(f"{row:<11} {problem:<30} {med['numba'] * 1e3:8.0f}ms {med['llvm'] * 1e3:8.0f}ms"
              f" {med['numba'] / med['llvm']:8.1f}x {run['numba'] * 1e3:8.3f}ms "
              f"{run['llvm'] * 1e3:8.3f}ms{'' if same else '  RESULTS DIFFER'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
