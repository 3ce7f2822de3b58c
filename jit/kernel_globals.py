"""The globals a kernel reads, found the way Python resolves them, and checked at launch.

A kernel's globals are compile-time constants: their values are baked into the IR when
it is traced.  So every global the kernel -- or a helper it calls -- reads is recorded at
compile time and compared at every launch; a change is a ``LaunchError`` (never a stale
result).  Names are resolved as Python does:

* ``LOAD_GLOBAL name`` in the kernel's code (and the code of its loop bodies, nested
  functions and lambdas) reads ``name`` in the kernel's module; an attribute load
  (``x.shape``) is not a global read, whatever globals share its name;
* ``cfg.LIMIT`` with ``cfg`` a module reads ``LIMIT`` in ``cfg`` (followed through
  ``pkg.sub.LIMIT``);
* a global (or closure) that is a plain Python function -- an ``@nl.inline`` helper or
  any helper the kernel calls -- is scanned the same way, in its own module; a global
  one's binding is checked too (by identity, else by its code): rebinding the name to
  another function is a ``LaunchError``, not a launch of the old inlined body;
* ``LOAD_DEREF name`` of a free variable (a kernel or helper defined inside a function,
  ``def make(scale): @npu_kernel def k(...): ... * scale``) reads the enclosing
  function's cell: recorded and checked the same way (``ClosureRead``), and part of the
  disk key, so two kernels made by one factory with different values never share a
  compiled entry;
* npujit's own modules and functions (``nl``, ``nl.load``) are the language, not data.

What is recorded is the binding (module globals, name), so a helper's ``LIMIT`` in another
module is told apart from the kernel's, and ``cfg.LIMIT`` is the name LIMIT in ``cfg``.  Scalars, strings, tuples and other
objects are compared by value (or identity when they do not compare); a numpy array by
identity, shape, dtype and a hash of its contents (arrays over ``ARRAY_GLOBAL_MAX_BYTES``
are refused: pass them as arguments).

Example::

    >>> reads = find_global_reads(my_kernel.fn, "my_kernel")   # doctest: +SKIP
    >>> [r.label for r in reads]                               # doctest: +SKIP
    ['LIMIT', 'cfg.SCALE', 'TABLE']      # the kernel's own globals by bare name
"""
from __future__ import annotations

import copy
import dis
import hashlib
import importlib
import os
import sys
import types

import numpy as np

from npujit.errors import CompilationError, LaunchError
from npujit.language.core import constexpr

# An array global is hashed at every launch: beyond this size that costs more than
# passing it as an argument (which is also what the kernel should do with a big table).
ARRAY_GLOBAL_MAX_BYTES = 1 << 16

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# npujit's own code (as jit/tracing.py counts it); kernels/ and tests are user code.
_INTERNAL = tuple(os.path.join(_ROOT, d) + os.sep for d in ("jit", "ir", "backends", "npujit",
                                                            "sim"))
_MISSING = object()
_LOADS_ATTR = ("LOAD_ATTR", "LOAD_METHOD")


