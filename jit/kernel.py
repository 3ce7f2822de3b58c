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

import contextlib
import inspect
import threading
from collections import OrderedDict
import time
import types

from npujit import knobs
from npujit.errors import LaunchError

from . import hooks
from .compiled import CompiledKernel
from .fastpath import SLOW, make_binder, make_fast_launch
from .hooks import CompileEvent
from .signature import KernelSignature

_OPTION_NAMES = ("backend", "parallel", "debug", "spec", "bounds_check", "num_stages")


def _annotated(sig: inspect.Signature, marker: type) -> set:
    """The parameters annotated ``marker`` (``nl.constexpr``, ``nl.const``), also as a string
    annotation (``"tl.constexpr"`` under ``from __future__ import annotations``)."""
    return {n for n, p in sig.parameters.items()
            if p.annotation is marker or (isinstance(p.annotation, str)
                                          and p.annotation.split(".")[-1] == marker.__name__)}


class NPUKernel:
    """A kernel function plus its compiled specialisations (the JIT function).

    ``kernel[grid](*args, **constexprs)`` launches; ``kernel.compile(*args, **kw)`` returns
    the ``CompiledKernel`` of those arguments (data: it pickles; ``c.artifacts`` holds every
    stage); ``kernel.ir(...)`` the optimised IR text; ``kernel.inspect(...)`` every stage's
    artifact; ``kernel.compile_count`` counts compiles; ``kernel.simulate(*args, grid=...)``
    runs through the NPU simulator.  Safe to launch from many threads: a specialisation is
    compiled once per process, the other threads wait for it.
    """

    def __init__(self, fn: types.FunctionType, **options):
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"@npu_kernel decorates a Python function, got {type(fn).__name__}")
        for k in options:
            if k not in _OPTION_NAMES:
                raise TypeError(f"@npu_kernel got an unknown option '{k}'; options are "
                                f"{', '.join(_OPTION_NAMES)}")
        stages = options.get("num_stages")
        if stages is not None and (not isinstance(stages, int) or isinstance(stages, bool)
                                   or stages < 1):
            raise TypeError(f"@npu_kernel option num_stages must be a positive int or None, "
                            f"got {stages!r}")
        from npujit.language.core import const, constexpr   # (here: npujit/__init__.py)
        self.fn = fn
        self.name = fn.__name__
        self.options = dict(options)
        sig = inspect.signature(fn)
        self.params = list(sig.parameters)
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"kernel '{self.name}': *args/**kwargs parameters are not "
                                "supported; name every parameter")
        self.constexpr_params = _annotated(sig, constexpr)
        # read-only pointers (``x_ptr: nl.const``): a store through one is an error
        self.const_params = _annotated(sig, const)
        self.defaults = {n: p.default for n, p in sig.parameters.items()
                         if p.default is not inspect.Parameter.empty}
        self.signature = KernelSignature(self.name, self.params, self.constexpr_params,
                                         self.defaults)
        # specialisation key -> CompiledKernel, least recently used first (bounded:
        # NPUJIT_MEMORY_CACHE_SIZE; the fast path's entries go with an evicted one)
        self.cache: OrderedDict = OrderedDict()
        self._pending: dict = {}      # key -> _Pending: the compile under way
        self._lock = threading.Lock()
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
        key = tuple(sorted(options.items(), key=lambda kv: kv[0]))
        k = self._variants.get(key)
        if k is None:
            with self._lock:
                k = self._variants.get(key)
                if k is None:
                    k = type(self)(self.fn, **{**self.options, **options})
                    k._traced = self._traced
                    self._variants[key] = k
        return k

    # --- tracing support ---------------------------------------------------------------
    def traced_fn(self):
        if self._traced is None:      # a race builds it twice, identically: harmless
            from . import loops as loop_runtime      # (the tracer: not needed at import)
            from .ast_rewrite import rewrite_function
            self._traced = rewrite_function(self.fn, loop_runtime)
        return self._traced

    def global_reads(self) -> list:
        """The global bindings the kernel and its helpers read, with their values now
        (jit/kernel_globals.py); each compile records its own."""
        from .kernel_globals import find_global_reads
        return find_global_reads(self.fn, self.name)

    def read_globals(self) -> dict:
        """``{name: value}`` of every global the kernel's code and the helpers it calls
        read (``module.NAME`` for a module attribute) -- what is checked at launch.

        Example::

            >>> LIMIT = 4                                      # doctest: +SKIP
            >>> k.read_globals()                               # doctest: +SKIP
            {'LIMIT': 4}
        """
        return {r.label: r.export() for r in self.global_reads() if not r.is_helper}

    # --- compiling ---------------------------------------------------------------------
    def compile(self, *args, **kwargs) -> CompiledKernel:
        """The ``CompiledKernel`` for these launch arguments (compiled once, then cached).

        Example::

            c = add.compile(x, y, out, n, BLOCK=1024)
            c[(4,)](x, y, out, n)
            print(c.asm["schedule"])
        """
        return self._compiled(self.signature.bind(args, kwargs))

    def warmup(self, *args, grid, **kwargs) -> CompiledKernel:
        """Compile for these launch arguments and ``grid`` without running (Triton's
        ``kernel.warmup``); returns the ``CompiledKernel``, its backend built.

        Example::

            c = add.warmup(x, y, out, n, BLOCK=1024, grid=(4,))
            print(c.asm["schedule"])
        """
        bound = self.signature.bind(args, kwargs)
        self.signature.grid(grid, bound)          # checked as a launch checks it
        return self._compiled(bound, build=True)

    def _options(self) -> dict:
        opts = dict(self.options)
        opts.setdefault("backend", knobs.backend())
        opts.setdefault("debug", knobs.debug())
        opts.setdefault("bounds_check", knobs.bounds_check())
        return opts

    def _compiled(self, bound: dict, build: bool = False) -> CompiledKernel:
        """The specialisation for ``bound`` arguments; ``build`` also builds its backend
        stage (a launch needs it, ``kernel.compile`` and ``simulate`` do not yet)."""
        return self._keyed(bound, build)[1]

    def _keyed(self, bound: dict, build: bool) -> tuple:
        """``(memory cache key, CompiledKernel)`` of ``_compiled``."""
        sigs, constexprs = self.signature.specialize(bound)
        opts = self._options()
        key = (sigs, tuple(sorted(opts.items())))
        c = self.cache.get(key)
        if c is None:
            c = self._compile_once(key, sigs, constexprs, opts, build)
        else:
            c.check_globals()
            with contextlib.suppress(KeyError):   # evicted meanwhile by another thread
                self.cache.move_to_end(key)
        if build:
            c.runnable()
        return key, c

    def _compile_once(self, key, sigs, constexprs, opts, build) -> CompiledKernel:
        """Compile ``key`` in this thread, or wait for the thread already compiling it."""
        with self._lock:
            c = self.cache.get(key)
            if c is not None:
                return c
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = _Pending()
                owner = True
            else:
                owner = False
        if not owner:
            return pending.result()
        t0 = time.perf_counter()
        try:
            c, from_disk = self._build(sigs, constexprs, opts, build)
        except BaseException as e:
            with self._lock:
                del self._pending[key]
            pending.set_exception(e)
            raise
        with self._lock:
            self.cache[key] = c
            self.compile_count += 1
            del self._pending[key]
            self._evict_specialisations()
        pending.set_result(c)
        hooks.emit(CompileEvent(self.name, sigs, dict(constexprs), opts["backend"], key[1],
                                time.perf_counter() - t0, from_disk))
        return c

    def _build(self, sigs, constexprs, opts, build) -> tuple:
        """``(CompiledKernel, loaded from the disk cache?)`` of one specialisation."""
        from . import cache as disk_cache
        from .kernel_globals import scan_kernel
        with disk_cache.gc_paused():
            scan = scan_kernel(self.fn)      # one walk: the key's hash and the reads
            disk_key = disk_cache.entry_key(self, sigs, constexprs, opts, scan)
            c = disk_cache.load(disk_key) if disk_key else None
            if c is not None:   # the key matched the globals' values; check this
                c.global_reads = scan[0]     # process's bindings too
                if build:
                    c.runnable()
                return c, True
        from .compiler import compile_specialization   # (a disk hit needs no compiler)
        c = compile_specialization(self, sigs, constexprs, opts, global_reads=scan[0])
        if build:
            c.runnable()
        if disk_key:
            disk_cache.store(disk_key, c)
        return c, False

    def _evict_specialisations(self) -> None:
        """Drop the least recently used specialisations beyond the memory bound, with
        the fast path's entries for them (caller holds ``self._lock``)."""
        limit = knobs.memory_cache_size()
        while len(self.cache) > limit:
            _, old = self.cache.popitem(last=False)
            for fast_key in [k for k, fast in self._fast.items() if fast.compiled is old]:
                self._fast.pop(fast_key, None)

    # --- launching ---------------------------------------------------------------------
    def __getitem__(self, grid):
        return _Launcher(self, grid)

    def __call__(self, *args, **kwargs):
        raise LaunchError(f"kernel '{self.name}' must be launched with a grid: "
                          f"{self.name}[grid](...), e.g. {self.name}[(n_blocks,)](...)")

    def run(self, grid, args, kwargs) -> CompiledKernel:
        """Launch on ``grid``; returns the ``CompiledKernel`` that ran (as Triton's launch
        does, so ``h = k[grid](...); h.asm["ir"]`` reads what ran)."""
        env = knobs.launch_env()
        try:
            key, vals = self._binder(*args, **kwargs)
            fast = self._fast.get((key, env))
        except Exception:       # bad arguments: the slow path says what is wrong
            fast = None
        if fast is not None:
            return fast(grid, vals)   # jit/fastpath.py: straight to the compiled entry
        bound = self.signature.bind(args, kwargs)
        g = self.signature.grid(grid, bound)
        self._remember_grid(grid, g)
        cache_key, c = self._keyed(bound, build=True)   # checks the arguments, as Triton does
        c.check_writeable(bound)
        if 0 in g:
            return c  # a grid with no programs launches nothing
        c.launch(g, self.signature.runtime_args(c.sigs, c.runtime_index, bound))
        self._remember_fast(bound, c, cache_key, env)
        return c

    def _remember_grid(self, grid, g: tuple) -> None:
        if type(grid) is tuple and len(self._grids) < 256:
            self._grids[grid] = g     # a valid grid tuple: no need to check it again

    def _grid_of(self, grid, vals: tuple) -> tuple:
        """A grid the fast path has not seen: checked (and remembered) as the slow path does."""
        g = self.signature.grid(grid, dict(zip(self.params, vals)))
        self._remember_grid(grid, g)
        return g

    def _remember_fast(self, bound: dict, c: CompiledKernel, cache_key, env: tuple) -> None:
        """Let later launches with arguments of the same key go straight to ``c``."""
        try:
            key, _ = self._binder(**bound)
        except Exception:
            return
        if any(k is SLOW for k in key) or knobs.launch_env() != env:
            return    # (the knobs changed during the launch: ``c`` may not be env's)
        fast = make_fast_launch(self.params, key, c.sigs, c.runtime_index, {
            "_cache_key": cache_key, "_touch": self.cache.move_to_end,
            "_check_globals": c.check_globals if c.global_reads else None,
            "_grids": self._grids, "_grid": self._grid_of, "_launch": c.runnable(),
            "_compiled": c})
        fast.compiled = c
        with self._lock:
            if self.cache.get(cache_key) is c:   # else already evicted: nothing to keep
                self._fast[(key, env)] = fast

    def simulate(self, *args, grid, spec=None, debug=None, backend=None, numerics=True,
                 one_bit_flags=None, start_jitter=0, **kwargs):
        """Launch on ``grid`` through the schedule and the NPU timing simulator; outputs
        are written as by ``kernel[grid](...)``; returns a ``npujit.sim.SimReport``.
        ``backend`` runs the programs (numba records and replays; default: the kernel's
        option, else numba for big arrays; see jit/simulate.py).  ``numerics=False``:
        timing only -- same cycles, bytes and instructions, but only what decides the
        instruction streams is computed, so the outputs hold garbage
        (``report.numerics is False``).  ``one_bit_flags=False`` counts flag sets
        instead of 1-bit hardware flags (default: ``NPUJIT_ONE_BIT_FLAGS``, on).
        ``start_jitter`` (cycles, default 0): each core takes its first program at a cycle
        drawn from ``0..start_jitter`` (a fixed seed), so that cores running alike
        programs do not move in lockstep.

        Example::

            report = add.simulate(x, y, out, n, grid=(4,), spec=ASCEND_910B_LIKE, BLOCK=1024)
            print(report.cycles, report.ratios["aiv_mte2_ratio"])
        """
        from .simulate import simulate_kernel
        return simulate_kernel(self, grid, args, kwargs, spec=spec, debug=debug,
                               backend=backend, numerics=numerics,
                               one_bit_flags=one_bit_flags, start_jitter=start_jitter)

    # --- introspection -----------------------------------------------------------------
    def emit(self, target: str, out_dir: str, *args, **kwargs) -> list:
        """Write this kernel as source for another toolchain; returns the paths written.
        ``target="ascendc"``: the Ascend C kernel, tiling header, host launcher and
        CMakeLists.txt for CANN (backends/ascendc).  With arguments, for their
        specialisation; without, for the one specialisation launched so far.

        Example::

            add.emit("ascendc", "out/add", x, y, out, n, BLOCK=1024)
        """
        if target != "ascendc":
            raise ValueError(f"unknown emit target {target!r}; the only one is 'ascendc'")
        from npujit.backends.ascendc import emit
        if args or kwargs:
            fn = self.with_options(backend="reference").compile(*args, **kwargs).ir
        else:
            done = list(self.cache.values()) + [c for k in self._variants.values()
                                                for c in k.cache.values()]
            specs = {c.ir_text: c for c in done}
            if len(specs) != 1:
                raise LaunchError(f"kernel '{self.name}' has {len(specs)} compiled "
                                  "specialisations; pass the launch arguments to emit(), e.g. "
                                  f"{self.name}.emit('ascendc', out_dir, *args, **constexprs)")
            fn = next(iter(specs.values())).ir
        return emit(fn, out_dir)

    def inspect(self, *args, **kwargs) -> dict:
        """Every compile stage's artifact for these arguments: ``trace`` (IR as traced),
        ``ir`` (after passes), ``schedule`` (the scheduled IR), ``buffers`` (a table of the
        schedule's buffers), ``backend`` (generated source, if any).

        Example::

            print(add.inspect(x, y, out, n, BLOCK=1024)["ir"])
        """
        return self.compile(*args, **kwargs).artifacts

    def ir(self, *args, **kwargs) -> str:
        """The optimised IR text for these arguments (no backend compile needed)."""
        return self.compile(*args, **kwargs).artifact("ir")

    def __repr__(self) -> str:
        return f"<npu_kernel {self.name}>"


class _Pending:
    """A compile under way, that other threads wanting the same key wait for (the
    part of ``concurrent.futures.Future`` used here: importing that module and the
    logging it brings cost a fresh process's first launch ~7 ms)."""

    def __init__(self):
        self._done = threading.Event()
        self._value = self._error = None

    def set_result(self, value) -> None:
        self._value = value
        self._done.set()

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._done.set()

    def result(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


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
    ``spec`` (the ``npujit.target.NPUSpec`` or preset name the kernel is scheduled and checked
    for; default the 910B-like preset), ``num_stages`` (the stages of every ``nl.range``
    that does not give its own ``num_stages``, as Triton's option; default 1).

    Example::

        @npu_kernel
        def k(x_ptr, BLOCK: nl.constexpr): ...

        @npu_kernel(backend="reference")
        def k2(x_ptr): ...
    """
    if fn is None:
        return lambda f: NPUKernel(f, **options)
    return NPUKernel(fn, **options)
