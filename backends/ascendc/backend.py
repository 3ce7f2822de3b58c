"""``AscendCTwinBackend``: emit Ascend C for a scheduled kernel, build it with g++
against the CPU twin, and run it on numpy arrays through ctypes.

``emit_files(fn)`` gives the emitted directory's files; ``emit(fn, out_dir)`` writes them.
The backend's ``compile(fn, options)`` returns an ``AscendCTwinKernel`` that runs a grid
like every backend (backends/base.py); an error the twin finds on the device's rules
(an unmatched flag, a queue misused, a buffer over budget, a copy off 32 B) raises
``TwinDeviceError`` naming it.

Example::

    >>> k = add_kernel.with_options(backend="ascendc-twin")    # doctest: +SKIP
    >>> k[(4,)](x, y, out, n, BLOCK=256)                       # doctest: +SKIP
"""
from __future__ import annotations

import ctypes
import os
import threading

from npujit.backends.reference.backend import bind_args, normalize_grid
from npujit.errors import NPUJitError
from npujit.target import find_spec

from .build import build_twin
from .emit_host import host_files, twin_entry
from .emit_kernel import KernelWriter
from .lowering import CPP_TYPES, not_lowered

_SCOPES = ("UB", "L1", "L0A", "L0B", "L0C")
_CTYPES = {"float": ctypes.c_float, "int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32,
           "int16_t": ctypes.c_int16, "int8_t": ctypes.c_int8, "bool": ctypes.c_bool}


# The twin keeps its device state in globals of each built library, and ctypes releases the
# GIL during a call: launches of one library from several threads take turns.
_LIBRARY_LOCKS: dict = {}
_LOCKS_LOCK = threading.Lock()


class TwinDeviceError(NPUJitError, RuntimeError):
    """The emitted kernel broke a device rule while running on the CPU twin."""


def emit_files(fn) -> tuple[dict, object]:
    """``({file name: text}, KernelInfo)`` for a scheduled IR function."""
    refuse_unemitted_dtypes(fn)
    src, info = KernelWriter(fn).write()
    for name, t, _ in info.tiling:
        if t not in _CTYPES:
            raise NotImplementedError(f"kernel argument '{name}' is a {t} scalar; the Ascend C "
                                      "emitter passes int, f32 and bool scalars only")
    return {f"{info.entry}.cpp": src, **host_files(info)}, info


# Why a dtype without an Ascend C type is not emitted, by its kind
_WHY_NOT = {"float": "the NPU presets' vector unit has no f64 and no fp8 arithmetic",
            "uint": "the emitter has no unsigned-int lowering yet"}


def refuse_unemitted_dtypes(fn) -> None:
    """Raise, naming the op and its source line, at the first op that reads or makes a
    value of a dtype the emitter has no Ascend C type for (f64, the unsigned ints and
    the fp8s: docs/ascendc.md, "Dtypes")."""
    for op in fn.walk():
        for v in list(op.operands) + list(op.results):
            d = getattr(v.type, "dtype", None)
            if d is not None and d.name not in CPP_TYPES:
                raise not_lowered(op, f"{d!r} tiles are not emitted ({_WHY_NOT[d.kind]})")
    for a in fn.args:
        d = getattr(a.type, "dtype", None)
        if d is not None and d.name not in CPP_TYPES:
            raise NotImplementedError(f"the Ascend C emitter cannot take argument "
                                      f"'{a.name}' of {d!r} elements: f64 and unsigned "
                                      "ints are not emitted; run this kernel on the 'numba' "
                                      "or 'reference' backend (docs/ascendc.md)")


def emit(fn, out_dir: str) -> list[str]:
    """Write the emitted kernel directory for the scheduled function ``fn``; returns the
    paths written.

    Example::

        >>> emit(scheduled_fn, "out/add_kernel")          # doctest: +SKIP
        ['out/add_kernel/add_kernel.cpp', ...]
    """
    files, _ = emit_files(fn)
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, text in files.items():
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            f.write(text)
        paths.append(path)
    return paths


