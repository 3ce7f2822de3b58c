"""``@npujit.autotune``: try a kernel's configs on its real arguments and launch the best.

Stacked on ``@npu_kernel``, it is launched exactly as the kernel (``tuned[grid](...)``;
the grid may be a callable of the meta-parameters, which then include the config's).
The first launch for a key -- the values of the ``key`` arguments and the dtypes of the
array arguments -- sweeps the configs (jit/trial.py measures one):

* configs whose buffers exceed the NPU spec are dropped before any backend build, each
  with a one-line reason (``OutOfResources.reason``); the analytic roofline bound
  (sim/roofline.py) prunes configs that cannot beat the best found so far;
* ``objective="sim"`` (the default) ranks by the simulator's cycle count on the launch's
  own arguments: deterministic, so every run picks the same winner (ties go to the
  earlier config).  ``objective="wall"`` times the CPU backend (warm-up, repetitions,
  the median; the table shows the spread);
* candidates write only to copies of the arguments the kernel stores to, so tuning an
  in-place kernel never changes the caller's data; ``reset_to_zero`` / ``restore_value``
  as in Triton; ``check=`` rejects configs whose result differs from the reference;
* results persist per (kernel code, key values, config, NPU spec, compiler) under
  ``knobs.cache_dir()/autotune`` (jit/tuning.py): adding a config measures only it;
* the sweep runs on any ``concurrent.futures.Executor`` -- by default a process pool
  (``NPUJIT_AUTOTUNE_WORKERS``) when a worker can import the kernel, else in this
  process, with a note; a tqdm progress bar shows on a terminal.

Example::

    @npujit.autotune(configs=[npujit.Config({"BLOCK": 256}), npujit.Config({"BLOCK": 1024})],
                     key=["n"])
    @npu_kernel
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: nl.constexpr): ...

    add[lambda meta: (npujit.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    print(add.best_config, add.tuning_table(), sep="\\n")
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, ThreadPoolExecutor, wait

from npujit import knobs
from npujit.errors import LaunchError, NPUJitError

from .cache_key import compiler_hash, digest, kernel_hash, spec_hash
from .compiler import resolve_spec
from .kernel import NPUKernel
from .trial import (KernelRef, Trial, beaten, copy_array, pack_arg, promising_first,
                    run_trial)
from .tuning import TuningStore, TuningTable, entry_id, export_rows, read_export, warn

OBJECTIVES = ("sim", "wall")
# The columns a trial fills (a stored prune measured again starts from none of them).
MEASURED = ("status", "value", "unit", "bound", "spread", "reason")


class AutotuneError(NPUJitError):
    """No config of an autotuned kernel could run; the message holds the sweep's table."""


class Config:
    """One point of a sweep: meta-parameters passed to the kernel as keyword arguments,
    and ``num_stages`` -- the kernel option giving the stages of every ``nl.range`` that
    does not set its own.  ``num_warps`` is accepted for Triton code and ignored (an AI
    core has no warps).

    Example::

        >>> Config({"BLOCK_M": 64, "BLOCK_N": 128}, num_stages=2)
        Config(BLOCK_M=64, BLOCK_N=128, num_stages=2)
    """

    def __init__(self, kwargs: dict, num_stages: int | None = None,
                 num_warps: int | None = None):
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise TypeError(f"Config takes a dict of meta-parameters by name, e.g. "
                            f"Config({{'BLOCK': 128}}), got {kwargs!r}")
        if num_stages is not None and (not isinstance(num_stages, int) or
                                       isinstance(num_stages, bool) or num_stages < 1):
            raise TypeError(f"Config num_stages must be a positive int or None, "
                            f"got {num_stages!r}")
        self.kwargs = dict(kwargs)
        self.num_stages = num_stages
        self.num_warps = num_warps       # Triton's; no meaning on an NPU

    def options(self) -> dict:
        """The kernel options this config sets (``num_stages``)."""
        return {} if self.num_stages is None else {"num_stages": self.num_stages}

    def all_kwargs(self) -> dict:
        """The meta-parameters and ``num_stages`` / ``num_warps`` when set (Triton's name)."""
        out = dict(self.kwargs)
        out.update({k: v for k, v in (("num_stages", self.num_stages),
                                      ("num_warps", self.num_warps)) if v is not None})
        return out

    @property
    def text(self) -> str:
        """``BLOCK_M=64, BLOCK_N=128, num_stages=2``: how tables show it and rows key it."""
        parts = [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}"
                 for k, v in self.kwargs.items()]
        if self.num_stages is not None:
            parts.append(f"num_stages={self.num_stages}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Config({self.text})"

    def _identity(self) -> tuple:
        return tuple(sorted((k, repr(v)) for k, v in self.kwargs.items())), self.num_stages

    def __eq__(self, other) -> bool:
        return isinstance(other, Config) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())


