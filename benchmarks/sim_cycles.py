"""Cycles of the bundled kernels through the timing-only ``kernel.simulate`` on both Ascend
presets, saved to and compared against a JSON file: the check that a change meant only for
speed leaves every simulated number alone.

    python benchmarks/sim_cycles.py --save before.json     # on the old code
    python benchmarks/sim_cycles.py --compare before.json  # on the new code: exit 1 on a change
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from npujit import cdiv
from npujit.kernels.elementwise import add_kernel, add_stream_kernel
from npujit.kernels.layernorm import layernorm_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE


def cases():
    """(label, kernel, grid, args, meta) of bundled launches on 48 cores' worth of work."""
    rng = np.random.default_rng(0)
    n = 4 << 20
    x = rng.standard_normal(n).astype(np.float16)
    out = np.empty_like(x)
    yield "add 4M f16, 512 programs", add_kernel, (512,), (x, x, out, n), {"BLOCK": 8192}
    per = cdiv(cdiv(n, 48), 8192) * 8192
    for stages in (1, 2):
        yield (f"add_stream 4M f16, 48 programs, {stages} stage(s)", add_stream_kernel,
               (cdiv(n, per),), (x, x, out, n, per), {"BLOCK": 8192, "NUM_STAGES": stages})
    rows, cols = 2048, 1024
    xs = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    yield ("softmax 2048x1024 f32", softmax_kernel, (rows,),
           (xs, np.empty_like(xs), cols, cols, cols), {"BLOCK": 1024})
    yield ("layernorm 2048x1024 f32", layernorm_kernel, (rows,),
           (xs, w, w, np.empty_like(xs), cols, 1e-5), {"BLOCK": 1024})
    for size, tiles in ((1024, (256, 128, 256, 64)), (2048, (128, 128, 64, 0))):
        bm, bn, bk, l0k = tiles
        a = np.ones((size, size), np.float16)
        yield (f"matmul {size}^3 f16 {bm}x{bn}x{bk}", matmul_kernel,
               (cdiv(size, bm), cdiv(size, bn)),
               (a, a, np.empty((size, size), np.float32), size, size, size, size, 1, size, 1,
                size, 1),
               {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "L0_BLOCK_K": l0k,
                "NUM_STAGES": 2})


def measure() -> dict:
    """``{"spec: launch": [cycles, instructions, HBM read bytes, HBM write bytes]}``."""
    out = {}
    for spec in (ASCEND_910B_LIKE, ASCEND_910_LIKE):
        for label, kernel, grid, args, meta in cases():
            k = kernel.with_options(spec=spec, backend="numba")
            r = k.simulate(*args, grid=grid, spec=spec, numerics=False, **meta)
            key = f"{spec.name}: {label}"
            out[key] = [r.cycles, r.instr_count, r.hbm_read_bytes, r.hbm_write_bytes]
            print(f"{key:<58} {r.cycles:>11,} cycles {r.instr_count:>9,} instrs", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", help="write the numbers to this JSON file")
    ap.add_argument("--compare", help="compare against numbers saved earlier")
    args = ap.parse_args()
    now = measure()
    if args.save:
        with open(args.save, "w") as f:
            json.dump(now, f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            before = json.load(f)
        changed = {k: (before.get(k), v) for k, v in now.items() if before.get(k) != v}
        for k, (old, new) in changed.items():
            print(f"CHANGED {k}: {old} -> {new}")
        print(f"{len(now) - len(changed)} of {len(now)} launches identical")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
