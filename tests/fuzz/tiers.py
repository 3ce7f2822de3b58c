"""Running a generated batch kernel on each execution tier and comparing the results.

* ``load_kernel(source, name)`` writes the source to a file named by its hash under the
  kernel cache directory (npujit reads a kernel's source, and a stable path lets a warm
  disk cache serve a re-run) and imports it;
* ``make_args(subs)`` draws each sub-kernel's inputs with ``npujit.testing.random_array``
  (NaN, ±inf, -0.0, subnormals, the integer extremes) and sentinel-filled outputs, so a
  masked-off lane that is written shows;
* ``TIERS`` runs a launch on the reference interpreter, the numba backend, or the
  scheduled path through the simulator (``kernel.simulate``, which writes the outputs);
  ``run`` also takes the llvm backend and the Ascend C twin (their own test files);
* ``disagreement(...)`` says where two tiers' outputs differ beyond what
  docs/semantics.md allows (bits for ints, bools and exact floats; ulps for
  transcendentals; a bound on the terms for sums and dots), or returns None.

Example::

    >>> k = load_kernel(render(subs, "fz"), "fz")                        # doctest: +SKIP
    >>> args, outs = make_args(subs)                                     # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import importlib.util
import os

import ml_dtypes
import numpy as np

from npujit.ir import types as T
from npujit import knobs
from npujit.sim import DebugOptions
from npujit.testing.inputs import random_array

GRID = (2,)
NP = {T.float32: np.float32, T.float16: np.float16, T.bfloat16: ml_dtypes.bfloat16,
      T.int8: np.int8, T.int32: np.int32, T.int64: np.int64, T.bool_: np.bool_}
SENTINEL = {T.bool_: True, T.int8: -123, T.int32: -12345, T.int64: -12345,
            T.float32: 12345.0, T.float16: 12344.0, T.bfloat16: 12288.0}
EPS = {T.float32: 2.0 ** -23, T.float16: 2.0 ** -10, T.bfloat16: 2.0 ** -7}
TINY = {T.float32: 2.0 ** -126, T.float16: 2.0 ** -14, T.bfloat16: 2.0 ** -126}
APPROX_ULPS = 16     # transcendentals: a few ulp in f32, kept through casts and min/max
# gelu's 1 + tanh(u) (or 1 + erf) cancels for negative x: a 1-ulp difference in tanh
# becomes ~|x| * ulp(1) / 2 absolute (x = -2.5 in f32: 41 ulp of the result), and for
# x below about -10 both forms are 0.  So transcendental results also get this absolute
# slack, about 8 ulp(1.0) of f32.
APPROX_ATOL = 2.0 ** -20


_LOADED: dict = {}


def load_kernel(source: str, name: str):
    """Import the ``@npu_kernel`` ``name`` defined by ``source`` (written to a file); the
    same source gives the same kernel object (and its in-memory compile cache)."""
    if (source, name) in _LOADED:
        return _LOADED[(source, name)]
    folder = os.path.join(knobs.cache_dir(), "fuzz_kernels")
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = os.path.join(folder, f"{name}_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"{name}_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if len(_LOADED) > 256:      # shrinking loads many; keep memory bounded
        _LOADED.clear()
    _LOADED[(source, name)] = getattr(module, name)
    return _LOADED[(source, name)]


def make_args(subs: list, draw: int = 0) -> tuple[list, list]:
    """The launch arguments of the batch (input set number ``draw``), and for each
    sub-kernel the indices of its output arrays among them."""
    args, outs = [], []
    for sub in subs:
        rng = np.random.default_rng([sub.seed, draw])
        rows = sub.sizes["n"]
        size = rows if sub.frame[0] == "1d" else rows * sub.frame[2]
        for dtype, _ in sub.inputs:
            args.append(random_array(size, NP[dtype], rng))
        outs.append(list(range(len(args), len(args) + len(sub.outputs))))
        for o in sub.outputs:
            args.append(np.full(o.per_program * GRID[0], SENTINEL[o.dtype], NP[o.dtype]))
        args += list(sub.sizes.values())
    return args, outs


def fresh(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def run_reference(kernel, args):
    kernel.with_options(backend="reference")[GRID](*args)


def run_numba(kernel, args):
    kernel.with_options(backend="numba")[GRID](*args)


def run_llvm(kernel, args):
    kernel.with_options(backend="llvm")[GRID](*args)


def run_twin(kernel, args):
    """The emitted Ascend C on the CPU twin (tests/fuzz/test_twin.py picks the
    sub-kernels the emitter can lower)."""
    kernel.with_options(backend="ascendc-twin")[GRID](*args)


def simulation_spec(sub) -> str | None:
    """The NPU preset the scheduled path of ``sub`` runs on, or None when no preset can.

    A program runs on one core kind of the separated 910B-like part
    (ir/schedule/placement.py), so a sub-kernel mixing nl.dot with Vector work runs on the
    coupled 910-like part (Cube and Vector in one core), whose Cube has no bf16 (the engine
    raises "the Cube has no rate for dtype 'bf16'"): a bf16 dot next to Vector work has no
    preset to run on, and its sub-kernel skips only this tier."""
    dots = [line for line in sub.lines if "nl.dot(" in line]
    if not dots:
        return "ascend-910b-like"
    if sub.has_bf16_dot:
        return None
    return "ascend-910-like"


# The full debug options of the "checked" tier: NaN-poisoned buffers, copies landing at
# their wait, the race detector and the 1-bit flag check (sim/debug.py).
FULL_DEBUG = DebugOptions.full()


def run_simulated(subs, args, outs, debug: DebugOptions | None = None) -> list:
    """Each sub-kernel alone through ``kernel.simulate`` (the scheduled IR on the reference
    interpreter), its outputs put back in the batch's argument list.  One at a time, as a
    batch of many loops would exhaust the event ids of a part (OutOfResources), and the
    preset depends on the sub-kernel (``simulation_spec``); the outputs of a sub-kernel no
    preset can run are set to None.  With ``debug``, every tile lives in its scheduled
    buffer, and a race or a flag problem the checks report fails the tier."""
    from .gen import render
    args = fresh(args)
    for sub, out_idx in zip(subs, outs):
        spec = simulation_spec(sub)
        if spec is None:
            for i in out_idx:
                args[i] = None
            continue
        start = out_idx[0] - len(sub.inputs)
        stop = out_idx[-1] + 1 + len(sub.sizes)
        kernel = load_kernel(render([sub], "fuzz_one"), "fuzz_one")
        with np.errstate(all="ignore"):
            report = kernel.simulate(*args[start:stop], grid=GRID, spec=spec, debug=debug)
        problems = [str(r) for r in report.races] + [str(f) for f in report.flag_issues]
        if problems:
            raise AssertionError(f"the schedule on {spec} is wrong under {debug}:\n" +
                                 "\n".join(problems[:10]))
    return args


# Cheap tiers first: a failure there shrinks without numba compiles.
TIERS = ("reference", "simulated", "numba")


def run(kernel, tier: str, args: list, subs=None, outs=None) -> list:
    """A copy of ``args`` after launching the batch on ``tier``."""
    if tier == "simulated":
        return run_simulated(subs, args, outs)
    if tier == "checked":
        return run_simulated(subs, args, outs, FULL_DEBUG)
    args = fresh(args)
    runner = {"reference": run_reference, "numba": run_numba, "llvm": run_llvm,
              "ascendc-twin": run_twin}[tier]
    with np.errstate(all="ignore"):
        runner(kernel, args)
    return args


def _finite_max(a: np.ndarray) -> float:
    a = np.abs(a.astype(np.float64))
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else 0.0


def _other_value(sub, i: int) -> float:
    other = sub.inputs[i][1]
    if other is None:
        return 0.0
    v = float(eval(other))       # a literal the generator wrote, e.g. "float('nan')"
    return abs(v) if np.isfinite(v) else 0.0


def summed_atol(sub, scale: tuple, inputs: list) -> float:
    """An absolute bound on the rounding difference of a float sum or dot whose order is
    unspecified: (terms) x (f32 eps) x (bound on the sum of |terms|)."""
    if scale[0] == "sum":
        _, i, terms = scale
        big = max(_finite_max(inputs[i]), _other_value(sub, i))
        return 2 * terms * EPS[T.float32] * terms * big
    _, i, j, terms = scale
    big = (max(_finite_max(inputs[i]), _other_value(sub, i)) *
           max(_finite_max(inputs[j]), _other_value(sub, j)))
    return 2 * terms * EPS[T.float32] * (terms * big + 1.5)


def _bits_equal(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    u = np.uint32 if got.itemsize == 4 else np.uint16
    return nan | (got.view(u) == want.view(u))


def disagreement(got: np.ndarray, want: np.ndarray, out, atol: float = 0.0) -> str | None:
    """Where ``got`` differs from ``want`` beyond what ``out.status`` allows, or None."""
    if not out.dtype.is_float:
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        if out.status == "exact":
            bad = ~_bits_equal(got, want)
        else:
            rtol = EPS[out.dtype] * (APPROX_ULPS if out.dtype == T.float32 else 2)
            atol = atol + 2 * TINY[out.dtype] + (APPROX_ATOL if out.status == "approx" else 0)
            with np.errstate(invalid="ignore"):
                close = np.abs(g - w) <= atol + rtol * np.abs(w)
            same = (np.isnan(g) & np.isnan(w)) | (g == w)        # equal infs, ±0
            bad = ~(same | (np.isfinite(g) & np.isfinite(w) & close))
    if not bad.any():
        return None
    where = np.flatnonzero(bad)[:6]
    return (f"{out.status} {out.dtype} output differs at flat indices {where.tolist()}: "
            f"got {got[where].tolist()} want {want[where].tolist()}"
            + (f" (atol {atol:.3g})" if atol else ""))


def compare_tiers(subs: list, args: list, outs: list, results: dict) -> list:
    """Every disagreement of a tier with the reference: (sub index, tier, output, message)."""
    problems = []
    ref = results["reference"]
    for s, sub in enumerate(subs):
        inputs = [args[i] for i in range(outs[s][0] - len(sub.inputs), outs[s][0])]
        for k, (idx, out) in enumerate(zip(outs[s], sub.outputs)):
            atol = summed_atol(sub, out.scale, inputs) if out.status == "summed" else 0.0
            for tier, res in results.items():
                if tier == "reference" or res[idx] is None:
                    continue
                msg = disagreement(res[idx], ref[idx], out, atol)
                if msg:
                    problems.append((s, tier, k, msg))
    return problems
