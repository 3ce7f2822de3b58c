"""One autotuning trial: compile a kernel for one config and measure it -- in this process
or in a worker of any ``concurrent.futures.Executor`` (the ``Trial`` is plain data that
pickles; the worker imports the kernel by its module and name).

What a trial does, in order:

1. compile the specialisation (trace, passes, schedule).  Buffers over the NPU spec raise
   ``OutOfResources`` here, before any backend build: the row says ``too-big`` with the
   error's one-line reason (the scope, the biggest buffer's bytes x stages, the budget).
2. copy every argument the compiled kernel stores to (``CompiledKernel.stores``, found
   from the IR's stores), those named in ``restore_value``, and zero-filled copies of
   those in ``reset_to_zero``: the trial writes only to copies, so tuning an in-place
   kernel never changes the caller's data, and every candidate sees the same inputs.
3. ``objective="sim"``: record the launch on the arguments (timing-only, ``numerics=False``,
   on the reference interpreter, unless ``check=`` needs the numbers), take the analytic
   roofline bound (``sim/roofline.py``) and, when it cannot beat the best result so far
   (``cap``), stop there (``pruned``); else simulate: the value is the cycle count.
   ``objective="wall"``: launch on the CPU backend ``warmup`` times, then time ``rep``
   launches (the written arguments restored before each, outside the timed region); the
   value is the median in seconds, ``spread`` the range.
4. with an expected result (from ``check=``), compare the outputs: a difference beyond the
   tolerance rejects the config, saying which output, how many elements, the worst one.

Example::

    >>> row = run_trial(Trial(ref, 0, Config({"BLOCK": 64}), (4, 1, 1), args, {}))  # doctest: +SKIP
    >>> row["status"], row["value"], row["unit"]                                     # doctest: +SKIP
    ('ok', 1234, 'cycles')
"""
from __future__ import annotations

import ctypes
import importlib
import os
import statistics
import time
from dataclasses import dataclass, field

import numpy as np

from npujit.errors import NPUJitError, OutOfResources
from npujit.sim import simulate
from npujit.sim.ir_roofline import ir_bound
from npujit.sim.roofline import roofline_bound

from .compiler import resolve_spec
from .kernel import NPUKernel
from .simulate import record_launch


@dataclass(frozen=True)
class KernelRef:
    """How a worker finds the kernel: ``module.qualname`` (an ``NPUKernel``, or an
    autotuner wrapping one), the options to apply, and the hashes of the kernel and of
    the compiler, so a worker that imported another version of either says so instead of
    measuring it (the results are stored under the caller's hashes)."""

    module: str
    qualname: str
    options: tuple
    kernel_hash: str
    compiler_hash: str

    def resolve(self):
        kernel = _RESOLVED.get(self)
        if kernel is None:
            from .cache_key import compiler_hash, kernel_hash
            if compiler_hash() != self.compiler_hash:
                raise NPUJitError("the worker runs another npujit version than the caller "
                                  "(its compiler hash differs); install the same npujit "
                                  "and dependencies on every worker")
            obj = importlib.import_module(self.module)
            for part in self.qualname.split("."):
                obj = getattr(obj, part)
            base = getattr(obj, "kernel", obj)       # an autotuner holds its kernel
            kernel = base.with_options(**dict(self.options)) if self.options else base
            if kernel_hash(kernel) != self.kernel_hash:
                raise NPUJitError(f"the worker imported {self.module}.{self.qualname}, but "
                                  "its code differs from the caller's (edited since the "
                                  "caller imported it?); restart the caller or the workers")
            _RESOLVED[self] = kernel
        return kernel


_RESOLVED: dict = {}