def autotune(configs, key=(), prune=None, objective: str = "sim", reset_to_zero=(),
             restore_value=(), check=None, executor=None, tolerance=None,
             warmup: int = 2, rep: int = 10):
    """Decorate an ``@npu_kernel`` so its launches pick the best of ``configs``.

    ``configs``: a list of ``Config`` or a callable ``f(named_args) -> list``.
    ``key``: argument names; a new value of any of them (or a new dtype of an array
    argument) tunes again.  ``prune``: ``f(configs, named_args) -> configs`` to keep
    (Triton's ``early_config_prune``).  ``objective``: ``"sim"`` (simulated cycles,
    deterministic) or ``"wall"`` (CPU-backend seconds: ``warmup`` runs, then the median of
    ``rep``).  ``reset_to_zero`` / ``restore_value``: argument names zeroed / restored
    before each candidate run.  ``check``: ``f(*args, **kwargs)`` returning the expected
    output (one array, a tuple in parameter order, or ``{name: array}``); configs that
    differ beyond ``tolerance=(rtol, atol)`` (default by dtype) are rejected.
    ``executor``: a ``concurrent.futures.Executor`` for the sweep (e.g. Dask's
    ``client.get_executor()``); default a process pool.

    Example::

        @npujit.autotune(configs=[npujit.Config({"BLOCK": b}) for b in (128, 512)], key=["n"])
        @npu_kernel
        def scale(x_ptr, out_ptr, n, BLOCK: nl.constexpr): ...
    """
    def wrap(kernel):
        return Autotuner(kernel, configs, key, prune, objective, reset_to_zero,
                         restore_value, check, executor, tolerance, warmup, rep)
    return wrap


