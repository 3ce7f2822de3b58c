"""End-to-end ``kernel.simulate`` speed: simulated instructions per second of wall time on
large launches of bundled kernels on the 910B-like preset, timing-only
(``numerics=False``) and with numbers, and where the time goes.

Bar (issue 10): >= 2,000,000 simulated instructions per second timing-only, end to end
through ``kernel.simulate`` (compile excluded: the kernel is compiled and its recording
build cached by a first run).

Columns: ``record`` is running the programs (numba recording build: only the slice of ops
that decides the streams when timing-only), ``lower`` turning the events into instruction
streams (``npujit.sim.lower.StreamRecorder``, programs that ran alike share one stream),
``engine`` the timing simulation and report (``npujit.sim.simulate``).

    python benchmarks/bench_simulate.py            # full size
    python benchmarks/bench_simulate.py --quick    # 1/8 of the programs
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from npujit.backends.numba.backend import record_launch
from npujit.backends.numba.record import replay
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910B_LIKE, StreamRecorder, simulate


def softmax_case(scale: int):
    rows, cols = 16384 // scale, 1024
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    return (softmax_kernel, (rows,), (x, np.empty_like(x), cols, cols, cols),
            {"BLOCK": 1024}, f"softmax {rows}x{cols} f32")


def matmul_case(scale: int):
    m = n = 4096 // (2 if scale > 1 else 1)
    k = 2048
    a = np.ones((m, k), np.float16)
    b = np.ones((k, n), np.float16)
    meta = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_STAGES": 2}
    return (matmul_kernel, (m // 128, n // 128),
            (a, b, np.empty((m, n), np.float32), m, n, k, k, 1, n, 1, n, 1), meta,
            f"matmul {m}x{n}x{k} f16")


def phases(kernel, grid, args, meta, numerics: bool) -> tuple[float, float, float, object]:
    """(record s, lower s, engine s, report) of one simulate, by its parts (what
    ``jit/simulate.py`` does, timed piece by piece)."""
    spec = ASCEND_910B_LIKE
    k = kernel.with_options(spec=spec)
    c = k.compile(*args, **meta)
    sig = k.signature
    bound = sig.bind(args, meta)
    rt = sig.runtime_args(c.sigs, c.runtime_index, bound)
    g = tuple(sig.grid(grid, bound))
    t0 = time.perf_counter()
    events = record_launch(c.ir, g, rt, None if numerics else {"numerics": False})
    t1 = time.perf_counter()
    rec = StreamRecorder(c.ir, gm_regions=True, spec=spec)
    replay(c.ir, g, events, rec)
    launch = rec.launch(kernel.name)
    t2 = time.perf_counter()
    report = simulate(launch, spec)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, report


def end_to_end(kernel, grid, args, meta, numerics: bool, repeat: int = 3):
    best, report = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        report = kernel.simulate(*args, grid=grid, spec=ASCEND_910B_LIKE, backend="numba",
                                 numerics=numerics, **meta)
        best = min(best, time.perf_counter() - t0)
    return best, report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1/8 of the programs")
    args = ap.parse_args()
    scale = 8 if args.quick else 1
    print("kernel.simulate end to end on ASCEND_910B_LIKE (numba recording; best of 3; "
          "compile excluded)")
    print(f"{'launch':<28} {'numerics':>8} {'instrs':>10} {'wall s':>7} {'instr/s':>11} "
          f"{'record':>7} {'lower':>7} {'engine':>7}")
    for case in (softmax_case(scale), matmul_case(scale)):
        kernel, grid, kargs, meta, label = case
        for numerics in (False, True):
            end_to_end(kernel, grid, kargs, meta, numerics, repeat=1)     # compile, cache
            wall, report = end_to_end(kernel, grid, kargs, meta, numerics)
            rec, low, eng, r2 = phases(kernel, grid, kargs, meta, numerics)
            assert (r2.cycles, r2.instr_count) == (report.cycles, report.instr_count)
            rate = report.instr_count / wall
            bar = "" if numerics else ("  ok" if rate >= 2e6 else "  BELOW 2M/s")
            print(f"{label:<28} {str(numerics):>8} {report.instr_count:>10,} {wall:>7.2f} "
                  f"{rate:>11,.0f} {rec:>7.2f} {low:>7.2f} {eng:>7.2f}{bar}")


if __name__ == "__main__":
    main()