@dataclass
class Trial:
    """One config to measure.  ``kernel`` is an ``NPUKernel`` (in-process) or a
    ``KernelRef`` (a worker); ``grid`` the resolved 3-int grid; ``cap`` the best
    ``(value, index)`` so far (the roofline bound prunes against it); ``expected`` what
    ``check=`` returned (an array, a tuple in parameter order, or ``{name: array}``)."""

    kernel: object
    index: int
    config: object
    grid: tuple
    args: tuple
    kwargs: dict
    objective: str = "sim"
    cap: tuple | None = None
    expected: object = None
    tolerance: tuple | None = None
    reset_to_zero: tuple = ()
    restore_value: tuple = ()
    warmup: int = 2
    rep: int = 10
    extra: dict = field(default_factory=dict)


def run_trial(trial: Trial) -> dict:
    """Measure one config; returns the row's measured columns (``status``, ``value``,
    ``unit``, ``bound``, ``spread``, ``reason``).  Never raises for the config's own
    faults: they are a ``too-big`` or ``failed`` row."""
    kernel = trial.kernel
    if isinstance(kernel, KernelRef):
        _use_env(trial.extra.get("env", {}))
        kernel = kernel.resolve()
    cfg = trial.config
    k = _private(kernel, cfg.options())
    named = {**dict(zip(kernel.params, (unpack_arg(a) for a in trial.args))),
             **{n: unpack_arg(v) for n, v in trial.kwargs.items()}}
    try:
        c = k.compile(**named, **cfg.kwargs)
    except OutOfResources as e:
        return {"status": "too-big", "reason": e.reason}
    except Exception as e:      # e.g. the kernel's own assert on a meta-parameter
        return {"status": "failed", "reason": _first_line(e)}
    written = set(c.stores) | set(trial.restore_value) | set(trial.reset_to_zero)
    try:
        if trial.objective == "sim":
            row, outs = _simulate(k, c, trial, named, written, cfg.kwargs)
        else:
            row, outs = _wall(k, trial, named, written, cfg.kwargs)
    except Exception as e:      # this config's launch failed (a bad offset, a deadlock ...)
        return {"status": "failed", "reason": _first_line(e)}
    if row["status"] == "ok" and trial.expected is not None:
        bad = compare(outs, expected_by_name(trial.expected, c.stores, kernel.params),
                      trial.tolerance)
        if bad:
            row.update(status="rejected", reason=bad)
    return row


def promising_first(kernel, todo: list, configs, grid_of, named: dict) -> list:
    """``todo`` (config indices) ordered by the roofline bound of each config's scheduled
    IR (``sim/ir_roofline.py``), lowest first, ties in config order, so a good config is
    measured early and the bounds prune the rest against it.  Each config is compiled here
    (trace, passes, schedule; no backend build); one that does not compile goes last and
    its trial says why.  ``grid_of(i)`` is config ``i``'s grid.
    """
    spec = resolve_spec(kernel.options.get("spec"))
    est = {}
    for i in todo:
        g = grid_of(i)
        cfg = configs[i]
        try:
            c = _private(kernel, cfg.options()).compile(**named, **cfg.kwargs)
            est[i] = ir_bound(c.ir, g, {**named, **cfg.kwargs}, spec).cycles
        except Exception:          # too big, or the kernel's own error: its trial says so
            est[i] = float("inf")
    return sorted(todo, key=lambda i: (est[i], i))


def _private(kernel, options: dict):
    """The kernel with ``options``, as a kernel of its own: the trial's specialisation is
    not kept in the caller's kernel (a sweep of 64 configs would leave 64 there) and is
    freed with the trial; the traced function is shared."""
    k = NPUKernel(kernel.fn, **{**kernel.options, **options})
    k._traced = kernel.traced_fn()
    return k


def _use_env(env: dict) -> None:
    """A worker takes the caller's NPUJIT_* knobs (a pool may have started before the
    caller set them)."""
    for k in [k for k in os.environ if k.startswith("NPUJIT_") and k not in env]:
        del os.environ[k]
    os.environ.update(env)


