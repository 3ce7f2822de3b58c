"""Timing-simulator benchmark: simulated instructions per second of wall time, and the
double- vs single-buffered speed-up at equal stage times.

Bars:
  * >= 2,000,000 simulated instructions per second on a large launch (issue 10; the bar
    is for the timing-only ``kernel.simulate``; this measures the engine part: compile,
    run and report of 24 AIV cores x ~50k instructions of a double-buffered
    GM -> UB -> Vector -> GM stream; the earlier bar was 1,000,000);
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

SPEED_BAR = 2_000_000      # simulated instructions per second of wall time

from npujit.sim import ASCEND_910B_LIKE, TINY, Launch, simulate
from npujit.sim.patterns import cube_pipeline, vector_pipeline


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


def measure_rate(launch: Launch, repeat: int = 3) -> tuple[float, float, object]:
    """Best wall time of ``repeat`` runs of simulate(), and instructions per second."""
    best = float("inf")
    report = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        report = simulate(launch, ASCEND_910B_LIKE)
        best = min(best, time.perf_counter() - t0)
    return best, launch.instr_count / best, report


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

    print("simulated instructions per second (ASCEND_910B_LIKE, best of 3, incl. compile + report;"
          f" bar {SPEED_BAR / 1e6:g} M/s)")
    print(f"{'launch':<36} {'instrs':>10} {'GM copies':>10} {'wall s':>7} {'instr/s':>11} "
          f"{'cycles':>11} {'of bound':>8}")
    rows = [("24 AIV, 1 Vector op per tile", build_launch(24, per_core, 1)),
            ("24 AIV, 4 Vector ops per tile", build_launch(24, per_core, 4)),
            ("24 AIC matmul + 48 AIV streams", build_mixed_launch(per_core // 3))]
    for label, launch in rows:
        gm = sum(1 for p in launch.programs for i in p.instrs
                 if i.kind == "copy" and "GM" in i.path)
        wall, rate, report = measure_rate(launch)
        bar = "bar met" if rate >= SPEED_BAR else f"BELOW the {SPEED_BAR / 1e6:g} M/s bar"
        print(f"{label:<36} {launch.instr_count:>10,} {gm:>10,} {wall:>7.2f} {rate:>11,.0f} "
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
