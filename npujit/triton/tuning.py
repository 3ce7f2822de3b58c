"""Triton's tuning decorators on npujit's autotuner (jit/autotune.py):
``triton.Config``, ``@triton.autotune`` and ``@triton.heuristics``, with Triton's argument
names.

* ``Config(kwargs, num_warps=, num_stages=, num_ctas=, maxnreg=, pre_hook=)``: an
  ``npujit.Config``; ``num_stages`` is the stages of every ``tl.range`` that gives none, the
  GPU-only fields are accepted and ignored (``pre_hook`` is refused: it runs user code on
  device buffers between runs, which npujit's sweeps do not do).
* ``autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
  warmup=, rep=, do_bench=None)``: ``npujit.autotune`` ranking configs by simulated cycles;
  ``prune_configs_by={"early_config_prune": f}`` is npujit's ``prune=``; ``perf_model`` /
  ``top_k`` are accepted and ignored (the simulator is the model).
* ``heuristics(values)``: ``{name: f(named_args)}`` meta-parameters computed at each launch
  from the other arguments, as in Triton; under ``@triton.autotune`` too, where they also
  see each config's meta-parameters (``TunedHeuristics``).

Example::

    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr): ...
"""
from __future__ import annotations

from npujit.jit.autotune import Autotuner
from npujit.jit.autotune import Config as _Config
from npujit.jit.autotune import autotune as _autotune
from npujit.jit.kernel import NPUKernel


def Config(kwargs, num_warps=None, num_stages=None, num_ctas=None, maxnreg=None,
           pre_hook=None):
    """Triton's ``triton.Config``: an ``npujit.Config`` (GPU-only fields ignored)."""
    if pre_hook is not None:
        raise NotImplementedError("triton.Config(pre_hook=...) is not supported: npujit runs "
                                  "each candidate on copies of the arguments it writes; use "
                                  "autotune's reset_to_zero= / restore_value= instead")
    return _Config(kwargs, num_stages=num_stages, num_warps=num_warps)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, do_bench=None, **_gpu):
    """Triton's ``@triton.autotune`` over npujit's (configs ranked by simulated cycles)."""
    if pre_hook is not None or post_hook is not None or do_bench is not None:
        raise NotImplementedError("triton.autotune(pre_hook=, post_hook=, do_bench=) is not "
                                  "supported: npujit ranks configs by simulated cycles "
                                  "(npujit.autotune(objective='wall') times the CPU run)")
    prune = None
    if prune_configs_by:
        early = prune_configs_by.get("early_config_prune")
        if early is not None:
            prune = lambda cfgs, named_args: early(cfgs, named_args)   # noqa: E731
    extra = {k: v for k, v in (("warmup", warmup), ("rep", rep)) if v is not None}

    def tuner(cfgs):
        return _autotune(cfgs, key=list(key), prune=prune,
                         reset_to_zero=list(reset_to_zero or ()),
                         restore_value=list(restore_value or ()), **extra)

    def wrap(kernel):
        if isinstance(kernel, Heuristics) and isinstance(kernel.kernel, NPUKernel):
            return TunedHeuristics(tuner, kernel, configs)
        return tuner(configs)(kernel)
    return wrap


def heuristics(values: dict):
    """Triton's ``@triton.heuristics({name: f(named_args)})``: meta-parameters computed
    from the launch's other arguments, above ``@triton.jit`` (or ``@triton.autotune``)."""
    if not isinstance(values, dict) or not all(callable(f) for f in values.values()):
        raise TypeError("triton.heuristics takes a dict {meta-parameter name: function of "
                        "the named arguments}")

    def wrap(kernel):
        if not isinstance(kernel, (NPUKernel, Autotuner, Heuristics, TunedHeuristics)):
            raise TypeError("@triton.heuristics decorates a @triton.jit kernel (or an "
                            f"autotuned one), got {type(kernel).__name__}")
        return Heuristics(kernel, values)
    return wrap


class Heuristics:
    """A kernel whose launches add ``values``' meta-parameters computed from the others."""

    def __init__(self, kernel, values: dict):
        self.kernel = kernel
        self.values = dict(values)
        self.params = _params(kernel)
        self.__name__ = getattr(kernel, "__name__", "kernel")
        self.__doc__ = getattr(kernel, "__doc__", None)

    def _named(self, args, kwargs) -> dict:
        named = dict(zip(self.params, args))
        named.update(kwargs)
        for name, f in self.values.items():
            if name not in named:
                named[name] = f(named)
        return named

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            named = self._named(args, kwargs)
            extra = {n: named[n] for n in self.values if n not in kwargs}
            return self.kernel[grid](*args, **kwargs, **extra)
        return launch

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)   # a device-function call or the grid error

    def simulate(self, *args, grid, **kwargs):
        """``kernel.simulate`` with the heuristics' meta-parameters added."""
        named = self._named(args, kwargs)
        extra = {n: named[n] for n in self.values if n not in kwargs}
        return self.kernel.simulate(*args, grid=grid, **kwargs, **extra)


class TunedHeuristics:
    """``@triton.autotune`` above ``@triton.heuristics``, in Triton's order: each config
    is swept with the heuristics' values computed from it and the launch's arguments, and
    every launch runs the best config for its key with the heuristics computed again from
    its own arguments (a ``key`` that leaves out an argument a heuristic reads does not
    keep a value computed for another launch)."""

    def __init__(self, tuner, heuristics: Heuristics, configs):
        self.heuristics = heuristics
        self.configs = list(configs)
        self.tuner = tuner(lambda named: [self._derived(c, named) for c in self.configs])(
            heuristics.kernel)
        self.__name__ = heuristics.__name__
        self.__doc__ = heuristics.__doc__

    def _derived(self, cfg, named: dict):
        """``cfg`` with the heuristics' values for ``named`` (the launch's arguments)."""
        given = {**named, **cfg.kwargs}
        values = self.heuristics._named((), given)
        return _Config({**cfg.kwargs, **{n: values[n] for n in self.heuristics.values
                                         if n not in given}},
                       num_stages=cfg.num_stages, num_warps=cfg.num_warps)

    def _launch(self, grid, args, kwargs):
        """``(kernel, meta-parameters)`` of a launch: the best config's, plus the
        heuristics' values for these arguments."""
        best = self.tuner.tune(*args, grid=grid, **kwargs)
        cfg = next(c for c in self.configs if c.num_stages == best.num_stages and all(
            k in best.kwargs and best.kwargs[k] == v for k, v in c.kwargs.items()))
        named = self.heuristics._named(args, {**kwargs, **cfg.kwargs})
        meta = {**cfg.kwargs, **{n: named[n] for n in self.heuristics.values
                                 if n not in kwargs and n not in cfg.kwargs}}
        kernel = self.heuristics.kernel
        return (kernel.with_options(**cfg.options()) if cfg.options() else kernel), meta

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            kernel, meta = self._launch(grid, args, kwargs)
            return kernel[grid](*args, **kwargs, **meta)
        return launch

    def __call__(self, *args, **kwargs):
        return self.heuristics.kernel(*args, **kwargs)

    def simulate(self, *args, grid, **kwargs):
        """``kernel.simulate`` with the best config and the heuristics' values."""
        kernel, meta = self._launch(grid, args, kwargs)
        return kernel.simulate(*args, grid=grid, **kwargs, **meta)

    def __getattr__(self, name):
        if name == "tuner":
            raise AttributeError(name)
        return getattr(self.tuner, name)       # best_config, tuning_table(), ...


def _params(kernel) -> list:
    while not isinstance(kernel, NPUKernel):
        kernel = kernel.kernel
    return kernel.params
