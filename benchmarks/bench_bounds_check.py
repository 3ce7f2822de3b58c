"""Cost of the default range check (``bounds_check=True``) on every bundled kernel, numba
backend: time with the check on, time with it off, and their ratio.

Bar (issue 11): the check costs at most 10 % (ratio <= 1.10) on every kernel.

    python benchmarks/bench_bounds_check.py            # full sizes
    python benchmarks/bench_bounds_check.py --small    # quick look
    python benchmarks/bench_bounds_check.py --before   # no option at all (older trees)
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from npujit import cdiv, next_power_of_2
from npujit.kernels import elementwise, layernorm, matmul, softmax


def best_of(fn, repeat: int, budget_s: float = 1.5) -> float:
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


def best_of_pair(a, b, repeat: int, budget_s: float = 3.0) -> tuple:
    """Best times of ``a`` and ``b``, run alternately so that a busy machine slows both
    alike (the ratio is what matters)."""
    a()
    b()
    ta, tb = [], []
    t_end = time.perf_counter() + budget_s
    for _ in range(repeat):
        for fn, times in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            break
    return min(ta), min(tb)


def cases(small: bool):
    """(name, problem, launch(options)) for each bundled kernel."""
    rng = np.random.default_rng(0)
    n = 1 << (16 if small else 20)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)

    def add(o):
        elementwise.add_kernel.with_options(**o)[(cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    yield "add", f"{n} f32", add

    def add_stream(o):
        per = cdiv(n, 8)
        elementwise.add_stream_kernel.with_options(**o)[(8,)](x, y, out, n, per, BLOCK=1024,
                                                            NUM_STAGES=2)
    yield "add_stream", f"{n} f32", add_stream

    r, c = (512, 1024) if small else (4096, 1024)
    s = rng.standard_normal((r, c)).astype(np.float32)
    so = np.empty_like(s)

    def soft(o):
        softmax.softmax_kernel.with_options(**o)[(r,)](s, so, c, c, c,
                                                      BLOCK=next_power_of_2(c))
    yield "softmax", f"{r}x{c} f32", soft

    r = 256 if small else 2048
    h = rng.standard_normal((r, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)
    ho = np.empty_like(h)

    def ln(o):
        layernorm.layernorm_kernel.with_options(**o)[(r,)](h, w, bias, ho, 1024, 1e-5,
                                                          BLOCK=1024)
    yield "layernorm", f"{r}x1024 f32", ln

    def rms(o):
        layernorm.rmsnorm_kernel.with_options(**o)[(r,)](h, w, ho, 1024, 1e-6, BLOCK=1024)
    yield "rmsnorm", f"{r}x1024 f32", rms

    m = 256 if small else 512
    a = rng.standard_normal((m, m)).astype(np.float16)
    b = rng.standard_normal((m, m)).astype(np.float16)
    co = np.empty((m, m), np.float32)
    for t in (64, 32):
        def mm(o, t=t):
            matmul.matmul_kernel.with_options(**o)[(cdiv(m, t), cdiv(m, t))](
                a, b, co, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=t, BLOCK_N=t, BLOCK_K=t,
                NUM_STAGES=2)
        yield f"matmul/{t}", f"{m}^3 f16->f32", mm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--before", action="store_true",
                    help="time the kernels without the option (a tree before the check)")
    args = ap.parse_args()
    base = {"backend": "numba", "parallel": False}
    if args.before:
        print(f"{'kernel':<11} {'problem':<16} {'time':>10}")
        for name, prob, run in cases(args.small):
            t = best_of(lambda: run(base), args.repeat)
            print(f"{name:<11} {prob:<16} {t * 1e3:>8.3f}ms")
        return
    head = f"{'kernel':<11} {'problem':<16} {'check on':>10} {'check off':>10} {'on/off':>7}"
    print(head)
    print("-" * len(head))
    worst = 0.0
    for name, prob, run in cases(args.small):
        on, off = best_of_pair(lambda: run({**base, "bounds_check": True}),
                               lambda: run({**base, "bounds_check": False}), args.repeat)
        worst = max(worst, on / off)
        print(f"{name:<11} {prob:<16} {on * 1e3:>8.3f}ms {off * 1e3:>8.3f}ms "
              f"{on / off:>6.2f}x")
    print(f"worst ratio {worst:.2f}x (bar: <= 1.10x) {'OK' if worst <= 1.10 else 'OVER'}")


if __name__ == "__main__":
    main()
