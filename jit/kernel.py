"""``@npu_kernel``: the decorator, the kernel object and its ``kernel[grid](...)`` launch.

Example::

    import npujit.language as nl
    from npujit import npu_kernel

    @npu_kernel
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: nl.constexpr):
        offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
        mask = offs < n
        nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=mask) +
                 nl.load(y_ptr + offs, mask=mask), mask=mask)

    add[(nl.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
"""
from __future__ import annotations

import inspect
import numbers
import types

from npujit.language.core import constexpr

from . import knobs
from . import loops as loop_runtime
from .ast_rewrite import rewrite_function
from .binder import arg_signature, normalize_grid, runtime_value
from .compiler import compile_specialization
from .errors import LaunchError
from .fastpath import SLOW, make_binder, make_plan

_OPTION_NAMES = ("backend", "parallel", "debug", "spec", "bounds_check")


class NPUKernel:
    """A kernel function plus its compiled specialisations.

    ``kernel[grid](*args, **constexprs)`` launches; ``kernel.ir(*args, **kw)`` returns the
    optimised IR text; ``kernel.inspect(...)`` every stage's artifact; ``kernel.compile_count``
    counts compiles; ``kernel.simulate(*args, grid=...)`` runs through the NPU simulator.
    """

    def __init__(self, fn: types.FunctionType, **options):
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"@npu_kernel decorates a Python function, got {type(fn).__name__}")
        for k in options:
            if k not in _OPTION_NAMES:
                raise TypeError(f"@npu_kernel got an unknown option '{k}'; options are "
                                f"{', '.join(_OPTION_NAMES)}")
        self.fn = fn
        self.name = fn.__name__
        self.options = dict(options)
        sig = inspect.signature(fn)
        self.params = list(sig.parameters)
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"kernel '{self.name}': *args/**kwargs parameters are not "
                                "supported; name every parameter")
        self.constexpr_params = {n for n, p in sig.parameters.items()
                                 if p.annotation is constexpr or p.annotation == "nl.constexpr"
                                 or p.annotation == "constexpr"}
        self.defaults = {n: p.default for n, p in sig.parameters.items()
                         if p.default is not inspect.Parameter.empty}
        self.cache: dict = {}
        self._fast: dict = {}
        self._grids: dict = {}
        self._binder = make_binder(self.params, self.constexpr_params, self.defaults)
        self._variants: dict = {}
        self.compile_count = 0
        self._traced = None
        self.__doc__ = fn.__doc__
        self.__name__ = self.name
        self.__wrapped__ = fn

    def with_options(self, **options) -> "NPUKernel":
        """The same kernel with other options (e.g. ``backend="reference"``); cached.

        Example::

            add.with_options(backend="reference")[grid](x, y, out, n, BLOCK=256)
        """
        key = tuple(sorted(options.items()))
        k = self._variants.get(key)
        if k is None:
            k = NPUKernel(self.fn, **{**self.options, **options})
            k._traced = self._traced
            self._variants[key] = k
        return k

    # --- tracing support ---------------------------------------------------------------
    def traced_fn(self):
        if self._traced is None:
            self._traced = rewrite_function(self.fn, loop_runtime)
        return self._traced

    def read_globals(self) -> dict:
        """Values of the plain-data globals the kernel's code names (checked at launch)."""
        out = {}
        g = self.fn.__globals__
        for name in _code_names(self.fn.__code__):
            if name in g:
                v = g[name]
                if isinstance(v, constexpr):
                    v = v.value
                if isinstance(v, (numbers.Number, str)) and not isinstance(v, bool) or \
                        isinstance(v, bool):
                    out[name] = v
        return out

    # --- launching ---------------------------------------------------------------------
    def __getitem__(self, grid):
        return _Launcher(self, grid)

    def __call__(self, *args, **kwargs):
        raise LaunchError(f"kernel '{self.name}' must be launched with a grid: "
                          f"{self.name}[grid](...), e.g. {self.name}[(n_blocks,)](...)")

    def _bind(self, args, kwargs) -> dict:
        n = len(self.params)
        if len(args) > n:
            raise LaunchError(f"kernel '{self.name}' takes {n} arguments "
                              f"({', '.join(self.params)}) but {len(args)} were given")
        bound = dict(zip(self.params, args))
        for k, v in kwargs.items():
            if k not in self.params:
                raise LaunchError(f"kernel '{self.name}' got an unknown keyword argument "
                                  f"'{k}'; its parameters are {', '.join(self.params)}")
            if k in bound:
                raise LaunchError(f"kernel '{self.name}' got argument '{k}' twice")
            bound[k] = v
        for p in self.params:
            if p not in bound:
                if p in self.defaults:
                    bound[p] = self.defaults[p]
                else:
                    kind = "constexpr " if p in self.constexpr_params else ""
                    raise LaunchError(f"kernel '{self.name}' is missing the {kind}argument "
                                      f"'{p}'")
        return bound

    def _options(self) -> dict:
        opts = dict(self.options)
        opts.setdefault("backend", knobs.backend())
        opts.setdefault("debug", knobs.debug())
        opts.setdefault("bounds_check", knobs.bounds_check())
        return opts

    def _specialize(self, bound: dict):
        sigs, constexprs = [], {}
        for p in self.params:
            v = bound[p]
            if p in self.constexpr_params:
                if isinstance(v, constexpr):
                    v = v.value
                try:
                    hash(v)
                except TypeError:
                    raise LaunchError(f"constexpr argument '{p}' must be hashable (a number, "
                                      f"string, dtype or tuple), got {type(v).__name__}") from None
                constexprs[p] = v
                sigs.append(("C", v))
            else:
                sigs.append(arg_signature(p, v))
        return tuple(sigs), constexprs

    def _get_compiled(self, bound: dict):
        sigs, constexprs = self._specialize(bound)
        opts = self._options()
        key = (sigs, tuple(sorted(opts.items())))
        c = self.cache.get(key)
        if c is None:
            from npujit.backends import get_backend
            backend = get_backend(opts["backend"])
            c = compile_specialization(self, sigs, constexprs, opts, backend)
            self.cache[key] = c
            self.compile_count += 1
        else:
            self._check_globals(c)
        return c, constexprs

    def _check_globals(self, c) -> None:
        if not c.used_globals:
            return
        g = self.fn.__globals__
        for name, v in c.used_globals.items():
            now = g.get(name)
            if isinstance(now, constexpr):
                now = now.value
            if now != v:
                raise LaunchError(f"kernel '{self.name}' was compiled when the global '{name}' "
                                  f"was {v!r}, but it is now {now!r}; globals a kernel reads "
                                  "are compile-time constants — pass it as a constexpr "
                                  "argument instead")

    def run(self, grid, args, kwargs):
        try:
            key, vals = self._binder(*args, **kwargs)
            entry = self._fast.get((key, knobs.backend(), knobs.debug()))
        except Exception:       # bad arguments: the slow path says what is wrong
            entry = None
        if entry is not None:
            c, plan = entry
            if c.used_globals:
                self._check_globals(c)
            g = self._grids.get(grid) if type(grid) is tuple else None
            if g is None:
                g = self._grid(grid, vals)
            c.run(g, [conv(vals[i]) if conv is not None else
                      runtime_value(c.sigs[i], vals[i], self.params[i]) for i, conv in plan])
            return
        bound = self._bind(args, kwargs)
        g = self._grid(grid, tuple(bound[p] for p in self.params))
        c, constexprs = self._get_compiled(bound)
        self._check_writeable(c, bound)
        rt = [runtime_value(c.sigs[i], bound[self.params[i]], self.params[i])
              for i in c.runtime_index]
        c.run(g, rt)
        self._remember_fast(bound, c)

    def _check_writeable(self, c, bound: dict) -> None:
        """A read-only array passed where the kernel stores is a LaunchError (checked on
        the slow path; read-only arrays have fast-path keys of their own)."""
        for name, loc in c.stores.items():
            a = bound.get(name)
            flags = getattr(a, "flags", None)
            if flags is not None and not flags.writeable:
                raise LaunchError(f"argument '{name}' is read-only, but kernel '{self.name}' "
                                  f"stores to it at {loc.file}:{loc.line}; pass a writeable "
                                  "array (np.array(x) makes a copy)")

    def _grid(self, grid, vals) -> tuple:
        if callable(grid):
            grid = grid(dict(zip(self.params, vals)))
        g = normalize_grid(grid, self.name)
        if type(grid) is tuple and len(self._grids) < 256:
            self._grids[grid] = g     # a valid grid tuple: no need to check it again
        return g

    def _remember_fast(self, bound: dict, c) -> None:
        try:
            key, _ = self._binder(**bound)
        except Exception:
            return
        if any(k is SLOW for k in key):
            return
        self._fast[(key, knobs.backend(), knobs.debug())] = (c, make_plan(c.sigs, c.runtime_index))

    def simulate(self, *args, grid, spec=None, debug=None, backend=None, **kwargs):
        """Launch on ``grid`` through the schedule and the NPU timing simulator; outputs
        are written as by ``kernel[grid](...)``; returns a ``npujit.sim.SimReport``.
        ``backend`` runs the programs (numba records and replays; default: the kernel's
        option, else numba for big arrays; see jit/simulate.py).

        Example::

            report = add.simulate(x, y, out, n, grid=(4,), spec=ASCEND_910B_LIKE, BLOCK=1024)
            print(report.cycles, report.ratios["aiv_mte2_ratio"])
        """
        from .simulate import simulate_kernel
        return simulate_kernel(self, grid, args, kwargs, spec=spec, debug=debug,
                               backend=backend)

    # --- introspection -----------------------------------------------------------------
    def inspect(self, *args, **kwargs) -> dict:
        """Every compile stage's artifact for these arguments: ``trace`` (IR as traced),
        ``ir`` (after passes), ``schedule`` (the scheduled IR), ``buffers`` (a table of the
        schedule's buffers), ``backend`` (generated source, if any).

        Example::

            print(add.inspect(x, y, out, n, BLOCK=1024)["ir"])
        """
        c, _ = self._get_compiled(self._bind(args, kwargs))
        return dict(c.artifacts)

    def ir(self, *args, **kwargs) -> str:
        """The optimised IR text for these arguments."""
        return self.inspect(*args, **kwargs)["ir"]

    def __repr__(self) -> str:
        return f"<npu_kernel {self.name}>"


def _code_names(code) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


class _Launcher:
    __slots__ = ("kernel", "grid")

    def __init__(self, kernel: NPUKernel, grid):
        self.kernel = kernel
        self.grid = grid

    def __call__(self, *args, **kwargs):
        return self.kernel.run(self.grid, args, kwargs)


def npu_kernel(fn=None, **options):
    """Make ``fn`` an NPU kernel, launched as ``kernel[grid](*args, **constexprs)``.

    Options: ``backend`` ("numba" or "reference"; default from NPUJIT_BACKEND),
    ``parallel`` (numba: run programs on several threads), ``debug`` (bounds checks),
    ``spec`` (the ``npujit.sim.NPUSpec`` or preset name the kernel is scheduled and checked
    for; default the 910B-like preset).

    Example::

        @npu_kernel
        def k(x_ptr, BLOCK: nl.constexpr): ...

        @npu_kernel(backend="reference")
        def k2(x_ptr): ...
    """
    if fn is None:
        return lambda f: NPUKernel(f, **options)
    return NPUKernel(fn, **options)
