"""Compile generated source with numba, keep it on disk, and launch grids cheaply.

The source is written to ``<cache_dir>/numba/<sha256 of the source>.py`` (atomically;
skipped when the file already holds the source, rewritten when it is damaged) and run
as a module whose functions are ``njit(cache=True)``: numba keeps their machine code in
``__pycache__`` beside the file, so another process skips LLVM entirely; disk_cache.py
keeps those files checksummed and rebuilds damaged ones.  The source embeds a hash of
this package's own files, so editing a helper can never serve stale machine code.
Without a usable cache directory (``NPUJIT_DISABLE_CACHE=1``, or one that cannot be
written or trusted: npujit/cache_dir.py) the source says ``cache=False``, is exec'd in
memory, and nothing is written.

``Launcher`` is the ``run(grid, args)`` the backend returns.  At compile time it fixes
the numba signature (so a wrong argument dtype is an error, not a silent recompile) and
a per-argument conversion plan; a launch only views half-float arrays as uint16, checks
the grid and calls the compiled function (a trivial kernel: ~3.5 us per launch).

Parallelism is Python threads running contiguous chunks of the grid through the one
``nogil`` function, not numba's ``prange``: measured on the row softmax kernel, a
``parallel=True`` variant compiled in 0.85 s against 0.27 s and ran 2.7 ms against
3.2 ms on 2 threads; handing chunks to threads costs ~30 us, so a kernel only goes
parallel when its launches are slow and a probe shows threads faster
(backends/threads.py).

Example::

    >>> ksrc = generate(fn, {})                                    # doctest: +SKIP
    >>> run = Launcher(import_source(ksrc.text, True), ksrc, {})      # doctest: +SKIP
    >>> run((4, 1, 1), [x, y, 4096])                                # doctest: +SKIP
    >>> print(run.source)                                           # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import linecache
import os
import sys
import threading
import types as pytypes
from dataclasses import dataclass

import numba
import numpy as np
from numba import types as nt

from npujit.errors import IndexOverflowError, OutOfBoundsError
from npujit.ir.types import PtrType
from npujit import cache_dir

from npujit.backends.threads import ThreadChoice, on_threads as _on_threads

from . import disk_cache, native

_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class KernelSource:
    """Generated module text and what the launcher needs to know about it (codegen.py
    makes it): plain data, kept in the kernel cache's entry so a later process launches
    the kernel without its IR and without importing the code generator."""

    text: str
    entry: str           # name of the function that runs programs first..last-1
    has_atomics: bool
    name: str = "kernel"                 # the kernel's name, for messages
    arg_types: tuple = ()                # the IR types of the entry's arguments, in order
    arg_names: tuple = ()
    built_with: tuple | None = None      # the backend's options key (backend.py)
_backend_hash: str | None = None


def backend_hash() -> str:
    """sha256 over this package's sources and the numba version (part of every key)."""
    global _backend_hash
    if _backend_hash is None:
        _backend_hash = cache_dir.sources_hash(_HERE, numba.__version__)
    return _backend_hash


# Modules whose code has finished running, by name.  ``sys.modules`` alone is not the
# registry: a module is put there before its code runs (numba's cache locates functions
# through it), so another thread finding it there could see it half-defined.  A module
# imported from disk that is later dropped from ``sys.modules`` is imported again.
_loaded: dict = {}
_loading_locks: dict = {}
_registry_lock = threading.Lock()


def import_source(text: str, cache: bool) -> pytypes.ModuleType:
    """The module defined by ``text``: from the disk cache when ``cache``, else exec'd in
    memory (its lines registered with linecache so tracebacks show them).  Thread-safe:
    one thread runs a module's code, the others wait for it and get the same module."""
    sha = hashlib.sha256(text.encode()).hexdigest()
    modname = f"npujit_numba_{sha[:24]}"
    mod = _finished(modname)
    if mod is not None:
        return mod
    with _registry_lock:
        lock = _loading_locks.setdefault(modname, threading.Lock())
    with lock:
        mod = _finished(modname)
        if mod is None:
            mod = _run_module(text, sha, modname, cache)
            _loaded[modname] = mod
    return mod


def _finished(modname: str):
    mod = _loaded.get(modname)
    if mod is None or (os.path.isabs(mod.__file__) and sys.modules.get(modname) is not mod):
        return None      # a file-backed module must still be the imported one
    return mod


