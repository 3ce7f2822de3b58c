"""``python -m npujit demo``: compile the bundled kernels, run them, check them against numpy,
and time them on the simulated NPU.

Prints, per kernel: the shapes, whether the result matches numpy, the compile time, and
the CPU backend's run time beside numpy's; then what the timing simulator says a
910B-like part would take (cycles, % of the roofline, double- vs single-buffering).
Exits non-zero on any mismatch.
"""
from __future__ import annotations

import sys
import time

import numpy as np


def _timeit(fn, repeat: int = 5) -> float:
    """The best of ``repeat`` calls of ``fn`` after the warm-up calls a CPU launch takes
    to settle on serial or threaded programs (backends/threads.py: two serial launches,
    then a probe of alternating ones); timed before that, a launch could be a probe's
    first threaded one, with the pool's start-up in it."""
    from npujit.backends.threads import PROBE_ROUNDS
    for _ in range(2 + 2 * PROBE_ROUNDS):
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


def run_demo(out=sys.stdout, trace: str | None = None) -> int:
    """Run the demo; returns the number of kernels that disagreed with numpy.  ``trace``:
    a path to write the simulated streaming add's Chrome/Perfetto trace to."""
    from npujit.jit.hooks import on_compile
    rng = np.random.default_rng(0)
    from npujit import knobs
    print(f"npujit demo: compiling kernels with the {knobs.backend()} backend and checking "
          "them against numpy\n", file=out)
    head = f"{'kernel':<12} {'problem':<28} {'result':<8} {'compile':>9} {'npujit':>10} {'numpy':>10}"
    print(head, file=out)
    print("-" * len(head), file=out)
    bad = 0
    for name, shape, run, ref, tol in _cases(rng):
        compiles = []
        t0 = time.perf_counter()
        with on_compile(compiles.append):
            got = run()
        first = time.perf_counter() - t0
        compile_s = sum(e.seconds for e in compiles)
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
    print("\ncompile = trace + IR passes + the backend's code generation (cached on disk after "
          "the first run)", file=out)
    from npujit.kernels import elementwise
    x = np.ones(10, np.float32)
    print("\nThe vector-add kernel's IR after the pass pipeline:\n", file=out)
    print(elementwise.add_kernel.ir(x, x, x, 10, BLOCK=1024), file=out)
    bad += _npu_section(rng, out, trace)
    bad += _moe_section(rng, out)
    print("all kernels match numpy" if not bad else f"{bad} kernel(s) disagree with numpy",
          file=out)
    return bad


