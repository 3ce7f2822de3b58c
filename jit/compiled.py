"""``CompiledKernel``: one compiled specialisation as data, runnable on demand.

What it holds is plain data -- the scheduled IR text, every stage's artifact text, the
launch metadata (the parameter list, per-parameter signatures, the positions of the run-
time arguments, the arguments the kernel stores to, the globals it read, the options) --
so it pickles into a disk cache or a process pool.  The runnable is built lazily, the
first time it is needed: from the backend's own artifact when the backend kept one
(numba: the generated module's source and argument types; ``Backend.load``), else the
scheduled IR text is parsed back (``npujit.ir.parser``) and handed to the backend; its
disk cache (numba: machine code beside the generated source) makes either cheap in a
process that has seen the kernel before.

Example::

    >>> c = add_kernel.compile(x, y, out, n, BLOCK=1024)      # doctest: +SKIP
    >>> c[(4,)](x, y, out, n)                                 # doctest: +SKIP
    >>> print(c.asm["schedule"])                              # doctest: +SKIP
    >>> c2 = pickle.loads(pickle.dumps(c)); c2[(4,)](x, y, out, n)   # doctest: +SKIP
"""
from __future__ import annotations

import threading
from collections.abc import Mapping

from npujit.backends import get_backend
from npujit.errors import LaunchError

from .signature import KernelSignature