def _run_module(text: str, sha: str, modname: str, cache: bool) -> pytypes.ModuleType:
    d = cache_dir.current() if cache else None
    if d is None:
        filename = f"<npujit-numba-{sha[:12]}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        mod = pytypes.ModuleType(modname)
        mod.__file__ = filename
        exec(compile(text, filename, "exec"), mod.__dict__)
        return mod
    return disk_cache.load_module(d, text, sha, modname)


def _storage(dtype) -> np.dtype:
    """The numpy dtype the kernel sees for a pointer of ``dtype`` (narrow floats as bits)."""
    return np.dtype(f"uint{dtype.bits}") if dtype.is_narrow_float else dtype.np


def _numba_arg_type(t):
    if isinstance(t, PtrType):
        return nt.Array(numba.from_dtype(_storage(t.dtype)), 1, "C")
    d = t.dtype
    if d.is_unsigned:
        return nt.uint64
    return nt.boolean if d.is_bool else (nt.float64 if d.is_float else nt.int64)


def _converter(t, name: str, kernel: str):
    """What a launch does to one argument before the call (None: nothing)."""
    if isinstance(t, PtrType):
        if not t.dtype.is_narrow_float:
            return None  # the compiled signature checks these
        want, storage = t.dtype.np, _storage(t.dtype)

        def bits(a):
            if getattr(a, "dtype", None) != want:
                raise TypeError(f"{kernel}: argument {name!r} must be a 1-D {want} array, got "
                                f"{getattr(a, 'dtype', type(a).__name__)}")
            return a.view(storage)
        return bits
    d = t.dtype
    if d.name == "f16":
        return lambda x: float(np.float16(x))  # one rounding, from the double
    if d.name == "bf16":
        import ml_dtypes
        return lambda x: float(ml_dtypes.bfloat16(x))
    return None  # a Python int, float or bool already (backends/base.py): numba takes it


# A recording run (``Launcher.record``, for the simulator) goes on threads from this many
# programs per thread: below it the hand-off costs more than the programs.
RECORD_THREADED_FROM = 64