class Autotuner:
    """An ``@npu_kernel`` with a sweep of configs; launched like the kernel.

    ``best_config`` is the config the last launch used; ``best_configs`` maps each key
    tuned in this process to its config; ``tuning_table()`` the rows of the sweeps;
    ``export_tuning(path)`` / ``import_tuning(path)`` move stored results between
    machines; ``tune(*args, grid=...)`` sweeps without launching.
    """

    def __init__(self, kernel, configs, key, prune, objective, reset_to_zero, restore_value,
                 check, executor, tolerance, warmup, rep):
        if not isinstance(kernel, NPUKernel):
            raise TypeError("@npujit.autotune decorates an @npu_kernel: put @autotune(...) "
                            f"above @npu_kernel, got {type(kernel).__name__}")
        self.kernel = kernel
        params = kernel.params
        for what, names in (("key", key), ("reset_to_zero", reset_to_zero),
                            ("restore_value", restore_value)):
            if isinstance(names, str):
                raise TypeError(f"autotune {what}= takes a list of argument names, "
                                f"e.g. {what}=[{names!r}]")
            bad = [n for n in names if n not in params]
            if bad:
                raise TypeError(f"autotune {what}= names {', '.join(map(repr, bad))}, not a "
                                f"parameter of kernel '{kernel.name}' "
                                f"({', '.join(params)})")
        if objective not in OBJECTIVES:
            raise ValueError(f"autotune objective must be one of {OBJECTIVES}, "
                             f"got {objective!r}")
        if not callable(configs):
            configs = self._checked(configs)
        self.configs = configs
        self.key = tuple(key)
        self.prune = prune
        self.objective = objective
        self.reset_to_zero = tuple(reset_to_zero)
        self.restore_value = tuple(restore_value)
        self.check = check
        self.executor = executor
        self.tolerance = tuple(tolerance) if tolerance is not None else None
        self.warmup, self.rep = int(warmup), int(rep)
        self.store = TuningStore(kernel.name)
        self.best_config: Config | None = None
        self.best_configs: dict = {}
        self._tables: dict = {}
        self._lock = threading.RLock()
        self._noted = False
        self.__doc__ = kernel.__doc__
        self.__name__ = kernel.name
        self.__wrapped__ = kernel.fn

    def _checked(self, configs) -> list:
        out = []
        for c in list(configs):
            if isinstance(c, dict):
                c = Config(c)
            if not isinstance(c, Config):
                raise TypeError(f"autotune configs must be npujit.Config objects, got {c!r}")
            unknown = [k for k in c.kwargs if k not in self.kernel.params]
            if unknown:
                raise TypeError(f"autotune {c!r}: {', '.join(unknown)} is not a parameter of "
                                f"kernel '{self.kernel.name}' ({', '.join(self.kernel.params)})")
            if c not in out:
                out.append(c)
        if not out:
            raise ValueError(f"autotune of kernel '{self.kernel.name}' got no configs")
        return out

    # --- launching -------------------------------------------------------------------
    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, args, kwargs)

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)       # the kernel's "launch with a grid" error

    def run(self, grid, args, kwargs):
        """Launch on ``grid`` with the best config for these arguments (tuned if new);
        returns the ``CompiledKernel`` that ran."""
        cfg = self._best_for(grid, args, kwargs)
        return self._kernel_for(cfg)[grid](*args, **kwargs, **cfg.kwargs)

    def tune(self, *args, grid, **kwargs) -> Config:
        """The best config for these launch arguments, swept (or read from disk) but not
        launched.

        Example::

            best = tuned.tune(a, b, c, M, N, K, grid=lambda m: (M // m["BLOCK_M"],))
        """
        return self._best_for(grid, args, kwargs)

    def simulate(self, *args, grid, **kwargs):
        """``kernel.simulate`` with the best config for these arguments (tuned if new)."""
        cfg = self._best_for(grid, args, kwargs)
        return self._kernel_for(cfg).simulate(*args, grid=grid, **kwargs, **cfg.kwargs)

    def _kernel_for(self, cfg: Config) -> NPUKernel:
        return self.kernel.with_options(**cfg.options()) if cfg.options() else self.kernel

    def _best_for(self, grid, args, kwargs) -> Config:
        named = self._named(args, kwargs)
        key = self._key_text(named)
        cfg = self.best_configs.get(key)
        if cfg is None:
            with self._lock:
                cfg = self.best_configs.get(key) or self._sweep(grid, args, kwargs, named, key)
        self.best_config = cfg
        return cfg

    def _named(self, args, kwargs) -> dict:
        params = self.kernel.params
        if len(args) > len(params):
            raise LaunchError(f"kernel '{self.kernel.name}' takes {len(params)} arguments "
                              f"({', '.join(params)}) but {len(args)} were given")
        named = dict(zip(params, args))
        named.update(kwargs)
        return named

    def _key_text(self, named: dict) -> str:
        """``M=512, N=512 | a_ptr:float16 ...``: the key values, then the array dtypes."""
        for n in self.key:
            if n not in named and n not in self.kernel.defaults:
                raise LaunchError(f"kernel '{self.kernel.name}' is missing the argument "
                                  f"'{n}' (an autotune key)")
        vals = [f"{n}={_summary(named.get(n, self.kernel.defaults.get(n)))}" for n in self.key]
        dtypes = [f"{p}:{named[p].dtype}" for p in self.kernel.params
                  if hasattr(named.get(p), "dtype") and hasattr(named.get(p), "shape")]
        return ", ".join(vals) + (" | " + " ".join(dtypes) if dtypes else "")

    # --- the sweep -------------------------------------------------------------------
    def _sweep(self, grid, args, kwargs, named, key: str) -> Config:
        configs = self._checked(self.configs(dict(named))) if callable(self.configs) \
            else self.configs
        for c in configs:
            clash = sorted(set(c.kwargs) & set(kwargs))
            if clash:
                raise LaunchError(f"autotuned kernel '{self.kernel.name}' got "
                                  f"{', '.join(clash)} from the call and from {c!r}; leave "
                                  "the tuned meta-parameters out of the launch")
        base = self._base_row(key)
        rows = [dict(base, config=c.text, index=i) for i, c in enumerate(configs)]
        kept = set(range(len(configs)))
        if self.prune is not None:
            chosen = list(self.prune(list(configs), dict(named)))
            kept = {i for i, c in enumerate(configs) if c in chosen}
            for i in sorted(set(range(len(configs))) - kept):
                rows[i].update(status="dropped", reason="dropped by prune=", source="run")
        for i in sorted(kept):
            stored = self.store.load(entry_id(rows[i]))
            if stored is not None:
                rows[i] = dict(stored, index=i,
                               source="import" if stored.get("source") == "import" else "disk")
        best = _best_of(rows)
        todo = [i for i in sorted(kept) if rows[i].get("status") is None or
                (rows[i]["status"] == "pruned" and
                 (best is None or not beaten(rows[i]["bound"], i, best)))]
        if todo:
            self._measure(todo, configs, rows, grid, args, kwargs)
        best = _best_of(rows)
        for r in rows:
            r["best"] = best is not None and r["index"] == best[1]
        self._tables[key] = rows
        if best is None:
            raise AutotuneError(f"no config of autotuned kernel '{self.kernel.name}' ran for "
                                f"{key}:\n{_table(rows)}")
        cfg = configs[best[1]]
        self.best_configs[key] = cfg
        return cfg

    def _base_row(self, key: str) -> dict:
        spec = resolve_spec(self.kernel.options.get("spec"))
        objective = self.objective
        if objective == "wall":
            objective = f"wall ({self.kernel.options.get('backend') or knobs.backend()})"
        check = None
        if self.check is not None:
            try:
                code = kernel_hash(self.check)
            except Exception:          # not plain Python code: its name stands for it
                code = ""
            check = digest(getattr(self.check, "__qualname__", repr(self.check)), code,
                           self.tolerance)
        opts = self.kernel._options()
        opts.pop("spec", None)
        if self.objective == "sim":         # simulated cycles do not depend on these
            for k in ("backend", "parallel", "bounds_check"):
                opts.pop(k, None)
        return {**dict.fromkeys(MEASURED + ("source",)), "best": False,
                "kernel": self.kernel.name, "kernel_hash": kernel_hash(self.kernel),
                "compiler_hash": compiler_hash(), "spec": spec.name,
                "spec_hash": spec_hash(spec),
                "options": ", ".join(f"{k}={v}" for k, v in sorted(opts.items())),
                "objective": objective, "check": check, "key": key}

    def _measure(self, todo, configs, rows, grid, args, kwargs) -> None:
        expected = None
        if self.check is not None:
            expected = self.check(*[_copy(a) for a in args],
                                  **{k: _copy(v) for k, v in kwargs.items()})
        executor, kernel = self._executor(len(todo))
        env = {k: v for k, v in os.environ.items() if k.startswith("NPUJIT_")}

        def grid_of(i):
            bound = self.kernel.signature.bind(args, {**kwargs, **configs[i].kwargs})
            return self.kernel.signature.grid(grid, bound)

        def trial(i):
            cfg = configs[i]
            try:
                g = grid_of(i)
            except LaunchError as e:
                return None, {"status": "failed", "reason": str(e).splitlines()[0]}
            remote = executor is not None and not isinstance(executor, ThreadPoolExecutor)
            return Trial(kernel, i, cfg, g, tuple(pack_arg(a) if remote else a for a in args),
                         {k: pack_arg(v) if remote else v for k, v in kwargs.items()},
                         self.objective, _best_of(rows), expected, self.tolerance,
                         self.reset_to_zero, self.restore_value, self.warmup, self.rep,
                         {"env": env} if remote else {}), None

        def record(i, result: dict, keep: bool = True) -> None:
            rows[i].update(dict.fromkeys(MEASURED), **result, source="run")
            if keep and rows[i]["status"] != "failed":
                self.store.save({k: v for k, v in rows[i].items() if k not in ("index", "best")})
            if bar is not None:
                bar.update(1)

        bar = progress_bar(len(todo), f"autotune {self.kernel.name}")
        try:
            queue = list(todo)
            if self.objective == "sim" and len(queue) > 2:
                queue = promising_first(self.kernel, queue, configs, grid_of,
                                        self._named(args, kwargs))
            if executor is not None:
                queue = self._run_on(executor, queue, trial, record)
            for i in queue:                     # in this process (or what a broken pool left)
                t, failed = trial(i)
                record(i, failed or run_trial(t))
        finally:
            if bar is not None:
                bar.close()

    def _run_on(self, executor, queue: list, trial, record) -> list:
        """Run ``queue``'s trials on ``executor``, a window of them at a time (so each is
        pruned against the best known when it starts); returns what is left if the
        executor broke."""
        window = getattr(executor, "_max_workers", None) or 2 * (os.cpu_count() or 1)
        pending: dict = {}
        queue = list(queue)
        while queue or pending:
            while queue and len(pending) < window:
                i = queue.pop(0)
                t, failed = trial(i)
                if failed is not None:
                    record(i, failed)
                    continue
                try:
                    pending[executor.submit(run_trial, t)] = i
                except (BrokenExecutor, RuntimeError) as e:
                    return self._broken(e, [i] + queue + list(pending.values()))
            if not pending:
                break
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in done:
                i = pending.pop(fut)
                try:
                    record(i, fut.result())
                except BrokenExecutor as e:
                    return self._broken(e, [i] + queue + list(pending.values()))
                except Exception as e:          # the executor's fault, not the config's
                    record(i, {"status": "failed",
                               "reason": f"the executor raised {type(e).__name__}: {e}"},
                           keep=False)
        return []

    def _broken(self, e: BaseException, left: list) -> list:
        global _POOL
        warn(f"autotune of kernel '{self.kernel.name}': the executor broke ({e}); the "
             f"{len(left)} configs left run in this process")
        with _POOL_LOCK:
            if self.executor is None:           # ours: the next sweep starts a new pool
                broken, _POOL = _POOL, None
                if broken is not None:
                    broken.shutdown(wait=False, cancel_futures=True)
        return sorted(left)

    def _executor(self, n: int):
        """``(executor or None, kernel as the trials get it)``."""
        if self.objective == "wall":
            return None, self.kernel            # timing in parallel would time contention
        ex = self.executor
        # a pool's worker never starts a pool of its own (a script without a __main__
        # guard runs again in each worker)
        if ex is None and (knobs.autotune_workers() <= 0 or n < 2 or
                           multiprocessing.parent_process() is not None):
            return None, self.kernel
        if isinstance(ex, ThreadPoolExecutor):
            return ex, self.kernel
        ref, why = self._kernel_ref()
        if ref is None:
            if not self._noted:
                self._noted = True
                warn(f"autotune: kernel '{self.kernel.name}' {why}, so a worker process "
                     "cannot import it; the sweep runs in this process. Define the kernel "
                     "in an importable module to tune it in parallel")
            return None, self.kernel
        return (ex if ex is not None else default_pool(knobs.autotune_workers())), ref

    def _kernel_ref(self):
        fn = self.kernel.fn
        module, qualname = fn.__module__, fn.__qualname__
        if module == "__main__":
            return None, "is defined in __main__ (a script run directly, or a notebook)"
        if "<locals>" in qualname:
            return None, "is defined inside a function"
        mod = sys.modules.get(module)
        if mod is None or getattr(mod, "__spec__", None) is None:
            return None, f"is defined in module {module!r}, which cannot be imported by name"
        obj = mod
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if getattr(getattr(obj, "kernel", obj), "fn", None) is not fn:
            return None, f"is not reachable as {module}.{qualname}"
        options = tuple(sorted(self.kernel.options.items()))
        return KernelRef(module, qualname, options, kernel_hash(self.kernel),
                         compiler_hash()), None

    # --- tables ----------------------------------------------------------------------
    def tuning_table(self, stored: bool = False) -> TuningTable:
        """The rows of every sweep this process ran or read (config order, per key); with
        ``stored=True``, every row on disk for this kernel's current code, compiler and
        spec.  ``print(table)`` shows it; ``table.to_csv(path)`` writes CSV.

        Example::

            >>> print(tuned.tuning_table())      # doctest: +SKIP
        """
        if not stored:
            rows = [{k: v for k, v in r.items() if k != "index"}
                    for table in self._tables.values() for r in table]
            return TuningTable(rows)
        base = self._base_row("")
        rows = [r for r in self.store.rows() if all(
            r.get(h) == base[h] for h in ("kernel_hash", "compiler_hash", "spec_hash"))]
        return TuningTable(sorted(rows, key=lambda r: (r["key"], r["objective"], r["config"])))

    def export_tuning(self, path: str) -> int:
        """Write every stored row of this kernel's current code and this compiler (any key,
        any spec) to ``path`` (JSON); returns how many.

        Example::

            >>> tuned.export_tuning("matmul-tuning.json")     # doctest: +SKIP
            64
        """
        mine, compiler = kernel_hash(self.kernel), compiler_hash()
        rows = [r for r in self.store.rows()
                if r.get("kernel_hash") == mine and r.get("compiler_hash") == compiler]
        return export_rows(sorted(rows, key=lambda r: (r["key"], r["config"])), path,
                           self.kernel.name)

    def import_tuning(self, path: str, strict: bool = True) -> int:
        """Store the rows of a file ``export_tuning`` wrote, so launches with those keys
        and configs need no measuring; returns how many were imported.  Rows of other
        kernel code are skipped; rows of another compiler version too unless
        ``strict=False`` (then they count as this compiler's).

        Example::

            >>> tuned.import_tuning("matmul-tuning.json")     # doctest: +SKIP
            64
        """
        mine, compiler = kernel_hash(self.kernel), compiler_hash()
        skipped: Counter = Counter()
        n = 0
        for r in read_export(path, self.kernel.name):
            if r["kernel_hash"] != mine:
                skipped["another version of the kernel's code"] += 1
                continue
            if r["compiler_hash"] != compiler:
                if strict:
                    skipped["another compiler version (strict=False takes them)"] += 1
                    continue
                r = dict(r, compiler_hash=compiler)
            if r["status"] in ("failed", "dropped"):
                continue
            self.store.save({k: v for k, v in r.items()
                             if k not in ("entry", "index", "best")} | {"source": "import"})
            n += 1
        if skipped:
            warn(f"import_tuning({path!r}): skipped " + "; ".join(
                f"{c} rows of {why}" for why, c in skipped.items()))
        with self._lock:
            self.best_configs.clear()
        return n

    def __getattr__(self, name):
        if name == "kernel":
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def __repr__(self) -> str:
        return f"<autotuned npu_kernel {self.kernel.name}>"


