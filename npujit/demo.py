"""``python -m npujit demo``: compile the bundled kernels, run them, check them against numpy.

Prints, per kernel: the shapes, whether the result matches numpy, the compile time, and
the numba backend's run time beside numpy's.  Exits non-zero on any mismatch.
"""
from __future__ import annotations

import sys
import time

import numpy as np


def _timeit(fn, repeat: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _cases(rng):
    from npujit.kernels import elementwise, layernorm, matmul, softmax
    from npujit.kernels import numpy_reference as ref

    x = rng.standard_normal(1_000_003).astype(np.float32)
    y = rng.standard_normal(1_000_003).astype(np.float32)
    yield ("vector add", "1,000,003 f32", lambda: elementwise.add(x, y), lambda: x + y, 0.0)

    s = rng.standard_normal((1024, 1000)).astype(np.float32)

    yield ("row softmax", "1024x1000 f32", lambda: softmax.softmax(s), lambda: ref.softmax(s),
           1e-6)

    h = rng.standard_normal((512, 777)).astype(np.float32)
    w = rng.standard_normal(777).astype(np.float32)
    b = rng.standard_normal(777).astype(np.float32)

    yield ("layernorm", "512x777 f32", lambda: layernorm.layernorm(h, w, b),
           lambda: ref.layernorm(h, w, b), 1e-4)
    yield ("rmsnorm", "512x777 f32", lambda: layernorm.rmsnorm(h, w), lambda: ref.rmsnorm(h, w),
           1e-4)

    a = rng.standard_normal((300, 200)).astype(np.float16)
    bb = rng.standard_normal((200, 170)).astype(np.float16)
    yield ("matmul", "300x200 @ 200x170 f16->f32", lambda: matmul.matmul(a, bb),
           lambda: ref.matmul_f32(a, bb), 1e-3)
    yield ("matmul", "300x200 @ 200x170 f16->f16",
           lambda: matmul.matmul(a, bb, out_dtype=np.float16),
           lambda: ref.matmul_f32(a, bb).astype(np.float16), 2e-3)


def run_demo(out=sys.stdout) -> int:
    """Run the demo; returns the number of kernels that disagreed with numpy."""
    from npujit.jit.compiler import compile_log
    rng = np.random.default_rng(0)
    print("npujit demo: compiling kernels with the numba backend and checking them against "
          "numpy\n", file=out)
    head = f"{'kernel':<12} {'problem':<28} {'result':<8} {'compile':>9} {'npujit':>10} {'numpy':>10}"
    print(head, file=out)
    print("-" * len(head), file=out)
    bad = 0
    for name, shape, run, ref, tol in _cases(rng):
        n_before = len(compile_log)
        t0 = time.perf_counter()
        got = run()
        first = time.perf_counter() - t0
        compile_s = sum(c["seconds"] for c in compile_log[n_before:])
        want = ref()
        g = np.asarray(got, np.float32)
        w = np.asarray(want, np.float32)
        scale = max(1.0, float(np.abs(w).max()))
        ok = bool(np.allclose(g, w, rtol=tol, atol=tol * scale))
        bad += not ok
        t_k = _timeit(run)
        t_np = _timeit(ref)
        compile_txt = f"{compile_s:.2f} s" if compile_s else f"{first:.2f} s*"
        print(f"{name:<12} {shape:<28} {'ok' if ok else 'MISMATCH':<8} {compile_txt:>9} "
              f"{t_k * 1e3:>8.2f}ms {t_np * 1e3:>8.2f}ms", file=out)
    print("\ncompile = trace + IR passes + numba code generation (cached on disk after the "
          "first run)", file=out)
    from npujit.kernels import elementwise
    x = np.ones(10, np.float32)
    print("\nThe vector-add kernel's IR after the pass pipeline:\n", file=out)
    print(elementwise.add_kernel.ir(x, x, x, 10, BLOCK=1024), file=out)
    print("all kernels match numpy" if not bad else f"{bad} kernel(s) disagree with numpy",
          file=out)
    return bad