class Launcher:
    """``run(grid, args)`` for one compiled kernel; ``source`` is the generated module.

    Programs run serially in the calling thread until launches take long enough and a
    probe shows threads faster (backends/threads.py ``ThreadChoice``: the grid cut into
    chunks that threads take in turn; the compiled function releases the GIL).  Kernels
    with atomics, and ``parallel=False``, always run serially; ``parallel=True`` uses
    threads at once.
    """

    # the stages ``stage`` makes, beyond the generated source (jit/compiled.py Asm)
    STAGES = native.STAGES

    def __init__(self, module, ksrc, options: dict):
        self.source = ksrc.text
        self.artifact = ksrc             # data: NumbaBackend.load rebuilds this launcher
        self._module = module
        path = getattr(module, "__file__", None)
        self.path = path if path and os.path.isfile(path) else None   # None: not on disk
        self.name = ksrc.name
        self._entry = getattr(module, ksrc.entry)
        self._oob_sites = getattr(module, "OOB_SITES", ())
        self._arg_types = list(ksrc.arg_types)
        self._arg_names = list(ksrc.arg_names)
        convs = [_converter(t, n, ksrc.name) for t, n in zip(self._arg_types, self._arg_names)]
        self._convs = convs if any(c is not None for c in convs) else None
        self.has_atomics = ksrc.has_atomics
        self.jit = hasattr(self._entry, "compile")
        # serial or threaded, chosen per launch (backends/threads.py)
        self._choice = ThreadChoice.for_options(options, not ksrc.has_atomics and self.jit)
        self.threads = self._choice.threads
        self.parallel = self._choice.fixed is not False
        self._sig = (nt.int64,) * 5 + tuple(_numba_arg_type(t) for t in self._arg_types)
        self._native = None           # the llir / native stages, when read
        self.recording = bool(options.get("record"))
        if self.recording:          # the growing event array (backends/numba/record.py)
            self._sig += (nt.int64[::1],)
        if self.jit:
            disk_cache.compile_signature(module, self._entry, self._sig)

    @property
    def signature(self) -> tuple:
        """The numba argument types the entry function is compiled for."""
        return self._sig

    def stage(self, name: str) -> str:
        """A numba stage's text (``llir``, ``native``: backends/numba/native.py), made
        the first time one is read."""
        if self._native is None:
            self._native = native.native_stages(self)
        return self._native[name]

    def __call__(self, grid, args):
        g0, g1, g2 = grid
        if g0 <= 0 or g1 <= 0 or g2 <= 0:
            raise ValueError(f"{self.name}: grid {tuple(grid)} must be positive in every axis")
        if self._convs is not None:
            args = [a if c is None else c(a) for c, a in zip(self._convs, args)]
        total = g0 * g1 * g2
        try:
            try:
                if total == 1 or not self.parallel:    # serial, nothing to time: the entry
                    self._entry(g0, g1, g2, 0, total, *args)
                else:
                    self._launch(g0, g1, g2, total, args)
            except TypeError:
                if not self._compile_variant(args):
                    raise
                self._launch(g0, g1, g2, total, args)
        except (OutOfBoundsError, IndexOverflowError) as e:
            raise self._located(e) from None

    def record(self, grid, args) -> np.ndarray:
        """Run every program of ``grid`` in order and return the recorded events as an
        ``(n, 4)`` int64 array (compiled with ``record=True``; see record.py)."""
        if not self.recording:
            raise RuntimeError(f"{self.name} was not compiled with record=True")
        g0, g1, g2 = grid
        if g0 <= 0 or g1 <= 0 or g2 <= 0:
            raise ValueError(f"{self.name}: grid {tuple(grid)} must be positive in every axis")
        if self._convs is not None:
            args = [a if c is None else c(a) for c, a in zip(self._convs, args)]
        total = g0 * g1 * g2
        n = min(self.threads, total // RECORD_THREADED_FROM)
        try:
            if n < 2 or self.has_atomics or not self.jit:
                rec, k = self._entry(g0, g1, g2, 0, total, *args, np.empty(4096, np.int64))
                return rec[:k].reshape(-1, 4)
            return self._record_threads(g0, g1, g2, total, args, n)
        except (OutOfBoundsError, IndexOverflowError) as e:
            raise self._located(e) from None

    def _record_threads(self, g0, g1, g2, total, args, n) -> np.ndarray:
        """``record`` on ``n`` threads (``_on_threads``), each piece of the grid recording
        its own events; the pieces' events joined in grid order are the serial run's
        (programs record independently; kernels with atomics stay serial).  A failing
        piece's error is raised, the first in grid order when several fail."""
        recs: dict = {}
        errors: dict = {}
        entry = self._entry

        def piece(c, lo, hi) -> bool:
            if errors:
                return False
            try:
                rec, k = entry(g0, g1, g2, lo, hi, *args, np.empty(4096, np.int64))
            except Exception as e:      # noqa: BLE001 - re-raised below, in grid order
                errors[c] = e
                return False
            recs[c] = rec[:k]
            return True
        _on_threads(n, total, piece)
        if errors:
            raise errors[min(errors)]
        return np.concatenate([recs[c] for c in sorted(recs)]).reshape(-1, 4)

    def _located(self, e):
        """A range-check error raised with its site number, given the site's message."""
        if isinstance(e, IndexOverflowError):       # check_lib.index_overflow's (site, ...)
            if not (e.args and isinstance(e.args[0], int)):
                return e
            return IndexOverflowError(self._oob_sites[e.args[0]] % e.args[1:])
        if e.site is None:
            return e
        return OutOfBoundsError(self._oob_sites[e.site], *e.values)

    def _launch(self, g0, g1, g2, total, args) -> None:
        def run(threaded: bool) -> None:
            if threaded:
                self._launch_threads(g0, g1, g2, total, args)
            else:
                self._entry(g0, g1, g2, 0, total, *args)
        self._choice.launch(run)

    def _launch_threads(self, g0, g1, g2, total, args) -> None:
        entry = self._entry

        def piece(c, lo, hi) -> bool:
            entry(g0, g1, g2, lo, hi, *args)
            return True
        _on_threads(min(self.threads, total), total, piece)

    def _compile_variant(self, args) -> bool:
        """After a TypeError from the dispatcher: name the bad argument, or compile the
        variant for a non-contiguous array of the right dtype and return True."""
        if len(args) != len(self._arg_types):
            raise TypeError(f"{self.name} takes {len(self._arg_types)} arguments "
                            f"({', '.join(self._arg_names)}), got {len(args)}") from None
        for name, t, a in zip(self._arg_names, self._arg_types, args):
            if isinstance(t, PtrType):
                want = _storage(t.dtype)
                if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype != want:
                    got = (f"{a.dtype} array of rank {a.ndim}" if isinstance(a, np.ndarray)
                           else type(a).__name__)
                    raise TypeError(f"{self.name}: argument {name!r} must be a 1-D "
                                    f"{t.dtype.np} array, got {got}") from None
        if not self.jit:
            return False
        sig = self._sig[:5] + tuple(numba.typeof(a) for a in args)
        disk_cache.compile_signature(self._module, self._entry, sig)
        return True