def _fresh(originals: dict, written: set, reset_to_zero) -> dict:
    """The arguments with a copy of every written one (zeros for ``reset_to_zero``)."""
    out = dict(originals)
    for name in written:
        v = originals.get(name)
        if v is not None and hasattr(v, "shape"):
            out[name] = copy_array(v)
            if name in reset_to_zero:
                out[name][...] = 0
    return out


def _simulate(k, c, trial: Trial, originals: dict, written: set, meta: dict):
    numerics = trial.expected is not None
    spec = resolve_spec(k.options.get("spec"))
    # the IR's bound first: a config that cannot win is not even recorded
    bound = ir_bound(c.ir, trial.grid, {**originals, **meta}, spec).cycles
    if trial.cap is not None and beaten(bound, trial.index, trial.cap):
        return _pruned(bound, trial.cap, "the IR's"), originals
    backend = k.options.get("backend")
    if backend not in ("reference", "numba"):
        # timing only: the interpreter runs the stream-deciding ops without a build
        backend = None if numerics else "reference"
    run = _fresh(originals, written, trial.reset_to_zero)
    launch, spec = record_launch(k, trial.grid, (), {**run, **meta}, backend=backend,
                                 numerics=numerics, spec=spec)
    bound = max(bound, roofline_bound(launch, spec).cycles)
    if trial.cap is not None and beaten(bound, trial.index, trial.cap):
        return _pruned(bound, trial.cap, "the recorded launch's"), run
    report = simulate(launch, spec, trace=False)
    return {"status": "ok", "value": int(report.cycles), "unit": "cycles", "bound": bound}, run


def _pruned(bound: float, cap: tuple, source: str) -> dict:
    return {"status": "pruned", "bound": bound,
            "reason": f"roofline bound {bound:.0f} cycles ({source}) cannot beat the best so "
                      f"far ({cap[0]:.0f})"}


def _wall(k, trial: Trial, originals: dict, written: set, meta: dict):
    launcher = k[trial.grid]
    run = _fresh(originals, written, trial.reset_to_zero)

    def call():
        launcher(**run, **meta)

    def restore():
        for name in written:
            if name in run and hasattr(run[name], "shape"):
                if name in trial.reset_to_zero:
                    run[name][...] = 0
                else:
                    run[name][...] = originals[name]

    call()                            # the first run compiles; its outputs are checked
    outs = {n: copy_array(run[n]) for n in written if hasattr(run.get(n), "shape")}
    for _ in range(max(0, trial.warmup - 1)):
        restore()
        call()
    times = []
    for _ in range(max(1, trial.rep)):
        restore()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    spread = (f"{min(times) * 1e3:.3g}..{max(times) * 1e3:.3g} ms "
              f"({(max(times) - min(times)) / med * 100:.0f}% of the median, n={len(times)})")
    return {"status": "ok", "value": med, "unit": "s", "spread": spread}, outs


def beaten(bound: float, index: int, cap: tuple) -> bool:
    """True when a config whose cycles are at least ``bound`` cannot win against the best
    ``cap = (value, index)``: ties go to the earlier config."""
    best, best_index = cap
    return bound > best or (bound == best and index > best_index)


# --- outputs and the reference --------------------------------------------------------------

def expected_by_name(expected, stores: dict, params: list) -> dict:
    """``check=``'s result as ``{argument: array}``: a dict by name; a tuple in the order
    of the parameters the kernel stores to; one array for a kernel storing to one."""
    written = [p for p in params if p in stores]
    if isinstance(expected, dict):
        unknown = sorted(set(expected) - set(params))
        if unknown:
            raise NPUJitError(f"check= returned results for {', '.join(unknown)}, which are "
                              f"not parameters of the kernel")
        return dict(expected)
    if isinstance(expected, (tuple, list)):
        if len(expected) != len(written):
            raise NPUJitError(f"check= returned {len(expected)} results, but the kernel "
                              f"stores to {len(written)} arguments ({', '.join(written)}); "
                              "return one per stored argument, or a dict by name")
        return dict(zip(written, expected))
    if len(written) != 1:
        raise NPUJitError(f"check= returned one array, but the kernel stores to "
                          f"{', '.join(written) or 'no argument'}; return a dict "
                          "{argument name: expected array}")
    return {written[0]: expected}


