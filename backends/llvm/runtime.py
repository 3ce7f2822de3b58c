"""LLVM IR text -> machine code (llvmlite) -> ``run(grid, args)``.

``build(src)`` parses and verifies the module, optimises it (O2, ``_tuning``) for this CPU
and emits an object file; ``Launcher`` loads the object into an MCJIT engine and calls
its entry through ctypes (which releases the GIL for the call).  The object code is part
of the launcher's ``artifact`` (plain data), which the kernel cache keeps
(jit/compiled.py), so a later process loads it without generating or compiling
anything -- and without importing numba.  An artifact built by another version of this
backend, another llvmlite or for another CPU is not loaded (``built_for``).

A launch checks what the compiled code cannot: the grid, each pointer argument's dtype,
rank and contiguity, scalar ranges, and arguments longer than the kernel's int32 offsets
reach.  Programs run on the calling thread, one after another.

Example::

    >>> run = Launcher(build(generate(fn, {})), {})       # doctest: +SKIP
    >>> run((4, 1, 1), [x, y, out, 4096])                 # doctest: +SKIP
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from dataclasses import dataclass

import numpy as np

from npujit import cache_dir, errors
from npujit.ir.types import PtrType

from .lower import ENTRY, LlvmSource

_HERE = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_machine = None
_backend_hash: str | None = None

_SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_int64] * 5),
                              *([ctypes.c_void_p] * 5))


def backend_hash() -> str:
    """sha256 over this package's sources (part of every artifact's ``built_for``)."""
    global _backend_hash
    if _backend_hash is None:
        _backend_hash = cache_dir.sources_hash(_HERE)
    return _backend_hash


def _target_machine(own: bool = False):
    """This CPU's target machine (llvmlite initialised on first use): a shared one, or
    with ``own`` a new one -- an execution engine takes ownership of its machine and
    disposes of it with itself (~0.5 ms to make)."""
    global _machine
    import llvmlite.binding as llvm
    with _lock:
        if _machine is None:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            libm = ctypes.util.find_library("m")
            if libm:
                llvm.load_library_permanently(libm)
            _machine = _new_machine(llvm)
        return _new_machine(llvm) if own else _machine


def _new_machine(llvm):
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=2, jit=True)


def _tuning(llvm):
    """O2 without loop unrolling and interleaving: they doubled the compile time of the
    gallery's kernels (layernorm 254 -> 161 ms, vector add 83 -> 38 ms) while the
    per-element bounds checks keep most loops scalar anyway
    (benchmarks/bench_llvm_compile.py)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pto.loop_unrolling = False
    pto.loop_interleaving = False
    return pto


def built_for() -> tuple:
    """What an object file depends on besides its module text."""
    import llvmlite
    import llvmlite.binding as llvm
    tm = _target_machine()
    return (backend_hash(), llvmlite.__version__, tm.triple, llvm.get_host_cpu_name(),
            llvm.get_host_cpu_features().flatten())


@dataclass
class Artifact:
    """A built kernel: its source's metadata and its object code (plain data)."""

    source: LlvmSource
    obj: bytes
    built_for: tuple


