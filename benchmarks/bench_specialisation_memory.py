"""What a numba specialisation costs in process memory, and what evicting it gives back.

One kernel (``x * ALPHA``, ``ALPHA`` a constexpr) is launched with ``--variants`` values of
``ALPHA`` under ``NPUJIT_MEMORY_CACHE_SIZE=4``, so at most 4 specialisations stay in the
kernel's memory cache; the resident set (``/proc/self/statm``, after ``gc.collect()``) is
read every 20 variants.  Each measurement is a fresh process:

* ``cold``  -- an empty cache directory: every variant is traced, scheduled and compiled by
  numba (LLVM);
* ``warm``  -- the same directory again: every variant's machine code is loaded from
  numba's cache (no LLVM optimisation);
* then, in the warm process, the first 10 (evicted) variants are launched again and their
  results checked (an evicted specialisation reloads).

The growth per variant does not depend on the memory cache size: numba keeps every
function's machine code in its one MCJIT execution engine for the life of the process
(docs/cache.md, "Memory").

    python benchmarks/bench_specialisation_memory.py [--variants 120]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def one_run(variants: int) -> dict:
    import gc

    import numpy as np

    import npujit.language as nl
    from npujit import cdiv, npu_kernel

    page = os.sysconf("SC_PAGE_SIZE")

    def rss_mb() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page / 2**20

    @npu_kernel(backend="numba")
    def scale_kernel(x_ptr, out_ptr, n, ALPHA: nl.constexpr, BLOCK: nl.constexpr):
        offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
        m = offs < n
        nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=m) * ALPHA, mask=m)

    n = 1000
    x = np.arange(n, dtype=np.float32)
    out = np.empty_like(x)
    grid = (cdiv(n, 256),)
    scale_kernel[grid](x, out, n, ALPHA=0, BLOCK=256)       # numba's own start-up
    gc.collect()
    r0 = rss_mb()
    t0 = time.perf_counter()
    marks = []
    for i in range(1, variants + 1):
        scale_kernel[grid](x, out, n, ALPHA=i, BLOCK=256)
        if out[3] != 3 * i:
            raise AssertionError(f"ALPHA={i}: out[3] = {out[3]}")
        if i % 20 == 0 or i == variants:
            gc.collect()
            marks.append((i, round(rss_mb() - r0, 1)))
    seconds = time.perf_counter() - t0
    for i in range(1, 11):                          # evicted long ago: reload, same numbers
        scale_kernel[grid](x, out, n, ALPHA=i, BLOCK=256)
        if not np.array_equal(out, x * i):
            raise AssertionError(f"evicted ALPHA={i} launched again gives wrong numbers")
    return {"marks": marks, "per_variant_mb": marks[-1][1] / variants, "seconds": seconds,
            "kept": len(scale_kernel.cache)}


def spawn(cache: str, variants: int) -> dict:
    env = dict(os.environ, NPUJIT_CACHE_DIR=cache, NPUJIT_MEMORY_CACHE_SIZE="4")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one",
                          "--variants", str(variants)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=120)
    ap.add_argument("--one", action="store_true", help="one measurement in this process")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_run(args.variants)))
        return
    print(f"{args.variants} constexpr variants, NPUJIT_MEMORY_CACHE_SIZE=4, RSS growth in MB")
    with tempfile.TemporaryDirectory(prefix="npujit-bench-mem-") as tmp:
        for label in ("cold", "warm"):
            r = spawn(os.path.join(tmp, "cache"), args.variants)
            marks = "  ".join(f"{i}: {mb}" for i, mb in r["marks"])
            print(f"{label:<5} {r['per_variant_mb']:.2f} MB per variant, {r['kept']} kept, "
                  f"{r['seconds']:.1f} s   ({marks}); evicted variants relaunched: right numbers")


if __name__ == "__main__":
    main()
