"""One entry point for issue 16's table: ``python -m benchmarks [--quick] [--json PATH]``.

It runs, each in fresh child processes so that thread settings and caches do not leak:

* the CPU rows (benchmarks/cpu_rows.py) at 1 and at 2 threads: npujit's two CPU backends
  (numba, llvm) against numpy and, when installed, torch eager; medians of interleaved
  rounds with min-max, and each ratio (peer time / npujit time) against its bar, per
  backend;
* start-up and launch (benchmarks/bench_startup.py), on each backend: ``import npujit``,
  the first launch of a disk-cached kernel in a fresh process, the warm launch overhead.

Rows against Triton's interpreter (benchmarks/triton_rows.py) and Triton's compiler
(benchmarks/compile_vs_triton.py) need Triton and torch; without them they are listed as
skipped, as are torch's columns without torch.  The machine (cores, load
average) and the library versions are printed and written with the numbers.  The latest
full run is in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
THREAD_VARS = ("NPUJIT_NUM_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
STARTUP_BARS = {"import npujit (s)": 0.3, "first launch (s)": 0.1,
                "warm launch overhead (us)": 5.0}
BACKENDS = ("numba", "llvm")


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for lib in ("numpy", "numba", "llvmlite", "torch", "triton", "transformers"):
        try:
            out[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            out[lib] = None
    return out


def _cpu_rows(threads: int, quick: bool, rounds: int) -> list[dict]:
    env = {**os.environ, **{v: str(threads) for v in THREAD_VARS}}
    cmd = [sys.executable, os.path.join(HERE, "cpu_rows.py"), "--json", "--rounds", str(rounds)]
    res = subprocess.run(cmd + (["--quick"] if quick else []), capture_output=True, text=True,
                         env=env)
    if res.returncode != 0:
        raise RuntimeError(f"cpu_rows.py at {threads} thread(s) failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _startup(rounds: int, backend: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        res = subprocess.run([sys.executable, os.path.join(HERE, "bench_startup.py"),
                              "--rounds", str(rounds), "--backend", backend, "--json", f.name],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"bench_startup.py failed:\n{res.stderr}")
        raw = json.load(open(f.name))
    med = lambda xs: sorted(xs)[len(xs) // 2]          # noqa: E731
    return {"import npujit (s)": med(raw["npujit"]),
            "import numpy (s)": med(raw["numpy"]),
            "first launch (s)": med([r["copy"] for r in raw["first"]]),
            "first launch all-in (s)": med([r["all_in"] for r in raw["first"]]),
            "warm launch overhead (us)": med([r["overhead_us"] for r in raw["warm"]]),
            "loadavg": raw["loadavg"]}


def _verdict(ratio, bar) -> str:
    if ratio is None:
        return "skipped"
    return "met" if ratio >= bar else "NOT met"


def _ratios(r: dict) -> str:
    """Every peer's ratio, with its bar and verdict where the row has one (``r``: one
    backend's ``{"ratios", "bars"}``)."""
    out = []
    peers = list(r["ratios"])
    for peer in peers + [p for p in r["bars"] if p not in peers]:
        b = r["bars"].get(peer)
        if r["ratios"].get(peer) is None:
            out.append(f"{peer}: skipped")
        elif b is None:
            out.append(f"{peer} {r['ratios'][peer]:.2f}x")
        else:
            out.append(f"{peer} {b['ratio']:.2f}x (bar {b['bar']}x: "
                       f"{_verdict(b['ratio'], b['bar'])})")
    return "; ".join(out)


