"""The numba backend vs the reference interpreter vs numpy on the bundled kernels.

Prints one table; the bars (issue: foundation): numba >= 50x the reference interpreter,
and on the fused kernels (softmax, layernorm) at least as fast as numpy.

    python benchmarks/bench_backends.py            # full sizes
    python benchmarks/bench_backends.py --small    # quick look
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from npujit.kernels import elementwise, layernorm, matmul, softmax
from npujit.kernels import numpy_reference as ref


def best_of(fn, repeat: int, budget_s: float = 3.0) -> float:
    fn()  # warm (compile, caches)
    times = []
    t_end = time.perf_counter() + budget_s
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            break
    return min(times)


def cases(small: bool):
    rng = np.random.default_rng(0)
    n = 1 << (16 if small else 20)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    yield ("vector add", f"{n} f32", lambda b: elementwise.add(x, y, backend=b), lambda: x + y)

    r, c = (512, 1024) if small else (4096, 1024)
    s = rng.standard_normal((r, c)).astype(np.float32)

    yield ("softmax", f"{r}x{c} f32", lambda b: softmax.softmax(s, backend=b),
           lambda: ref.softmax(s))

    r = 256 if small else 2048
    h = rng.standard_normal((r, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)

    yield ("layernorm", f"{r}x1024 f32", lambda b: layernorm.layernorm(h, w, bias, backend=b),
           lambda: ref.layernorm(h, w, bias))
    yield ("rmsnorm", f"{r}x1024 f32", lambda b: layernorm.rmsnorm(h, w, backend=b),
           lambda: ref.rmsnorm(h, w))

    m = 256 if small else 512
    a = rng.standard_normal((m, m)).astype(np.float16)
    bb = rng.standard_normal((m, m)).astype(np.float16)
    for t in (64, 32):
        # Both tile sizes.  With 64^3 tiles each interpreted op does so much work that the
        # ratio is capped by numba's own arithmetic: 512^3 in ~2.5 ms is ~110 GFLOP/s, and
        # 50x the interpreter would need ~230 GFLOP/s, numpy's multithreaded sgemm rate on
        # this machine.  32^3 tiles (16x the ops) show the per-op interpretation cost.
        yield (f"matmul/{t}", f"{m}^3 f16->f32",
               (lambda t: lambda b: matmul.matmul(a, bb, block_m=t, block_n=t, block_k=t,
                                                  backend=b))(t),
               lambda: ref.matmul_f32(a, bb))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    print(f"threads: NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'default')}, "
          f"cores={os.cpu_count()}")
    head = (f"{'kernel':<11} {'problem':<18} {'numba':>10} {'reference':>11} {'numpy':>10} "
            f"{'ref/numba':>10} {'numpy/numba':>12}")
    print(head)
    print("-" * len(head))
    for name, prob, run, peer in cases(args.small):
        t_nb = best_of(lambda: run("numba"), args.repeat)
        t_ref = best_of(lambda: run("reference"), 2, budget_s=1.0)
        t_np = best_of(peer, args.repeat)
        print(f"{name:<11} {prob:<18} {t_nb * 1e3:>8.2f}ms {t_ref * 1e3:>9.1f}ms "
              f"{t_np * 1e3:>8.2f}ms {t_ref / t_nb:>9.0f}x {t_np / t_nb:>11.2f}x")


if __name__ == "__main__":
    main()