def _best_of(rows) -> tuple | None:
    """``(value, index)`` of the best measured row (ties: the earlier config)."""
    ok = [(r["value"], r["index"]) for r in rows if r.get("status") == "ok"]
    return min(ok) if ok else None


def _summary(v) -> str:
    if hasattr(v, "shape") and hasattr(v, "dtype") and getattr(v, "ndim", 0) > 0:
        return f"{v.dtype}[{'x'.join(str(d) for d in v.shape)}]"
    v = getattr(v, "value", v)                  # an nl.constexpr
    return repr(v.item() if hasattr(v, "item") else v)   # np.int64(512) keys as 512


def _copy(v):
    return copy_array(v) if hasattr(v, "shape") and hasattr(v, "dtype") else v


def _table(rows) -> str:
    return str(TuningTable([{k: v for k, v in r.items() if k != "index"} for r in rows]))


def progress_bar(total: int, desc: str, stream=None):
    """A tqdm bar on ``stream`` (default stderr) when it is a terminal and
    ``NPUJIT_AUTOTUNE_PROGRESS`` is not 0; else None."""
    stream = sys.stderr if stream is None else stream
    if not knobs.autotune_progress() or not getattr(stream, "isatty", lambda: False)():
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="config", file=stream, leave=False)


# --- the default pool ------------------------------------------------------------------------

_POOL = None
_POOL_LOCK = threading.Lock()


def default_pool(workers: int):
    """The process pool sweeps use when no executor is given (one per process, reused).
    Workers come from a fork server that has imported npujit once, so each starts fast
    and none inherits the caller's threads."""
    global _POOL
    from concurrent.futures import ProcessPoolExecutor
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers != workers:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["npujit.jit.trial"])
            _POOL = ProcessPoolExecutor(workers, mp_context=ctx)
        return _POOL