class CompiledKernel:
    """A compiled specialisation: ``c[grid](*args)`` or ``c.run(grid, *args)`` launches it
    with the kernel's arguments (constexprs may be left out; given, they must be the
    compiled ones).  ``c.ir`` is the scheduled IR function, ``c.artifacts`` (alias
    ``c.asm``) every stage's text: ``trace``, ``ir``, ``schedule``, ``buffers``,
    ``backend`` (generated source, if the backend has one).
    """

    def __init__(self, signature: KernelSignature, sigs: tuple, constexprs: dict,
                 options: dict, ir_text: str, artifacts: dict, stores: dict,
                 global_reads: list, fn=None, artifact_key: str | None = None):
        self.name = signature.name
        self.signature = signature
        self.sigs = sigs
        self.constexprs = dict(constexprs)
        self.runtime_index = signature.runtime_index(sigs)
        self.options = dict(options)
        self.backend = options["backend"]
        self.ir_text = ir_text            # the scheduled IR, with source locations
        self._artifacts = dict(artifacts)
        self.stores = dict(stores)        # {argument: (file, line) of its first store}
        self.global_reads = list(global_reads)
        self.artifact_key = artifact_key  # the backend's cache key, once built
        self._init_live(fn)

    def _init_live(self, fn) -> None:
        self._fn = fn
        self._runnable = None
        self._lock = threading.Lock()
        # the backend's own artifact, data (numba: the generated module and its argument
        # types): a process that unpickles this kernel rebuilds its runnable from it
        # without parsing the IR (``Backend.load``)
        self.__dict__.setdefault("_backend_artifact", None)

    # --- pickling: data only; the runnable is rebuilt on demand -----------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        for live in ("_fn", "_runnable", "_lock"):
            del state[live]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_live(None)

    def renamed(self, name: str) -> "CompiledKernel":
        """This specialisation under another ``name`` (what Triton's ``jit(repr=)`` calls a
        compiled kernel): a copy that shares the compiled code and the artifacts."""
        c = object.__new__(CompiledKernel)
        c.__dict__.update(self.__dict__)
        c.name = name
        return c

    # --- stages ---------------------------------------------------------------------
    @property
    def ir(self):
        """The scheduled IR ``Function`` (parsed from ``ir_text`` after unpickling)."""
        if self._fn is None:
            from npujit.ir.parser import parse_function   # (it imports the scheduler)
            self._fn = parse_function(self.ir_text)
        return self._fn

    def runnable(self):
        """The backend's ``run(grid, args)``, built once (threads wait for the builder)."""
        r = self._runnable
        if r is None:
            with self._lock:
                r = self._runnable
                if r is None:
                    r = self._build_runnable()
                    source = getattr(r, "source", None)
                    self._artifacts["backend"] = source
                    path = getattr(r, "path", None)
                    self.artifact_key = path or self.artifact_key
                    self._runnable = r
        return r

    def _build_runnable(self):
        backend = get_backend(self.backend)
        load = getattr(backend, "load", None)
        r = None
        if load is not None and self._backend_artifact is not None:
            r = load(self._backend_artifact, self.options)
        if r is None:
            r = backend.compile(self.ir, self.options)
        elif getattr(r, "rebuild", False) is None:     # a loaded build: its IR is here
            r.rebuild = lambda options: backend.compile(self.ir, options)
        self._backend_artifact = getattr(r, "artifact", None)
        return r

    @property
    def artifacts(self) -> dict:
        """Every stage's artifact text (builds the backend stage if not yet built)."""
        if "backend" not in self._artifacts:
            self.runnable()
        return dict(self._artifacts)

    @property
    def asm(self) -> "Asm":
        """Triton's ``compiled.asm``: every stage's artifact (as ``artifacts``), plus the
        backend's source under its own name (``numba``, which is also ``python``), the
        numba backend's LLVM IR and host assembly (``llir``, ``native``) and the emitted
        Ascend C kernel (``ascendc``); the last three are made when first read, and the
        Ascend C is absent when an op of the kernel cannot be emitted yet."""
        return Asm(self)

    def artifact(self, stage: str) -> str | None:
        """One stage's artifact (``trace``, ``ir``, ``schedule``, ``buffers``, ``backend``);
        only ``backend`` needs the backend stage built."""
        if stage == "backend":
            self.runnable()
        if stage not in self._artifacts:
            raise KeyError(f"no compile stage '{stage}'; stages: {', '.join(self._artifacts)}")
        return self._artifacts[stage]

    # --- launching --------------------------------------------------------------------
    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, *args, **kwargs)

    def run(self, grid, *args, **kwargs) -> None:
        """Launch on ``grid`` with the kernel's arguments (same order and names as a
        ``kernel[grid](...)`` launch)."""
        sig = self.signature
        args_kw = dict(kwargs)
        for p, v in self.constexprs.items():     # constexprs may be left out
            if p not in args_kw and sig.params.index(p) >= len(args):
                args_kw[p] = v
        bound = sig.bind(args, args_kw)
        sigs, constexprs = sig.specialize(bound)
        if sigs != self.sigs:
            raise LaunchError(self._mismatch(sigs))
        g = sig.grid(grid, bound)
        self.check_globals()
        self.check_writeable(bound)
        if 0 in g:
            return  # a grid with no programs launches nothing (the arguments were checked)
        self.launch(g, sig.runtime_args(self.sigs, self.runtime_index, bound))

    def launch(self, grid3: tuple, rt_args: list) -> None:
        """Run with a validated 3-int grid and backend-ready runtime arguments."""
        (self._runnable or self.runnable())(grid3, rt_args)

    def _mismatch(self, sigs: tuple) -> str:
        for p, want, got in zip(self.signature.params, self.sigs, sigs):
            if want != got:
                if want and want[0] == "C":
                    return (f"kernel '{self.name}' was compiled with {p}={want[1]!r}, "
                            f"got {got[1]!r}; compile it again for that value")
                return (f"argument '{p}' of compiled kernel '{self.name}': compiled for "
                        f"{_describe(want)}, got {_describe(got)}; compile the kernel for "
                        "these arguments (kernel.compile(...)) or launch the kernel itself")
        return f"the arguments do not match compiled kernel '{self.name}'"

    def check_globals(self) -> None:
        """LaunchError if a global the kernel read changed since it was compiled."""
        for r in self.global_reads:
            r.check(self.name)

    def check_writeable(self, bound: dict) -> None:
        """A read-only array passed where the kernel stores is a LaunchError."""
        for name, (file, line) in self.stores.items():
            flags = getattr(bound.get(name), "flags", None)
            if flags is not None and not flags.writeable:
                raise LaunchError(f"argument '{name}' is read-only, but kernel '{self.name}' "
                                  f"stores to it at {file}:{line}; pass a writeable "
                                  "array (np.array(x) makes a copy)")

    def read_globals(self) -> dict:
        """``{label: value}`` of the globals this specialisation read when compiled."""
        return {r.label: r.export() for r in self.global_reads if not r.is_helper}

    def __repr__(self) -> str:
        cx = ", ".join(f"{k}={v!r}" for k, v in self.constexprs.items())
        return f"<CompiledKernel {self.name}({cx}) on {self.backend}>"


