"""The CPU rows of issue 16: npujit's two CPU backends (``npujit``: numba, ``npujit llvm``:
docs/llvm.md) against numpy (and torch eager when it is installed) on the same problem,
timed in interleaved rounds at one thread count.

Each row is a problem with one callable per implementation; every round times each
implementation once (the best of at least ``inner`` calls and ``TURN_S`` seconds of
calls, after a warm-up that also compiles), in turn, so a slow minute of the machine hits
all of them alike; each turn starts after a pause (``SETTLE_S``) so that one
implementation's threads do not run into the next.  The result of each implementation is
checked against numpy's before any timing.

    python benchmarks/cpu_rows.py [--quick] [--rounds 5]      # one thread count: the env's

``python -m benchmarks`` runs this at 1 and 2 threads (each in a child process with
``NPUJIT_NUM_THREADS``, ``NUMBA_NUM_THREADS`` and the BLAS thread variables set) and
prints the table with the bars.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from npujit.kernels import elementwise, layernorm, matmul, softmax
from npujit.kernels import numpy_reference as ref
from npujit.kernels.moe import reference as moe_ref
from npujit.kernels.moe import router

import moe_layer_row

# npujit's implementations of each row, one per CPU backend: each is held to the bars.
OURS = {"npujit": "numba", "npujit llvm": "llvm"}
# Bars (issue 16): peer time / npujit time must be at least this, per peer.
BARS = {
    "vector add": {"numpy": 0.9},
    "softmax": {"numpy": 1.5, "torch": 1.0},
    "layernorm": {"numpy": 1.5, "torch": 1.0},
    "moe router": {"numpy": 1.5, "torch": 1.0},
    "matmul": {"numpy": 0.7},
}


def _torch():
    """torch with its intra-op threads set to this process's thread count, or None."""
    try:
        import torch
    except ImportError:
        return None
    threads = os.environ.get("NPUJIT_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    return torch


def ours(run) -> dict:
    """``{impl: callable}`` of npujit's implementations: ``run(backend)`` on each."""
    return {impl: (lambda b=backend: run(b)) for impl, backend in OURS.items()}


def rows(quick: bool):
    """``(name, problem, {impl: callable}, check)`` per row; ``check(out, impl)``."""
    rng = np.random.default_rng(0)
    torch = _torch()

    n = 1 << (18 if quick else 20)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    impls = {**ours(lambda b: elementwise.add(x, y, backend=b)), "numpy": lambda: x + y}
    if torch is not None:
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        impls["torch"] = lambda: torch.add(tx, ty)
    yield "vector add", f"{n} f32", impls, 0.0

    r, c = (1024, 1024) if quick else (4096, 1024)
    s = rng.standard_normal((r, c)).astype(np.float32)
    impls = {**ours(lambda b: softmax.softmax(s, backend=b)), "numpy": lambda: ref.softmax(s)}
    if torch is not None:
        ts = torch.from_numpy(s)
        impls["torch"] = lambda: torch.softmax(ts, dim=1)
    yield "softmax", f"{r}x{c} f32", impls, 1e-6

    r = 512 if quick else 2048
    h = rng.standard_normal((r, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    impls = {**ours(lambda be: layernorm.layernorm(h, w, b, backend=be)),
             "numpy": lambda: ref.layernorm(h, w, b)}
    if torch is not None:
        th, tw, tb = torch.from_numpy(h), torch.from_numpy(w), torch.from_numpy(b)
        impls["torch"] = lambda: torch.nn.functional.layer_norm(th, (1024,), tw, tb, 1e-5)
    yield "layernorm", f"{r}x1024 f32", impls, 1e-4

    t, hid = (512, 1024) if quick else (2048, 4096)
    xr = rng.standard_normal((t, hid)).astype(np.float32)
    wr = (rng.standard_normal((8, hid)) / np.sqrt(hid)).astype(np.float32)
    impls = {**ours(lambda b: router.route(xr, wr, 2, backend=b)),
             "numpy": lambda: moe_ref.route(xr, wr, 2)}
    if torch is not None:
        tx_, tw_ = torch.from_numpy(xr), torch.from_numpy(wr)

        def torch_route():
            top = torch.topk(tx_ @ tw_.T, 2, dim=1)
            return torch.softmax(top.values, dim=1), top.indices
        impls["torch"] = torch_route
    yield "moe router", f"{t}x{hid} -> 8 experts top-2 f32", impls, 1e-4

    m = 256 if quick else 512
    a = rng.standard_normal((m, m)).astype(np.float16)
    bb = rng.standard_normal((m, m)).astype(np.float16)
    impls = {**ours(lambda b: matmul.matmul(a, bb, backend=b)),
             "numpy": lambda: ref.matmul_f32(a, bb)}
    if torch is not None:
        ta, tb_ = torch.from_numpy(a), torch.from_numpy(bb)
        impls["torch"] = lambda: (ta.float() @ tb_.float())
    yield "matmul", f"{m}^3 f16->f32", impls, 1e-3

    yield from moe_layer_row.row(quick, torch, ours)


def _as_numpy(out):
    if isinstance(out, tuple):
        return tuple(_as_numpy(o) for o in out)
    return out.numpy() if hasattr(out, "numpy") else np.asarray(out)


def _check(name: str, impl: str, got, want, tol: float) -> None:
    got, want = _as_numpy(got), _as_numpy(want)
    if isinstance(want, tuple):                     # router: (weights, ids)
        np.testing.assert_array_equal(got[1], want[1], err_msg=f"{name}: {impl} ids")
        got, want = got[0], want[0]
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=tol, atol=tol * scale, err_msg=f"{name}: {impl}")


# A pause before each implementation's turn.  The BLAS's worker threads keep spinning on
# the cores for a while after numpy's call returns, so whatever runs next on threads
# finds the other core taken: the 512^3 matmul on 2 threads took 3.86 ms right after a
# numpy matmul against 2.16 ms alone (medians of 30 launches each on this machine).
SETTLE_S = 0.2
# Each turn calls its implementation at least ``inner`` times and for at least this long,
# and keeps the best call.  After the pause every implementation takes a few calls to
# reach its steady speed (the 1 M-element add: 0.50, 0.31, 0.20, 0.16 ms; numpy's
# 0.41, 0.36, 0.28, 0.17), so a best of 3 timed the warm-up of sub-millisecond rows.
TURN_S = 0.02


def measure(quick: bool, rounds: int, inner: int) -> list[dict]:
    """One dict per row: the problem, and per implementation its per-round times (s)."""
    out = []
    for name, problem, impls, tol in rows(quick):
        want = impls["numpy"]()
        for impl, fn in impls.items():
            _check(name, impl, fn(), want, tol)      # also the warm-up: compiles
        times: dict = {impl: [] for impl in impls}
        for _ in range(rounds):
            for impl, fn in impls.items():
                time.sleep(SETTLE_S)
                best, calls, start = float("inf"), 0, time.perf_counter()
                while calls < inner or time.perf_counter() - start < TURN_S:
                    t0 = time.perf_counter()
                    fn()
                    best = min(best, time.perf_counter() - t0)
                    calls += 1
                times[impl].append(best)
        out.append({"row": name, "problem": problem, "times": times})
    return out


def summarise(measured: list[dict]) -> list[dict]:
    """Medians, min-max and the ratios peer / npujit with their bars: ``ratios`` and
    ``bars`` for the numba backend (``npujit``), ``by_backend`` for each of ``OURS``."""
    res = []
    for m in measured:
        med = {k: statistics.median(v) for k, v in m["times"].items()}
        row_bars = BARS.get(m["row"], {})
        by = {}
        for impl in (i for i in OURS if i in med):
            ratios = {k: med[k] / med[impl] for k in med if k not in OURS}
            by[impl] = {"ratios": ratios,
                        "bars": {k: {"bar": v, "ratio": ratios.get(k),
                                     "met": None if k not in ratios else ratios[k] >= v}
                                 for k, v in row_bars.items()}}
        res.append({**m, "median": med, **by["npujit"], "by_backend": by})
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller problems")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--inner", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON only")
    args = ap.parse_args(argv)
    res = summarise(measure(args.quick, args.rounds, args.inner))
    if args.json:
        print(json.dumps(res))
        return 0
    for r in res:
        for impl, by in r["by_backend"].items():
            ratios = ", ".join(f"{k} {v:.2f}x" for k, v in by["ratios"].items())
            print(f"{r['row']:<11} {r['problem']:<34} {impl:<11} "
                  f"{r['median'][impl] * 1e3:8.3f} ms  {ratios}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
