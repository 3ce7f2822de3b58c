"""LLVM IR text -> machine code (llvmlite) -> ``run(grid, args)``.

``build(src)`` parses and verifies the module, optimises it (O2, ``_tuning``) for this CPU
and emits an object file; ``Launcher`` loads the object into an MCJIT engine and calls
its entry through ctypes (which releases the GIL for the call).  The object code is part
of the launcher's ``artifact`` (plain data), which the kernel cache keeps
(jit/compiled.py), so a later process loads it without generating or compiling
anything -- and without importing numba.  An artifact built by another version of this
backend, another llvmlite or for another CPU is not loaded (``built_for``).

A launch checks what the compiled code cannot: the grid, each pointer argument's dtype,
rank, contiguity and (when the kernel writes it) writeability, scalar ranges, and
arguments longer than the kernel's int32 offsets reach; then it hands each array over
as its object (``id``: the kernel reads the data pointer and length from numpy's array
struct, whose layout ``_check_array_layout`` verifies once) and calls the entry with
per-thread buffers.  Programs run on the calling thread, or -- when a kernel's launches
take long enough and threads prove faster (backends/threads.py ``ThreadChoice``, the
numba backend's rule) -- in pieces on the team of spinning worker threads, which call the
entry from native code (backends/llvm/team.py; a launch from another thread while the
team is busy uses the thread pool, ctypes releasing the GIL for each call).  Kernels
with atomics run one program at a time.

Example::

    >>> run = Launcher(build(generate(fn, {})), {})       # doctest: +SKIP
    >>> run((4, 1, 1), [x, y, out, 4096])                 # doctest: +SKIP
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np

from npujit import cache_dir, errors, knobs
from npujit.backends.threads import CHUNKS_PER_THREAD, ThreadChoice, on_threads
from npujit.ir.types import PtrType

from . import team
from .abi import ARRAY_DATA, ARRAY_DIMS, ENTRY, LlvmSource

_HERE = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_machine = None
_backend_hash: str | None = None

_SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
# device_print's callback: site, program id, the value's address (lower_print.py)
_PRINTER = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_int64, ctypes.c_void_p)
_layout_checked = False


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
            _load_libm(llvm)
            _machine = _new_machine(llvm)
        return _new_machine(llvm) if own else _machine


def _load_libm(llvm) -> None:
    """Make the C math library's symbols (the generated code's ``expf``, ``fmod``...)
    visible to the JIT: its usual soname first, then ``ctypes.util.find_library``, which
    imports ``subprocess`` and may run ``ldconfig`` (a cached kernel's first launch in a
    fresh process should not)."""
    for name in ("libm.so.6", "libm.dylib"):
        try:
            llvm.load_library_permanently(name)
            return
        except RuntimeError:
            pass
    import ctypes.util
    libm = ctypes.util.find_library("m")
    if libm:
        llvm.load_library_permanently(libm)


def _new_machine(llvm):
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=_features(llvm), opt=2, jit=True)


def _features(llvm) -> str:
    """The host's CPU features, with ``-prefer-256-bit`` on AVX-512 hosts unless
    ``NPUJIT_WIDE_VECTORS=0``: LLVM's tuning for those parts keeps loops to 256-bit
    registers (the numba backend does the same, backends/numba/vector_width.py)."""
    features = llvm.get_host_cpu_features()
    text = features.flatten()
    if features.get("avx512f", False) and knobs.wide_vectors():
        text += ",-prefer-256-bit"
    return text


def _tuning(llvm):
    """O2 without loop unrolling, which with interleaving doubled the compile time of
    the gallery's kernels (layernorm 254 -> 161 ms, vector add 83 -> 38 ms without
    both).  Interleaving alone (a sum's several accumulators) costs 10-30 % of the
    compile and took 64 rows of the layernorm from 0.038 to 0.031 ms
    (benchmarks/bench_llvm_compile.py)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pto.loop_unrolling = False
    pto.loop_interleaving = True
    return pto


def built_for() -> tuple:
    """What an object file depends on besides its module text."""
    import llvmlite
    import llvmlite.binding as llvm
    tm = _target_machine()
    return (backend_hash(), llvmlite.__version__, tm.triple, llvm.get_host_cpu_name(),
            _features(llvm))


@dataclass
class Artifact:
    """A built kernel: its source's metadata and its object code (plain data)."""

    source: LlvmSource
    obj: bytes
    built_for: tuple


def _optimised(text: str):
    """The module of ``text``, verified and through LLVM's passes (``_tuning``)."""
    import llvmlite.binding as llvm
    tm = _target_machine()
    mod = llvm.parse_assembly(text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pb = llvm.create_pass_builder(tm, _tuning(llvm))
    pb.getModulePassManager().run(mod, pb)
    return mod


def build(src: LlvmSource) -> Artifact:
    """Optimise ``src`` and emit its object code."""
    return Artifact(src, _target_machine().emit_object(_optimised(src.text)), built_for())


def _check_array_layout() -> None:
    """The kernels read an array's data pointer and length from its object
    (abi.py ARRAY_DATA, ARRAY_DIMS): make sure this numpy lays its arrays out so."""
    a = np.arange(5.0)[1:]
    data = ctypes.c_void_p.from_address(id(a) + ARRAY_DATA).value
    dims = ctypes.c_void_p.from_address(id(a) + ARRAY_DIMS).value
    if data != a.ctypes.data or not dims or ctypes.c_int64.from_address(dims).value != 4:
        raise RuntimeError("the llvm backend does not know this numpy's array layout; use "
                           "backend='numba'")


_print_lock = threading.Lock()      # device_print's lines (_print_line)
_rebuild_lock = threading.Lock()    # a Launcher's alias-safe build (Launcher._alias_safe)


class _Aliased(Exception):
    """The entry found arrays that its build assumed apart overlapping (nothing ran)."""


def _print_line(line: str) -> None:
    """One ``device_print`` line, whole: programs on several threads print side by side,
    and ``print`` writes the text and its newline separately."""
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _scalar_plan(d) -> tuple:
    """``(kind, low, high)`` of a scalar argument of dtype ``d`` (Launcher.__init__)."""
    if d.is_float:
        return ("h" if d.is_narrow_float else "f"), 0, 0
    if d.is_bool:
        return "b", 0, 1
    if d.is_unsigned:
        return "i", 0, (1 << d.bits) - 1
    return "i", -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1


class _Buffers:
    """One thread's launch buffers: the launch context (lower.CONTEXT: grid, program
    range, the addresses of the rest), the argument objects, the scalars' 64 bits, the
    error record and the tile scratch."""

    def __init__(self, n: int, scratch_bytes: int, printer: int = 0):
        self.objs = (ctypes.c_uint64 * max(n, 1))()
        self.scalars = (ctypes.c_int64 * max(n, 1))()
        self.doubles = (ctypes.c_double * max(n, 1)).from_buffer(self.scalars)
        self.err = (ctypes.c_int64 * 8)()
        self.scratch = np.empty(scratch_bytes + 64, np.uint8)
        self.ctx = (ctypes.c_int64 * 10)(0, 0, 0, 0, 0, ctypes.addressof(self.objs),
                                         ctypes.addressof(self.scalars),
                                         (self.scratch.ctypes.data + 63) // 64 * 64,
                                         ctypes.addressof(self.err), printer)
        self.ctx_address = ctypes.addressof(self.ctx)
        self.grid = None

    def set_grid(self, g0: int, g1: int, g2: int) -> None:
        ctx = self.ctx
        ctx[0], ctx[1], ctx[2], ctx[3], ctx[4] = g0, g1, g2, 0, g0 * g1 * g2
        self.grid = (g0, g1, g2)

    def take_args(self, src: "_Buffers", g0: int, g1: int, g2: int) -> None:
        """``src``'s arguments and grid, for another thread's part of its launch (the
        program range is the part's own, so ``grid`` is left unset)."""
        size = ctypes.sizeof(self.objs)
        ctypes.memmove(self.objs, src.objs, size)
        ctypes.memmove(self.scalars, src.scalars, size)
        self.ctx[0], self.ctx[1], self.ctx[2] = g0, g1, g2
        self.grid = None


class Launcher:
    """``run(grid, args)`` for one built kernel (see the module doc)."""

    # the stages ``stage`` makes beyond the generated module (jit/compiled.py Asm): the
    # optimised LLVM IR and this host's assembly
    STAGES = ("llir", "native")

    def __init__(self, artifact: Artifact, options: dict):
        import llvmlite.binding as llvm
        global _layout_checked
        if not _layout_checked:
            _check_array_layout()
            _layout_checked = True
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
        self._entry_address = addr
        self._team_buffers: list = []
        self._n = len(src.arg_types)
        # per argument: (index, name, numpy dtype, written, narrow message) for arrays,
        # (index, name, dtype) for scalars
        self._arrays = [(i, n, t.dtype.np, i in src.written, src.narrow.get(i))
                        for i, (t, n) in enumerate(zip(src.arg_types, src.arg_names))
                        if isinstance(t, PtrType)]
        # scalars: (index, name, dtype, kind, low, high) -- kind "f" a float (a double
        # in the context), "h" a 16-bit float (rounded to it first), "b" a bool, "i" an
        # integer in [low, high] (64-bit unsigned values wrap to their signed bits)
        self._scalars = [(i, n, t.dtype, *_scalar_plan(t.dtype)) for i, (t, n) in
                         enumerate(zip(src.arg_types, src.arg_names))
                         if not isinstance(t, PtrType)]
        self._local = threading.local()
        # device_print's callback (lower_print.py), kept alive with the launcher
        self._printer = _PRINTER(self._print) if src.prints else None
        self._printer_address = ctypes.cast(self._printer, ctypes.c_void_p).value \
            if self._printer is not None else 0
        self.has_atomics = src.has_atomics
        self._options = dict(options)
        # ``rebuild(options)``: a Launcher of the same IR built with other options (set
        # by whoever holds the IR: LlvmBackend.compile, jit/compiled.py); ``_safe`` the
        # alias-safe build, once made
        self.rebuild = None
        self._safe = None
        self._choice = ThreadChoice.for_options(
            options, not src.has_atomics,
            team.PARALLEL_AFTER_S if team.available() else None)
        self.threads = self._choice.threads

    def stage(self, name: str) -> str:
        """``llir`` (the module after LLVM's passes) or ``native`` (its assembly for this
        CPU), made again from the generated text when read."""
        mod = _optimised(self.source)
        return str(mod) if name == "llir" else _target_machine().emit_assembly(mod)

    def _slots(self, n: int) -> list:
        """The buffers of the team's first ``n`` workers for this kernel (written
        only while a launch holds the team, backends/llvm/team.py)."""
        slots = self._team_buffers
        if len(slots) < n:
            with _lock:
                while len(slots) < n:
                    slots.append(_Buffers(self._n, self.artifact.source.scratch_bytes,
                                          self._printer_address))
        return slots[:n]

    def _buffers(self) -> _Buffers:
        b = getattr(self._local, "b", None)
        if b is None:
            b = self._local.b = _Buffers(self._n, self.artifact.source.scratch_bytes,
                                         self._printer_address)
        return b

    def _alias_safe(self):
        """The kernel built for overlapping arrays (option ``alias_safe``,
        backends/llvm/deferred.py), made on the first launch that needs it; the entry
        found the overlap before any program ran."""
        safe = self._safe
        if safe is None:
            if self.rebuild is None:
                raise errors.LaunchError(
                    f"kernel '{self.name}' was given arrays that overlap in memory, and "
                    "this build of it cannot rebuild itself for them; pass copies")
            with _rebuild_lock:          # not _lock: a Launcher's making takes that
                safe = self._safe = self._safe or self.rebuild(
                    {**self._options, "alias_safe": True})
        return safe

    def __call__(self, grid, args) -> None:
        if type(grid) is not tuple or len(grid) != 3:
            grid = tuple(grid) + (1,) * (3 - len(grid))
        g0, g1, g2 = grid
        if g0 < 1 or g1 < 1 or g2 < 1:
            raise errors.LaunchError(f"kernel '{self.name}': every grid axis must be >= 1, "
                                     f"got {tuple(grid)}")
        if len(args) != self._n:
            raise errors.LaunchError(f"kernel '{self.name}' takes {self._n} arguments, got "
                                     f"{len(args)}")
        b = self._buffers()
        objs = b.objs
        for i, name, want, written, narrow in self._arrays:
            a = args[i]
            if type(a) is not np.ndarray or a.dtype != want or a.ndim != 1:
                self._refuse(a, name, want, written)
            if narrow is not None and a.shape[0] > 2 ** 31:
                raise errors.LaunchError(narrow.replace("\0", str(a.shape[0])))
            flags = a.flags
            if not flags.c_contiguous or (written and not flags.writeable):
                self._refuse(a, name, want, written)
            objs[i] = id(a)      # the array object; args keeps it alive during the call
        for i, name, d, kind, lo, hi in self._scalars:
            a = args[i]
            if kind == "i":
                v = a if type(a) is int else int(a)
                if v < lo or v > hi:
                    raise errors.LaunchError(f"kernel '{self.name}': argument '{name}' = "
                                             f"{v} does not fit {d}")
                b.scalars[i] = v - (1 << 64) if v >= 1 << 63 else v
            elif kind == "f":
                b.doubles[i] = float(a)
            elif kind == "h":
                b.doubles[i] = float(np.asarray(float(a)).astype(d.np))
            else:
                b.scalars[i] = int(bool(a))
        total = g0 * g1 * g2
        if total == 1 or self._choice.fixed is False:   # _run's serial way, inline: the
            if b.grid != grid:                           # warm launch's path (~0.1 us)
                b.set_grid(g0, g1, g2)
            if self._entry(b.ctx_address):
                err = self._error(b.err)
                if type(err) is _Aliased:
                    return self._alias_safe()(grid, args)
                raise err
            return
        try:
            self._choice.launch(lambda threaded: self._run(b, grid, total, threaded))
        except _Aliased:
            self._alias_safe()(grid, args)

    def _run(self, b: _Buffers, grid, total: int, threaded: bool) -> bool | None:
        """All programs, serially with the caller's buffers ``b`` or on threads (each
        with its own buffers, the arguments copied from ``b``); a failing piece's
        error is raised, the first in grid order when several fail.  False when a
        threaded launch ran on this thread alone (the team's workers did not come)."""
        g0, g1, g2 = grid
        if not threaded:
            if b.grid != grid:
                b.set_grid(g0, g1, g2)
            if self._entry(b.ctx_address):
                raise self._error(b.err)
            return
        n = min(self.threads, total)
        if team.available():
            slots = self._slots(n - 1)

            def contexts():                 # the workers' buffers: filled only while
                for mine in slots:          # this launch holds the team
                    mine.take_args(b, g0, g1, g2)
                b.set_grid(g0, g1, g2)
                return [b.ctx_address] + [m.ctx_address for m in slots]
            done = team.team(self.threads - 1).run(self._entry_address, contexts, total,
                                                   min(total, n * CHUNKS_PER_THREAD))
            b.grid = None                   # the pieces left their ranges in the context
            if done is not None:
                bad, helpers = done
                if bad >= 0:
                    raise self._error((b if bad == 0 else slots[bad - 1]).err)
                return helpers > 0          # False: no worker came (ThreadChoice)

        failed: dict = {}

        def piece(c, lo, hi) -> bool:
            if failed:
                return False
            mine = self._buffers()
            if mine is not b:
                mine.take_args(b, g0, g1, g2)
            ctx = mine.ctx
            ctx[0], ctx[1], ctx[2], ctx[3], ctx[4] = g0, g1, g2, lo, hi
            mine.grid = None
            if self._entry(mine.ctx_address):
                failed[c] = self._error(mine.err)
                return False
            return True
        on_threads(n, total, piece)
        if failed:
            raise failed[min(failed)]

    def _refuse(self, a, name, want, written):
        if isinstance(a, np.ndarray) and a.dtype == want and a.ndim == 1 \
                and a.flags.c_contiguous:
            raise errors.LaunchError(f"kernel '{self.name}' writes argument '{name}', but "
                                     "the array is read-only; pass a writeable copy")
        got = f"{a.dtype} array of shape {a.shape}" if isinstance(a, np.ndarray) \
            else type(a).__name__
        raise errors.LaunchError(f"kernel '{self.name}': argument '{name}' must be a "
                                 f"1-D contiguous {want} array, got {got}")

    def _print(self, site: int, p0: int, p1: int, p2: int, data: int) -> None:
        """A ``device_print`` site reached: ``[pid (x, y, z)] <prefix> <value>``, the
        value read from ``data`` as its tile memory type and shown in its own dtype, as
        the reference interpreter prints it (backends/reference/semantics_structure)."""
        prefix, dt, shape = self.artifact.source.prints[site]
        head = f"[pid ({p0}, {p1}, {p2})]" + (f" {prefix}" if prefix else "")
        if dt is None:
            _print_line(head)
            return
        mem = np.dtype(np.uint8 if dt.is_bool else np.float32 if dt.is_narrow_float
                       else dt.np)
        count = int(np.prod(shape)) if shape else 1
        raw = (ctypes.c_char * (count * mem.itemsize)).from_address(data)
        value = np.frombuffer(raw, mem).reshape(shape).astype(dt.np)
        text = str(value) if value.ndim == 0 else np.array2string(value)
        _print_line(f"{head} {text}")

    def _error(self, err) -> Exception:
        cls, template = self.artifact.source.sites[int(err[0])]
        if cls == "Aliased":
            return _Aliased()
        pid = tuple(int(x) for x in err[1:4])
        values = [int(x) for x in err[4:]]
        if cls == "OutOfBoundsError":
            n = template.replace("%%", "").count("%d") - 3     # the values after the pid
            return errors.OutOfBoundsError(template, *pid, *values[:n])
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