class AscendCTwinKernel:
    """An emitted kernel built against the twin: ``kernel(grid, args)`` runs it.

    ``source`` replaces the emitted kernel .cpp, to run a hand-edited version of it.

    Example::

        >>> edited = kernel.source.replace("xQue_.FreeTensor(x);", "")    # doctest: +SKIP
        >>> AscendCTwinKernel(kernel.fn, {}, source=edited)(grid, args)    # doctest: +SKIP
        TwinDeviceError: ... missing FreeTensor ...
    """

    def __init__(self, fn, options: dict, source: str | None = None):
        self.fn = fn
        self.name = fn.name
        self.options = dict(options)
        self.files, self.info = emit_files(fn)
        if source is not None:
            self.files[f"{self.info.entry}.cpp"] = source
        self.source = self.files[f"{self.info.entry}.cpp"]
        spec = find_spec(options.get("spec"))
        self.capacity = (ctypes.c_uint32 * 5)(*(int(spec.capacity.get(s, 0)) for s in _SCOPES))
        cores = spec.core_counts
        self.cores = max(1, int(cores.get(self.info.core, cores["AIC"])))
        tiling_fields = [(n, _CTYPES[t]) for n, t, _ in self.info.tiling]
        tiling_fields += [("grid0", ctypes.c_uint32), ("grid1", ctypes.c_uint32),
                          ("grid2", ctypes.c_uint32)]
        self.Tiling = type(f"{self.info.class_name}Tiling", (ctypes.Structure,),
                           {"_fields_": tiling_fields})
        sources = {k: v for k, v in self.files.items() if k.endswith((".cpp", ".h")) and
                   not k.startswith("launch_")}
        self.library = build_twin(sources, twin_entry(self.info))
        lib = ctypes.CDLL(self.library)
        self._launch = lib.npujit_twin_launch
        self._launch.restype = ctypes.c_int
        self._launch.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p, ctypes.c_int64,
                                 ctypes.POINTER(ctypes.c_uint32), ctypes.c_char_p, ctypes.c_size_t]
        self._lib = lib                    # keep the library loaded while the kernel lives
        with _LOCKS_LOCK:
            self._lock = _LIBRARY_LOCKS.setdefault(self.library, threading.Lock())

    def __call__(self, grid, args) -> None:
        grid = normalize_grid(grid)
        bound = bind_args(self.fn, args)
        values = {a.name: v for a, v in zip(self.fn.args, bound)}
        tiling = self.Tiling()
        for name, _, i in self.info.tiling:
            setattr(tiling, name, bound[i].item())
        tiling.grid0, tiling.grid1, tiling.grid2 = grid
        for name in self.info.unit_stride_args:
            if values[name].item() != 1:
                raise NotImplementedError(
                    f"kernel '{self.name}': argument '{name}' is {values[name].item()}, but the "
                    "emitted kernel copies contiguous rows (inner stride 1); pass "
                    "np.ascontiguousarray(...) operands or run on another backend")
        for pair in self.info.unit_stride_choices:
            if all(values[name].item() != 1 for name in pair):
                raise NotImplementedError(
                    f"kernel '{self.name}': arguments {' and '.join(map(repr, pair))} are "
                    f"{' and '.join(str(values[n].item()) for n in pair)}, but the emitted Cube "
                    "path copies contiguous rows or contiguous columns of a B tile (one of "
                    "them must be 1); pass np.ascontiguousarray(...) or run on another backend")
        arrays = [bound[i] for _, i in self.info.gm_args]
        n = len(arrays)
        ptrs = (ctypes.c_void_p * max(n, 1))(*(a.ctypes.data for a in arrays))
        sizes = (ctypes.c_uint64 * max(n, 1))(*(a.nbytes for a in arrays))
        names = (ctypes.c_char_p * max(n, 1))(*(name.encode() for name, _ in self.info.gm_args))
        programs = grid[0] * grid[1] * grid[2]
        error = ctypes.create_string_buffer(4096)
        with self._lock:
            rc = self._launch(ptrs, sizes, names, ctypes.addressof(tiling), min(programs, self.cores),
                              self.capacity, error, len(error))
        if rc != 0:
            raise TwinDeviceError(f"kernel '{self.name}' failed on the Ascend C CPU twin, "
                                  f"{error.value.decode(errors='replace')}")

    def __repr__(self) -> str:
        return f"<AscendCTwinKernel {self.name}>"


class AscendCTwinBackend:
    """Emits Ascend C and runs it on the CPU twin (the third execution tier).

    Example::

        >>> run = AscendCTwinBackend().compile(scheduled_fn, {})    # doctest: +SKIP
        >>> run((4, 1, 1), [x, y, out, n])                           # doctest: +SKIP
    """

    name = "ascendc-twin"

    def compile(self, fn, options: dict | None = None) -> AscendCTwinKernel:
        if "npu.core" not in fn.attrs:
            raise ValueError(f"kernel '{fn.name}' is not scheduled; the Ascend C emitter reads "
                             "the scheduled IR (ir.schedule.schedule)")
        return AscendCTwinKernel(fn, options or {})