def _describe(sig) -> str:
    if sig is None:
        return "None"
    if sig[0] == "A":
        layout = {True: "contiguous", "F": "column-major"}.get(sig[3], "strided")
        return f"a {layout} {sig[1]} array of rank {sig[2]}"
    if sig[0] == "S":
        return f"a scalar of type {sig[1]}"
    return repr(sig[1])


# Triton's GPU compile stages, named in the error when a Triton test reads one
_GPU_STAGES = {"ttir": "Triton IR", "ttgir": "Triton GPU IR", "ptx": "NVIDIA PTX", "cubin": "NVIDIA binary", "amdgcn": "AMD GCN assembly",
               "hsaco": "AMD binary", "spv": "SPIR-V", "source": "Triton's MLIR source"}


# the numba backend's own stages (backends/numba/native.py), named when another backend ran
_NUMBA_STAGES = ("llir", "native")


class Asm(Mapping):
    """``CompiledKernel.asm``: read-only stage name -> text.

    Example::

        >>> c = add.warmup(x, y, out, n, BLOCK=1024, grid=(4,))       # doctest: +SKIP
        >>> sorted(c.asm)                                              # doctest: +SKIP
        ['ascendc', 'backend', 'buffers', 'ir', 'llir', 'native', 'numba', 'python', 'schedule', 'trace']
    """

    def __init__(self, compiled: CompiledKernel):
        self._c = compiled
        self._stages = compiled.artifacts
        source = self._stages.get("backend")
        if isinstance(source, str):
            self._stages[compiled.backend] = source
            if compiled.backend == "numba":
                self._stages["python"] = source

    def __getitem__(self, stage: str) -> str:
        if stage in self._stages:
            return self._stages[stage]
        if stage == "ascendc":
            from npujit.backends.ascendc import emit_files
            try:
                files, info = emit_files(self._c.ir)
            except NotImplementedError as e:
                raise KeyError(f"no Ascend C for kernel '{self._c.name}': {e}") from None
            self._stages[stage] = files[f"{info.entry}.cpp"]
            return self._stages[stage]
        if stage in self._backend_stages():
            self._stages[stage] = self._c.runnable().stage(stage)
            return self._stages[stage]
        if stage in _NUMBA_STAGES:
            raise KeyError(f"no compile stage {stage!r} for kernel '{self._c.name}' on the "
                           f"{self._c.backend} backend: it is a stage of the numba backend "
                           "(kernel.with_options(backend='numba') makes it)")
        if stage in _GPU_STAGES:
            raise KeyError(f"no compile stage {stage!r}: it is a stage of Triton's GPU "
                           f"compiler ({_GPU_STAGES[stage]}); npujit compiles for an NPU, its "
                           f"stages are: {', '.join(self)}")
        raise KeyError(f"no compile stage {stage!r}; stages: {', '.join(self)}")

    def _backend_stages(self) -> tuple:
        """The backend's own stages beyond its source, made when read (numba: ``llir``,
        ``native``)."""
        return tuple(getattr(type(self._c.runnable()), "STAGES", ()))

    def __iter__(self):
        lazy = [s for s in ("ascendc", *self._backend_stages()) if s not in self._stages]
        return iter([*self._stages, *lazy])

    def __len__(self) -> int:
        return len(list(iter(self)))