def default_tolerance(dtype) -> tuple:
    """``(rtol, atol)`` for comparing outputs of ``dtype`` (fp16/bf16 round at each op)."""
    dt = np.dtype(dtype)
    if dt.kind in "iub":
        return (0.0, 0.0)
    if dt.itemsize <= 2:
        return (1e-2, 1e-2)
    return (1e-4, 1e-5) if dt.itemsize == 4 else (1e-7, 1e-9)


def compare(outputs: dict, expected: dict, tolerance: tuple | None) -> str | None:
    """None when every expected output matches, else a one-line reason: the argument,
    how many elements differ and the worst one, against the tolerance."""
    for name, want in expected.items():
        got = np.asarray(outputs[name]).astype(np.float64)
        want = np.asarray(want)
        if got.shape != want.shape:
            return f"{name}: shape {got.shape}, the reference's {want.shape}"
        rtol, atol = tolerance or default_tolerance(np.asarray(outputs[name]).dtype)
        w = want.astype(np.float64)
        diff = np.abs(got - w)
        same_nan = np.isnan(got) & np.isnan(w)
        bad = ~((diff <= atol + rtol * np.abs(w)) | same_nan)
        if bad.any():
            worst = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf),
                                                            -1.0))), bad.shape)
            at = worst if len(worst) > 1 else worst[0]
            return (f"{name}: {int(bad.sum())} of {bad.size} elements differ from the "
                    f"reference; worst at {at}: {got[worst]:.6g} vs {w[worst]:.6g} "
                    f"(|diff| {diff[worst]:.3g} > atol {atol:g} + rtol {rtol:g} x |ref|)")
    return None


# --- arrays that keep their layout across a pickle --------------------------------------------

def copy_array(v):
    """A copy with the same shape, dtype and strides (a strided view stays strided: its
    layout is part of the specialisation); torch tensors are cloned."""
    if not isinstance(v, np.ndarray):
        return v.clone() if hasattr(v, "clone") else np.array(v)
    if v.flags.c_contiguous or v.flags.f_contiguous:
        return v.copy(order="K")
    return unpack_arg(_Strided.of(v))


@dataclass
class _Strided:
    """A non-contiguous view as its base's bytes, offset and strides (numpy pickles a
    view as a contiguous copy, which would be another specialisation)."""

    base: np.ndarray
    offset: int
    shape: tuple
    strides: tuple
    dtype: object

    @classmethod
    def of(cls, v: np.ndarray) -> "_Strided":
        lo = hi = 0
        for n, s in zip(v.shape, v.strides):
            if n > 0:
                lo += min(0, (n - 1) * s)
                hi += max(0, (n - 1) * s)
        start = v.__array_interface__["data"][0] + lo
        span = hi - lo + v.itemsize        # every byte of the span lies in v's buffer
        base = np.frombuffer((ctypes.c_char * span).from_address(start), np.uint8).copy()
        return cls(base, -lo, v.shape, v.strides, v.dtype)


def pack_arg(v):
    """``v`` ready to pickle into a worker (a strided numpy view keeps its strides)."""
    if isinstance(v, np.ndarray) and not (v.flags.c_contiguous or v.flags.f_contiguous):
        return _Strided.of(v)
    return v


def unpack_arg(v):
    if isinstance(v, _Strided):
        return np.ndarray(v.shape, v.dtype, buffer=v.base, offset=v.offset,
                          strides=v.strides)
    return v


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not isinstance(e, NPUJitError):
        return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__
    if not lines:
        return type(e).__name__
    # a CompilationError starts "at file:line in kernel ...:" then the source line
    if lines[0].startswith("at ") and len(lines) > 2:
        return f"{lines[-1]} ({lines[0][3:].rstrip(':')})"
    return lines[0]
