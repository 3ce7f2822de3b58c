"""Issue 16's rows against Triton's interpreter: the same kernel, the same source.

The kernels are the gallery's (``kernels/triton_gallery/``: Triton kernel files whose only
change is their two import lines).  For Triton, each file is copied with those two lines
turned back into ``import triton`` / ``import triton.language as tl`` and imported with
``TRITON_INTERPRET=1`` (set here before triton is imported), so Triton runs the very same
kernel body in its CPU interpreter; the host function is the gallery's, with a launcher
that hands the numpy arrays to Triton as torch tensors over the same memory
(``torch.from_numpy``: no copies).  npujit runs the gallery module as it is, on its
default backend (llvm; ``NPUJIT_BACKEND`` picks another).  Both results are checked
against each other before timing; rounds are interleaved (npujit best of 5 calls, its
first launches being the thread probe's, Triton's interpreter one call: it takes
seconds).

Needs triton and torch (never test dependencies); ``python -m benchmarks`` runs it in a
child process when both are installed.

    python benchmarks/triton_rows.py [--quick] [--rounds 3] [--json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

os.environ["TRITON_INTERPRET"] = "1"        # before triton is imported

import numpy as np  # noqa: E402

BAR = 200.0                                 # Triton interpreter time / npujit time
GALLERY = ("vector_add", "softmax", "layernorm", "matmul", "moe_router")


def _triton_copy(name: str, tmp: str):
    """The gallery module ``name`` with real Triton's imports, imported from ``tmp``."""
    spec = importlib.util.find_spec(f"npujit.kernels.triton_gallery.{name}")
    src = open(spec.origin).read()
    for ours, theirs in (("import npujit.triton.language as tl", "import triton.language as tl"),
                         ("import npujit.triton as triton", "import triton")):
        assert ours in src, f"{spec.origin}: no line {ours!r}"
        src = src.replace(ours, theirs)
    path = os.path.join(tmp, f"triton_{name}.py")
    with open(path, "w") as f:
        f.write(src)
    mspec = importlib.util.spec_from_file_location(f"triton_{name}", path)
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    return mod


class _OnTorch:
    """``kernel[grid](*args)`` with numpy arrays passed as torch tensors on their memory."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        import torch
        launch = self.kernel[grid]

        def call(*args, **kwargs):
            return launch(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a
                            for a in args], **kwargs)
        return call


def _problems(quick: bool):
    """``(row, problem, gallery module, host function name, args, kernel attribute)``."""
    rng = np.random.default_rng(0)
    n = 1 << (16 if quick else 20)
    yield ("vector add", f"{n} f32", "vector_add", "add",
           (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32)), "add_kernel")
    r = 256 if quick else 4096
    yield ("softmax", f"{r}x1024 f32", "softmax", "softmax",
           (rng.standard_normal((r, 1024)).astype(np.float32),), "softmax_kernel")
    r = 128 if quick else 2048
    yield ("layernorm", f"{r}x1024 f32", "layernorm", "layer_norm",
           (rng.standard_normal((r, 1024)).astype(np.float32),
            rng.standard_normal(1024).astype(np.float32),
            rng.standard_normal(1024).astype(np.float32)), "_layer_norm_fwd_fused")
    m = 128 if quick else 512
    yield ("matmul", f"{m}^3 f16 (f32 acc)", "matmul", "matmul",
           (rng.standard_normal((m, m)).astype(np.float16),
            rng.standard_normal((m, m)).astype(np.float16)), "matmul_kernel")
    t, h = (128, 1024) if quick else (2048, 4096)
    yield ("moe router", f"{t}x{h} -> 8 experts top-2 f32", "moe_router", "route",
           (rng.standard_normal((t, h)).astype(np.float32),
            (rng.standard_normal((h, 8)) / np.sqrt(h)).astype(np.float32)), "router_kernel")


def _flat(out):
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def measure(quick: bool, rounds: int) -> list[dict]:
    import importlib
    res = []
    with tempfile.TemporaryDirectory(prefix="npujit-triton-rows-") as tmp:
        sys.path.insert(0, tmp)
        for row, problem, name, host, args, kname in _problems(quick):
            ours_mod = importlib.import_module(f"npujit.kernels.triton_gallery.{name}")
            theirs_mod = _triton_copy(name, tmp)
            ours_k = getattr(ours_mod, kname)
            theirs_k = _OnTorch(getattr(theirs_mod, kname))
            impls = {"npujit": lambda: getattr(ours_mod, host)(*args, kernel=ours_k),
                     "triton interpreter": lambda: getattr(theirs_mod, host)(*args,
                                                                            kernel=theirs_k)}
            got, want = _flat(impls["npujit"]()), _flat(impls["triton interpreter"]())
            for g, w in zip(got, want):
                if w.dtype.kind in "iu":
                    np.testing.assert_array_equal(g, w, err_msg=row)
                else:
                    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                               rtol=2e-3, atol=2e-3, err_msg=row)
            times: dict = {k: [] for k in impls}
            for _ in range(rounds):
                for impl, fn in impls.items():
                    best = float("inf")
                    for _ in range(5 if impl == "npujit" else 1):
                        t0 = time.perf_counter()
                        fn()
                        best = min(best, time.perf_counter() - t0)
                    times[impl].append(best)
            med = {k: statistics.median(v) for k, v in times.items()}
            ratio = med["triton interpreter"] / med["npujit"]
            res.append({"row": row, "problem": problem, "times": times, "median": med,
                        "ratio": ratio, "bar": BAR, "met": ratio >= BAR})
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON only")
    args = ap.parse_args(argv)
    res = measure(args.quick, args.rounds)
    if args.json:
        print(json.dumps(res))
        return 0
    for r in res:
        print(f"{r['row']:<11} {r['problem']:<34} npujit {r['median']['npujit'] * 1e3:9.3f} ms"
              f"  triton interpreter {r['median']['triton interpreter'] * 1e3:10.1f} ms"
              f"  {r['ratio']:8.0f}x (bar {BAR:.0f}x: {'met' if r['met'] else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
