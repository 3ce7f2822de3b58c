"""The schedule's bars on realistic settings: the 910B-like preset, through
``kernel.simulate``, with the full debug options on (every tile in its scheduled buffer,
NaN-poisoned, copies landing at their wait, races and 1-bit flags checked) and the
numbers checked against numpy.  docs/schedule.md ("What the bars mean") quotes this.

Rows:
  * vector add, single- vs double-buffered (``num_stages`` 1 and 2): one program on one
    AIV core, and one program per AIV core (48);
  * tiled fp16 matmul: % of the Cube's peak with the L2 at the measured 3.4 TB/s
    (docs/npu-facts.md §A5), at the preset's assumed 4.75 TB/s, and with no L2;
  * for the double-buffered add on one core, how the speed-up moves with the assumed
    constants (``npujit.sim.sensitivity``: each group halved and doubled).

    python benchmarks/bench_schedule_bars.py            # ~3 minutes of wall
    python benchmarks/bench_schedule_bars.py --quick    # smaller shapes
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from npujit import cdiv
from npujit.kernels.elementwise import add_stream_kernel
from npujit.jit.simulate import lower
from npujit.kernels.matmul import matmul_kernel
from npujit.sim import ASCEND_910B_LIKE, DebugOptions
from npujit.sim.sensitivity import sensitivity

FULL_DEBUG = DebugOptions.full(raise_on_race=True)


def add(n: int, programs: int, stages: int, spec, block: int = 8192, debug=FULL_DEBUG):
    """``n`` fp16 adds streamed by ``programs`` programs; returns the report."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    y = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    out = np.empty_like(x)
    per_program = cdiv(cdiv(n, programs), block) * block
    report = add_stream_kernel.simulate(x, y, out, n, per_program,
                                        grid=(cdiv(n, per_program),), spec=spec,
                                        debug=debug, BLOCK=block, NUM_STAGES=stages)
    np.testing.assert_array_equal(out, x + y)
    assert not report.races and not report.flag_issues, (report.races, report.flag_issues)
    return report


def matmul(size: int, spec, debug=FULL_DEBUG):
    """``size``^3 fp16 matmul (256 x 128 x 256 tiles, L0 K split 64, 2 stages)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32).astype(np.float16)
    b = rng.standard_normal((size, size), dtype=np.float32).astype(np.float16)
    c = np.empty((size, size), np.float16)
    tiles = dict(BLOCK_M=256, BLOCK_N=128, BLOCK_K=256, L0_BLOCK_K=64, NUM_STAGES=2)
    report = matmul_kernel.simulate(a, b, c, size, size, size, size, 1, size, 1, size, 1,
                                    grid=(cdiv(size, 256), cdiv(size, 128)), spec=spec,
                                    debug=debug, **tiles)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-2, atol=0.25)
    assert not report.races and not report.flag_issues
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    spec = ASCEND_910B_LIKE
    n_one = (1 if args.quick else 4) * 1024 * 1024
    n_chip = (8 if args.quick else 16) * 1024 * 1024
    size = 512 if args.quick else 1024
    print(f"schedule bars on {spec.name}, through kernel.simulate with {FULL_DEBUG}")
    t0 = time.perf_counter()
    for label, n, programs in (("one AIV core", n_one, 1), ("48 AIV cores", n_chip, 48)):
        sb = add(n, programs, 1, spec)
        db = add(n, programs, 2, spec)
        print(f"  add {n // 2**20} M fp16, {label}: single {sb.cycles:,} / double "
              f"{db.cycles:,} cycles = {sb.cycles / db.cycles:.2f}x  "
              f"(aiv_mte2_ratio {db.ratios['aiv_mte2_ratio']:.2f} double-buffered)")
    for label, s in (("L2 at the measured 3.4 TB/s", spec.replace(l2_bytes_per_s=3.4e12)),
                     ("L2 at the preset's 4.75 TB/s", spec),
                     ("no L2", spec.replace(l2_bytes=0))):
        r = matmul(size, s)
        print(f"  matmul {size}^3 fp16, {label}: {100 * r.achieved_flops / s.peak_cube_flops:.1f}%"
              f" of Cube peak, {100 * r.bound.cycles / r.cycles:.1f}% of its roofline bound "
              f"({r.bound.kind}-bound, {r.cycles:,} cycles)")
    # How the one-core double-buffering speed-up rests on the assumed constants.
    rng = np.random.default_rng(2)
    x = rng.standard_normal(n_one, dtype=np.float32).astype(np.float16)
    rows = {}
    for stages in (1, 2):
        launch = _launch(x, n_one, stages, spec)
        rows[stages] = sensitivity(launch, spec)
    print("  one-core add, single / double cycles with each group of assumed constants "
          "halved | doubled:")
    for r1 in rows[1].rows:
        r2 = rows[2].row(r1.group)
        print(f"    {r1.group:<20} {r1.divided / r2.divided:5.2f}x | "
              f"{r1.multiplied / r2.multiplied:5.2f}x   ({', '.join(sorted(set(r1.sources)))})")
    print(f"  wall {time.perf_counter() - t0:.0f} s")


def _launch(x, n, stages, spec):
    """The recorded launch of the one-core add (to re-time with other constants)."""
    k = add_stream_kernel.with_options(spec=spec)
    c = k.compile(x, x, x.copy(), n, n, BLOCK=8192, NUM_STAGES=stages)
    out = np.empty_like(x)
    rt = k.signature.runtime_args(c.sigs, c.runtime_index,
                                  k.signature.bind((x, x, out, n, n),
                                                   {"BLOCK": 8192, "NUM_STAGES": stages}))
    return lower(c.ir, (1, 1, 1), rt, name="add", spec=spec, backend="numba")


if __name__ == "__main__":
    main()