def _npu_section(rng, out, trace: str | None = None) -> int:
    """Simulate two kernels on the 910B-like preset; returns how many outputs were wrong."""
    from npujit.kernels import elementwise, matmul
    from npujit.kernels import numpy_reference as ref
    from npujit.sim import ASCEND_910B_LIKE as spec

    print(f"\nOn the simulated NPU ({spec.name}; outputs computed, timing simulated):\n",
          file=out)
    bad = 0
    n, cores = 1 << 20, 8
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    cycles = {}
    for stages in (1, 2):
        z = np.empty_like(x)
        r = elementwise.add_stream_kernel.simulate(
            x, y, z, n, n // cores, grid=(cores,), spec=spec, BLOCK=8192, NUM_STAGES=stages)
        bad += not np.array_equal(z, x + y)
        cycles[stages] = r.cycles
        print(f"  streaming add, {n:,} f16 on {cores} vector cores, num_stages={stages}: "
              f"{r.cycles:,} cycles ({r.time_s * 1e6:.1f} us), {r.roofline_fraction:.0%} of "
              f"the {r.bound.kind} roofline", file=out)
    print(f"  num_stages=2 is {cycles[1] / cycles[2]:.2f}x faster: the next tile's loads "
          "overlap this tile's add and store", file=out)
    if trace:
        r.to_chrome_trace(trace)
        print(f"  its trace: {trace} (open in ui.perfetto.dev)", file=out)
    m = 2048
    a = rng.standard_normal((m, m)).astype(np.float16)
    b = rng.standard_normal((m, m)).astype(np.float16)
    c = np.empty((m, m), np.float32)
    # 256x128 output tiles fill L0C; 256-deep L1 tiles split into 64-deep L0 chunks
    r = matmul.matmul_kernel.simulate(
        a, b, c, m, m, m, m, 1, m, 1, m, 1, grid=(m // 256, m // 128), spec=spec,
        BLOCK_M=256, BLOCK_N=128, BLOCK_K=256, L0_BLOCK_K=64, NUM_STAGES=2)
    bad += not np.allclose(c, ref.matmul_f32(a, b), rtol=1e-3, atol=1e-2)
    print(f"  matmul {m}^3 f16, 256x128 tiles, {(m // 256) * (m // 128)} programs on "
          f"{spec.aic_cores} cube cores: {r.cycles:,} cycles, "
          f"{r.achieved_flops / 1e12:.0f} TFLOP/s, cube busy "
          f"{r.ratios.get('aic_cube_ratio', 0):.0%}, L2 hit rate {r.l2_hit_rate:.0%}",
          file=out)
    print("  (kernel.simulate(...) returns the full report: per-pipe ratios named as in "
          "Ascend's profiler, bytes per path, a Chrome trace)\n", file=out)
    return bad


def _moe_section(rng, out) -> int:
    """A Mixture-of-Experts layer at a small size: routed with its load statistics and run
    through the fused expert kernel on the CPU backend (checked against the numpy
    reference), then fused against unfused on the simulated NPU beside the analytic floor
    (the small form of ``npujit moe-report``); returns how many outputs were wrong."""
    import npujit.moe as moe
    from npujit import knobs
    from npujit.kernels.moe import report
    from npujit.sim import ASCEND_910B_LIKE as spec

    T, H, I, E, k = 64, 256, 512, 8, 2
    print(f"Mixture of Experts (npujit.moe): {T} tokens, H {H}, I {I}, {E} experts, "
          f"top-{k}, f32, Mixtral routing, on the {knobs.backend()} backend:\n", file=out)
    x = rng.standard_normal((T, H)).astype(np.float32)
    router_weight = rng.standard_normal((E, H)).astype(np.float32)
    gate_up = (rng.standard_normal((E, 2 * I, H)) / np.sqrt(H)).astype(np.float32)
    down = (rng.standard_normal((E, H, I)) / np.sqrt(I)).astype(np.float32)
    t0 = time.perf_counter()
    w, ids, balance = moe.route_and_balance(x, router_weight, k, capacity_factor=1.25)
    y = moe.fused_experts(x, w, ids, gate_up, down)
    first = time.perf_counter() - t0
    want = moe.reference.moe(x, router_weight, gate_up, down, k)
    ok = bool(np.array_equal(ids, moe.reference.route(x, router_weight, k)[1])
              and np.allclose(y, want, rtol=1e-4, atol=1e-4))
    t_k = _timeit(lambda: moe.fused_experts(x, w, ids, gate_up, down), repeat=3)
    t_np = _timeit(lambda: moe.reference.moe_from_topk(x, w, ids, gate_up, down), repeat=3)
    print(f"  router + dispatch + expert FFN + combine: {'ok' if ok else 'MISMATCH'} against "
          f"the numpy reference; first call {first:.1f} s (compiles), then the experts "
          f"{t_k * 1e3:.2f} ms (numpy {t_np * 1e3:.2f} ms)", file=out)
    print(f"  routing load (from the kernels): {balance.summary()} at capacity factor "
          "1.25", file=out)
    layer = dict(report.QUICK["mixtral"])
    row = report.layer_row(layer, 32, spec)
    print(f"\n  On the simulated NPU: a Mixtral-shaped layer scaled down (32 tokens, H "
          f"{layer['H']}, I {layer['I']}, bf16), every kernel through kernel.simulate:",
          file=out)
    print(f"  fused {row['fused_us']:.1f} us vs unfused {row['unfused_us']:.1f} us "
          f"({row['unfused_us'] / row['fused_us']:.2f}x), analytic floor "
          f"{row['floor_us']:.1f} us ({row['floor_bound']}-bound), HBM "
          f"{row['fused_hbm'] / 1e6:.1f} MB fused vs {row['unfused_hbm'] / 1e6:.1f} MB "
          f"unfused", file=out)
    print("  (full sizes: npujit moe-report; docs/moe.md)\n", file=out)
    return not ok