def _ours(f) -> bool:
    """Is this function part of npujit itself (the language, the runtime)?"""
    code = getattr(f, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(_INTERNAL)


def _array_fingerprint(a: np.ndarray) -> tuple:
    data = a if a.flags.c_contiguous else np.ascontiguousarray(a)
    return (a.shape, a.dtype.str, hashlib.blake2b(data.view(np.uint8).reshape(-1),
                                                   digest_size=16).digest())


def describe_array(a) -> str:
    """``float32[3, 4]``: how messages name an array (never its contents)."""
    return f"{a.dtype}[{', '.join(map(str, a.shape))}]"


def _short(v) -> str:
    """A value for a message: arrays by dtype and shape, long reprs cut."""
    if isinstance(v, np.ndarray):
        return f"an array {describe_array(v)}"
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


class GlobalRead:
    """One global binding a kernel reads (a name in a module's globals), its value then."""

    what = "global"       # how messages name the binding

    def __init__(self, ns: dict, name: str, reader: str, value, home: dict):
        self.ns = ns                      # the module's globals dict (not pickled)
        self.module = ns.get("__name__", "?")
        self.name = name
        # the kernel's own globals by name, others qualified by their module
        self.label = name if ns is home else f"{self.module}.{name}"
        self.reader = reader              # "" for the kernel, else "helper 'f'"
        self.array = None
        self.array_id = None
        self.helper = None                # a helper function: compared by identity,
        if isinstance(value, types.FunctionType):   # then by its code (after unpickling)
            from .cache_key import code_digest
            self.helper = value
            value = code_digest(_unwrap(value))
        elif isinstance(value, np.ndarray):
            if value.dtype.hasobject or value.nbytes > ARRAY_GLOBAL_MAX_BYTES:
                raise CompilationError(
                    f"the kernel reads the {self.what} array '{self.label}' "
                    f"({describe_array(value)}, {value.nbytes} bytes){self._by()}; an array "
                    "global is checked at every launch, which only pays for small tables "
                    f"(at most {ARRAY_GLOBAL_MAX_BYTES} bytes of numbers): pass it as an "
                    "argument instead")
            self.array = _array_fingerprint(value)
            self.array_id = id(value)
            value = None
        elif isinstance(value, (list, dict, set, bytearray)):
            value = copy.deepcopy(value)     # mutable: compare with a snapshot
        self.value = value

    def _by(self) -> str:
        return f" (read by {self.reader})" if self.reader else ""

    def current(self):
        """The binding's value now (``_MISSING`` if it no longer resolves)."""
        ns = self.ns
        if ns is None:       # unpickled: find the module again (importing it if need be)
            mod = sys.modules.get(self.module)
            if mod is None:
                try:
                    mod = importlib.import_module(self.module)
                except ImportError as e:
                    raise LaunchError(f"the compiled kernel read the global '{self.label}' of "
                                      f"module '{self.module}', which this process cannot "
                                      f"import ({e}); make the module importable here (e.g. "
                                      "on PYTHONPATH)") from None
            ns = self.ns = vars(mod)
        return ns.get(self.name, _MISSING)

    def check(self, kernel: str) -> None:
        """Raise a LaunchError if the binding's value changed since the compile."""
        now = self.current()
        if self.array is not None:
            self._check_array(kernel, now)
            return
        if self.is_helper:
            self._check_helper(kernel, now)
            return
        if isinstance(now, constexpr):
            now = now.value
        if now is self.value:
            return
        if now is not _MISSING and type(now) is type(self.value):
            try:
                if bool(now == self.value):
                    return
            except Exception:         # values that do not compare: identity decided
                pass
        shown = "gone" if now is _MISSING else _short(now)
        raise LaunchError(f"kernel '{kernel}' was compiled when the {self.what} '{self.label}'"
                          f"{self._by()} was {_short(self.value)}, but it is now {shown}; "
                          f"{self.what}s a kernel reads are compile-time constants — pass it "
                          "as a constexpr argument instead")

    @property
    def is_helper(self) -> bool:
        """Is this the binding of a helper function (not data)?"""
        return isinstance(self.helper, types.FunctionType) or self.helper == "unpickled"

    def _check_helper(self, kernel: str, now) -> None:
        if now is self.helper:
            return
        if isinstance(now, types.FunctionType):
            from .cache_key import code_digest
            if code_digest(_unwrap(now)) == self.value:
                self.helper = now          # the same code (another process, a re-run def)
                return
        shown = "gone" if now is _MISSING else _short(now)
        raise LaunchError(f"kernel '{kernel}' was compiled calling the helper "
                          f"'{self.label}'{self._by()}, but '{self.label}' is now {shown}; "
                          "helpers are inlined when the kernel compiles — define the kernel "
                          "again (@npu_kernel) to compile it with the new helper, or pass the "
                          "function as a constexpr argument")

    def _check_array(self, kernel: str, now) -> None:
        if self.array_id is not None and id(now) == self.array_id and \
                _array_fingerprint(now) == self.array:
            return
        if self.array_id is None and isinstance(now, np.ndarray) and \
                _array_fingerprint(now) == self.array:
            return          # unpickled: identity cannot be compared across processes
        shape, dt, _ = self.array
        was = f"{np.dtype(dt)}[{', '.join(map(str, shape))}]"
        if not isinstance(now, np.ndarray):
            what = "no longer exists" if now is _MISSING else \
                f"is now a {type(now).__name__}"
            how = f"the {self.what} array '{self.label}' {what}"
        elif self.array_id is not None and id(now) != self.array_id:
            how = f"the {self.what} '{self.label}' now names another array ({describe_array(now)})"
        else:
            how = f"the contents of the global array '{self.label}' changed"
        raise LaunchError(f"kernel '{kernel}' was compiled when '{self.label}'{self._by()} "
                          f"was a {was} array, but {how}; arrays a kernel reads are baked into "
                          "it when it compiles — pass it as an argument instead")

    def export(self):
        """The value for ``read_globals()`` (data only: helpers are left out)."""
        if self.array is not None:
            v = self.current()
            return v if isinstance(v, np.ndarray) else None
        return self.value

    def __getstate__(self):
        state = dict(self.__dict__)
        state["ns"] = None
        state["array_id"] = None     # ids mean nothing in another process
        if self.is_helper:
            state["helper"] = "unpickled"   # checked by its code in the next process
        return state


class ClosureRead(GlobalRead):
    """A free variable a kernel (or a helper) reads from the function that encloses it
    (``def make(scale): @npu_kernel def k(...): ... * scale``): a compile-time constant
    like a global, checked at every launch against its cell, and part of the disk key.
    Unpickled in another process it has no cell (nothing there can rebind it)."""

    what = "closure variable"

    def __init__(self, cell, name: str, owner: str, reader: str, value):
        self.cell = cell
        super().__init__({"__name__": owner}, name, reader, value, home=None)
        self.label = f"{name}' of '{owner}"

    def current(self):
        try:
            return self.cell.cell_contents
        except ValueError:
            return _MISSING

    def check(self, kernel: str) -> None:
        if self.cell is not None:
            super().check(kernel)

    def __getstate__(self):
        state = super().__getstate__()
        state["cell"] = None
        return state


def find_global_reads(fn: types.FunctionType, kernel: str) -> list:
    """Every global binding ``fn`` and the helpers it calls read (see the module doc)."""
    return scan_kernel(fn)[0]


def scan_kernel(fn: types.FunctionType) -> tuple:
    """``(global reads, helper functions)`` of ``fn``: the bindings it and its helpers
    read, and the user functions it calls (in the order met; jit/cache_key.py hashes
    their code)."""
    scan = _Scan(fn.__globals__)
    scan.function(fn, "")
    return list(scan.found.values()), scan.helpers


def _unwrap(f):
    """The user function behind ``functools.wraps`` wrappers such as ``@nl.inline``."""
    for _ in range(16):
        if not hasattr(f, "__wrapped__"):
            break
        f = f.__wrapped__
    return f


def _cell(c):
    try:
        return c.cell_contents
    except ValueError:
        return _MISSING


class _Scan:
    """One walk over a kernel's code and its helpers' code."""

    def __init__(self, home: dict):
        self.home = home           # the kernel's module globals
        self.found: dict = {}      # (id(module globals), name) -> GlobalRead
        self.seen: set = set()     # code objects already scanned
        self.helpers: list = []    # user functions called, besides the kernel
        self.closures: dict = {}   # id(function code) -> ({free name: cell}, qualname)

    def function(self, f, reader: str) -> None:
        f = _unwrap(f)
        code = getattr(f, "__code__", None)
        if code is None or id(code) in self.seen or _ours(f):
            return
        if reader:
            self.helpers.append(f)
        closure = dict(zip(code.co_freevars, f.__closure__ or ()))
        cells = {name: _cell(c) for name, c in closure.items()}
        self.closures[id(code)] = (closure, f.__qualname__)
        self.code(code, f.__globals__, cells, reader, id(code))

    def code(self, code, ns: dict, cells: dict, reader: str, fn_code: int = 0) -> None:
        self.seen.add(id(code))
        instrs = list(dis.get_instructions(code))
        for i, ins in enumerate(instrs):
            if ins.opname == "LOAD_GLOBAL":
                if ins.argval not in ns:
                    continue                 # a builtin (or undefined: Python says so)
                # ``cfg.sub.LIMIT`` is the binding LIMIT in module cfg.sub
                owner, name, value = ns, ins.argval, ns[ins.argval]
                j = i + 1
                while isinstance(value, types.ModuleType) and j < len(instrs) \
                        and instrs[j].opname in _LOADS_ATTR:
                    attr = instrs[j].argval
                    if value.__name__.startswith("npujit") or attr not in vars(value):
                        break
                    owner, name, value = vars(value), attr, vars(value)[attr]
                    j += 1
                self.binding(owner, name, value, reader)
            elif ins.opname in ("LOAD_DEREF", "LOAD_CLOSURE") and ins.argval in cells:
                self.closure(fn_code, ins.argval, cells[ins.argval], reader)
        for c in code.co_consts:
            if isinstance(c, types.CodeType) and id(c) not in self.seen:
                self.code(c, ns, cells, reader, fn_code)

    def closure(self, fn_code: int, name: str, value, reader: str) -> None:
        """A free variable of the function whose code is ``fn_code``, read by it."""
        closure, qualname = self.closures[fn_code]
        key = (fn_code, name)
        if key in self.found or value is _MISSING or isinstance(value, types.ModuleType):
            return
        if isinstance(value, types.FunctionType):
            if _ours(_unwrap(value)):
                return
            self.found[key] = ClosureRead(closure[name], name, qualname, reader, value)
            self.function(value, f"helper '{_unwrap(value).__qualname__}'")
            return
        if callable(value) or isinstance(value, type):
            return      # classes, builtins, kernels, dtype constructors: code, not data
        if isinstance(value, constexpr):
            value = value.value
        self.found[key] = ClosureRead(closure[name], name, qualname, reader, value)

    def binding(self, ns: dict, name: str, value, reader: str) -> None:
        if isinstance(value, types.ModuleType):
            return                           # a module used as a whole: not data
        if isinstance(value, types.FunctionType):
            if not _ours(_unwrap(value)) and (id(ns), name) not in self.found:
                self.found[(id(ns), name)] = GlobalRead(ns, name, reader, value, self.home)
            self.function(value, f"helper '{_unwrap(value).__qualname__}'")
            return
        if callable(value) or isinstance(value, type):
            return      # classes, builtins, kernels, dtype constructors: code, not data
        key = (id(ns), name)
        if key not in self.found:
            if isinstance(value, constexpr):
                value = value.value
            self.found[key] = GlobalRead(ns, name, reader, value, self.home)
