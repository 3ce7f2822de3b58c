"""The thread stress, 20 runs in a row (issue 11: "must pass 20 runs in a row").

Each run: 8 threads launching 3 fresh kernels at once on each backend (first launch and
re-launches, every result checked against numpy, one compile per specialisation), then
8 threads compiling 20 new specialisations each of the 3 kernels (480 compiles).

    python benchmarks/stress_threads.py [runs]
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "runtime"))

from thread_stress import compile_many, stress  # noqa: E402


def main(runs: int = 20) -> int:
    t0 = time.perf_counter()
    for i in range(runs):
        parts = []
        for backend in ("reference", "numba"):
            r = stress(backend, threads=8, rounds=3)
            parts.append(f"{backend}: {r['launches']} launches, {r['compiles']} compiles, "
                         f"{r['seconds']:.2f} s")
        t = time.perf_counter()
        n = compile_many(threads=8, per_thread=20)
        parts.append(f"{n} concurrent compiles {time.perf_counter() - t:.2f} s")
        print(f"run {i + 1:2d}/{runs} ok  " + "; ".join(parts), flush=True)
    print(f"{runs} runs in a row passed in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