def build(src: LlvmSource) -> Artifact:
    """Optimise ``src`` and emit its object code."""
    import llvmlite.binding as llvm
    tm = _target_machine()
    mod = llvm.parse_assembly(src.text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pb = llvm.create_pass_builder(tm, _tuning(llvm))
    pb.getModulePassManager().run(mod, pb)
    return Artifact(src, tm.emit_object(mod), built_for())


class Launcher:
    """``run(grid, args)`` for one built kernel (see the module doc)."""

    def __init__(self, artifact: Artifact, options: dict):
        import llvmlite.binding as llvm
        self.artifact = artifact
        self.source = artifact.source.text
        src = artifact.source
        self.name = src.name
        tm = _target_machine(own=True)
        empty = llvm.parse_assembly("")
        empty.triple = tm.triple
        with _lock:
            self._engine = llvm.create_mcjit_compiler(empty, tm)
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(artifact.obj))
            self._engine.finalize_object()
            addr = self._engine.get_function_address(ENTRY)
        self._entry = _SIGNATURE(addr)
        self._types = list(src.arg_types)
        self._names = list(src.arg_names)
        self._ptr_index = [i for i, t in enumerate(self._types) if isinstance(t, PtrType)]
        self._scratch = threading.local()
        self.has_atomics = src.has_atomics

    def _scratch_buffer(self) -> np.ndarray:
        buf = getattr(self._scratch, "buf", None)
        if buf is None:
            buf = self._scratch.buf = np.empty(self.artifact.source.scratch_bytes + 64,
                                               np.uint8)
        return buf

    def __call__(self, grid, args) -> None:
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        if any(g < 1 for g in grid):
            raise errors.LaunchError(f"kernel '{self.name}': every grid axis must be >= 1, "
                                     f"got {grid}")
        n = len(self._types)
        if len(args) != n:
            raise errors.LaunchError(f"kernel '{self.name}' takes {n} arguments, got "
                                     f"{len(args)}")
        ptrs = np.zeros(max(n, 1), np.uint64)
        lens = np.zeros(max(n, 1), np.int64)
        scalars = np.zeros(max(n, 1), np.int64)
        keep = []
        for i, (t, name, a) in enumerate(zip(self._types, self._names, args)):
            if isinstance(t, PtrType):
                a = self._array(a, t, name)
                keep.append(a)
                ptrs[i] = a.ctypes.data
                lens[i] = a.shape[0]
                text = self.artifact.source.narrow.get(i)
                if text is not None and a.shape[0] > 2 ** 31:
                    raise errors.LaunchError(text.replace("\0", str(a.shape[0])))
            else:
                scalars[i] = self._scalar(a, t, name)
        scratch = self._scratch_buffer()
        err = np.zeros(8, np.int64)
        total = grid[0] * grid[1] * grid[2]
        rc = self._entry(grid[0], grid[1], grid[2], 0, total, ptrs.ctypes.data,
                         lens.ctypes.data, scalars.ctypes.data,
                         (scratch.ctypes.data + 63) // 64 * 64, err.ctypes.data)
        if rc:
            raise self._error(err)

    def _array(self, a, t, name):
        want = t.dtype.np
        if not isinstance(a, np.ndarray) or a.dtype != want or a.ndim != 1 \
                or not a.flags.c_contiguous:
            got = f"{a.dtype} array of shape {a.shape}" if isinstance(a, np.ndarray) \
                else type(a).__name__
            raise errors.LaunchError(f"kernel '{self.name}': argument '{name}' must be a "
                                     f"1-D contiguous {want} array, got {got}")
        return a

    def _scalar(self, a, t, name) -> int:
        d = t.dtype
        if d.is_float:
            return int(np.float64(a).view(np.int64))
        v = int(a)
        if d.is_bool:
            return int(bool(a))
        lo, hi = (0, (1 << d.bits) - 1) if d.is_unsigned else \
            (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1)
        if not lo <= v <= hi:
            raise errors.LaunchError(f"kernel '{self.name}': argument '{name}' = {v} does "
                                     f"not fit {d}")
        return v - (1 << 64) if v >= 1 << 63 else v

    def _error(self, err: np.ndarray) -> Exception:
        cls, template = self.artifact.source.sites[int(err[0])]
        pid = tuple(int(x) for x in err[1:4])
        values = [int(x) for x in err[4:]]
        if cls == "OutOfBoundsError":
            return errors.OutOfBoundsError(template, *pid, *values[:3])
        if cls == "IndexOverflowError" and "\0" not in template:
            return errors.IndexOverflowError(template % (*pid, *values[:4]))
        if cls == "ValueError":
            return ValueError(template % (*pid, *values[:2]))
        text, shape = template.split("\0")
        dims = tuple(int(s) for s in shape.split(",") if s)
        lane = tuple(int(i) for i in np.unravel_index(values[0], dims)) if dims else ()
        exc = errors.IndexOverflowError if cls == "IndexOverflowError" else \
            errors.DeviceAssertionError
        return exc(text % (*pid, str(lane)))
