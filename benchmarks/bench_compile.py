"""Fresh-process disk-cache hit of every bundled kernel (kernels/), front end included.

Bar (issue 14): <= 50 ms per kernel after import.

Each measurement is a new Python process on a warm cache (filled by a first process):

* ``import``   -- ``import npujit`` and the kernel modules (numpy, scipy, ...);
* ``start-up`` -- the first launch in the process, of a trivial kernel that is also a disk
  hit: numba's own start-up (its CPU target imports scipy's BLAS, ~0.6 s) and npujit's
  first use of its parser and code generator;
* ``hit``      -- then the launch of the kernel measured (CPU time, and wall time, best of
  ``--repeat`` processes): key (kernel hash), unpickling
  the compiled kernel, parsing its IR, generating its module, numba loading its machine
  code, the launch itself.  The process must not trace (the cache's miss counter is 0)
  and its result is checked against the kernel's reference where it has one.

MoE kernels whose inputs come from earlier kernels of their plan run those first (also
hits, not timed).

    python benchmarks/bench_compile.py [--repeat 3] [--only softmax_kernel]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

BAR_MS = 50.0


def _example_launches() -> dict:
    """``{name: [(kernel, grid, args, kwargs, reference or None), ...]}``: the launches
    to run in order, the last one being the kernel measured."""
    import numpy as np

    from npujit.kernels import elementwise, layernorm, matmul, softmax
    from npujit.kernels.moe.layer import fused_plan, unfused_plan

    out = {}
    for mod in (elementwise, layernorm, matmul, softmax):
        for name in dir(mod):
            k = getattr(mod, name)
            if getattr(k, "__wrapped__", None) is None or not hasattr(k, "compile_count"):
                continue
            try:
                grid, args, kwargs, *ref = mod.example_args(name)
            except ValueError:
                continue
            out[name] = [(k, grid, args, kwargs, ref[0] if ref else None)]
    rng = np.random.default_rng(0)
    T, H, I, E = 8, 32, 32, 4
    x = rng.standard_normal((T, H)).astype(np.float16)
    rw = rng.standard_normal((E, H)).astype(np.float32)
    gu = (rng.standard_normal((E, 2 * I, H)) * 0.1).astype(np.float32)
    dn = (rng.standard_normal((E, H, I)) * 0.1).astype(np.float32)
    plans = [fused_plan(x, rw, gu, dn, 2, form="onchip")[0], fused_plan(x, rw, gu, dn, 2)[0],
             unfused_plan(x, rw, gu, dn, 2)[0]]
    for plan in plans:
        for i, launch in enumerate(plan):
            name = launch.kernel.name
            if name not in out:
                out[name] = [(s.kernel, s.grid, s.args, s.meta, None) for s in plan[:i + 1]]
    return out


def _warmup() -> None:
    """The first launch of a process: a trivial kernel (a disk hit too)."""
    import numpy as np

    import npujit.language as nl
    from npujit import npu_kernel

    @npu_kernel
    def warmup_copy(x_ptr, out_ptr, BLOCK: nl.constexpr):
        offs = nl.arange(0, BLOCK)
        nl.store(out_ptr + offs, nl.load(x_ptr + offs))

    w = np.arange(16, dtype=np.float32)
    wo = np.zeros(16, np.float32)
    warmup_copy[(1,)](w, wo, BLOCK=16)
    assert (wo == w).all()


def _child(name: str) -> dict:
    t0 = time.perf_counter()
    import numpy as np

    from npujit.jit import cache
    launches = _example_launches()
    t1 = time.perf_counter()
    _warmup()
    t2 = time.perf_counter()
    steps = launches[name]
    for k, grid, args, kwargs, _ in steps[:-1]:
        k[grid](*args, **kwargs)
    before = dict(cache.stats)
    k, grid, args, kwargs, ref = steps[-1]
    t3, c3 = time.perf_counter(), time.process_time()
    k[grid](*args, **kwargs)
    t4, c4 = time.perf_counter(), time.process_time()
    checked = None
    if ref is not None:
        want = np.asarray(ref(*args), np.float64)
        stored = list(k.compile(*args, **kwargs).stores)       # the output argument
        got = args[k.params.index(stored[0])]
        checked = bool(np.allclose(np.asarray(got, np.float64), want, rtol=2e-3, atol=2e-3))
    return {"kernel": name, "import_s": t1 - t0, "startup_s": t2 - t1, "hit_s": t4 - t3,
            "hit_cpu_s": c4 - c3, "traced": cache.stats["misses"] - before.get("misses", 0),
            "hits": cache.stats["hits"] - before.get("hits", 0), "checked": checked}


def _run(args: list, env: dict) -> dict:
    res = subprocess.run([sys.executable, os.path.abspath(__file__), *args], env=env,
                         capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3, help="fresh processes per kernel (best)")
    p.add_argument("--only", action="append", help="measure only this kernel (repeatable)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--fill", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(_child(a.child)))
        return 0
    if a.fill:
        _warmup()
        for steps in _example_launches().values():
            for k, grid, args, kwargs, _ in steps:
                k[grid](*args, **kwargs)
        print(json.dumps({"filled": True}))
        return 0
    env = dict(os.environ)
    env.pop("NPUJIT_DISABLE_CACHE", None)
    env.pop("NPUJIT_ALWAYS_COMPILE", None)
    env.setdefault("NPUJIT_CACHE_DIR", tempfile.mkdtemp(prefix="npujit-bench-compile-"))
    t0 = time.perf_counter()
    _run(["--fill"], env)
    print(f"cache {env['NPUJIT_CACHE_DIR']} filled in {time.perf_counter() - t0:.1f} s")
    names = a.only or sorted(_example_launches())
    rows = []
    for name in names:
        runs = [_run(["--child", name], env) for _ in range(a.repeat)]
        best = min(runs, key=lambda r: r["hit_cpu_s"])
        for field in ("import_s", "startup_s", "hit_s"):
            best[field] = min(r[field] for r in runs)
        rows.append(best)
    # On a shared, loaded machine the wall time of a 30 ms step is mostly waiting for a
    # core; the CPU time is what an idle machine's wall time would be (the work is
    # single-threaded), so the bar is judged on it and both are shown.
    print(f"{'kernel':<24}{'hit cpu ms':>11}{'wall ms':>9}{'import s':>10}{'start-up s':>12}"
          f"  traced  result  bar ({BAR_MS:.0f} ms cpu)")
    for r in rows:
        ok = r["hit_cpu_s"] * 1e3 <= BAR_MS and r["traced"] == 0 and r["hits"] >= 1
        res = {None: "-", True: "ok", False: "WRONG"}[r["checked"]]
        print(f"{r['kernel']:<24}{r['hit_cpu_s'] * 1e3:>11.1f}{r['hit_s'] * 1e3:>9.1f}"
              f"{r['import_s']:>10.2f}{r['startup_s']:>12.2f}  {r['traced']:>6}  {res:>6}  "
              f"{'OK' if ok else 'OVER'}")
    worst = max(rows, key=lambda r: r["hit_cpu_s"])
    print(f"worst: {worst['kernel']} {worst['hit_cpu_s'] * 1e3:.1f} ms cpu; "
          f"{sum(r['hit_cpu_s'] * 1e3 <= BAR_MS for r in rows)}/{len(rows)} within the bar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
