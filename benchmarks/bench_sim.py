"""Timing-simulator benchmark: simulated instructions per second of wall time, and the
double- vs single-buffered speed-up at equal stage times.

Bars:
  * >= 2,000,000 simulated instructions per second (issue 10) in the timing-only
    ``kernel.simulate(..., numerics=False)``, end to end: what a user waits for.  Two
    tables: bundled kernels (softmax, matmul, layernorm, add) on the 910B-like preset end
    to end through ``kernel.simulate`` timing-only (compile excluded: a first run compiles
    and caches; recording, replay, placing the programs, queue compile, run and report
    included) and the engine alone on the same recorded launches (``npujit.sim.simulate``:
    compile, run, report), with the default engine (``auto``: the compiled engine from
    20000 instructions) and forced to the compiled and the Python engine; then synthetic
    engine-only launches of 24 AIV cores x ~50k instructions of a double-buffered
    GM -> UB -> Vector -> GM stream.  Rates are per second of CPU time (the machine is
    shared) and of wall time, over all four kernels together (the bar) and per kernel;
  * double-buffered / single-buffered cycles >= 2.5 at equal stage times for N large enough.

The launches are deliberately unfriendly: every core gets a different tile size, so the
cores never run in lockstep and every GM copy is a separate change of the shared HBM
server, and every instruction is a fresh Instr object.  Rows: the vector stream with one
Vector op per tile (the most GM copies per instruction), with four, and a mixed launch of
24 AIC matmul tiles next to 48 AIV streams.

    python benchmarks/bench_sim.py            # full size
    python benchmarks/bench_sim.py --quick    # 1/10 of the instructions
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from npujit.jit.simulate import lower
from npujit.kernels.elementwise import add_kernel
from npujit.kernels.layernorm import layernorm_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910B_LIKE, TINY, Launch, simulate
from npujit.sim.patterns import cube_pipeline, vector_pipeline

SPEED_BAR = 2_000_000      # simulated instructions per second of CPU time


def bundled_cases(scale: int):
    """(label, kernel, grid, args, meta) of bundled kernels at realistic sizes."""
    rng = np.random.default_rng(0)
    rows, cols = 16384 // scale, 1024
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    yield (f"softmax {rows}x{cols} f32", softmax_kernel, (rows,),
           (x, np.empty_like(x), cols, cols, cols), {"BLOCK": 1024})
    yield (f"layernorm {rows}x{cols} f32", layernorm_kernel, (rows,),
           (x, w, w, np.empty_like(x), cols, 1e-5), {"BLOCK": 1024})
    m = 4096 // (2 if scale > 1 else 1)
    a = np.ones((m, 2048), np.float16)
    yield (f"matmul {m}x{m}x2048 f16", matmul_kernel, (m // 128, m // 128),
           (a, a.T.copy(), np.empty((m, m), np.float32), m, m, 2048, 2048, 1, m, 1, m, 1),
           {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_STAGES": 2})
    n = (1 << 24) // scale
    v = np.ones(n, np.float16)
    yield (f"add {n >> 20}M f16, 2048 B tiles", add_kernel, (n // 1024,),
           (v, v, np.empty_like(v), n), {"BLOCK": 1024})


def timed(fn, repeat: int = 3) -> tuple[float, float, object]:
    """Best CPU and best wall seconds of ``repeat`` calls, and the last result."""
    cpu = wall = float("inf")
    out = None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return cpu, wall, out


def _rates(n: int, cpu: float, wall: float) -> str:
    return f"{n / cpu / 1e6:>9.2f} ({n / wall / 1e6:>5.2f})"


def bundled(scale: int) -> None:
    """End to end (timing-only kernel.simulate) and engine alone on bundled kernels."""
    spec = ASCEND_910B_LIKE
    print(f"bundled kernels on {spec.name}, timing-only (numerics=False), best of 3; "
          f"M instr/s per CPU s (wall)")
    print(f"{'launch':<34} {'instrs':>9} {'end to end':>17} {'engine alone':>17} "
          f"{'compiled':>17} {'python engine':>17}")
    total = {key: [0, 0.0, 0.0] for key in ("e2e", "engine", "compiled", "python")}
    rows = []       # (label, end-to-end instr per CPU second)
    for label, kernel, grid, args, meta in bundled_cases(scale):
        k = kernel.with_options(spec=spec, backend="numba")

        def end_to_end():
            return k.simulate(*args, grid=grid, spec=spec, numerics=False, **meta)
        end_to_end()                                  # compile, cache the recording build
        cpu, wall, report = timed(end_to_end)
        c = k.compile(*args, **meta)
        sig = k.signature
        bound = sig.bind(args, meta)
        launch = lower(c.ir, sig.grid(grid, bound), sig.runtime_args(c.sigs, c.runtime_index,
                       bound), name=label, spec=spec, backend="numba", numerics=False)
        times = {"e2e": (cpu, wall)}
        for key, engine in (("engine", None), ("compiled", "compiled"), ("python", "python")):
            ecpu, ewall, again = timed(lambda: simulate(launch, spec, engine=engine))
            assert (again.cycles, again.programs) == (report.cycles, report.programs)
            times[key] = (ecpu, ewall)
        n = report.instr_count
        for key, (c_, w_) in times.items():
            total[key][0] += n
            total[key][1] += c_
            total[key][2] += w_
        rows.append((label.split(" ")[0], n / times["e2e"][0]))
        print(f"{label:<34} {n:>9,} " + " ".join(_rates(n, *times[k]) for k in total))
    print(f"{'all of them':<34} {total['e2e'][0]:>9,} " +
          " ".join(_rates(*total[k]) for k in total))
    for key, what in (("e2e", "end to end: kernel.simulate(numerics=False): run the "
                              "stream-deciding ops, record, simulate"),
                      ("engine", "engine alone, auto: npujit.sim.simulate(launch)"),
                      ("compiled", "engine alone, compiled: simulate(launch, "
                                   "engine='compiled')"),
                      ("python", "engine alone, Python: simulate(launch, engine='python')")):
        n, c_, _ = total[key]
        verdict = "reaches" if n / c_ >= SPEED_BAR else "below"
        print(f"  {n / c_ / 1e6:5.2f} M instr/s of CPU ({verdict} {SPEED_BAR / 1e6:g} M/s)  "
              f"{what}")
    n, c_, _ = total["e2e"]
    slowest = min(rows, key=lambda r: r[1])
    print(f"  issue 10 bar (>= {SPEED_BAR / 1e6:g} M simulated instr/s, timing-only "
          f"kernel.simulate end to end, these four kernels together): "
          f"{'MET' if n / c_ >= SPEED_BAR else 'NOT MET'} at {n / c_ / 1e6:.2f} M/s of CPU; "
          f"the engine alone (compiled) {total['compiled'][0] / total['compiled'][1] / 1e6:.2f}"
          f" M/s; slowest kernel end to end: {slowest[0]} at {slowest[1] / 1e6:.2f} M/s")
    print()


def build_launch(cores: int, instrs_per_core: int, vec_ops: int) -> Launch:
    """``cores`` double-buffered vector streams of about ``instrs_per_core`` instructions."""
    per_tile = 10 + vec_ops          # instructions per tile in steady state
    tiles = instrs_per_core // per_tile
    progs = [vector_pipeline(tiles, 16384 + 512 * c, vec_ops=vec_ops, name=f"core{c}")
             for c in range(cores)]
    return Launch(progs, name=f"{cores}x{instrs_per_core} db stream")


def build_mixed_launch(instrs_per_core: int) -> Launch:
    """24 AIC matmul tiles (K loop, double-buffered L1/L0) and 48 AIV vector streams."""
    aic = [cube_pipeline(instrs_per_core // 13, 128, 128 + 16 * c, 64, name=f"aic{c}")
           for c in range(24)]
    aiv = [vector_pipeline(instrs_per_core // 13, 8192 + 256 * c, vec_ops=3, name=f"aiv{c}")
           for c in range(48)]
    return Launch(aic + aiv, name="mixed")


def measure_rate(launch: Launch, repeat: int = 3) -> tuple[float, float, float, object]:
    """Best CPU and wall time of ``repeat`` runs of simulate(), and instructions per CPU
    second."""
    cpu, wall, report = timed(lambda: simulate(launch, ASCEND_910B_LIKE), repeat)
    return cpu, wall, launch.instr_count / cpu, report


def db_over_sb(n: int, spec) -> tuple[int, int]:
    """Cycles single- and double-buffered with equal stage times on ``spec``: a 16 KB tile
    through MTE2 (10 + 16384/64 cycles on TINY), one exp (10 + 4 x 16384/256) on Vector,
    and MTE3 (as MTE2)."""
    sb = simulate(vector_pipeline(n, 16384, op="exp", stages=1, inplace=True), spec).cycles
    db = simulate(vector_pipeline(n, 16384, op="exp", stages=2), spec).cycles
    return sb, db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1/10 of the instructions")
    args = ap.parse_args()
    per_core = 5000 if args.quick else 50000
    bundled(8 if args.quick else 1)

    print("engine alone, synthetic launches (every instruction a fresh object: a stress "
          "case for the queue compiler, not the bar's measure): simulated instructions per "
          "CPU second (ASCEND_910B_LIKE, best of 3, incl. compile + report)")
    print(f"{'launch':<36} {'instrs':>10} {'GM copies':>10} {'cpu s':>6} {'wall s':>7} "
          f"{'instr/s':>11} {'cycles':>11} {'of bound':>8}")
    rows = [("24 AIV, 1 Vector op per tile", build_launch(24, per_core, 1)),
            ("24 AIV, 4 Vector ops per tile", build_launch(24, per_core, 4)),
            ("24 AIC matmul + 48 AIV streams", build_mixed_launch(per_core // 3))]
    for label, launch in rows:
        gm = sum(1 for p in launch.programs for i in p.instrs
                 if i.kind == "copy" and "GM" in i.path)
        cpu, wall, rate, report = measure_rate(launch)
        bar = f"{'reaches' if rate >= SPEED_BAR else 'below'} {SPEED_BAR / 1e6:g} M/s"
        print(f"{label:<36} {launch.instr_count:>10,} {gm:>10,} {cpu:>6.2f} {wall:>7.2f} "
              f"{rate:>11,.0f} "
              f"{report.cycles:>11,} {100 * report.roofline_fraction:>7.0f}%  {bar}")

    print()
    exact = TINY.replace(hbm_latency_cycles=0, sync_cycles=0)
    for spec, title in ((exact, "TINY, no landing latency, free sync: stages exactly equal"),
                        (TINY, "TINY as is: sync 1 cycle, 100-cycle landing on each copy stage")):
        print(f"double- vs single-buffered cycles ({title})")
        print(f"{'N tiles':>8} {'single':>10} {'double':>10} {'ratio':>7} {'3N/(N+2)':>9}")
        for n in (4, 10, 16, 64, 256):
            sb, db = db_over_sb(n, spec)
            print(f"{n:>8} {sb:>10,} {db:>10,} {sb / db:>7.3f} {3 * n / (n + 2):>9.3f}"
                  f"  {'ok' if sb / db >= 2.5 else ''}")
        print()


if __name__ == "__main__":
    main()