def _child_json(script: str, extra: list) -> list[dict]:
    """The JSON that ``benchmarks/<script> --json *extra`` prints last."""
    cmd = [sys.executable, os.path.join(HERE, script), "--json", *extra]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller problems, fewer rounds")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--threads", default="1,2", help="thread counts of the CPU rows")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else 5
    report = {"machine": {"cores": os.cpu_count(), "loadavg_start": os.getloadavg()[0]},
              "versions": _versions(), "quick": args.quick, "cpu": {}}
    v = report["versions"]
    print(f"npujit benchmarks ({'quick' if args.quick else 'full'}): {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; " + ", ".join(f"{k} {x}" for k, x in v.items() if x))
    missing = [k for k in ("torch", "triton") if v[k] is None]
    if missing:
        print(f"  not installed (their columns and rows are skipped): {', '.join(missing)}")
    for t in (int(x) for x in args.threads.split(",")):
        rows = _cpu_rows(t, args.quick, rounds)
        report["cpu"][t] = rows
        print(f"\nCPU rows at {t} thread(s): median ms (min-max) of {rounds} interleaved rounds")
        print(f"  {'row':<11} {'problem':<38} {'npujit (numba)':>20} {'npujit llvm':>20} "
              f"{'numpy':>20} {'torch':>20}")
        for r in rows:
            def cell(impl):
                ts = r["times"].get(impl)
                if not ts:
                    return "-"
                return f"{r['median'][impl] * 1e3:.3f} ({min(ts) * 1e3:.2f}-{max(ts) * 1e3:.2f})"
            known = ("npujit", "npujit llvm", "numpy", "torch")
            extra = [k for k in r["times"] if k not in known]
            print(f"  {r['row']:<11} {r['problem']:<38} {cell('npujit'):>20} "
                  f"{cell('npujit llvm'):>20} {cell('numpy'):>20} {cell('torch'):>20}"
                  + "".join(f"\n  {'':<11} {'':<38} {k} {cell(k)}" for k in extra))
            for impl, by in r["by_backend"].items():
                print(f"  {'':<11} {'peer / ' + impl + ' (bar):':<38} {_ratios(by)}")
    print("\nStart-up and launch (fresh processes, medians), per backend:")
    report["startup"] = {}
    for backend in BACKENDS:
        su = report["startup"][backend] = _startup(3 if args.quick else 5, backend)
        for k, bar in STARTUP_BARS.items():
            print(f"  {backend:<6} {k:<28} {su[k]:10.3f}   bar <= {bar}: "
                  f"{'met' if su[k] <= bar else 'NOT met'}")
        print(f"  {backend:<6} {'first launch all-in (s)':<28} "
              f"{su['first launch all-in (s)']:10.3f}   (process start to result)")
    print(f"  {'import numpy (s)':<35} {su['import numpy (s)']:10.3f}   (for scale)")
    if v["triton"] is None or v["torch"] is None:
        print("\nvs Triton's interpreter: skipped (needs triton and torch)")
    else:
        tr = report["triton_interpreter"] = _child_json(
            "triton_rows.py", ["--quick"] if args.quick else [])
        print("\nvs Triton's interpreter (TRITON_INTERPRET=1), the gallery's kernels, median ms "
              "(min-max)")
        for r in tr:
            ts = r["times"]
            print(f"  {r['row']:<11} {r['problem']:<38} npujit {r['median']['npujit'] * 1e3:.3f}"
                  f"  triton {r['median']['triton interpreter'] * 1e3:.0f} "
                  f"({min(ts['triton interpreter']) * 1e3:.0f}-"
                  f"{max(ts['triton interpreter']) * 1e3:.0f})  {r['ratio']:.0f}x "
                  f"(bar {r['bar']:.0f}x: {'met' if r['met'] else 'NOT met'})")
    if v["triton"] is not None and v["torch"] is not None:
        report["compile_vs_triton"] = {}
        for backend in BACKENDS:
            cc = report["compile_vs_triton"][backend] = _child_json(
                "compile_vs_triton.py", ["--backend", backend])
            print(f"\ncold compile, npujit ({backend} backend, disk cache off) vs Triton's "
                  "compiler (to an sm_80 cubin, no GPU needed), median ms:")
            for r in cc:
                print(f"  {r['row']:<11} npujit {r['median']['npujit'] * 1e3:7.0f}  triton "
                      f"{r['median']['triton'] * 1e3:7.0f}  {r['ratio']:.2f}x (bar <= "
                      f"{r['bar']}x: {'met' if r['met'] else 'NOT met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
