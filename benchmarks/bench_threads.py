"""Threaded launches on the llvm backend: one thread, the thread pool, the spinning team
(backends/llvm/team.py), medians of interleaved rounds, microseconds per launch.

Rows: the layernorm (kernels/layernorm.py) on 16, 256 and 2048 rows of 1024, and the
1 M-element vector add (kernels/elementwise.py), each launched with a preallocated
output on ``--threads`` threads (default 2).  ``pool`` is the team switched off
(``team.available`` False), the way the launches went before the team; every result is
checked against numpy first.

    python benchmarks/bench_threads.py [--threads 2] [--rounds 7] [--calls 200]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args(argv)
    os.environ["NPUJIT_NUM_THREADS"] = str(args.threads)     # read when a launcher is made

    import numpy as np

    from npujit.backends.llvm import team
    from npujit.kernels import numpy_reference as ref
    from npujit.kernels.elementwise import add_kernel
    from npujit.kernels.layernorm import layernorm_kernel

    rng = np.random.default_rng(0)
    w = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    rows = []
    for r in (16, 256, 2048):
        h = rng.standard_normal((r, 1024)).astype(np.float32)
        out = np.empty_like(h)
        rows.append((f"layernorm {r}x1024", layernorm_kernel, (r,),
                     (h, w, b, out, 1024, 1e-5), {"BLOCK": 1024}, out,
                     ref.layernorm(h, w, b), 1e-4))
    n = 1 << 20
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    o = np.empty_like(x)
    rows.append(("vector add 1M f32", add_kernel, (n // 1024,), (x, y, o, n),
                 {"BLOCK": 1024}, o, x + y, 0.0))

    team_on = team.available

    def way(kernel, name):
        return kernel.with_options(parallel=name != "serial")

    print(f"llvm backend, {args.threads} threads, median us per launch of {args.rounds} "
          f"interleaved rounds (best of each round's {args.calls} calls)")
    print(f"  {'row':<20} {'serial':>9} {'pool':>9} {'team':>9}  pool / team")
    for name, kernel, grid, kargs, kw, out, want, tol in rows:
        ways = {w_: way(kernel, w_) for w_ in ("serial", "pool", "team")}
        times: dict = {w_: [] for w_ in ways}
        for w_, k in ways.items():
            team.available = team_on if w_ == "team" else (lambda: False)
            out[...] = 0
            k[grid](*kargs, **kw)
            np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
        for _ in range(args.rounds):
            for w_, k in ways.items():
                team.available = team_on if w_ == "team" else (lambda: False)
                best = float("inf")
                for _ in range(args.calls):
                    t0 = time.perf_counter()
                    k[grid](*kargs, **kw)
                    best = min(best, time.perf_counter() - t0)
                times[w_].append(best * 1e6)
        med = {w_: statistics.median(v) for w_, v in times.items()}
        print(f"  {name:<20} {med['serial']:9.1f} {med['pool']:9.1f} {med['team']:9.1f}"
              f"  {med['pool'] / med['team']:.2f}x")
    team.available = team_on
    return 0


if __name__ == "__main__":
    sys.exit(main())
