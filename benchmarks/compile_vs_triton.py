"""Cold compile of the same kernel: npujit (numba backend, or ``--backend llvm``) against
Triton's compiler.

The kernels are the gallery's (``kernels/triton_gallery/``), as in triton_rows.py.  Triton
has no CPU target, but its compiler runs without a GPU when given one: each kernel is
compiled ahead of time for ``GPUTarget("cuda", 80, 32)`` (an A100) through all of its
stages (ttir, ttgir, llir, ptx, cubin with the ptxas its wheel ships), with a fresh
Triton cache.  The signature is the one the gallery's host function launches it with
(arrays as pointers of their dtype, Python ints as i32, floats as fp32, keyword values as
constexprs); no integer specialisation (Triton's launcher would also mark divisibility
by 16).  npujit compiles the same launch with its disk cache off (``NPUJIT_DISABLE_CACHE``):
trace, passes, code generation and numba.  Both run in this one process after a warm-up
compile of the vector add at another block size, so neither pays its import or start-up;
rounds alternate the two (each round a fresh Triton cache; npujit's kernel objects and
generated modules held in memory are dropped).

Bar (issue 16): npujit's compile time <= 1.0x Triton's.

    python benchmarks/compile_vs_triton.py [--rounds 3] [--json] [--backend llvm]
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import tempfile
import time

os.environ["NPUJIT_DISABLE_CACHE"] = "1"       # before npujit reads it

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_rows  # noqa: E402  (it sets TRITON_INTERPRET=1: the compiler needs 0)

os.environ["TRITON_INTERPRET"] = "0"

BAR = 1.0
_PTR = {np.dtype(np.float32): "*fp32", np.dtype(np.float16): "*fp16",
        np.dtype(np.int32): "*i32", np.dtype(np.int64): "*i64"}


class _Capture:
    """Stands in for a kernel: ``kernel[grid](*args, **kw)`` records the launch."""

    def __getitem__(self, grid):
        def call(*args, **kwargs):
            self.grid, self.args, self.kwargs = grid, args, kwargs
        return call


def _launch(name: str, host: str, args, kname: str):
    """``(args, kwargs)`` of the gallery host function's launch of its kernel."""
    mod = importlib.import_module(f"npujit.kernels.triton_gallery.{name}")
    cap = _Capture()
    getattr(mod, host)(*args, kernel=cap)
    return cap.args, cap.kwargs


def _triton_compile(fn, args, kwargs) -> float:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig, consts = {}, {}
    positional = [p for p in fn.arg_names if p not in kwargs]
    for pname, a in zip(positional, args):
        sig[pname] = (_PTR[a.dtype] if isinstance(a, np.ndarray)
                      else "fp32" if isinstance(a, float) else "i32")
    for k, v in kwargs.items():
        sig[k], consts[k] = "constexpr", v
    with tempfile.TemporaryDirectory(prefix="npujit-triton-cache-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        t0 = time.perf_counter()
        triton.compile(ASTSource(fn, sig, consts), target=GPUTarget("cuda", 80, 32))
        return time.perf_counter() - t0


BACKEND = "numba"      # --backend llvm: the llvm backend's compile (docs/llvm.md)


def _npujit_compile(name: str, kname: str, args, kwargs) -> float:
    mod = importlib.import_module(f"npujit.kernels.triton_gallery.{name}")
    if BACKEND == "numba":
        from npujit.backends.numba import runtime
        runtime._loaded.clear()        # else the generated module of an earlier round
    fresh = getattr(mod, kname).with_options(backend=BACKEND)
    fresh.cache.clear()                # and the specialisations kept in memory
    t0 = time.perf_counter()
    fresh.compile(*args, **kwargs).runnable()
    return time.perf_counter() - t0


def measure(rounds: int) -> list[dict]:
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # its default, said aloud
    with tempfile.TemporaryDirectory(prefix="npujit-compile-rows-") as tmp:
        sys.path.insert(0, tmp)
        problems = list(triton_rows._problems(quick=True))
        theirs = {p[2]: getattr(triton_rows._triton_copy(p[2], tmp), p[5]) for p in problems}
        launches = {p[2]: _launch(p[2], p[3], p[4], p[5]) for p in problems}
        # warm-ups: each compiler's first compile in the process (imports, targets), of
        # the vector add at another block size
        w = problems[0]
        wargs, wkw = launches[w[2]]
        wkw = {**wkw, "BLOCK_SIZE": wkw["BLOCK_SIZE"] // 2}
        _triton_compile(theirs[w[2]], wargs, wkw)
        _npujit_compile(w[2], w[5], wargs, wkw)
        res = []
        for row, problem, name, _host, _args, kname in problems:
            times = {"npujit": [], "triton": []}
            for _ in range(rounds):
                times["triton"].append(_triton_compile(theirs[name], *launches[name]))
                times["npujit"].append(_npujit_compile(name, kname, *launches[name]))
            med = {k: statistics.median(v) for k, v in times.items()}
            ratio = med["npujit"] / med["triton"]
            res.append({"row": row, "times": times, "median": med, "ratio": ratio,
                        "bar": BAR, "met": ratio <= BAR})
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON only")
    ap.add_argument("--backend", default="numba", choices=("numba", "llvm"),
                    help="npujit's backend (default numba)")
    args = ap.parse_args(argv)
    global BACKEND
    BACKEND = args.backend
    res = measure(args.rounds)
    if args.json:
        print(json.dumps(res))
        return 0
    for r in res:
        print(f"{r['row']:<11} npujit {r['median']['npujit'] * 1e3:7.0f} ms  triton "
              f"{r['median']['triton'] * 1e3:7.0f} ms  {r['ratio']:.2f}x "
              f"(bar <= {BAR}x: {'met' if r['met'] else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
